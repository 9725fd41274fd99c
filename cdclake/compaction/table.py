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
  snapshot it scans itself). ``snapshot_info`` only counts ``main``'s
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

This module is the conductor; each step lives in its own room: routing and the log
append (``batch_rows``), the affected keys and buckets (``affected``), the mode
(``strategy``), the fold (``driver_merge`` in the driver, ``spark_fold`` on the
workers), the commit (``commit``).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cdclake.compaction.affected import Affected, find_affected
from cdclake.compaction.batch_rows import RoutedBatch, Target, append_to_log, route_batch
from cdclake.compaction.commit import CommitInput, commit_fold, plan_commits
from cdclake.compaction.driver_merge import Folded, fold_in_driver
from cdclake.compaction.lake_tables import HISTORY_SUFFIX, ensure_tables
from cdclake.compaction.lineage import (
    COUNTS_PROPERTY,
    committed_counts,
    head_summary,
    snapshot_info,
    snapshot_lineage,
)
from cdclake.compaction.publish import COMMIT_ATTEMPTS, branch_name, drop_branch, is_conflict
from cdclake.compaction.spark_fold import fold_on_workers
from cdclake.compaction.strategy import OVERWRITE, choose_mode
from cdclake.compaction.switches import driver_commits_enabled
from cdclake.lake.tables import BATCH_PROPERTY
from cdclake.runtime.faults import fault_point
from cdclake.schema.evolution import ColumnMap

if TYPE_CHECKING:
    from cdclake.jobs.layout import TableLayout

logger = logging.getLogger(__name__)


def compact_table(
    spark,
    batch_dir: Path,
    batch_id: str,
    source_table: str,
    layout: TableLayout,
    default_buckets: int,
    full_refresh: bool = False,
) -> dict[str, Any]:
    """Apply the batch's events of ``source_table`` to its lake table (see the module docstring): route, affected
    keys, fold, commit; a commit that loses a race to another is folded again from a fresh read, up to
    ``COMMIT_ATTEMPTS`` times. Returns the table's report entry."""
    attempt = 1
    while True:
        target = _target(spark, source_table, layout, default_buckets)
        entry = _compact_once(
            spark, batch_dir, batch_id, source_table, layout, target, full_refresh, last=attempt >= COMMIT_ATTEMPTS
        )
        if entry is not None:
            return entry
        logger.warning(
            "compact %s, batch %s: another commit changed its buckets since it was read (attempt %d of %d); "
            "re-reading the table and folding again",
            target.name,
            batch_id,
            attempt,
            COMMIT_ATTEMPTS,
        )
        for table in [target.name, target.log_name] + ([target.name + HISTORY_SUFFIX] if target.scd2 else []):
            spark.catalog.refreshTable(table)  # what is committed now, e.g. by a zombie run of this batch
        attempt += 1


def _target(spark, source_table: str, layout: TableLayout, default_buckets: int) -> Target:
    """The lake table of ``source_table`` (created, or its new columns added, first)."""
    buckets = ensure_tables(spark, source_table, layout, default_buckets)
    return Target(
        name=layout.spark_name,
        keys=list(layout.keys or ()),
        columns=list(layout.columns),
        buckets=buckets,
        cmap=ColumnMap.from_dict(layout.column_map),
        identifier=layout.identifier,
        scd2=layout.scd2,
    )


def _compact_once(
    spark,
    batch_dir: Path,
    batch_id: str,
    source_table: str,
    layout: TableLayout,
    target: Target,
    full_refresh: bool,
    last: bool,
) -> dict[str, Any] | None:
    """One attempt of :func:`compact_table`: its report entry, or None where its commit lost a race (unless
    ``last``: then the conflict is raised)."""
    name = target.name
    drop_branch(spark, name, branch_name(batch_id))  # an unpublished merge of a crashed attempt
    main_done = batch_id in snapshot_info(spark, name) and not full_refresh
    history_done = not target.scd2 or batch_id in snapshot_info(spark, name + HISTORY_SUFFIX)
    if main_done and history_done:
        return committed_counts(spark, name, batch_id)
    # else: a crash between the table's commit and the history commit; the fold is redone for the history only

    # 1. this batch's events -> change-log rows (or quarantine) -> appended once: beside the fold where the log
    # holds nothing yet (a table's first batch), else first
    batch = route_batch(spark, batch_dir, batch_id, source_table, target)
    with appending_beside(spark, target, batch_id, batch, full_refresh or main_done) as log_pending:
        # 2. the affected keys and buckets, from the table's snapshot read before the log
        affected = find_affected(spark, target, batch, batch_id, full_refresh, main_done, log_pending=log_pending)
        if not affected.buckets:
            return {"status": "no-change", "applied": 0, "stale": 0, "quarantined": batch.quarantined}
        # 3. the fold: in the driver when its inputs are small (known after one bounded read each), else on workers
        merge = _fold(spark, batch_dir, batch_id, layout, target, batch, affected, full_refresh, main_done, log_pending)
    # the log's append is committed here (``appending_beside`` waits for it): always before the table's commit

    # 4. one commit carrying the batch id and its counts
    return _commit(spark, batch_dir, batch_id, target, batch, merge, main_done, last)


