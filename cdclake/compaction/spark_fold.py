"""Folds Spark runs: a table batch too large for the driver, folded on Python workers by the same Arrow fold
the driver runs (``arrow_fold.fold_driver``; per bucket, each key-change component in its home's), and the SCD2
history rewrite, on either path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from cdclake.compaction.arrow_fold import fold_driver
from cdclake.compaction.folding import alias_names, fold_history_part, fold_part, real_names, with_aliases, with_names
from cdclake.compaction.lake_tables import (
    HISTORY_META_DDL,
    HISTORY_META_NAMES,
    META_DDL,
    META_NAMES,
    TRUNCATE_BUCKET,
    table_ddl,
)
from cdclake.compaction.lineage import fresh_snapshot_id, snapshot_info
from cdclake.compaction.publish import validated_writer
from cdclake.compaction.routing import component_homes, with_part
from cdclake.compaction.strategy import MERGE_ON_READ
from cdclake.compaction.switches import native_fold_enabled
from cdclake.lake.tables import BATCH_PROPERTY
from cdclake.runtime.faults import fault_point
from cdclake.schema.evolution import ColumnMap

if TYPE_CHECKING:
    from cdclake.jobs.layout import TableLayout


def with_event_part(spark, log_events, part_of: dict[str, int]):
    """``_cdc_part`` of each logged event: its key's component home, else its bucket (a broadcast join of
    the few keys in key-change components, not a Python UDF over every event)."""
    from pyspark.sql import functions as F

    if not part_of:
        return log_events.withColumn("_cdc_part", F.col("_cdc_bucket"))
    homes = F.broadcast(spark.createDataFrame(sorted(part_of.items()), "_home_key string, _home int"))
    joined = log_events.join(homes, log_events["_key"] == homes["_home_key"], "left")
    return joined.withColumn("_cdc_part", F.coalesce(F.col("_home"), F.col("_cdc_bucket"))).drop("_home_key", "_home")


def _out_ddl(columns: list[tuple[str, str]]) -> str:
    """The workers' fold output: the table's columns under their aliases, the hidden columns, kind and info."""
    aliased = list(zip(alias_names(columns), [t for _, t in columns], strict=True))
    return table_ddl(aliased, META_DDL, "_cdc_kind string, _cdc_info string")


def fold_parts(ev_parted, fold_args: dict[str, Any]):
    """Each ``_cdc_part`` of the logged events (a bucket, or a key-change component's home: see
    :func:`with_event_part`) folded on a Python worker by the Arrow fold (the reference, ``fold_part``, where
    ``Settings.native_fold`` is off), as the driver folds: rows, gone markers and stats, columns under aliases."""
    aliases = alias_names(fold_args["columns"])
    fold_fn = fold_driver if native_fold_enabled() else fold_part

    def fold_events(ev: pa.Table) -> pa.Table:
        return with_names(fold_fn(ev, None, markers=True, **fold_args), aliases)

    return ev_parted.groupBy("_cdc_part").applyInArrow(fold_events, _out_ddl(fold_args["columns"]))


def fold_on_workers(
    spark,
    name: str,
    batch_dir: Path,
    layout: TableLayout,
    log_events,
    mode: str,
    rewrite_buckets: list[int],
    fold_args: dict[str, Any],
    pairs: set[tuple[str, str]] | None = None,
    keyed: bool = False,
    has_rows: bool = True,
):
    """The distributed fold: each bucket's events on a Python worker, by the driver's Arrow fold, each key-change
    component with the events of its home bucket (that of its smallest key); ``keyed``: every current row has
    its ``_cdc_key`` (what passing the untouched rows through in Spark needs); ``has_rows`` False: the
    table had no snapshot when read (the validated overwrite fails if one appears), so no rows pass through.

    Returns (the commit's source frame, the MERGE's buckets, stats, part_of, the events with their worker).
    """
    from pyspark.sql import functions as F

    columns, keys, buckets = fold_args["columns"], fold_args["keys"], fold_args["buckets"]
    if pairs is None:  # the linked-key search did not run (full refold): the pairs of the events read
        found = log_events.where("_old_key IS NOT NULL").select("_key", "_old_key").distinct().collect()
        pairs = {(r["_key"], r["_old_key"]) for r in found}
    part_of = component_homes(sorted(pairs), buckets)

    ev_parted = with_event_part(spark, log_events, part_of)

    # data columns under aliases on the Spark side (see alias_names); the folds see the real names
    names, aliases = [n for n, _ in columns], alias_names(columns)
    aliased = list(zip(aliases, [t for _, t in columns], strict=True))
    alias_keys = [aliases[names.index(k)] for k in keys]
    out_ddl = _out_ddl(columns)
    fold_fn = fold_driver if native_fold_enabled() else fold_part  # the Arrow fold, as in the driver

    cmap = fold_args["cmap"]
    # keyed, no renamed or dropped column: the fold reads only the affected keys' logs, and for an overwrite the
    # touched buckets' other rows pass through in Spark (never through Python), as the driver's fold does
    kept_in_spark = mode != MERGE_ON_READ and keyed and not (cmap and (cmap.renames or cmap.dropped))
    if mode == MERGE_ON_READ or kept_in_spark:
        folded = fold_parts(ev_parted, fold_args)
        if kept_in_spark and has_rows and rewrite_buckets:  # a table without rows yet passes nothing through
            folded = folded.unionByName(_kept_rows(spark, name, log_events, rewrite_buckets, fold_args))
    else:
        current = spark.table(name).where(F.col("_cdc_bucket").isin(rewrite_buckets))
        current = with_part(
            with_aliases(current, columns, META_NAMES), part_of, alias_keys, table_ddl(aliased, META_DDL)
        )

        def fold(ev: pa.Table, rows: pa.Table) -> pa.Table:
            return with_names(fold_fn(ev, with_names(rows, names), **fold_args), aliases)

        folded = ev_parted.groupBy("_cdc_part").cogroup(current.groupBy("_cdc_part")).applyInArrow(fold, out_ddl)

    merged_dir = batch_dir / "merged" / layout.identifier
    fault_point("compact:before-write")
    folded.write.mode("overwrite").parquet(str(merged_dir))
    merged = spark.read.schema(out_ddl).parquet(str(merged_dir))
    stats = {"applied": 0, "stale": 0, "deleted_keys": 0}
    for r in merged.where("_cdc_kind = 'stats'").select("_cdc_info").collect():
        for k, v in json.loads(r["_cdc_info"]).items():
            stats[k] += v
    merge_buckets: list[int] = []
    if mode == MERGE_ON_READ:
        source = real_names(merged.where("_cdc_kind IN ('row', 'gone')"), columns, [*META_NAMES, "_cdc_kind"])
        # the buckets of the fold's keys (= the touched buckets, unless a key-change chain was cut short)
        merge_buckets = sorted({r["_cdc_bucket"] for r in source.select("_cdc_bucket").distinct().collect()})
    else:
        source = real_names(merged.where("_cdc_kind = 'row'"), columns, META_NAMES)
    return source, merge_buckets, stats, part_of, ev_parted


def _kept_rows(spark, name: str, log_events, rewrite_buckets: list[int], fold_args: dict[str, Any]):
    """The touched buckets' current rows of keys the log does not name (new or old key), under the fold's
    aliases and marked ``row``: what an overwrite passes through untouched."""
    from pyspark.sql import functions as F

    columns, truncate_seq = fold_args["columns"], fold_args["truncate_seq"]
    affected = (
        log_events.select(F.col("_key").alias("k"))
        .union(log_events.where("_old_key IS NOT NULL").select(F.col("_old_key").alias("k")))
        .distinct()
    )
    current = spark.table(name).where(F.col("_cdc_bucket").isin(rewrite_buckets))
    kept = current.join(affected, current["_cdc_key"] == affected["k"], "left_anti")
    if truncate_seq is not None:  # rows whose events are not in the log (a table older than its log)
        kept = kept.where(F.coalesce(F.col("_cdc_seq"), F.lit("")) >= F.lit(truncate_seq))
    return with_aliases(kept, columns, META_NAMES).select(
        "*", F.lit("row").alias("_cdc_kind"), F.lit(None).cast("string").alias("_cdc_info")
    )


def write_history(
    spark,
    hist: str,
    ev_parted,
    part_of: dict[str, int],
    affected_buckets: list[int],
    keys: list[str],
    columns: list[tuple[str, str]],
    buckets: int,
    batch_id: str,
    log,
    out_dir: Path,
    cmap: ColumnMap | None = None,
) -> None:
    from pyspark.sql import functions as F

    if batch_id in snapshot_info(spark, hist):
        return
    read_snapshot = fresh_snapshot_id(spark, hist)
    truncates = [
        (r["seq"], r["event_ts"])
        for r in log.where(F.col("_cdc_bucket") == TRUNCATE_BUCKET).select("seq", "event_ts").collect()
    ]
    names, aliases = [n for n, _ in columns], alias_names(columns)
    alias_keys = [aliases[names.index(k)] for k in keys]
    current = spark.table(hist).where(F.col("_cdc_bucket").isin(affected_buckets))
    ddl = table_ddl(list(zip(aliases, [t for _, t in columns], strict=True)), HISTORY_META_DDL)
    current = with_part(with_aliases(current, columns, HISTORY_META_NAMES), part_of, alias_keys, ddl)

    def fold(ev: pa.Table, rows: pa.Table) -> pa.Table:
        out = fold_history_part(
            ev, with_names(rows, names), keys=keys, columns=columns, buckets=buckets, truncates=truncates, cmap=cmap
        )
        return with_names(out, aliases)

    ev_parted.groupBy("_cdc_part").cogroup(current.groupBy("_cdc_part")).applyInArrow(fold, ddl).write.mode(
        "overwrite"
    ).parquet(str(out_dir))
    writer = (
        real_names(spark.read.schema(ddl).parquet(str(out_dir)), columns, HISTORY_META_NAMES)
        .writeTo(hist)
        .option(f"snapshot-property.{BATCH_PROPERTY}", batch_id)
    )
    validated_writer(writer, read_snapshot).overwrite(F.col("_cdc_bucket").isin(affected_buckets))
