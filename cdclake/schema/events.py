"""Decoded ``SCHEMA`` / ``DDL`` events -> structured schema changes (pure).

The normalize job collects a batch's schema events per table (they are few)
and calls :func:`changes_from_events`. DDL text is parsed with a real SQL
parser (:mod:`cdclake.schema.ddl_text`); a full column list (Qlik metadata message,
GoldenGate schema) is compared with the columns known so far; columns first
seen in self-describing records only ever add. A ``TRUNCATE TABLE`` statement
becomes a TRUNCATE event with the statement's ``seq`` for the truncate step.
A statement that cannot be parsed is quarantined with the parser's reason, and
so is an event whose changes name a column the lake cannot hold (``column_problem``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from cdclake.schema.changes import (
    ADD_COLUMN,
    CREATE_TABLE,
    DROP_COLUMN,
    MODIFY_COLUMN,
    RENAME_COLUMN,
    TRUNCATE,
    DdlError,
    SchemaChange,
    schema_changes_from_columns,
)
from cdclake.schema.coltypes import canonical_type
from cdclake.schema.evolution import evolve_columns


@dataclass
class SchemaEventResult:
    changes: dict[str, list[SchemaChange]] = field(default_factory=dict)
    truncates: list[dict[str, Any]] = field(default_factory=list)  # TRUNCATE events for the changelog
    rejects: list[dict[str, Any]] = field(default_factory=list)  # {error, source_file, source_offset}
    ignored: int = 0  # re-announced or older schema versions: nothing to do


def _type(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return canonical_type(value)
    except ValueError:
        return None


def _source_table(named: str, event_table: str | None) -> str:
    """The statement's table as the source table name of the event (same last part -> the event's name)."""
    if event_table and named.split(".")[-1].strip('"`').lower() == event_table.split(".")[-1].lower():
        return event_table
    return named


def _order(event: dict[str, Any]) -> tuple[str, str, int]:
    return (event.get("seq") or "", event.get("source_file") or "", event.get("source_offset") or 0)


def changes_from_events(
    events: list[dict[str, Any]],
    existing: dict[str, list[tuple[str, str]] | None],
    versions: dict[str, int] | None = None,
    dialect: str | None = None,
    column_problem: Callable[[str, str, Iterable[str]], str | None] | None = None,
) -> SchemaEventResult:
    """Structured changes per source table, in event order.

    ``events``: dicts with table, op (SCHEMA or DDL), seq, event_ts, keys, ddl
    (decoded JSON), meta, source_file, source_offset. ``existing``: the lake
    columns of each table (None: no lake table yet). ``versions``: the highest
    schema version already applied per table (older announcements are ignored).
    ``column_problem(table, column, other columns)``: why a column name cannot be
    a lake column (``cdclake.lake.naming.column_name_problem``); such an event is
    rejected whole, so a statement is never half applied.
    """
    result = SchemaEventResult()
    known: dict[str, list[tuple[str, str]] | None] = dict(existing)
    seen_version = dict(versions or {})
    for event in sorted(events, key=_order):
        where = {
            "seq": event.get("seq"),
            "source_file": event.get("source_file"),
            "source_offset": event.get("source_offset"),
        }
        ddl = event.get("ddl") or {}
        if event["op"] == "DDL":
            _ddl_event(result, event, ddl, where, known, dialect, column_problem)
        else:
            _schema_event(result, event, ddl, where, known, seen_version, column_problem)
    return result


def _ddl_event(
    result: SchemaEventResult,
    event: dict[str, Any],
    ddl: Any,
    where: dict[str, Any],
    known: dict[str, list[tuple[str, str]] | None],
    dialect: str | None,
    column_problem: Callable[[str, str, Iterable[str]], str | None] | None,
) -> None:
    """A DDL event's statement into ``result``: its changes (``known`` follows them), truncates, or a reject."""
    text = ddl.get("text") if isinstance(ddl, dict) else ddl
    if not isinstance(text, str) or not text.strip():
        result.rejects.append({"error": "DDL event carries no statement text", **snapshot_lineage(where)})
        return
    from cdclake.schema.ddl_text import parse_ddl  # the SQL parser (0.3 s to import) only for DDL text

    try:
        parsed = parse_ddl(text, dialect=dialect, default_table=event.get("table"), **where)
    except DdlError as exc:
        result.rejects.append({"error": f"DDL statement not understood: {exc}", **snapshot_lineage(where)})
        return
    parsed = [_with_table(c, _source_table(c.table, event.get("table"))) for c in parsed]
    bad = _bad_name(parsed, known, column_problem)
    if bad:
        result.rejects.append({"error": f"DDL statement not applied: {bad}", **snapshot_lineage(where)})
        return
    for change in parsed:
        table = change.table
        if change.kind == TRUNCATE:
            result.truncates.append({"table": table, "op": "TRUNCATE", "event_ts": event.get("event_ts"), **where})
            continue
        result.changes.setdefault(table, []).append(change)
        known[table] = evolve_columns(known.get(table) or [], [change])


