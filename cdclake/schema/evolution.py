"""Schema evolution rules, pure: which changes are compatible, and how old-layout
events read in the new layout.

Iceberg renames and drops columns by field id, so data files written before a
change read correctly afterwards. Our change log stores images by the *source*
column names of their time, so every fold (and every rebuild from the log)
translates image names through the table's recorded changes: a renamed column's
old name maps to its new name, a dropped column's values are left out. A name
that is a current column is always read as itself, so the rules need no
sequence comparisons and hold for events without ``seq`` (e.g. Qlik metadata).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cdclake.schema.changes import (
    ADD_COLUMN,
    CREATE_TABLE,
    DROP_COLUMN,
    DROP_TABLE,
    MODIFY_COLUMN,
    RENAME_COLUMN,
    RENAME_TABLE,
    TRUNCATE,
    SchemaChange,
)

POLICIES = ("evolve", "fail", "ignore")
DEFAULT_POLICY = "evolve"
#: Iceberg table property holding the applied changes (JSON list, oldest first).
HISTORY_PROPERTY = "cdclake.schema-history"
#: How much of a source statement is kept in the recorded history.
MAX_SOURCE_TEXT = 300
_DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)")


class IncompatibleChange(ValueError):
    """A change that cannot be applied in place; the message says how to rebuild."""


def rebuild_hint(table: str) -> str:
    return (
        f"rebuild the table from the raw archive with the new layout: trigger the cdc_rebuild DAG with "
        f'{{"tables": ["{table}"], "from": "archive"}} (or `python -m cdclake rebuild --table {table} --from archive`)'
    )


def widens(old: str, new: str) -> bool:
    """True when Iceberg can change ``old`` to ``new`` in place (or nothing changes)."""
    if old == new:
        return True
    a, b = _DECIMAL.fullmatch(old), _DECIMAL.fullmatch(new)
    return bool(a and b and a.group(2) == b.group(2) and int(b.group(1)) >= int(a.group(1)))


@dataclass
class ColumnMap:
    """Old source column names -> current ones (renames), and dropped names."""

    renames: dict[str, str] = field(default_factory=dict)
    dropped: set[str] = field(default_factory=set)

    def resolve(self, name: str, current: set[str] | dict[str, Any]) -> str | None:
        """The current column an image name stands for; None if it was dropped."""
        seen = 0
        while name not in current and seen <= len(self.renames):
            if name in self.renames:
                name = self.renames[name]
                seen += 1
                continue
            return None if name in self.dropped else name
        return name

    def translate(self, image: dict[str, Any] | None, current: set[str] | dict[str, Any]) -> dict[str, Any] | None:
        """An image in the current layout (names not current and not known stay: the cast names them)."""
        if image is None or not (self.renames or self.dropped):
            return image
        out: dict[str, Any] = {}
        for name, value in image.items():
            target = self.resolve(name, current)
            if target is None:
                continue
            if target in out and name != target:
                continue  # the new name's own value wins over a stale old-name value
            out[target] = value
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"renames": dict(self.renames), "dropped": sorted(self.dropped)}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> ColumnMap:
        data = data or {}
        return cls(dict(data.get("renames") or {}), set(data.get("dropped") or []))


def column_map(changes: Iterable[SchemaChange | dict[str, Any]], ignored: Iterable[str] = ()) -> ColumnMap:
    """The name translation implied by changes in order (recorded history, then pending ones)."""
    result = ColumnMap(dropped=set(ignored))
    for change in changes:
        kind = change["kind"] if isinstance(change, dict) else change.kind
        column = change["column"] if isinstance(change, dict) else change.column
        new_name = change["new_name"] if isinstance(change, dict) else change.new_name
        if kind == RENAME_COLUMN and column and new_name:
            for old, target in list(result.renames.items()):
                if target == column:
                    result.renames[old] = new_name
            result.renames[column] = new_name
            result.dropped.discard(new_name)
        elif kind == DROP_COLUMN and column:
            result.dropped.add(column)
        elif kind == ADD_COLUMN and column:
            result.dropped.discard(column)
            result.renames.pop(column, None)
    return result


def check(change: SchemaChange, columns: dict[str, str], keys: list[str]) -> str | None:
    """Why ``change`` cannot be applied to a table of ``columns`` with ``keys`` (None: it can)."""
    where = f"{change.table}: {change.describe().split(': ', 1)[-1]}"
    if change.kind in (DROP_COLUMN, RENAME_COLUMN, MODIFY_COLUMN) and change.column in keys:
        return f"{where} changes primary-key column {change.column}; " + rebuild_hint(change.table)
    if change.kind == MODIFY_COLUMN and change.column in columns and change.type:
        old = columns[change.column]
        if not widens(old, change.type):
            return (
                f"{where}: type {old} cannot change to {change.type} in place (Iceberg only widens decimal "
                f"precision; our integers are already bigint and floats double); " + rebuild_hint(change.table)
            )
    if change.kind == RENAME_COLUMN and change.new_name in columns and change.column in columns:
        return f"{where}: column {change.new_name} already exists; " + rebuild_hint(change.table)
    if change.kind == ADD_COLUMN and change.column in columns and change.type and columns[change.column] != change.type:
        if not widens(columns[change.column], change.type):
            return f"{where}: column exists with type {columns[change.column]}; " + rebuild_hint(change.table)
    if change.kind == CREATE_TABLE and change.keys and keys and list(change.keys) != list(keys):
        return f"{where}: primary key {list(change.keys)} differs from the table's {keys}; " + rebuild_hint(
            change.table
        )
    if change.kind in (DROP_TABLE, RENAME_TABLE):
        return (
            f"{where} is not applied to the lake automatically (the table and its change log are kept); "
            "drop or rename the lake table by hand, or set the policy to ignore for this table"
        )
    return None


def evolve_columns(columns: list[tuple[str, str]], changes: Iterable[SchemaChange]) -> list[tuple[str, str]]:
    """A column list after ``changes`` (compatible ones; the DDL job refuses the rest)."""
    out = list(columns)
    for change in changes:
        names = [n for n, _ in out]
        if change.kind == ADD_COLUMN and change.column and change.column not in names:
            out.append((change.column, change.type or "string"))
        elif change.kind == CREATE_TABLE:
            for name, col_type in change.columns:
                if name not in names:
                    out.append((name, col_type or "string"))
                    names.append(name)
        elif change.kind == DROP_COLUMN and change.column in names:
            out = [(n, t) for n, t in out if n != change.column]
        elif change.kind == RENAME_COLUMN and change.column in names and change.new_name not in names:
            out = [(change.new_name if n == change.column else n, t) for n, t in out]
        elif change.kind == MODIFY_COLUMN and change.column in names and change.type:
            out = [(n, change.type if n == change.column and widens(t, change.type) else t) for n, t in out]
    return out


def is_noop(change: SchemaChange, columns: dict[str, str]) -> bool:
    """True when the table already has what the change asks for (e.g. a drift add seen before)."""
    if change.kind == ADD_COLUMN:
        return change.column in columns and (not change.type or columns[change.column] == change.type)
    if change.kind == DROP_COLUMN:
        return change.column not in columns
    if change.kind == RENAME_COLUMN:
        return change.column not in columns and change.new_name in columns
    if change.kind == MODIFY_COLUMN:
        return change.column not in columns or not change.type or columns[change.column] == change.type
    if change.kind == CREATE_TABLE:
        return all(name in columns for name, _ in change.columns) and bool(columns)
    return change.kind == TRUNCATE


def history_entry(change: SchemaChange, batch_id: str, schema_id: int | None, applied_at: str) -> dict[str, Any]:
    """What is recorded for an applied change (bounded: the statement is cut)."""
    return {
        "id": change.change_id,
        "kind": change.kind,
        "column": change.column,
        "new_name": change.new_name,
        "type": change.type,
        "seq": change.seq,
        "source_file": change.source_file,
        "source_offset": change.source_offset,
        "source_event": change.source_event[:MAX_SOURCE_TEXT],
        "batch": batch_id,
        "schema_id": schema_id,
        "applied_at": applied_at,
    }


def parse_history(text: str | None) -> list[dict[str, Any]]:
    if not text:
        return []
    try:
        data = json.loads(text)
    except ValueError:
        return []
    return data if isinstance(data, list) else []
