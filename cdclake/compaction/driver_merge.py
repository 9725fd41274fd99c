"""The fold in the driver: a batch's merge when each of its inputs (the affected keys' logged events, the
rows a bucket overwrite passes through) is known to be small after one bounded read; else None, and the
workers fold it (``spark_fold.fold_on_workers``). Both give a :class:`Folded`, ready to commit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from cdclake.compaction.affected import LOG_READ_FACTOR, Affected
from cdclake.compaction.arrow_fold import fold_driver
from cdclake.compaction.batch_rows import RoutedBatch, Target
from cdclake.compaction.driver_io import buckets_in_driver, kept_rows, parted_in_driver, to_frame
from cdclake.compaction.driver_read import read_log
from cdclake.compaction.folding import fold_part
from cdclake.compaction.lake_tables import LOG_SCHEMA, META_DDL, table_ddl
from cdclake.compaction.lineage import head_summary
from cdclake.compaction.row_state import fold_onto_rows
from cdclake.compaction.strategy import MERGE_ON_READ
from cdclake.compaction.switches import native_fold_enabled
from cdclake.runtime.faults import fault_point


@dataclass
class Folded:
    """A batch's fold, ready to commit."""

    stats: dict[str, int]
    #: merge-on-read: the buckets its rows and gone markers touch
    merge_buckets: list[int] | None
    #: the commit's rows as a Spark frame (None: the driver commits its own rows, or builds it when needed)
    source: Any
    #: folded in the driver (its rows in ``picked`` / ``rows_out``)
    in_driver: bool = False
    #: merge-on-read, driver: the rows and ``gone`` markers
    picked: pa.Table | None = None
    #: overwrite, driver: the rewritten buckets' rows the fold gives
    rows_out: pa.Table | None = None
    #: the overwrite's source passes a bucket's untouched rows through from Spark
    kept_in_spark: bool = False
    #: SCD2: each key-change component's home part, and the events with their part
    part_of: dict[str, int] = field(default_factory=dict)
    ev_parted: Any = None


