"""A lake table's own history for the drill-down: its Iceberg snapshots and its schema history.

Read from the catalog with pyiceberg (metadata only: no data file is opened), so what the page
shows is what the table holds: each commit's batch id and counts, the files it added and removed,
and how many data and delete files the table has after it (a table whose files pile up shows it).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from cdclake.compaction.lineage import COUNTS_PROPERTY
from cdclake.lake.tables import BATCH_PROPERTY
from cdclake.schema.evolution import HISTORY_PROPERTY, parse_history

#: Snapshots listed, newest first.
MAX_SNAPSHOTS = 50

_FILE_FIELDS = {
    "added_data_files": "added-data-files",
    "removed_data_files": "deleted-data-files",
    "added_delete_files": "added-delete-files",
    "removed_delete_files": "removed-delete-files",
    "added_records": "added-records",
    "deleted_records": "deleted-records",
    "data_files": "total-data-files",
    "delete_files": "total-delete-files",
    "records": "total-records",
}
#: Schema history fields shown (the source DDL statement is left out: it is the source's text, not ours).
_SCHEMA_FIELDS = ("kind", "column", "new_name", "type", "batch", "schema_id", "applied_at")


def _int(text: Any) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def snapshot_rows(table: Any, limit: int = MAX_SNAPSHOTS) -> list[dict[str, Any]]:
    """``main``'s snapshots, newest first: batch id, counts, files added/removed, data/delete file totals."""
    by_id = {snap.snapshot_id: snap for snap in table.snapshots()}
    rows = []
    current = table.current_snapshot()
    while current is not None and len(rows) < limit:
        summary = dict(current.summary.additional_properties) if current.summary else {}
        try:
            counts = json.loads(summary.get(COUNTS_PROPERTY) or "{}")
        except ValueError:
            counts = {}
        rows.append(
            {
                "snapshot_id": current.snapshot_id,
                "committed_at": dt.datetime.fromtimestamp(current.timestamp_ms / 1000, dt.UTC).isoformat(),
                "operation": str(current.summary.operation.value) if current.summary else None,
                "batch_id": summary.get(BATCH_PROPERTY),
                "counts": {k: v for k, v in counts.items() if isinstance(v, int | float)}
                if isinstance(counts, dict)
                else {},
                **{name: _int(summary.get(key)) for name, key in _FILE_FIELDS.items()},
            }
        )
        parent = current.parent_snapshot_id
        current = by_id.get(parent) if parent is not None else None
    return rows


def schema_rows(table: Any) -> list[dict[str, Any]]:
    """The ``cdclake.schema-history`` table property, newest first (what was changed, when, by which batch)."""
    entries = parse_history(table.properties.get(HISTORY_PROPERTY))
    return [{k: e.get(k) for k in _SCHEMA_FIELDS} for e in reversed(entries) if isinstance(e, dict)]


def lake_history(warehouse: str | Path, lake_table: str | None) -> dict[str, Any]:
    """Snapshots and schema history of ``lake_table`` (``namespace.name``), or why they cannot be read."""
    if not lake_table:
        return {"snapshots": [], "schema_history": [], "error": "no lake table recorded for this table yet"}
    try:
        from cdclake.lake.tables import open_catalog

        table = open_catalog(warehouse).load_table(lake_table)
        return {"snapshots": snapshot_rows(table), "schema_history": schema_rows(table), "error": None}
    except Exception as exc:  # the page still shows the batch history when the catalog is unreachable
        return {"snapshots": [], "schema_history": [], "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
