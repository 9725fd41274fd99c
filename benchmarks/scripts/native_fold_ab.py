"""The fold, Python reference vs Spark SQL (``cdclake/compaction/native_fold.py``), side by side in one
warm session: wall and CPU seconds (driver, JVM and Python workers) of each over the same change log.

The bench's 100k-change GoldenGate JSON batch is generated, decoded and normalized once; one table's
routed events (without key changes) are repeated ``--copies`` times under new keys.

    CDCLAKE_JARS=.jars .venv/bin/python benchmarks/scripts/native_fold_ab.py --table SHOP.ORDERS --copies 5
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import psutil

from cdclake.bench.generate import generate
from cdclake.compaction.folding import alias_names, with_names, fold_part
from cdclake.compaction.lake_tables import LOG_DDL, META_DDL, table_ddl
from cdclake.compaction.native_fold import fold_native
from cdclake.compaction.routing import route_events
from cdclake.jobs import decode, normalize
from cdclake.runtime.settings import Settings
from cdclake.runtime.spark import build_session
from cdclake.schema.evolution import ColumnMap
from cdclake.staging.batch import Manifest
from cdclake.staging.stage import stage_files


def _cpu_seconds() -> float:
    """CPU time of this process and every process under it (the JVM, its Python workers)."""
    me = psutil.Process(os.getpid())
    total = 0.0
    for proc in [me, *me.children(recursive=True)]:
        try:
            times = proc.cpu_times()
            total += times.user + times.system
        except psutil.Error:
            pass
    return total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--table", default="SHOP.ORDERS")
    parser.add_argument("--copies", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from pyspark.sql import functions as F

    work = Path(tempfile.mkdtemp())
    spark = build_session("native-fold-ab", work / "warehouse", master="local[2]", jars=Settings.from_env().jars())
    gens, _ = generate(["goldengate-json"], work / "gen", 100_000, seed=7, file_events=10_000)
    gen = gens["goldengate-json"]
    manifest = Manifest(
        source="ab", batch_id="b1", format="goldengate-json", options=gen.options, keys=gen.keys, namespace="ab"
    )
    stage_files(gen.files, work / "staging", manifest)
    batch_dir = work / "staging" / "b1"
    decode.run(spark, batch_dir)
    normalize.run(spark, batch_dir)
    layout = json.loads((batch_dir / "tables.json").read_text())[args.table]
    keys, columns = layout["keys"], [tuple(c) for c in layout["columns"]]
    types, cmap = dict(columns), ColumnMap.from_dict(layout.get("column_map"))
    events = spark.read.parquet(str(batch_dir / "changelog")).where(F.col("table") == args.table)
    routed = events.mapInArrow(lambda it: route_events(it, keys, types, 16, "b1", cmap), f"{LOG_DDL}, _error string")
    routed.where("_error IS NULL AND _old_key IS NULL").drop("_error").write.parquet(str(work / "routed"))
    base = spark.read.parquet(str(work / "routed"))
    copies = spark.range(args.copies).crossJoin(base)
    copies.withColumn("_key", F.concat("_key", F.col("id").cast("string"))).drop("id").write.parquet(str(work / "log"))
    log = spark.read.parquet(str(work / "log"))
    print(f"{args.table}: {log.count()} change-log rows")

    aliases = alias_names(columns)
    aliased = list(zip(aliases, types.values(), strict=True))
    out_ddl = f"{table_ddl(aliased)}, {META_DDL}, _cdc_kind string, _cdc_info string"
    fold_args = {"keys": keys, "columns": columns, "batch_id": "b1", "buckets": 16, "truncate_seq": None, "cmap": cmap}

    def python_fold():
        def fold(ev):
            return with_names(fold_part(ev, None, markers=True, **fold_args), aliases)

        return log.withColumn("_cdc_part", F.col("_cdc_bucket")).groupBy("_cdc_part").applyInArrow(fold, out_ddl)

    runs = {"python": python_fold, "native": lambda: fold_native(log, columns, "b1", None)}
    for _ in range(args.rounds):
        for name, make in runs.items():
            cpu, wall = _cpu_seconds(), time.perf_counter()
            make().write.mode("overwrite").format("noop").save()
            print(f"{name:8s} wall {time.perf_counter() - wall:6.2f} s  cpu {_cpu_seconds() - cpu:6.2f} s", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