@dataclass
class Merge:
    """A batch's fold and what it was folded for: the affected keys, the merge mode and the buckets it rewrites."""

    affected: Affected
    mode: str
    rewrite_buckets: list[int]
    folded: Folded

    @property
    def fold(self) -> str:
        """Where it folded, for the report's ``fold``."""
        fold = "driver" if self.folded.in_driver else "workers"
        if self.affected.in_order:
            fold += f", {len(self.affected.in_order)} keys onto their rows"
        return fold


def _fold(
    spark,
    batch_dir: Path,
    batch_id: str,
    layout: TableLayout,
    target: Target,
    batch: RoutedBatch,
    affected: Affected,
    full_refresh: bool,
    main_done: bool,
    log_pending: Callable[[], None] | None,
) -> Merge:
    """The fold: in the driver where its inputs fit, else on the workers (every key then refolded from its log)."""
    mode, rewrite_buckets = _mode(spark, target, affected, main_done)
    folded = _fold_in_driver(spark, batch_id, target, batch, affected, mode, rewrite_buckets, main_done)
    if folded is None and (affected.in_order or affected.log is None):
        # the driver's bounds do not hold the other keys' logs: the workers refold every key from its log,
        # those row state would have folded onto their rows too (their linked keys searched as well); the
        # log is read, so its append is waited for
        if log_pending is not None:
            log_pending()
        affected = find_affected(spark, target, batch, batch_id, full_refresh, main_done, row_state=False)
        mode, rewrite_buckets = _mode(spark, target, affected, main_done)
    if folded is None:
        folded = _fold_on_workers_of(spark, batch_dir, batch_id, layout, target, affected, mode, rewrite_buckets)
    return Merge(affected, mode, rewrite_buckets, folded)


def _commit(
    spark,
    batch_dir: Path,
    batch_id: str,
    target: Target,
    batch: RoutedBatch,
    merge: Merge,
    main_done: bool,
    last: bool,
) -> dict[str, Any] | None:
    """Commit the fold (``commit.plan_commits`` picks how) with the batch id and its counts; the report entry, or
    None where another commit changed the buckets since they were read (unless ``last``: then it raises)."""
    affected, folded = merge.affected, merge.folded
    counts = {**folded.stats, "quarantined": batch.quarantined}
    properties = {BATCH_PROPERTY: batch_id, COUNTS_PROPERTY: json.dumps(counts, sort_keys=True)}
    if affected.truncate_seq:
        properties["cdclake.truncate-watermark"] = affected.truncate_seq
    fault_point("compact:before-commit")
    history_dir = batch_dir / "history" / target.identifier
    plan = plan_commits(target, affected, folded, merge.mode, merge.rewrite_buckets, main_done, history_dir)
    try:
        how = commit_fold(CommitInput(spark, target, batch_id, affected, folded, properties), plan)
    except Exception as exc:
        if not is_conflict(exc) or last:
            raise
        return None
    return _report(spark, target, batch, folded, merge.mode, merge.rewrite_buckets, merge.fold + how)