def _schema_event(
    result: SchemaEventResult,
    event: dict[str, Any],
    ddl: dict[str, Any],
    where: dict[str, Any],
    known: dict[str, list[tuple[str, str]] | None],
    seen_version: dict[str, int],
    column_problem: Callable[[str, str, Iterable[str]], str | None] | None,
) -> None:
    """A SCHEMA event (a full column list, or columns first seen in records) into ``result``: its changes
    (``known`` follows them), a reject, or one more ignored announcement."""
    table = event["table"]
    meta = event.get("meta") or {}
    columns = [(c.get("name"), _type(c.get("type"))) for c in ddl.get("columns") or [] if isinstance(c, dict)]
    columns = [(n, t) for n, t in columns if isinstance(n, str) and n]
    version = ddl.get("version")
    if isinstance(version, int):
        if version < seen_version.get(table, -1):
            result.ignored += 1
            return
        seen_version[table] = version
    previous = known.get(table)
    source_event = f"{event['op']} event: columns {', '.join(n for n, _ in columns)[:200]}"
    if version is not None:
        source_event += f" (schema version {version})"
    if meta.get("column_source") == "record":
        changes = _record_columns(table, ddl, columns, previous, source_event, where)
    else:
        try:
            changes = schema_changes_from_columns(
                table,
                previous,
                columns,
                keys=tuple(ddl.get("keys") or event.get("keys") or ()),
                source_event=source_event,
                **where,
            )
        except DdlError as exc:
            result.rejects.append({"error": f"schema announcement not usable: {exc}", **snapshot_lineage(where)})
            return
    bad = _bad_name(changes, known, column_problem)
    if bad:
        result.rejects.append({"error": f"schema announcement not applied: {bad}", **snapshot_lineage(where)})
        return
    if changes:
        result.changes.setdefault(table, []).extend(changes)
        known[table] = evolve_columns(previous or [], changes)
    else:
        result.ignored += 1


def _record_columns(
    table: str,
    ddl: dict[str, Any],
    columns: list[tuple[str, str | None]],
    previous: list[tuple[str, str]] | None,
    source_event: str,
    where: dict[str, Any],
) -> list[SchemaChange]:
    """Columns first seen in self-describing records: they only ever add (all of them to a new table)."""
    added = [n for n in ddl.get("added") or [] if isinstance(n, str)]
    if previous is None:
        added = [n for n, _ in columns]
    types = dict(columns)
    have = {n for n, _ in previous or []}
    return [
        SchemaChange(table, ADD_COLUMN, column=n, type=types.get(n), source_event=source_event, **where)
        for n in added
        if n not in have
    ]


def _bad_name(
    changes: list[SchemaChange],
    known: dict[str, list[tuple[str, str]] | None],
    problem: Callable[[str, str, Iterable[str]], str | None] | None,
) -> str | None:
    """The first column name of ``changes`` the lake cannot hold, as a sentence (None: all fine)."""
    if problem is None:
        return None
    for change in changes:
        current = [n for n, _ in known.get(change.table) or []]
        named: list[tuple[str | None, list[str]]] = []  # (name, columns it must not collide with)
        if change.kind == ADD_COLUMN:
            named = [(change.column, current)]
        elif change.kind == CREATE_TABLE:
            listed = [n for n, _ in change.columns]
            named = [(n, current + listed) for n in listed]
        elif change.kind == RENAME_COLUMN:
            named = [(change.column, []), (change.new_name, [c for c in current if c != change.column])]
        elif change.kind in (DROP_COLUMN, MODIFY_COLUMN):
            named = [(change.column, [])]
        for name, others in named:
            reason = problem(change.table, name, others) if name is not None else None
            if reason:
                return f"column {name!r} of {change.table} {reason}"
    return None


def _with_table(change: SchemaChange, table: str) -> SchemaChange:
    if change.table == table:
        return change
    data = change.to_dict()
    data["table"] = table
    return SchemaChange.from_dict(data)


def snapshot_lineage(where: dict[str, Any]) -> dict[str, Any]:
    return {"source_file": where["source_file"], "source_offset": where["source_offset"]}
