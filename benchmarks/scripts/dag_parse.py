"""How long the ingest DAG file takes to parse for N sources (one DAG per source; issue 58's capacity plan).

    .venv/bin/python benchmarks/scripts/dag_parse.py 10 100 1000

For each N: a sources file of N Debezium JSON sources, then in a fresh process (the dag-processor's view) the
import of ``cdclake.airflow.dags``, the first ``build_dags()`` (Airflow's own imports included) and one more parse
of ``dags/`` by Airflow's ``DagBag``. Prints a JSON line per N.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

DAGS = Path(__file__).resolve().parents[2] / "dags"
PROBE = """
import json, time
t0 = time.perf_counter()
from cdclake.airflow.dags import build_dags
t1 = time.perf_counter()
dags = build_dags()
t2 = time.perf_counter()
from airflow.dag_processing.dagbag import DagBag
t3 = time.perf_counter()
bag = DagBag(dag_folder={dags!r})
t4 = time.perf_counter()
print("RESULT " + json.dumps({{"sources": {n}, "dags": len(dags), "import_s": round(t1 - t0, 2),
    "build_dags_s": round(t2 - t1, 2), "dagbag_s": round(t4 - t3, 2), "dagbag_dags": len(bag.dags),
    "import_errors": len(bag.import_errors)}}))
"""


def sources_file(folder: Path, n: int) -> Path:
    path = folder / f"sources-{n}.yaml"
    lines = ["sources:"]
    for i in range(n):
        lines += [
            f"  src_{i:05d}:",
            "    format: debezium-json",
            f"    landing: landing/src_{i:05d}",
            "    schedule: '@hourly'",
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


def measure(folder: Path, n: int) -> dict:
    env = dict(
        os.environ,
        CDCLAKE_SOURCES=str(sources_file(folder, n)),
        AIRFLOW_HOME=str(folder / "airflow"),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT="600",
        AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=f"sqlite:///{folder / 'airflow.db'}",
    )
    probe = PROBE.format(dags=str(DAGS), n=n)
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=False)
    found = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    if not found:
        raise SystemExit(out.stderr[-2000:])
    return json.loads(found[-1].removeprefix("RESULT "))


def main(counts: list[int]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for n in counts:
            print(json.dumps(measure(Path(tmp), n)))


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [10, 100, 1000])
