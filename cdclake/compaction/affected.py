"""Which keys and buckets a batch's merge touches, and what it knows of them before folding.

Read after the change-log append, with the table's snapshot taken first: every batch committed to the
table by that snapshot has its events in the log read. The affected keys are the batch's keys and old
keys, less those that fold onto their current row (row state: every event of theirs follows the row,
``row_state.py``), plus every key linked to them by a key change anywhere in the log. A full rewrite
(full refresh, a truncate, rows without ``_cdc_key``) touches every bucket.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from cdclake.compaction.batch_rows import RoutedBatch, Target
from cdclake.compaction.driver_io import current_rows
from cdclake.compaction.driver_read import read_buckets, read_log
from cdclake.compaction.lake_tables import ROW_KEYS_PROPERTY, TRUNCATE_BUCKET
from cdclake.compaction.lineage import (
    bucket_has_files,
    fresh_snapshot_id,
    head_summary,
    only_batch,
    table_properties,
)
from cdclake.compaction.routing import linked_in_driver, linked_keys
from cdclake.compaction.row_delta import POSITION_COLUMNS, Located
from cdclake.compaction.row_state import candidate_keys, in_order_keys
from cdclake.compaction.switches import driver_commits_enabled, row_state_enabled
from cdclake.merge import bucket_of

#: The bulk path reads the change log's key changes, or its touched buckets, in the driver when they hold
#: at most this many times its bound in rows (more: a long history, searched and read through Spark).
LOG_READ_FACTOR = 2
PAIR_SCHEMA = pa.schema([("_key", pa.string()), ("_old_key", pa.string())])


@dataclass
class Affected:
    """What the merge of one table's batch touches (see the module docstring)."""

    #: the table's snapshot read before the log (None: an empty table)
    read_snapshot: int | None
    props: dict[str, str]
    #: every current row carries ``_cdc_key`` (else the table is rewritten once, with its keys)
    keyed: bool
    #: the change log (a Spark frame, planned lazily)
    log: Any
    #: the newest logged truncate's seq: older events are gone
    truncate_seq: str | None
    #: every bucket is rewritten from the log
    full: bool
    #: the log holds this batch alone (a table's first batch): nothing to search
    whole_log: bool
    #: commits are written by the driver (a row delta, its own overwrite)
    direct: bool
    #: the keys whose log is read and refolded (None: on the workers path, the routed rows' keys)
    key_set: set[str] | None
    buckets: list[int]
    #: keys that fold onto their current row, without their log
    in_order: set[str] = field(default_factory=set)
    state_rows: pa.Table | None = None
    #: a small table read whole, once
    table_arrow: pa.Table | None = None
    located: Located | None = None
    linked: list[str] = field(default_factory=list)
    #: every key change touching the affected keys, when searched
    link_pairs: set[tuple[str, str]] | None = None
    good: Any = None

    def keys_frame(self, spark):
        """The affected keys (with the linked ones) as a frame: built only where a Spark search or log read
        needs one, never on a table's first batch or the bulk path's pyiceberg reads."""
        from pyspark.sql import functions as F

        if self.key_set is not None:
            return spark.createDataFrame([(k,) for k in sorted(self.key_set)], "k string")
        good = self.good
        frame = (
            good.where("_key IS NOT NULL")
            .select(F.col("_key").alias("k"))
            .union(good.where("_old_key IS NOT NULL").select(F.col("_old_key").alias("k")))
            .distinct()
        )
        if self.linked:
            frame = frame.union(spark.createDataFrame([(k,) for k in self.linked], "k string")).distinct()
        return frame

    def log_events_frame(self, spark, buckets: int):
        """The affected keys' logged events as a Spark frame (planned only where Spark reads them)."""
        from pyspark.sql import functions as F

        log = self.log
        if self.full or self.whole_log:
            return log.where(F.col("_cdc_bucket") >= 0)
        in_buckets = log.where(F.col("_cdc_bucket").isin(self.buckets))
        wanted = self.keys_frame(spark)
        keyset = F.broadcast(wanted) if len(self.buckets) < buckets else wanted
        return in_buckets.join(keyset, in_buckets["_key"] == keyset["k"], "left_semi").union(
            in_buckets.join(keyset, in_buckets["_old_key"] == keyset["k"], "left_semi")
        )


