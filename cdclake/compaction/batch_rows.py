"""A table's batch as change-log rows: routed (typed, keyed, bucketed, or quarantined), then appended once.

Where the batch is routed decides where the rest of its merge runs: in the driver over Arrow (a batch
of at most ``driver_fold_rows`` events, or the bulk path's bound) or in Spark on the workers (larger).
The driver path keeps the rows and the affected keys in hand; Spark's leaves them in a routed folder,
counted by one job.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from cdclake.compaction.driver_io import (
    append_in_driver,
    batch_events,
    bulk_bound,
    events_arrow,
    table_events,
    to_frame,
)
from cdclake.compaction.lake_tables import LOG_DDL, LOG_SUFFIX, ROUTED_DDL, ROUTED_SCHEMA
from cdclake.compaction.lineage import snapshot_info
from cdclake.compaction.publish import unshuffled
from cdclake.compaction.routing import route_events
from cdclake.compaction.switches import driver_commits_enabled, driver_fold_rows
from cdclake.lake.tables import BATCH_PROPERTY
from cdclake.runtime.faults import fault_point
from cdclake.schema.evolution import ColumnMap


@dataclass
class Target:
    """The lake table a batch is applied to, as the compact step knows it (``tables.json``'s layout)."""

    name: str
    keys: list[str]
    columns: list[tuple[str, str]]
    buckets: int
    cmap: ColumnMap
    identifier: str
    scd2: bool

    @property
    def log_name(self) -> str:
        return self.name + LOG_SUFFIX

    @property
    def types(self) -> dict[str, str]:
        return dict(self.columns)


@dataclass
class RoutedBatch:
    """This batch's change-log rows of one table, and what routing them found."""

    #: routed in the driver: ``good_arrow`` and ``key_set`` are in hand; else ``good`` is a Spark frame
    in_driver: bool
    #: the bound of every driver read of this batch's merge (raised to the bulk bound on the bulk path)
    limit: int
    quarantined: int
    has_good: bool
    #: the batch's truncates (logged by the truncate step; routing drops them)
    truncates: int
    good_arrow: pa.Table | None = None
    good: Any = None
    #: the keys (and old keys) of its rows, when routed in the driver
    key_set: set[str] | None = None


def write_quarantine(errors, path: Path) -> None:
    """Rows routing refused (a Spark frame with ``_error``), with their source file and offset."""
    from pyspark.sql import functions as F

    errors.select(
        F.col("_error").alias("error"),
        "source_file",
        "source_offset",
        F.to_json(F.struct("op", "seq", "before", "after")).cast("binary").alias("raw"),
    ).write.mode("overwrite").parquet(str(path))


def route_batch(spark, batch_dir: Path, batch_id: str, source_table: str, target: Target) -> RoutedBatch:
    """This batch's events of ``source_table`` -> change-log rows (quarantining those routing refuses)."""
    from pyspark.sql import functions as F

    quarantine_dir = batch_dir / "quarantine" / "compact" / target.identifier
    keys, types, buckets, cmap = target.keys, target.types, target.buckets, target.cmap
    limit = driver_fold_rows()
    expected = table_events(batch_dir, source_table)
    # a table without its key columns (made by a truncate-only batch, or keys that name no column) has no
    # keyed row in its log: every row event is quarantined, and the fold has nothing to distribute
    keyless = not set(keys) <= set(types)
    in_driver = expected is not None and (expected <= limit or keyless)
    bulk_limit = None if in_driver else bulk_bound(spark, batch_dir / "changelog", source_table, expected)
    if bulk_limit is not None:
        # the bulk path: the fold's plain keys at native speed in the driver (arrow_fold), every bound of
        # this batch's driver reads raised to it
        in_driver, limit = True, bulk_limit
    if in_driver:  # routed here: one job reads the events, nothing is written or counted by Spark
        ev_arrow = events_arrow(spark, batch_dir / "changelog", source_table)
        routed_arrow = pa.Table.from_batches(
            list(route_events(ev_arrow.to_batches(), keys, types, buckets, batch_id, cmap)), schema=ROUTED_SCHEMA
        )
        is_error = pc.is_valid(routed_arrow["_error"])
        quarantined = pc.sum(is_error).as_py() or 0
        if quarantined:
            errors_frame = to_frame(spark, routed_arrow.filter(is_error), ROUTED_DDL)
            write_quarantine(errors_frame, quarantine_dir)
        good_arrow = routed_arrow.filter(pc.invert(is_error)) if quarantined else routed_arrow  # no copy: most
        good_arrow = good_arrow.drop_columns(["_error"])
        named = pa.chunked_array(good_arrow["_key"].chunks + good_arrow["_old_key"].chunks, pa.string())
        key_set = set(pc.unique(named).drop_null().to_pylist())
        return RoutedBatch(
            in_driver=True,
            limit=limit,
            quarantined=quarantined,
            has_good=good_arrow.num_rows > 0,
            truncates=pc.sum(pc.equal(ev_arrow["op"], "TRUNCATE")).as_py() or 0,
            good_arrow=good_arrow,
            key_set=key_set,
        )
    routed_dir = batch_dir / "routed" / target.identifier
    events = batch_events(spark, batch_dir / "changelog", source_table)
    routing = events.mapInArrow(lambda it: route_events(it, keys, types, buckets, batch_id, cmap), ROUTED_DDL)
    routing.write.mode("overwrite").parquet(str(routed_dir))
    routed = spark.read.parquet(str(routed_dir))
    # one job counts what three did: the quarantined rows, the good ones, and the batch's truncates
    # (logged by the truncate step; routing drops them, so they are counted on the events)
    tally = (
        routed.select(F.col("_error").isNotNull().alias("bad"), F.lit(False).alias("truncate"))
        .unionByName(
            events.where(F.col("op") == "TRUNCATE").select(F.lit(False).alias("bad"), F.lit(True).alias("truncate"))
        )
        .agg(
            F.count(F.when(F.col("bad"), 1)).alias("bad"),
            F.count(F.when(~F.col("bad") & ~F.col("truncate"), 1)).alias("good"),
            F.count(F.when(F.col("truncate"), 1)).alias("truncates"),
        )
        .first()
    )
    if tally["bad"]:
        write_quarantine(routed.where("_error IS NOT NULL"), quarantine_dir)
    return RoutedBatch(
        in_driver=False,
        limit=limit,
        quarantined=tally["bad"],
        has_good=tally["good"] > 0,
        truncates=tally["truncates"],
        good=routed.where("_error IS NULL").drop("_error"),
    )


def append_to_log(spark, target: Target, batch_id: str, batch: RoutedBatch, logged: set[str] | None = None) -> None:
    """Append the batch's rows to the change log, once: a log already holding the batch is left as is.
    ``logged``: the batch ids the log's history holds, where the caller has just read them."""
    fault_point("compact:before-log-append")
    if logged is None and batch.has_good:
        logged = snapshot_info(spark, target.log_name)
    if batch.has_good and batch_id not in logged:  # type: ignore[operator]
        appended = (
            batch.in_driver
            and driver_commits_enabled()
            and append_in_driver(spark, target.log_name, batch.good_arrow, batch_id)
        )
        if not appended:
            # the driver's few rows in one task, without Iceberg's shuffle by bucket: one file per bucket
            # as after the shuffle, one Spark job less (benchmarks/scripts/merge_distribution.py)
            rows = to_frame(spark, batch.good_arrow, LOG_DDL).coalesce(1) if batch.in_driver else batch.good
            with unshuffled(spark, batch.in_driver):
                rows.writeTo(target.log_name).option(f"snapshot-property.{BATCH_PROPERTY}", batch_id).append()
    fault_point("compact:after-log-append")
