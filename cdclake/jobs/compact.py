"""Compact job: apply a batch to every lake table it touches, in one Spark application.

The work per table lives in :mod:`cdclake.compaction` (see its package docstring for the rooms:
tables, routing, folding, strategy, publish, lineage); this module is the step the DAG's compact
task and the local ``apply`` command run: every table of the batch (or of one group of tables),
several at once (:mod:`cdclake.compaction.runner`), one report with a line per table.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any, TypedDict, cast

from cdclake.compaction.driver_io import bulk_shares, table_events, whole_budget
from cdclake.compaction.lake_tables import (
    HISTORY_SUFFIX,
    LOG_SUFFIX,
    ROW_KEYS_PROPERTY,
    TRUNCATE_BUCKET,
    ensure_namespace,
    ensure_tables,
)
from cdclake.compaction.lineage import snapshot_info
from cdclake.compaction.publish import SNAPSHOT_PROPERTY_CONF, branch_name
from cdclake.compaction.runner import CompactFailed, compact_tables
from cdclake.compaction.strategy import MAX_EXTRA_FILES_PROPERTY, MIN_ROWS_PROPERTY, MOR_MIN_BUCKET_ROWS
from cdclake.compaction.table import compact_table
from cdclake.jobs.layout import TableLayout, read_layouts
from cdclake.staging.batch import read_manifest, write_report

__all__ = [
    "HISTORY_SUFFIX",
    "LOG_SUFFIX",
    "MAX_EXTRA_FILES_PROPERTY",
    "MIN_ROWS_PROPERTY",
    "MOR_MIN_BUCKET_ROWS",
    "ROW_KEYS_PROPERTY",
    "SNAPSHOT_PROPERTY_CONF",
    "TRUNCATE_BUCKET",
    "CompactFailed",
    "CompactTableReport",
    "TableCounts",
    "branch_name",
    "compact_table",
    "ensure_tables",
    "report_step",
    "run",
    "snapshot_info",
]


class TableCounts(TypedDict, total=False):
    """A table's counts of one batch, as its commit records them (the ``cdclake.counts`` snapshot property)."""

    #: row events applied
    applied: int
    #: row events older than what the table holds (not applied)
    stale: int
    #: keys whose row the batch deleted
    deleted_keys: int
    #: row events quarantined at compact
    quarantined: int


class CompactTableReport(TableCounts, total=False):
    """One table's line in a compact step's report (``reports/compact*.json``), by ``status``: ``committed``
    (every field but ``error``), ``no-change``, ``already-committed`` (a retry: the counts its commit
    recorded), ``skipped`` (normalize's ``error``), ``failed`` (``error``)."""

    status: str
    truncates_seen: int
    #: ``merge-on-read`` or ``overwrite``
    merge_mode: str
    #: where the fold ran (driver or workers) and how it committed
    fold: str
    buckets_rewritten: int
    buckets: int
    files_added: int
    files_removed: int
    files_total: int
    delete_files_added: int
    delete_files_total: int
    rows_rewritten: int
    log_files_total: int
    #: ISO time of the commit
    committed_at: str
    #: the table's compaction time
    seconds: float
    error: str


def report_step(tables: list[str] | None) -> str:
    """Name of the step report of a compact over ``tables`` (all: ``compact``; a group: by its tables)."""
    if not tables:
        return "compact"
    digest = hashlib.sha1("\n".join(sorted(tables)).encode("utf-8")).hexdigest()[:12]
    return f"compact-{digest}"


def _refresh(spark, layout: TableLayout) -> None:
    name = layout.spark_name
    for table in (name, name + LOG_SUFFIX, name + HISTORY_SUFFIX):
        if spark.catalog.tableExists(table):
            spark.catalog.refreshTable(table)


def _shares(spark, batch_dir: Path, tables: list[str], threads: int) -> dict[str, float]:
    """Tables too large for one table's share of the driver's bulk budget that fit the whole of it (``threads``
    shares) -> the shares each needs (a fraction: a table of 2.1 shares holds 2.1 of the budget, and its bulk
    bound is 3 shares' worth) while it is compacted, on the bulk path (docs/decisions.md, "A large table takes
    the shares of the driver's bulk budget it needs")."""
    shares = {}
    for table in tables:
        needed = bulk_shares(spark, batch_dir / "changelog", table, table_events(batch_dir, table))
        if needed is not None and 1 < needed <= threads:
            shares[table] = needed
    return shares


def run(
    spark,
    batch_dir: str | Path,
    tables: list[str] | None = None,
    buckets: int = 16,
    full_refresh: bool = False,
    threads: int | None = None,
) -> dict[str, CompactTableReport]:
    """Compact every table of the batch (or only ``tables``); report per table.

    A table that fails does not stop the others: the report (written first) names it with its
    error, then :class:`CompactFailed` fails the task, whose retry skips the committed tables.
    """
    from cdclake.runtime.settings import Settings

    batch_dir = Path(batch_dir)
    manifest = read_manifest(batch_dir)
    layouts = read_layouts(batch_dir)
    threads = threads or Settings.from_env().compact_threads
    report: dict[str, CompactTableReport] = {}
    todo = []
    for source_table, layout in sorted(layouts.items()):
        if tables and source_table not in tables:
            continue
        if layout.error:
            report[source_table] = {"status": "skipped", "error": layout.error}
        else:
            todo.append(source_table)

    shares = _shares(spark, batch_dir, todo, threads)

    def compact_one(session, source_table: str) -> dict[str, Any]:
        with whole_budget(math.ceil(shares.get(source_table, 1))):
            return compact_table(
                session, batch_dir, manifest.batch_id, source_table, layouts[source_table], buckets, full_refresh
            )

    for namespace in sorted({layouts[t].spark_name.rsplit(".", 1)[0] for t in todo}):
        ensure_namespace(spark, namespace)  # once, before the tables' sessions race to create it
    done, errors = compact_tables(spark, todo, compact_one, threads, shares)
    if len(todo) > 1 and threads > 1:  # committed from other sessions: this one's cached copies are stale
        for source_table in todo:
            _refresh(spark, layouts[source_table])
    report.update(cast(dict[str, CompactTableReport], done))
    report = dict(sorted(report.items()))
    write_report(batch_dir, report_step(tables), report)
    if errors:
        raise CompactFailed(errors)
    return report
