"""The driver fold's commits, with Iceberg's shuffle by bucket and without it.

One warm session: a 100k-row table in 16 buckets (seeded as the merge curve seeds it), then
``--runs`` MERGEs of 1,000 existing rows (updates) and of 1,000 new keys (inserts), each into a
branch made at the seeded snapshot, so every run sees the same files; and ``--runs`` appends of
1,000 change-log rows (``log``; without the shuffle, in one task as compact writes them). Prints
wall seconds, Spark jobs and the files the commit added, per distribution mode.

    CDCLAKE_JARS=.jars .venv/bin/python benchmarks/scripts/merge_distribution.py --runs 5
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from cdclake.bench import merge_curve
from cdclake.compaction.lake_tables import META_DDL, table_ddl
from cdclake.compaction.lineage import fresh_snapshot_id
from cdclake.compaction.publish import DISTRIBUTION_CONF, _merge_sql, _session_conf
from cdclake.merge import bucket_of
from cdclake.runtime.settings import Settings
from cdclake.runtime.spark import build_session

ROWS, BUCKETS = 100_000, 16


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="merge-distribution-"))
    spark = build_session("merge-distribution", work / "warehouse", master="local[*]", jars=Settings.from_env().jars())
    name, _ = merge_curve.seed_table(spark, work, ROWS, "md", BUCKETS)
    columns = [(f.name, f.dataType.simpleString()) for f in spark.table(name).schema if not f.name.startswith("_cdc_")]
    ddl = table_ddl(columns, META_DDL, "_cdc_kind string")
    base = fresh_snapshot_id(spark, name)
    sc = spark.sparkContext

    def updates(run: int) -> pa.Table:
        rows = spark.table(name).where(f"id % 100 = {run}").limit(1000).toArrow()
        return rows.append_column("_cdc_kind", pa.array(["row"] * rows.num_rows))

    def inserts(run: int) -> pa.Table:
        rows = updates(run)
        ids = list(range(10 * ROWS + run * 1000, 10 * ROWS + run * 1000 + rows.num_rows))
        keys = [f"[{i}]" for i in ids]
        for column, values, kind in (
            ("id", ids, pa.int64()),
            ("_cdc_key", keys, pa.string()),
            ("_cdc_bucket", [bucket_of(k, BUCKETS) for k in keys], pa.int32()),
        ):
            rows = rows.set_column(rows.schema.get_field_index(column), column, pa.array(values, kind))
        return rows

    for kind, make in (("updates", updates), ("inserts", inserts)):
        sources = [make(run) for run in range(args.runs + 1)]
        for mode in ("hash", "none"):
            walls = []
            for run, source in enumerate(sources):
                spark.createDataFrame(source, schema=ddl).createOrReplaceTempView("src")
                spark.sql(f"ALTER TABLE {name} CREATE OR REPLACE BRANCH bench AS OF VERSION {base}")
                first_job = sc._jsc.sc().dagScheduler().nextJobId()
                started = time.perf_counter()
                with _session_conf(spark, {DISTRIBUTION_CONF: mode}):
                    spark.sql(_merge_sql(f"{name}.branch_bench", "src", columns, list(range(BUCKETS))))
                wall = time.perf_counter() - started
                jobs = sc._jsc.sc().dagScheduler().nextJobId() - first_job
                summary = spark.sql(
                    f"SELECT s.summary FROM {name}.refs r JOIN {name}.snapshots s ON r.snapshot_id = s.snapshot_id "
                    "WHERE r.name = 'bench'"
                ).first()["summary"]
                if run:  # the first run of each mode warms it up
                    walls.append(wall)
                print(
                    f"{kind} {mode} run {run}: {wall:.3f} s, {jobs} jobs, files added: "
                    f"{summary.get('added-data-files', 0)} data, {summary.get('added-delete-files', 0)} delete",
                    flush=True,
                )
            print(f"{kind} {mode}: median {statistics.median(walls):.3f} s of {[round(w, 3) for w in walls]}")
    log = name + "__changes"
    log_rows = spark.table(log).limit(1000).toArrow()
    for mode in ("hash", "none"):
        walls = []
        for run in range(args.runs + 1):
            rows = spark.createDataFrame(log_rows, schema=spark.table(log).schema)
            rows = rows.coalesce(1) if mode == "none" else rows
            first_job = sc._jsc.sc().dagScheduler().nextJobId()
            started = time.perf_counter()
            with _session_conf(spark, {DISTRIBUTION_CONF: mode}):
                rows.writeTo(log).append()
            wall = time.perf_counter() - started
            jobs = sc._jsc.sc().dagScheduler().nextJobId() - first_job
            added = spark.sql(f"SELECT summary FROM {log}.snapshots ORDER BY committed_at DESC LIMIT 1").first()
            if run:
                walls.append(wall)
            print(f"log {mode} run {run}: {wall:.3f} s, {jobs} jobs, {added['summary'].get('added-data-files')} files")
        print(f"log {mode}: median {statistics.median(walls):.3f} s of {[round(w, 3) for w in walls]}")
    spark.stop()


if __name__ == "__main__":
    main()
