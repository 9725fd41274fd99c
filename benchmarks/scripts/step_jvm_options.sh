#!/bin/bash
# One batch step under spark-submit with given driver JVM options, on a copy of a staged batch and a
# fresh warehouse; prints its wall time (docs/decisions.md, "The quick JIT for small batches").
# usage: step_jvm_options.sh BATCH_DIR compact|decode_normalize "JAVA OPTIONS" [LABEL]
#   e.g. step_jvm_options.sh var/demo/staging/demo_qlik_avro/manual__... compact "-XX:TieredStopAtLevel=1"
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
SRC=$(cd "$1" && pwd); STEP=$2; OPTS=$3; LABEL=${4:-$STEP}
WORK=$(mktemp -d -t cdclake-step-XXXX)
trap 'rm -rf "$WORK"' EXIT
cp -r "$SRC" "$WORK/batch" && mkdir "$WORK/warehouse"
if [ "$STEP" = compact ]; then
  rm -f "$WORK"/batch/reports/compact-*  # the decoded and normalized batch stays: compact onto new tables
else
  rm -rf "$WORK/batch/decoded" "$WORK/batch/changelog" "$WORK/batch/reports"
fi
args=(--master 'local[*]' --conf spark.ui.enabled=false --jars "$(ls "$REPO"/.jars/*.jar | paste -sd,)")
[ -n "$OPTS" ] && args+=(--conf "spark.driver.defaultJavaOptions=$OPTS")
start=$(date +%s.%N)
PYSPARK_PYTHON="$REPO/.venv/bin/python" "$REPO/.venv/bin/spark-submit" "${args[@]}" \
  "$REPO/spark_jobs/$STEP.py" --batch-dir "$WORK/batch" --warehouse "$WORK/warehouse" > "$WORK/step.log" 2>&1
rc=$?
end=$(date +%s.%N)
[ $rc -ne 0 ] && tail -20 "$WORK/step.log"
printf '%s rc=%s %.1f s\n' "$LABEL" "$rc" "$(echo "$end - $start" | bc)"