def fold_in_driver(
    spark,
    target: Target,
    batch: RoutedBatch,
    affected: Affected,
    mode: str,
    rewrite_buckets: list[int],
    fold_args: dict[str, Any],
    main_done: bool,
) -> Folded | None:
    """Fold in the driver when its inputs fit its bounds (see the module docstring); None when they do not."""
    name, log_name, buckets = target.name, target.log_name, target.buckets
    limit, good_arrow = batch.limit, batch.good_arrow
    key_set, full, whole_log = affected.key_set, affected.full, affected.whole_log
    # the batch's own rows are in hand already, so the bound is on what the log adds to them (a key change is
    # logged twice: a batch at the bound of events routes to more rows than that)
    log_bound = limit + good_arrow.num_rows
    log_in_driver = None  # the touched buckets of a log of bounded size: read without Spark
    if batch.in_driver and key_set and not full and not whole_log:
        log_rows = int(head_summary(spark, log_name).get("total-records", 0))
        if log_rows * len(affected.buckets) <= LOG_READ_FACTOR * limit * buckets:
            log_in_driver = read_log(spark, log_name, LOG_SCHEMA, buckets=affected.buckets)
    if whole_log and not main_done:  # the log holds this batch's rows alone: they are in hand
        bucket = good_arrow["_cdc_bucket"]
        low = pc.min(bucket).as_py()
        keyed = bucket.null_count == 0 and (low is None or low >= 0)  # most batches: no copy of their images
        logged_arrow = good_arrow if keyed else good_arrow.filter(pc.greater_equal(bucket, 0))
    elif log_in_driver is not None:  # its buckets read by pyiceberg, keys picked in Arrow
        wanted = pa.array(sorted(key_set), pa.string())
        logged_arrow = log_in_driver.filter(
            pc.or_(
                pc.is_in(log_in_driver["_key"], wanted),
                pc.fill_null(pc.is_in(log_in_driver["_old_key"], wanted), False),
            )
        )
    elif key_set or key_set is None or full or whole_log:
        # a log no larger than the bound is read whole-query (one job); a larger one through a limit (Spark
        # then collects partition by partition, several jobs) so a long history stays bounded
        log_rows = int(head_summary(spark, log_name).get("total-records", log_bound + 1))
        log_events = affected.log_events_frame(spark, buckets)
        logged_arrow = (log_events if log_rows <= log_bound else log_events.limit(log_bound + 1)).toArrow()
    else:  # every key folds onto its row: no log is read
        logged_arrow = LOG_SCHEMA.empty_table()
    if logged_arrow.num_rows > log_bound:  # a log read through the limit is one row over
        return None
    rows_arrow, by_pyiceberg = _rows_passed_through(spark, target, batch, affected, mode, rewrite_buckets)
    # keyed, no rows read: the fold gives the affected keys' rows and gone markers; the buckets' other rows
    # pass through in Spark (kept_rows), not through the driver. An empty table (no snapshot when read; the
    # validated overwrite fails if one appears) has none: its rows are the driver's alone
    kept_in_spark = mode != MERGE_ON_READ and affected.keyed and rows_arrow is None
    kept_in_spark = kept_in_spark and affected.read_snapshot is not None
    if not (rows_arrow is None or by_pyiceberg or rows_arrow.num_rows <= limit):  # pyiceberg's: its own bound
        return None
    fault_point("compact:before-write")
    markers = mode == MERGE_ON_READ or kept_in_spark
    fold_fn = fold_driver if native_fold_enabled() else fold_part
    folded_arrow = fold_fn(logged_arrow, rows_arrow, markers=markers, **fold_args)
    in_order = affected.in_order
    if in_order:
        in_order_array = pa.array(sorted(in_order))
        batch_events = good_arrow.filter(pc.is_in(good_arrow["_key"], in_order_array))
        their_rows = affected.state_rows.filter(pc.is_in(affected.state_rows["_cdc_key"], in_order_array))
        state_args = {k: v for k, v in fold_args.items() if k != "truncate_seq"}
        folded_arrow = pa.concat_tables([folded_arrow, fold_onto_rows(batch_events, their_rows, **state_args)])

    kinds = folded_arrow["_cdc_kind"]
    stats = {"applied": 0, "stale": 0, "deleted_keys": 0}
    for info in folded_arrow.filter(pc.equal(kinds, "stats"))["_cdc_info"].to_pylist():
        for k, v in json.loads(info).items():
            stats[k] += v
    columns = target.columns
    folded = Folded(stats=stats, merge_buckets=None, source=None, in_driver=True, kept_in_spark=kept_in_spark)
    if mode == MERGE_ON_READ:
        folded.picked = folded_arrow.filter(pc.is_in(kinds, pa.array(["row", "gone"]))).drop_columns(["_cdc_info"])
        folded.merge_buckets = sorted(set(folded.picked["_cdc_bucket"].to_pylist()))
        if not affected.direct:  # a row delta needs no frame
            folded.source = to_frame(spark, folded.picked, table_ddl(columns, META_DDL, "_cdc_kind string"))
    else:
        folded.rows_out = folded_arrow.filter(pc.equal(kinds, "row")).drop_columns(["_cdc_kind", "_cdc_info"])
        # a frame of them only for Spark's overwrite (the driver commits its rows alone itself)
        if not affected.direct or kept_in_spark:
            folded.source = to_frame(spark, folded.rows_out, table_ddl(columns, META_DDL))
        if kept_in_spark:
            folded_keys = folded_arrow.filter(pc.is_in(kinds, pa.array(["row", "gone"])))["_cdc_key"]
            kept = kept_rows(spark, name, rewrite_buckets, set(folded_keys.to_pylist()), affected.truncate_seq, columns)
            folded.source = folded.source.union(kept)
    if target.scd2:  # what the SCD2 history reads, as a frame: only for a table that keeps one
        folded.ev_parted, folded.part_of = parted_in_driver(spark, logged_arrow, buckets)
    return folded


def _rows_passed_through(
    spark, target: Target, batch: RoutedBatch, affected: Affected, mode: str, rewrite_buckets: list[int]
) -> tuple[pa.Table | None, bool]:
    """A bucket overwrite's current rows of the rewritten buckets, where the driver can read them (None:
    merge-on-read reads none; else Spark passes them through), and whether pyiceberg read them whole (bounded
    by ``DRIVER_OVERWRITE_ROWS``, not by the batch's limit)."""
    from pyspark.sql import functions as F

    if mode == MERGE_ON_READ:
        return None, False
    table_arrow = affected.table_arrow
    if table_arrow is not None:
        # the small table read for the row state: its rewritten buckets, less the rows the row-state fold gives
        in_buckets = pc.is_in(table_arrow["_cdc_bucket"], pa.array(rewrite_buckets, pa.int32()))
        not_state = pc.invert(pc.is_in(table_arrow["_cdc_key"], pa.array(sorted(affected.in_order), pa.string())))
        return table_arrow.filter(pc.and_(in_buckets, not_state)), False
    if not affected.keyed:
        rows = spark.table(target.name).where(F.col("_cdc_bucket").isin(rewrite_buckets))
        return rows.limit(batch.limit + 1).toArrow(), False
    if affected.direct and affected.read_snapshot is not None:
        # a bucket overwrite (the maintenance rule) of a table of bounded size: its rewritten buckets read by
        # pyiceberg, so the rows pass through the driver's fold and its own commit, with no Spark job
        rows = buckets_in_driver(
            spark, target.name, affected.read_snapshot, rewrite_buckets, target.columns, affected.in_order
        )
        return rows, rows is not None
    return None, False