@contextmanager
def appending_beside(
    spark, target: Target, batch_id: str, batch: RoutedBatch, redo: bool
) -> Iterator[Callable[[], None] | None]:
    """The batch's change-log append, on a thread of its own while the body folds where the log holds nothing
    yet (a table's first batch, routed in the driver, committed from it: the fold needs nothing of the log
    then), else done before the body. Yields None, or the function that waits for the append (raising what it
    raised); the append is always waited for on the way out, so the table's commit after it follows the log's.

    Why: a bulk first batch's log append (every event's images written again, as Parquet per bucket) and its
    fold ran one after the other, and the largest table's pair was the compact step's tail, on one core
    (docs/decisions.md, "GoldenGate JSON images split in C; a table's first log append beside its fold")."""
    # the log's history, read once: what the append reads to skip a batch it holds (no catalog load more)
    history = snapshot_lineage(spark, target.log_name) if batch.has_good else []
    logged = {r["batch"] for r in history if r["batch"]}
    beside = batch.in_driver and batch.has_good and not history and not redo and not target.scd2
    if not (beside and driver_commits_enabled()):
        append_to_log(spark, target, batch_id, batch, logged)
        yield None
        return
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="log-append")
    appended = pool.submit(append_to_log, spark, target, batch_id, batch, logged)
    try:
        yield appended.result
    finally:
        pool.shutdown(wait=True)
    appended.result()  # its error, where the body raised none


def _mode(spark, target: Target, affected: Affected, main_done: bool) -> tuple[str, list[int]]:
    """Merge-on-read or bucket overwrite, and the buckets rewritten (``strategy``)."""
    if affected.full or affected.read_snapshot is None or main_done:
        return OVERWRITE, affected.buckets
    summary = head_summary(spark, target.name)
    return choose_mode(spark, target.name, affected.props, affected.buckets, target.buckets, summary)


def _fold_args(batch_id: str, target: Target, affected: Affected) -> dict[str, Any]:
    return {
        "keys": target.keys,
        "columns": target.columns,
        "batch_id": batch_id,
        "buckets": target.buckets,
        "truncate_seq": affected.truncate_seq,
        "cmap": target.cmap,
    }


def _fold_in_driver(
    spark,
    batch_id: str,
    target: Target,
    batch: RoutedBatch,
    affected: Affected,
    mode: str,
    rewrite_buckets: list[int],
    main_done: bool,
) -> Folded | None:
    """The batch folded in the driver when it was routed there and its inputs fit (else None)."""
    if not batch.in_driver:
        return None
    fold_args = _fold_args(batch_id, target, affected)
    return fold_in_driver(spark, target, batch, affected, mode, rewrite_buckets, fold_args, main_done)


def _fold_on_workers_of(
    spark,
    batch_dir: Path,
    batch_id: str,
    layout: TableLayout,
    target: Target,
    affected: Affected,
    mode: str,
    rewrite_buckets: list[int],
) -> Folded:
    """The batch folded on the workers (``spark_fold``)."""
    source, merge_buckets, stats, part_of, ev_parted = fold_on_workers(
        spark,
        target.name,
        batch_dir,
        layout,
        affected.log_events_frame(spark, target.buckets),
        mode,
        rewrite_buckets,
        _fold_args(batch_id, target, affected),
        affected.link_pairs,
        affected.keyed,
        has_rows=affected.read_snapshot is not None,
    )
    return Folded(stats=stats, merge_buckets=merge_buckets, source=source, part_of=part_of, ev_parted=ev_parted)


def _report(
    spark, target: Target, batch: RoutedBatch, folded: Folded, mode: str, rewrite_buckets: list[int], fold: str
) -> dict[str, Any]:
    """The table's report entry: its counts, how it was merged, and its files (where small files pile up)."""
    summary = head_summary(spark, target.name)
    log_summary = head_summary(spark, target.log_name)
    return {
        "status": "committed",
        **folded.stats,
        "quarantined": batch.quarantined,
        "truncates_seen": batch.truncates,
        "merge_mode": mode,
        "fold": fold,
        "buckets_rewritten": len(rewrite_buckets),
        "buckets": target.buckets,
        "files_added": int(summary.get("added-data-files", 0)),
        "files_removed": int(summary.get("deleted-data-files", 0)),
        "files_total": int(summary.get("total-data-files", 0)),
        "delete_files_added": int(summary.get("added-delete-files", 0)),
        "delete_files_total": int(summary.get("total-delete-files", 0)),
        "rows_rewritten": int(summary.get("added-records", 0)),
        "log_files_total": int(log_summary.get("total-data-files", 0)),  # small files pile up here: maintenance
        "committed_at": dt.datetime.now(dt.UTC).isoformat(),
    }