def find_affected(
    spark,
    target: Target,
    batch: RoutedBatch,
    batch_id: str,
    full_refresh: bool,
    main_done: bool,
    row_state: bool = True,
    log_pending: Callable[[], None] | None = None,
) -> Affected:
    """The keys and buckets the batch's merge touches (see the module docstring); ``row_state`` False: no key
    folds onto its row (every key refolds from its log, its linked keys searched). ``log_pending``: the batch's
    log append is still running, into a log that held nothing before it (``table.appending_beside``): the log
    then holds this batch alone and is not read, unless a full rewrite needs it, after ``log_pending()`` (which
    waits for the append). ``Affected.log`` is then None: the driver's fold needs none (its caller waits
    and asks again where that fold declines)."""
    from pyspark.sql import functions as F

    name, log_name, buckets, limit = target.name, target.log_name, target.buckets, batch.limit
    read_snapshot = fresh_snapshot_id(spark, name)
    props = table_properties(spark, name)
    keyed = props.get(ROW_KEYS_PROPERTY) == "1"
    full = full_refresh or batch.truncates > 0 or not keyed  # not keyed: rows without _cdc_key, rewritten once
    if log_pending is not None and full:
        log_pending()
        log_pending = None
    log, truncate_seq, whole_log = None, None, True  # a log of this batch alone: no truncate, nothing to search
    if log_pending is None:
        spark.catalog.refreshTable(log_name)
        log = spark.table(log_name)
        # the watermark: the newest logged truncate (most logs have none: no job)
        if bucket_has_files(spark, log_name, TRUNCATE_BUCKET):
            wm_row = log.where(F.col("_cdc_bucket") == TRUNCATE_BUCKET).agg(F.max("seq").alias("wm")).first()
            truncate_seq = wm_row["wm"] if wm_row else None
        # a log holding only this batch (a table's first batch): every logged key is affected and every key
        # change is among the events read, so there is nothing to search and no key set to join
        whole_log = not full and only_batch(spark, log_name, batch_id)
    affected = Affected(
        read_snapshot=read_snapshot,
        props=props,
        keyed=keyed,
        log=log,
        truncate_seq=truncate_seq,
        full=full,
        whole_log=whole_log,
        # the merge-on-read commit as a row delta: the current-row reads also say where each row lives
        direct=batch.in_driver and driver_commits_enabled(),
        key_set=None if batch.key_set is None else set(batch.key_set),
        buckets=[],
        good=batch.good,
    )
    if (
        batch.in_driver
        and affected.key_set
        and not full
        and not whole_log
        and not main_done
        and read_snapshot is not None
        and not target.scd2
        and row_state
        and row_state_enabled()
    ):
        _fold_onto_rows(spark, target, batch, affected)
    key_set = affected.key_set
    if not full and not whole_log and (key_set is None or key_set):
        pairs = None
        # every key change of a log of bounded size, at once, by pyiceberg: no join rounds, no Spark job (on a
        # fresh application's first batch those took seconds a table)
        if batch.in_driver and key_set is not None:
            if int(head_summary(spark, log_name).get("total-records", 0)) <= LOG_READ_FACTOR * limit:
                pairs = read_log(spark, log_name, PAIR_SCHEMA, key_changes=True)
        if pairs is not None:
            affected.linked, affected.link_pairs = linked_in_driver(pairs, key_set)
        else:
            affected.linked, affected.link_pairs = linked_keys(spark, log_name, affected.keys_frame(spark), key_set)
    if affected.linked:
        if key_set is not None:
            key_set |= set(affected.linked)
        affected.in_order -= set(affected.linked)  # linked to a late key by a key change: its log is read too
    if full:
        affected.buckets = list(range(buckets))
    elif key_set is not None:
        # key_set | in_order is the batch's keys and old keys (whose buckets its routed rows carry: a key change
        # crossing buckets has a link row in its old key's) plus the linked keys: no key hashed again
        logged = pc.unique(batch.good_arrow["_cdc_bucket"]).drop_null().to_pylist()
        affected.buckets = sorted(set(logged) | {bucket_of(k, buckets) for k in affected.linked})
    elif whole_log:
        affected.buckets = sorted({r["_cdc_bucket"] for r in batch.good.select("_cdc_bucket").distinct().collect()})
    else:
        # a change-log row sits in its key's bucket, or (role "link") in its old key's: the batch's rows'
        # buckets are its keys' buckets, without collecting the keys
        logged = {r["_cdc_bucket"] for r in batch.good.select("_cdc_bucket").distinct().collect()}
        affected.buckets = sorted(logged | {bucket_of(k, buckets) for k in affected.linked})
    return affected


def _fold_onto_rows(spark, target: Target, batch: RoutedBatch, affected: Affected) -> None:
    """Row state: the batch's keys whose events all follow their current row fold onto it, without their
    log; they leave ``key_set`` for ``in_order``, with their rows in ``state_rows``."""
    candidates = candidate_keys(batch.good_arrow)
    if not candidates:
        return
    name, limit, direct = target.name, batch.limit, affected.direct
    # a small table is read whole, once: the rows of the candidates, and the rows a bucket overwrite passes
    # through (no second scan in Spark)
    records = int(head_summary(spark, name).get("total-records", limit + 1))
    if records <= limit:
        table_arrow = None
        if direct and affected.read_snapshot is not None and target.columns is not None:
            # by pyiceberg at the snapshot the merge validates from, as current_rows reads buckets: no Spark
            # job (a fresh application's first ones took seconds a table)
            table_arrow = read_buckets(spark, name, affected.read_snapshot, list(range(target.buckets)), target.columns)
        if table_arrow is None:
            whole = spark.table(name)
            if direct:
                whole = whole.select("*", *POSITION_COLUMNS)
            table_arrow = whole.toArrow()
        if direct:
            affected.located = Located.of(table_arrow, buckets=range(target.buckets))
            table_arrow = table_arrow.drop_columns(POSITION_COLUMNS)
        affected.table_arrow = table_arrow
        state_rows = table_arrow.filter(pc.is_in(table_arrow["_cdc_key"], pa.array(sorted(candidates))))
    else:
        state_rows, affected.located = current_rows(
            spark, name, candidates, target.buckets, records, direct, affected.read_snapshot, target.columns
        )
    affected.state_rows = state_rows
    seqs = dict(zip(state_rows["_cdc_key"].to_pylist(), state_rows["_cdc_seq"].to_pylist(), strict=True))
    affected.in_order = in_order_keys(batch.good_arrow, candidates, seqs, affected.truncate_seq)
    affected.key_set -= affected.in_order
