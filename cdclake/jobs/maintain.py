"""Table maintenance: keep small files and old metadata from piling up (issue 19).

Every compaction appends one small file per touched bucket to a table's change log, and a
merge-on-read commit adds a data file and delete files to the current table; every commit also
writes a metadata file listing all snapshots. Left alone, a table after a thousand batches is
planned from thousands of small files and a metadata file with thousands of snapshots. Per table
(the current rows, ``__changes`` and ``__history``) this job:

- rewrites the change log's small files into one per bucket, **sorted by key** (so a key's events
  sit together and Parquet row-group statistics narrow a lookup of few keys);
- rewrites the current table's small files and the data files that have deletes, and the position
  delete files;
- expires snapshots older than ``keep_days`` beyond the newest ``keep_snapshots`` (branches and
  their snapshots stay), and removes orphan files (left by crashed writes) older than ``orphan_days``.

Safe beside ingest: each procedure is one Iceberg commit that a concurrent compaction either sees
or fails against (it then re-reads and folds again). Expiry shortens the lineage in which a retried
batch finds its commit: a re-run of a batch older than ``keep_days`` appends its events to the log
again, under the same batch id, file and offset, which the fold counts once (``merge.refold``), so
the table does not change.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from cdclake.compaction.lake_tables import HISTORY_SUFFIX, LOG_SUFFIX, sql_string
from cdclake.compaction.lineage import head_summary
from cdclake.runtime.settings import CATALOG_NAME

DEFAULT_KEEP_DAYS = 7.0
DEFAULT_KEEP_SNAPSHOTS = 100
DEFAULT_ORPHAN_DAYS = 3.0


def file_counts(spark, name: str) -> dict[str, int]:
    """Data files, delete files and records of ``name``'s head (its snapshot summary, no Spark job)."""
    summary = head_summary(spark, name)
    return {
        "data_files": int(summary.get("total-data-files", 0)),
        "delete_files": int(summary.get("total-delete-files", 0)),
        "records": int(summary.get("total-records", 0)),
    }


def _call(spark, procedure: str, args: dict[str, str]) -> list[dict[str, Any]]:
    catalog = CATALOG_NAME
    text = ", ".join(f"{k} => {v}" for k, v in args.items())
    return [r.asDict(recursive=True) for r in spark.sql(f"CALL {catalog}.system.{procedure}({text})").collect()]


def _in_catalog(name: str) -> str:
    """``lake.ns.t`` -> ``'ns.t'`` (the procedures' table argument, inside the catalog)."""
    return sql_string(name.split(".", 1)[1])


def maintain_table(
    spark,
    name: str,
    keep_days: float = DEFAULT_KEEP_DAYS,
    keep_snapshots: int = DEFAULT_KEEP_SNAPSHOTS,
    orphan_days: float = DEFAULT_ORPHAN_DAYS,
    now: dt.datetime | None = None,
) -> dict[str, Any]:
    """Maintain the lake table ``name`` (Spark name) and its change log and history; file counts before/after."""
    now = now or dt.datetime.now(dt.UTC)
    report: dict[str, Any] = {}
    for table in (name, name + LOG_SUFFIX, name + HISTORY_SUFFIX):
        if not spark.catalog.tableExists(table):
            continue
        spark.catalog.refreshTable(table)
        entry: dict[str, Any] = {"before": file_counts(spark, table)}
        target = _in_catalog(table)
        options = "map('min-input-files', '2', 'delete-file-threshold', '1')"
        if table.endswith(LOG_SUFFIX):
            rewrite = {"table": target, "strategy": "'sort'", "sort_order": "'_key ASC NULLS LAST'", "options": options}
        else:
            rewrite = {"table": target, "options": options}
        entry["rewrite_data_files"] = _call(spark, "rewrite_data_files", rewrite)
        if not table.endswith(LOG_SUFFIX):
            entry["rewrite_position_delete_files"] = _call(
                spark, "rewrite_position_delete_files", {"table": target, "options": "map('min-input-files', '2')"}
            )
        older = (now - dt.timedelta(days=keep_days)).strftime("%Y-%m-%d %H:%M:%S")
        entry["expire_snapshots"] = _call(
            spark,
            "expire_snapshots",
            {"table": target, "older_than": f"TIMESTAMP '{older}'", "retain_last": str(max(1, keep_snapshots))},
        )
        orphans = (now - dt.timedelta(days=orphan_days)).strftime("%Y-%m-%d %H:%M:%S")
        removed = _call(spark, "remove_orphan_files", {"table": target, "older_than": f"TIMESTAMP '{orphans}'"})
        entry["orphan_files_removed"] = len(removed)
        spark.catalog.refreshTable(table)
        entry["after"] = file_counts(spark, table)
        report[table] = entry
    return report


def source_tables(source_dir: Path) -> list[str]:
    """Spark names of the lake tables a source has written (from its staged batches)."""
    from cdclake.jobs.rebuild import known_tables, source_batches
    from cdclake.lake.naming import spark_table_name
    from cdclake.staging.batch import read_manifest

    batches = source_batches(source_dir)
    if not batches:
        return []
    namespace = read_manifest(batches[-1]).namespace
    return sorted({spark_table_name(t, namespace) for t in known_tables(batches)})


def run(spark, tables: list[str], **kwargs: Any) -> dict[str, Any]:
    """Maintain each of ``tables`` (Spark names); one line per table and file kind on stdout."""
    report = {}
    for name in tables:
        report[name] = maintain_table(spark, name, **kwargs)
        for table, entry in report[name].items():
            b, a = entry["before"], entry["after"]
            print(
                f"maintain {table}: data files {b['data_files']} -> {a['data_files']}, delete files "
                f"{b['delete_files']} -> {a['delete_files']}, orphans removed {entry['orphan_files_removed']}",
                flush=True,
            )
    return report
