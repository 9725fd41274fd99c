"""Compacting one table: apply a batch to a lake table through its change log.

Per source table there are two Iceberg tables, both partitioned by
``_cdc_bucket`` = crc32(canonical key) mod N:

- ``<table>__changes``: the append-only change log (every row event with its
  key, images, order and lineage; truncates in bucket -1);
- ``<table>``: the current rows, each with its canonical key text in the hidden
  column ``_cdc_key``.

A batch is applied in two atomic commits, each carrying the batch id in its
snapshot summary: (1) append the batch's events to the change log, (2) replace
the rows of the affected keys by the *refold* of all their logged events
(``cdclake.merge.refold``). Because a key's row is a function of the set of its
events, batches applied late, twice or in any order give the same table; the
logged deletes are the tombstones. A crash between or during the commits leaves
the previous snapshots; the retry skips what is already committed and recomputes
the rest from the same inputs.

Commit (2) takes one of two paths (``merge_mode`` in the report):

- ``merge-on-read`` (an ordinary batch): the fold reads only the logged events
  of the affected keys, never the current rows, and returns per key its row or a
  ``gone`` marker; a ``MERGE INTO`` on (``_cdc_bucket``, ``_cdc_key``) updates,
  inserts or deletes those keys only (position deletes, format v2), so the cost
  follows the batch, not the table. Isolation: the MERGE goes to a private
  branch created at the snapshot read before the change log (``read_snapshot``),
  and is published by fast-forwarding ``main`` to it, which fails if anything
  was committed to ``main`` since then (a SQL MERGE would only validate from the
  snapshot it scans itself). ``_snapshot_info`` only counts ``main``'s
  ancestors, so a branch commit that was never published is redone.
- ``overwrite`` (full refresh, a batch with a TRUNCATE, a table whose rows lack
  ``_cdc_key``, the first commit of an empty table, buckets of fewer than
  ``MOR_MIN_BUCKET_ROWS`` rows on average, or a table holding more than
  ``MAX_EXTRA_FILES_PER_BUCKET`` x buckets delete files and small data files
  left by merges): every current row of the touched buckets goes through the
  fold (other keys pass through) and the buckets are replaced in one
  ``overwrite(_cdc_bucket IN ...)`` validated (serializable isolation) from
  ``read_snapshot``. Rewriting a bucket drops its delete files and leaves one
  data file: the maintenance rule also rewrites every bucket with extra files.

On a lost race (validation or fast-forward) the table is re-read and the fold
recomputed, up to COMMIT_ATTEMPTS times (docs/reliability.md, "Crashes and
retries"; docs/decisions.md, "Merge-on-read").
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from cdclake.compaction.arrow_fold import fold_driver
from cdclake.compaction.driver_io import (
    _append_in_driver,
    _batch_events,
    _buckets_in_driver,
    _current_rows,
    _events_arrow,
    _kept_rows,
    _overwrite_in_driver,
    _parted_in_driver,
    _row_delta,
    _to_frame,
    bulk_bound,
    table_events,
)
from cdclake.compaction.driver_read import read_log
from cdclake.compaction.folding import fold_part
from cdclake.compaction.lake_tables import (
    HISTORY_SUFFIX,
    LOG_DDL,
    LOG_SCHEMA,
    LOG_SUFFIX,
    META_DDL,
    ROUTED_SCHEMA,
    ROW_KEYS_PROPERTY,
    TRUNCATE_BUCKET,
    _properties,
    _sql_string,
    _table_ddl,
    ensure_tables,
)
from cdclake.compaction.lineage import (
    COUNTS_PROPERTY,
    _bucket_has_files,
    _committed_counts,
    _fresh_snapshot_id,
    _head_summary,
    _only_batch,
    _snapshot_info,
)
from cdclake.compaction.publish import (
    COMMIT_ATTEMPTS,
    _branch_name,
    _drop_branch,
    _is_conflict,
    _merge_and_publish,
    _unshuffled,
    _validated,
)
from cdclake.compaction.routing import _linked_keys, linked_in_driver, route_events
from cdclake.compaction.row_delta import POSITION_COLUMNS, Located
from cdclake.compaction.row_state import candidate_keys, fold_onto_rows, in_order_keys
from cdclake.compaction.spark_fold import _fold_on_workers, _write_history
from cdclake.compaction.strategy import MERGE_ON_READ, OVERWRITE, _choose_mode
from cdclake.compaction.switches import driver_commits_enabled, driver_fold_rows, native_fold_enabled, row_state_enabled
from cdclake.faults import fault_point, inside_commit
from cdclake.merge import bucket_of
from cdclake.schema_evolution import ColumnMap
from cdclake.tables import BATCH_PROPERTY

logger = logging.getLogger(__name__)

#: The bulk path reads the change log's key changes, or its touched buckets, in the driver when they hold
#: at most this many times its bound in rows (more: a long history, searched and read through Spark).
LOG_READ_FACTOR = 2
PAIR_SCHEMA = pa.schema([("_key", pa.string()), ("_old_key", pa.string())])


def _write_quarantine(errors, path: Path) -> None:
    from pyspark.sql import functions as F

    errors.select(
        F.col("_error").alias("error"),
        "source_file",
        "source_offset",
        F.to_json(F.struct("op", "seq", "before", "after")).cast("binary").alias("raw"),
    ).write.mode("overwrite").parquet(str(path))


def compact_table(
    spark,
    batch_dir: Path,
    batch_id: str,
    source_table: str,
    layout: dict[str, Any],
    default_buckets: int,
    full_refresh: bool = False,
    attempt: int = 1,
) -> dict[str, Any]:
    from pyspark.sql import functions as F

    name = layout["spark_name"]
    log_name = name + LOG_SUFFIX
    keys: list[str] = layout["keys"]
    columns = [tuple(c) for c in layout["columns"]]
    types = dict(columns)
    cmap = ColumnMap.from_dict(layout.get("column_map"))
    buckets = ensure_tables(spark, source_table, layout, default_buckets)
    branch = _branch_name(batch_id)
    _drop_branch(spark, name, branch)  # an unpublished merge of a crashed attempt
    main_done = batch_id in _snapshot_info(spark, name) and not full_refresh
    history_done = not layout.get("scd2") or batch_id in _snapshot_info(spark, name + HISTORY_SUFFIX)
    if main_done and history_done:
        return _committed_counts(spark, name, batch_id)
    # else: a crash between the table's commit and the history commit; the fold is redone for the history only

    # 1. this batch's events -> change-log rows (or quarantine) -> appended once
    quarantine_dir = batch_dir / "quarantine" / "compact" / layout["identifier"]
    limit = driver_fold_rows()
    expected = table_events(batch_dir, source_table)
    # a table without its key columns (made by a truncate-only batch, or keys that name no column) has no
    # keyed row in its log: every row event is quarantined, and the fold has nothing to distribute
    keyless = not set(keys) <= set(types)
    in_driver = expected is not None and (expected <= limit or keyless)
    bulk_limit = None if in_driver else bulk_bound(spark, batch_dir / "changelog", source_table, expected)
    bulk = bulk_limit is not None
    if bulk_limit is not None:
        # the bulk path: the fold's plain keys at native speed in the driver (arrow_fold), every bound of
        # this batch's driver reads raised to it
        in_driver, limit = True, bulk_limit
    if in_driver:  # routed here: one job reads the events, nothing is written or counted by Spark
        ev_arrow = _events_arrow(spark, batch_dir / "changelog", source_table)
        routed_arrow = pa.Table.from_batches(
            list(route_events(ev_arrow.to_batches(), keys, types, buckets, batch_id, cmap)), schema=ROUTED_SCHEMA
        )
        is_error = pc.is_valid(routed_arrow["_error"])
        quarantined = pc.sum(is_error).as_py() or 0
        if quarantined:
            errors_frame = _to_frame(spark, routed_arrow.filter(is_error), LOG_DDL + ", _error string")
            _write_quarantine(errors_frame, quarantine_dir)
        good_arrow = routed_arrow.filter(pc.invert(is_error)).drop_columns(["_error"])
        good = None  # a frame of them only where Spark needs one (an append fallback, SCD2)
        has_good = good_arrow.num_rows > 0
        truncates = pc.sum(pc.equal(ev_arrow["op"], "TRUNCATE")).as_py() or 0
        key_set = {k for k in good_arrow["_key"].to_pylist() if k is not None}
        key_set |= {k for k in good_arrow["_old_key"].to_pylist() if k is not None}
    else:
        routed_dir = batch_dir / "routed" / layout["identifier"]
        events = _batch_events(spark, batch_dir / "changelog", source_table)
        events.mapInArrow(
            lambda it: route_events(it, keys, types, buckets, batch_id, cmap), LOG_DDL + ", _error string"
        ).write.mode("overwrite").parquet(str(routed_dir))
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
        quarantined, has_good, truncates = tally["bad"], tally["good"] > 0, tally["truncates"]
        errors = routed.where("_error IS NOT NULL")
        if quarantined:
            _write_quarantine(errors, quarantine_dir)
        good = routed.where("_error IS NULL").drop("_error")
        key_set = None
    fault_point("compact:before-log-append")
    if has_good and batch_id not in _snapshot_info(spark, log_name):
        appended = (
            in_driver and driver_commits_enabled() and _append_in_driver(spark, log_name, good_arrow, batch_id, bulk)
        )
        if not appended:
            # the driver's few rows in one task, without Iceberg's shuffle by bucket: one file per bucket
            # as after the shuffle, one Spark job less (benchmarks/scripts/merge_distribution.py)
            rows = _to_frame(spark, good_arrow, LOG_DDL).coalesce(1) if in_driver else good
            with _unshuffled(spark, in_driver):
                rows.writeTo(log_name).option(f"snapshot-property.{BATCH_PROPERTY}", batch_id).append()
    fault_point("compact:after-log-append")

    # 2. affected keys (with keys linked by key changes) and buckets; the table before the log: every
    # batch committed to the table by the snapshot read has its events in the log read
    read_snapshot = _fresh_snapshot_id(spark, name)
    props = _properties(spark, name)
    keyed = props.get(ROW_KEYS_PROPERTY) == "1"
    spark.catalog.refreshTable(log_name)
    log = spark.table(log_name)
    truncate_seq = None  # the watermark: the newest logged truncate (most logs have none: no job)
    if _bucket_has_files(spark, log_name, TRUNCATE_BUCKET):
        wm_row = log.where(F.col("_cdc_bucket") == TRUNCATE_BUCKET).agg(F.max("seq").alias("wm")).first()
        truncate_seq = wm_row["wm"] if wm_row else None
    full = full_refresh or truncates > 0 or not keyed  # not keyed: rows without _cdc_key, rewritten once
    # a log holding only this batch (a table's first batch): every logged key is affected and every key
    # change is among the events read, so there is nothing to search and no key set to join
    whole_log = not full and _only_batch(spark, log_name, batch_id)
    # row state: keys whose events all follow their current row fold onto it, without their log
    in_order: set[str] = set()
    state_rows = table_arrow = None
    # the merge-on-read commit as a row delta: the current-row reads also say where each row lives
    direct = in_driver and driver_commits_enabled()
    located: Located | None = None
    if (
        in_driver
        and key_set
        and not full
        and not whole_log
        and not main_done
        and read_snapshot is not None
        and not layout.get("scd2")
        and row_state_enabled()
    ):
        candidates = candidate_keys(good_arrow)
        if candidates:
            # a small table is read whole, once: the rows of the candidates, and the rows a bucket
            # overwrite passes through (no second scan in Spark)
            records = int(_head_summary(spark, name).get("total-records", limit + 1))
            if records <= limit:
                whole = spark.table(name)
                if direct:
                    whole = whole.select("*", *POSITION_COLUMNS)
                table_arrow = whole.toArrow()
                if direct:
                    located = Located.of(table_arrow, buckets=range(buckets))
                    table_arrow = table_arrow.drop_columns(POSITION_COLUMNS)
                state_rows = table_arrow.filter(pc.is_in(table_arrow["_cdc_key"], pa.array(sorted(candidates))))
            else:
                state_rows, located = _current_rows(
                    spark, name, candidates, buckets, records, direct, read_snapshot, columns
                )
            seqs = dict(zip(state_rows["_cdc_key"].to_pylist(), state_rows["_cdc_seq"].to_pylist(), strict=True))
            in_order = in_order_keys(good_arrow, candidates, seqs, truncate_seq)
            key_set -= in_order
    linked: list[str] = []
    link_pairs: set[tuple[str, str]] | None = None  # every key change touching the affected keys, when searched

    def keys_frame():
        """The affected keys (with the linked ones found so far) as a frame: built only where a Spark
        search or log read needs one, never on a table's first batch or the bulk path's pyiceberg reads."""
        if key_set is not None:
            return spark.createDataFrame([(k,) for k in sorted(key_set)], "k string")
        frame = (
            good.where("_key IS NOT NULL")
            .select(F.col("_key").alias("k"))
            .union(good.where("_old_key IS NOT NULL").select(F.col("_old_key").alias("k")))
            .distinct()
        )
        if linked:
            frame = frame.union(spark.createDataFrame([(k,) for k in linked], "k string")).distinct()
        return frame

    if not full and not whole_log and (key_set is None or key_set):
        pairs = None
        if bulk and key_set is not None:  # every key change of a log of bounded size, at once: no join rounds
            if int(_head_summary(spark, log_name).get("total-records", 0)) <= LOG_READ_FACTOR * limit:
                pairs = read_log(spark, log_name, PAIR_SCHEMA, key_changes=True)
        if pairs is not None:
            linked, link_pairs = linked_in_driver(pairs, key_set)
        else:
            linked, link_pairs = _linked_keys(spark, log_name, keys_frame(), key_set)
    if linked:
        if key_set is not None:
            key_set |= set(linked)
        in_order -= set(linked)  # linked to a late key by a key change: its log is read with the others
    if full:
        affected_buckets = list(range(buckets))
    elif key_set is not None:
        affected_buckets = sorted({bucket_of(k, buckets) for k in key_set | in_order})
    elif whole_log:
        affected_buckets = sorted({r["_cdc_bucket"] for r in good.select("_cdc_bucket").distinct().collect()})
    else:
        # a change-log row sits in its key's bucket, or (role "link") in its old key's: the batch's rows'
        # buckets are its keys' buckets, without collecting the keys
        logged_buckets = {r["_cdc_bucket"] for r in good.select("_cdc_bucket").distinct().collect()}
        affected_buckets = sorted(logged_buckets | {bucket_of(k, buckets) for k in linked})

    def log_events_frame():
        """The affected keys' logged events as a Spark frame (planned only where Spark reads them)."""
        if full or whole_log:
            return log.where(F.col("_cdc_bucket") >= 0)
        in_buckets = log.where(F.col("_cdc_bucket").isin(affected_buckets))
        wanted = keys_frame()
        keyset = F.broadcast(wanted) if len(affected_buckets) < buckets else wanted
        return in_buckets.join(keyset, in_buckets["_key"] == keyset["k"], "left_semi").union(
            in_buckets.join(keyset, in_buckets["_old_key"] == keyset["k"], "left_semi")
        )

    if not affected_buckets:
        return {"status": "no-change", "applied": 0, "stale": 0, "quarantined": quarantined}
    if full or read_snapshot is None or main_done:
        mode, rewrite_buckets = OVERWRITE, affected_buckets
    else:
        mode, rewrite_buckets = _choose_mode(spark, name, props, affected_buckets, buckets, _head_summary(spark, name))

    fold_args = {
        "keys": keys,
        "columns": columns,
        "batch_id": batch_id,
        "buckets": buckets,
        "truncate_seq": truncate_seq,
        "cmap": cmap,
    }
    # 3. the fold: in the driver when its inputs are small (known after one bounded read each), else on workers
    folded_arrow = None
    kept_in_spark = False  # the overwrite's source passes a bucket's untouched rows through from Spark
    if in_driver:
        # the batch's own rows are in hand already, so the bound is on what the log adds to them (a key
        # change is logged twice: a batch at the bound of events routes to more rows than that)
        log_bound = limit + good_arrow.num_rows
        log_in_driver = None  # a bulk batch's touched buckets of a log of bounded size: read without Spark
        if bulk and key_set and not full and not whole_log:
            log_rows = int(_head_summary(spark, log_name).get("total-records", 0))
            if log_rows * len(affected_buckets) <= LOG_READ_FACTOR * limit * buckets:
                log_in_driver = read_log(spark, log_name, LOG_SCHEMA, buckets=affected_buckets)
        if whole_log and not main_done:  # the log holds this batch's rows alone: they are in hand
            logged_arrow = good_arrow.filter(pc.greater_equal(good_arrow["_cdc_bucket"], 0))
        elif log_in_driver is not None:  # its buckets read by pyiceberg, keys picked in Arrow
            logged_arrow = log_in_driver
            wanted = pa.array(sorted(key_set), pa.string())
            logged_arrow = logged_arrow.filter(
                pc.or_(
                    pc.is_in(logged_arrow["_key"], wanted),
                    pc.fill_null(pc.is_in(logged_arrow["_old_key"], wanted), False),
                )
            )
        elif key_set or key_set is None or full or whole_log:
            # a log no larger than the bound is read whole-query (one job); a larger one through a limit
            # (Spark then collects partition by partition, several jobs) so a long history stays bounded
            log_rows = int(_head_summary(spark, log_name).get("total-records", log_bound + 1))
            log_events = log_events_frame()
            logged_arrow = (log_events if log_rows <= log_bound else log_events.limit(log_bound + 1)).toArrow()
        else:  # every key folds onto its row: no log is read
            logged_arrow = LOG_SCHEMA.empty_table()
        log_fits = logged_arrow.num_rows <= log_bound  # a log read through the limit is one row over
        rows_arrow = None
        rows_in_driver = False  # rows_arrow read whole by pyiceberg: bounded by DRIVER_OVERWRITE_ROWS, not limit
        if log_fits and mode != MERGE_ON_READ and table_arrow is not None:
            # the small table read above: its rewritten buckets, less the rows the row-state fold gives
            in_buckets = pc.is_in(table_arrow["_cdc_bucket"], pa.array(rewrite_buckets, pa.int32()))
            not_state = pc.invert(pc.is_in(table_arrow["_cdc_key"], pa.array(sorted(in_order), pa.string())))
            rows_arrow = table_arrow.filter(pc.and_(in_buckets, not_state))
        elif log_fits and mode != MERGE_ON_READ and not keyed:
            rows_arrow = spark.table(name).where(F.col("_cdc_bucket").isin(rewrite_buckets)).limit(limit + 1).toArrow()
        elif log_fits and mode != MERGE_ON_READ and direct and read_snapshot is not None:
            # a bucket overwrite (the maintenance rule) of a table of bounded size: its rewritten buckets read by
            # pyiceberg, so the rows pass through the driver's fold and its own commit, with no Spark job
            rows_arrow = _buckets_in_driver(spark, name, read_snapshot, rewrite_buckets, columns, in_order)
            rows_in_driver = rows_arrow is not None
        # keyed, no rows read: the fold gives the affected keys' rows and gone markers; the buckets' other
        # rows pass through in Spark (_kept_rows), not through the driver. An empty table (no snapshot when
        # read; the validated overwrite fails if one appears) has none: its rows are the driver's alone
        kept_in_spark = mode != MERGE_ON_READ and keyed and rows_arrow is None and read_snapshot is not None
        if log_fits and (rows_arrow is None or rows_in_driver or rows_arrow.num_rows <= limit):
            fault_point("compact:before-write")
            markers = mode == MERGE_ON_READ or kept_in_spark
            fold_fn = fold_driver if native_fold_enabled() else fold_part
            folded_arrow = fold_fn(logged_arrow, rows_arrow, markers=markers, **fold_args)
            if in_order:
                batch_events = good_arrow.filter(pc.is_in(good_arrow["_key"], pa.array(sorted(in_order))))
                their_rows = state_rows.filter(pc.is_in(state_rows["_cdc_key"], pa.array(sorted(in_order))))
                state_args = {k: v for k, v in fold_args.items() if k != "truncate_seq"}
                onto_rows = fold_onto_rows(batch_events, their_rows, **state_args)
                folded_arrow = pa.concat_tables([folded_arrow, onto_rows])
    if folded_arrow is not None:
        kinds = folded_arrow["_cdc_kind"]
        stats = {"applied": 0, "stale": 0, "deleted_keys": 0}
        for info in folded_arrow.filter(pc.equal(kinds, "stats"))["_cdc_info"].to_pylist():
            for k, v in json.loads(info).items():
                stats[k] += v
        out_ddl = _table_ddl(columns, META_DDL, "_cdc_kind string")
        if mode == MERGE_ON_READ:
            picked = folded_arrow.filter(pc.is_in(kinds, pa.array(["row", "gone"]))).drop_columns(["_cdc_info"])
            merge_buckets = sorted({b for b in picked["_cdc_bucket"].to_pylist()})
            source = None if direct else _to_frame(spark, picked, out_ddl)  # a row delta needs no frame
        else:
            rows_out = folded_arrow.filter(pc.equal(kinds, "row")).drop_columns(["_cdc_kind", "_cdc_info"])
            # a frame of them only for Spark's overwrite (the driver commits its rows alone itself)
            source = None if direct and not kept_in_spark else _to_frame(spark, rows_out, _table_ddl(columns, META_DDL))
            if kept_in_spark:
                folded_keys = folded_arrow.filter(pc.is_in(kinds, pa.array(["row", "gone"])))["_cdc_key"]
                source = source.union(
                    _kept_rows(spark, name, rewrite_buckets, set(folded_keys.to_pylist()), truncate_seq, columns)
                )
        # what the SCD2 history reads, as a frame: only for a table that keeps one
        ev_parted, part_of = _parted_in_driver(spark, logged_arrow, buckets) if layout.get("scd2") else (None, {})
    else:
        source, merge_buckets, stats, part_of, ev_parted = _fold_on_workers(
            spark,
            name,
            batch_dir,
            layout,
            log_events_frame(),
            mode,
            rewrite_buckets,
            fold_args,
            link_pairs,
            keyed,
            has_rows=read_snapshot is not None,
        )
    counts = {**stats, "quarantined": quarantined}
    fold = "driver" if folded_arrow is not None else "workers"
    if in_order:
        fold += f", {len(in_order)} keys onto their rows"

    properties = {BATCH_PROPERTY: batch_id, COUNTS_PROPERTY: json.dumps(counts, sort_keys=True)}
    if truncate_seq:
        properties["cdclake.truncate-watermark"] = truncate_seq
    fault_point("compact:before-commit")
    delta = False  # committed as a row delta (else the MERGE, or the overwrite)
    try:
        if not main_done and mode == MERGE_ON_READ and direct and folded_arrow is not None:
            delta = _row_delta(spark, name, read_snapshot, picked, located, columns, buckets, merge_buckets, properties)
            if delta:
                fold += ", committed as a row delta"
        if main_done or delta:
            pass
        elif mode == MERGE_ON_READ:
            if source is None:
                source = _to_frame(spark, picked, _table_ddl(columns, META_DDL, "_cdc_kind string"))
            _merge_and_publish(
                spark,
                name,
                batch_id,
                read_snapshot,
                source,
                columns,
                merge_buckets,
                properties,
                local_source=folded_arrow is not None,
            )
        else:
            local = folded_arrow is not None and not kept_in_spark  # the driver's rows alone: as the MERGE's
            committed = local and direct
            committed = committed and _overwrite_in_driver(
                spark, name, read_snapshot, rows_out, rewrite_buckets, properties
            )
            if committed:
                fold += ", committed from the driver"
            else:
                if source is None:
                    source = _to_frame(spark, rows_out, _table_ddl(columns, META_DDL))
                writer = (source.coalesce(1) if local else source).writeTo(name)
                for key, value in properties.items():
                    writer = writer.option(f"snapshot-property.{key}", value)
                with inside_commit(spark, name), _unshuffled(spark, local):
                    _validated(writer, read_snapshot).overwrite(F.col("_cdc_bucket").isin(rewrite_buckets))
            if not keyed:  # every row was rewritten with its key
                spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ({_sql_string(ROW_KEYS_PROPERTY)}='1')")
        fault_point("compact:after-commit")
        if mode == MERGE_ON_READ and not delta:
            _drop_branch(spark, name, branch)
        if layout.get("scd2"):
            _write_history(
                spark,
                name + HISTORY_SUFFIX,
                ev_parted,
                part_of,
                affected_buckets,
                keys,
                columns,
                buckets,
                batch_id,
                log,
                batch_dir / "history" / layout["identifier"],
                cmap,
            )
    except Exception as exc:
        if not _is_conflict(exc) or attempt >= COMMIT_ATTEMPTS:
            raise
        logger.warning(
            "compact %s, batch %s: another commit changed its buckets since it was read (attempt %d of %d); "
            "re-reading the table and folding again",
            name,
            batch_id,
            attempt,
            COMMIT_ATTEMPTS,
        )
        for table in [name, log_name] + ([name + HISTORY_SUFFIX] if layout.get("scd2") else []):
            spark.catalog.refreshTable(table)  # what is committed now, e.g. by a zombie run of this batch
        return compact_table(
            spark, batch_dir, batch_id, source_table, layout, default_buckets, full_refresh, attempt + 1
        )
    summary = _head_summary(spark, name)
    log_summary = _head_summary(spark, log_name)
    return {
        "status": "committed",
        **stats,
        "quarantined": quarantined,
        "truncates_seen": truncates,
        "merge_mode": mode,
        "fold": fold,
        "buckets_rewritten": len(rewrite_buckets),
        "buckets": buckets,
        "files_added": int(summary.get("added-data-files", 0)),
        "files_removed": int(summary.get("deleted-data-files", 0)),
        "files_total": int(summary.get("total-data-files", 0)),
        "delete_files_added": int(summary.get("added-delete-files", 0)),
        "delete_files_total": int(summary.get("total-delete-files", 0)),
        "rows_rewritten": int(summary.get("added-records", 0)),
        "log_files_total": int(log_summary.get("total-data-files", 0)),  # small files pile up here: maintenance
        "committed_at": dt.datetime.now(dt.UTC).isoformat(),
    }
