"""Incremental merge cost: tables of N rows, then change batches of 1 row, 0.1%, 1% and 10% of N.

For each batch: wall time of the whole pipeline (stage, decode, normalize, compact), the merge
mode (merge-on-read or bucket overwrite), the data files the Iceberg commit removed/added out of
the table's total, the delete files it added and the table holds, and the rows it wrote (snapshot
summary). The cost must follow the batch, not the table size.

The N-row table is seeded in bulk: one row goes through the pipeline (which creates the table
and its change log with their real layout and properties), then Spark appends the other rows
to both, exactly as compact would have written them (key text in ``_cdc_key``, bucket, INSERT
events; the table was created with ``cdclake.row-keys=1``, so every row must have its key). That
takes seconds instead of the pipeline's minutes per million rows; the initial load's own speed
is measured by the per-format runs.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from cdclake.lake.tables import BATCH_PROPERTY
from cdclake.pipeline import run_batch
from cdclake.runtime.settings import Settings
from cdclake.staging.batch import Manifest
from cdclake.staging.stage import stage_files

TABLE = "BENCH.ORDERS"
NOTE = "x" * 20


def _line(op: str, pos: int, row: dict) -> str:
    key = "before" if op == "D" else "after"
    return json.dumps(
        {"table": TABLE, "op_type": op, "op_ts": "2024-01-01 00:00:00.000000", "pos": f"{pos:020d}", key: row}
    )


def write_inserts(path: Path, rows: int, first: int = 0) -> None:
    with open(path, "w") as out:
        for i in range(first, first + rows):
            row = {"id": i, "customer": f"C{i % 9973}", "amount": i * 0.5, "qty": i % 17, "status": "NEW", "note": NOTE}
            out.write(_line("I", i + 1, row) + "\n")


def write_changes(path: Path, rows: int, count: int, start_pos: int, seed: int) -> None:
    """Partial updates (two columns) of ``count`` random keys."""
    rnd = random.Random(seed)
    with open(path, "w") as out:
        for n, key in enumerate(rnd.sample(range(rows), count)):
            out.write(_line("U", start_pos + n, {"id": key, "status": "CHANGED", "qty": 99}) + "\n")


def apply(spark, staging: Path, files: list[Path], namespace: str, batch_id: str, buckets: int) -> dict[str, Any]:
    manifest = Manifest(
        source="bench-merge",
        batch_id=batch_id,
        format="goldengate-json",
        options={},
        keys={"*": ["id"]},
        namespace=namespace,
    )
    stage_files([str(f) for f in files], staging, manifest)
    report = run_batch(spark, staging / batch_id, buckets=buckets)
    shutil.rmtree(staging / batch_id, ignore_errors=True)
    return report


def seed_table(spark, work: Path, rows: int, namespace: str, buckets: int) -> tuple[str, float]:
    """A table of ``rows`` rows (ids 0..rows-1) and its change log; returns (name, seconds)."""
    from pyspark.sql import functions as F

    started = time.perf_counter()
    first = work / f"seed-{namespace}.json"
    write_inserts(first, 1)
    apply(spark, work / "staging", [first], namespace, f"seed-{namespace}", buckets)
    name = f"lake.{namespace}.orders"
    if rows > 1:
        ids = spark.range(1, rows)
        key = F.concat(F.lit("["), F.col("id").cast("string"), F.lit("]"))
        cols = {
            "id": F.col("id"),
            "customer": F.concat(F.lit("C"), (F.col("id") % 9973).cast("string")),
            "amount": F.col("id") * 0.5,
            "qty": F.col("id") % 17,
            "status": F.lit("NEW"),
            "note": F.lit(NOTE),
        }
        meta = {
            "_cdc_op": F.lit("INSERT"),
            "_cdc_seq": F.lpad((F.col("id") + 1).cast("string"), 32, "0"),
            "_cdc_ts": F.lit("2024-01-01 00:00:00").cast("timestamp"),
            "_cdc_batch": F.lit("seed"),
            "_cdc_bucket": F.pmod(F.crc32(key.cast("binary")), F.lit(buckets)).cast("int"),
            "_cdc_key": key,  # merge-on-read matches rows on it (the table is created with cdclake.row-keys=1)
        }

        def json_text(column: str):
            value = cols[column]
            return F.concat(F.lit('"'), value, F.lit('"')) if column in ("customer", "status", "note") else value

        after = F.create_map(*[x for c in cols for x in (F.lit(c), json_text(c).cast("string"))])
        log = {
            "_key": key,
            "_old_key": F.lit(None).cast("string"),
            "_cdc_bucket": meta["_cdc_bucket"],
            "_role": F.lit("main"),
            "op": F.lit("INSERT"),
            "seq": meta["_cdc_seq"],
            "event_ts": meta["_cdc_ts"],
            "after": after,
            "_cdc_batch": F.lit("seed"),
        }
        for target, values in ((name, {**cols, **meta}), (name + "__changes", log)):
            schema = spark.table(target).schema
            select = [
                (values[f.name] if f.name in values else F.lit(None)).cast(f.dataType).alias(f.name) for f in schema
            ]
            ids.select(*select).writeTo(target).append()
    return name, time.perf_counter() - started


def add_history(spark, name: str, rows: int, events_per_key: int, batches: int, buckets: int) -> float:
    """Older events behind every key of a seeded table: ``events_per_key`` partial updates per key,
    appended to its change log in ``batches`` commits (so the log holds their files and snapshots as
    if that many batches had run). Their seqs sort below the key's insert (``<id>.<n>`` < ``<id+1>``),
    so the rows stay as seeded and the log stays consistent with them. Returns seconds."""
    from pyspark.sql import functions as F

    started = time.perf_counter()
    log_name = name + "__changes"
    schema = spark.table(log_name).schema
    total = rows * events_per_key
    per_batch = -(-total // batches)
    for index in range(batches):
        events = spark.range(index * per_batch, min(total, (index + 1) * per_batch))
        key_id = F.col("id") % rows
        key = F.concat(F.lit("["), key_id.cast("string"), F.lit("]"))
        seq = F.concat(
            F.lpad(key_id.cast("string"), 32, "0"),
            F.lit("."),
            F.lpad((F.col("id") / rows).cast("long").cast("string"), 6, "0"),
        )
        values = {
            "_key": key,
            "_old_key": F.lit(None).cast("string"),
            "_cdc_bucket": F.pmod(F.crc32(key.cast("binary")), F.lit(buckets)).cast("int"),
            "_role": F.lit("main"),
            "op": F.lit("UPDATE"),
            "seq": seq,
            "event_ts": F.lit("2023-12-31 00:00:00").cast("timestamp"),
            "after": F.create_map(F.lit("id"), key_id.cast("string"), F.lit("status"), F.lit('"OLD"')),
            "_cdc_batch": F.lit(f"history-{index}"),
        }
        select = [(values[f.name] if f.name in values else F.lit(None)).cast(f.dataType).alias(f.name) for f in schema]
        writer = events.select(*select).writeTo(log_name)
        writer.option(f"snapshot-property.{BATCH_PROPERTY}", f"history-{index}").append()
    return time.perf_counter() - started


def history_case(
    spark,
    work: Path,
    rows: int,
    events_per_key: int,
    history_batches: int,
    buckets: int,
    batch_events: int = 1000,
    repeats: int = 9,
    log=print,
) -> dict[str, Any]:
    """Batches of ``batch_events`` partial updates, warm, from landing file to committed table: onto a table
    with a short history (its seed only) and onto one with ``events_per_key`` logged events per key in
    ``history_batches`` earlier commits. ``repeats`` batches each, the two tables' batches taken in turn so that
    the machine's drift falls on both alike; their medians and means. Then one batch on the long history with
    row state off (every key refolded from its log: what the history costs without it).

    Why in turn and nine of each: every few batches a bucket's delete files are folded away by an overwrite
    (the maintenance rule), a batch two to three times the others. Three batches of one table, then three of the
    other, gave medians whose ratio moved from 1.10 to 1.28 between two runs of the same code."""
    import os
    import statistics

    work.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"rows": rows, "events_per_key": events_per_key, "history_batches": history_batches}
    pos = 10 * rows
    names: dict[str, tuple[str, str]] = {}
    for case in ("short", "long"):
        namespace = f"bench_history_{case}_{rows}"
        name, seed_s = seed_table(spark, work, rows, namespace, buckets)
        if case == "long":
            seed_s += add_history(spark, name, rows, events_per_key, history_batches, buckets)
            summary = spark.sql(f"SELECT summary FROM {name}__changes.snapshots ORDER BY committed_at DESC LIMIT 1")
            totals = summary.first()["summary"]
            out["log_rows"] = int(totals.get("total-records", 0))
            out["log_files"] = int(totals.get("total-data-files", 0))
        names[case] = (namespace, name)
        log(f"history case: {case} history seeded in {seed_s:.1f}s")

    def one_batch(case: str, mode: str, n: int) -> tuple[float, str | None]:
        nonlocal pos
        path = work / f"history-{case}-{mode}-{n}.json"
        write_changes(path, rows, batch_events, pos, seed=1000 + n)
        pos += batch_events
        previous = os.environ.get("CDCLAKE_ROW_STATE")
        os.environ["CDCLAKE_ROW_STATE"] = "1" if mode == "row-state" else "0"
        try:
            started = time.perf_counter()
            report = apply(spark, work / "staging", [path], names[case][0], f"hist-{case}-{mode}-{n}", buckets)
            wall = time.perf_counter() - started
        finally:
            if previous is None:
                os.environ.pop("CDCLAKE_ROW_STATE", None)
            else:
                os.environ["CDCLAKE_ROW_STATE"] = previous
        path.unlink()
        return wall, report["tables"].get(TABLE, {}).get("fold")

    one_batch("short", "row-state", -1)  # warms the session up (JIT, caches): not counted
    runs: dict[tuple[str, str], list[tuple[float, str | None]]] = {
        ("short", "row-state"): [],
        ("long", "row-state"): [],
    }
    for n in range(repeats):
        for case in ("short", "long"):
            runs[(case, "row-state")].append(one_batch(case, "row-state", n))
    runs[("long", "log")] = [one_batch("long", "log", 0)]
    for (case, mode), done in runs.items():
        walls = [w for w, _ in done]
        out[f"{case}_{mode}_s"] = round(statistics.median(walls), 2)
        out[f"{case}_{mode}_mean_s"] = round(statistics.fmean(walls), 2)
        out[f"{case}_{mode}_all_s"] = [round(w, 2) for w in walls]
        out[f"{case}_{mode}_fold"] = done[-1][1]
        log(f"history case: {case} {mode}: {out[f'{case}_{mode}_all_s']} ({done[-1][1]})")
    for _, name in names.values():
        spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
        spark.sql(f"DROP TABLE IF EXISTS {name}__changes PURGE")
    out["ratio"] = round(out["long_row-state_s"] / out["short_row-state_s"], 2)
    out["mean_ratio"] = round(out["long_row-state_mean_s"] / out["short_row-state_mean_s"], 2)
    return out


def parse_size(text: str) -> int:
    text = text.strip().lower()
    factor = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    return int(float(text.rstrip("km")) * factor)


BATCHES = (("1 row", 0), ("0.1%", 1000), ("1%", 100), ("10%", 10))


def run_curve(
    spark, work: Path, sizes: list[int], buckets: int, max_batch: int | None = None, log=print
) -> list[dict[str, Any]]:
    """Seed each size, then apply the change batches; one result per batch."""
    work.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    for size in sizes:
        namespace = f"bench_merge_{size}_{buckets}"
        name, seed_s = seed_table(spark, work, size, namespace, buckets)
        log(f"merge curve: seeded {size} rows in {seed_s:.1f}s")
        pos = size + 1
        for label, divisor in BATCHES:
            count = 1 if divisor == 0 else max(1, size // divisor)
            if max_batch is not None and count > max_batch:
                results.append({"rows": size, "batch": label, "events": count, "skipped": True})
                continue
            path = work / f"change-{size}-{count}.json"
            write_changes(path, size, count, pos, seed=count)
            pos += count
            started = time.perf_counter()
            report = apply(spark, work / "staging", [path], namespace, f"merge-{size}-{count}-{buckets}", buckets)
            seconds = time.perf_counter() - started
            path.unlink()
            table = report["tables"].get(TABLE, {})
            result = {
                "rows": size,
                "seed_s": round(seed_s, 1),
                "batch": label,
                "events": report["events"],
                "applied": report["applied"],
                "seconds": round(seconds, 1),
                "files_removed": table.get("files_removed"),
                "files_added": table.get("files_added"),
                "files_total": table.get("files_total"),
                "delete_files_added": table.get("delete_files_added"),
                "delete_files_total": table.get("delete_files_total"),
                "rows_rewritten": table.get("rows_rewritten"),
                "merge_mode": table.get("merge_mode"),
                "buckets_rewritten": table.get("buckets_rewritten"),
                "buckets": table.get("buckets"),
            }
            results.append(result)
            log(f"merge curve: {json.dumps(result)}")
        check = (
            spark.table(name).selectExpr("count(*) AS n", "count_if(customer IS NULL OR note IS NULL) AS bad").first()
        )
        results.append(
            {"rows": size, "batch": "check", "rows_after": check["n"], "rows_with_lost_columns": check["bad"]}
        )
        log(f"merge curve: {size} rows -> {check['n']} rows after the batches, {check['bad']} with lost columns")
        spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
        spark.sql(f"DROP TABLE IF EXISTS {name}__changes PURGE")
    return results


def main(argv: list[str] | None = None) -> int:
    """The merge curve alone (``python -m cdclake.bench_merge`` runs this too)."""
    from cdclake.runtime.spark import build_session

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default=None, help="one table size (old bench_merge flag)")
    parser.add_argument("--sizes", default="1M", help="comma-separated table sizes, e.g. 1M,4M,16M")
    parser.add_argument("--buckets", type=int, default=Settings.from_env().buckets)
    parser.add_argument("--max-batch", type=int, default=None, help="skip batches with more events than this")
    parser.add_argument("--out", default=None, help="write the results as JSON here too")
    args = parser.parse_args(argv)
    sizes = [parse_size(args.rows)] if args.rows else [parse_size(s) for s in args.sizes.split(",")]
    work = Path(tempfile.mkdtemp(prefix="cdclake-bench-merge-"))
    spark = build_session("cdclake-bench-merge", work / "warehouse", master="local[*]", jars=Settings.from_env().jars())
    try:
        results = run_curve(spark, work, sizes, args.buckets, args.max_batch)
    finally:
        spark.stop()
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
