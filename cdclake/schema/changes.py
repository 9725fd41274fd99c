"""One structured model for every way a source announces a schema change.

DDL text (DataHub BLOB ``ALTER ...``, parsed by :mod:`cdclake.schema.ddl_text`),
``SCHEMA`` events carrying a full column list (Qlik metadata messages,
GoldenGate schema changes, columns first seen in self-describing records) and
truncates all become :class:`SchemaChange` values, ordered like row events by
``(seq, source_file, source_offset)``. The DDL job applies them to Iceberg; the
merge uses the recorded renames and drops to read old-layout events in the new
layout (so a rebuild from the change log stays correct after a rename).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from cdclake.schema.coltypes import canonical_type

#: Kinds of change (``SchemaChange.kind``).
ADD_COLUMN = "add_column"
DROP_COLUMN = "drop_column"
RENAME_COLUMN = "rename_column"
MODIFY_COLUMN = "modify_column"  # type change (widening is applied, anything else is incompatible)
CREATE_TABLE = "create_table"
DROP_TABLE = "drop_table"
RENAME_TABLE = "rename_table"
TRUNCATE = "truncate"
KINDS = (ADD_COLUMN, DROP_COLUMN, RENAME_COLUMN, MODIFY_COLUMN, CREATE_TABLE, DROP_TABLE, RENAME_TABLE, TRUNCATE)
#: ``source_event`` keeps this many characters of a statement.
MAX_EVENT_CHARS = 500


class DdlError(ValueError):
    """DDL text (or a column list) that cannot be turned into schema changes; the message names the
    statement and why."""


@dataclass(frozen=True)
class SchemaChange:
    """One change to one source table.

    ``type`` is a cdclake column type (``cdclake.schema.coltypes``: bigint, double,
    decimal(p,s), boolean, string, timestamp, date, binary) or None when the
    source did not say. ``columns`` is the column list of a ``create_table``
    as ``[(name, type), ...]``. ``key`` marks a column that is part of the
    primary key (create_table / add_column). ``source_event`` is what a
    person reads to find the origin (the DDL text or a short description).
    """

    table: str
    kind: str
    column: str | None = None
    new_name: str | None = None  # rename target (column or table)
    type: str | None = None
    columns: tuple[tuple[str, str | None], ...] = ()
    keys: tuple[str, ...] = ()
    seq: str | None = None
    source_file: str | None = None
    source_offset: int | None = None
    source_event: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown schema change kind {self.kind!r}; expected one of {', '.join(KINDS)}")

    @property
    def change_id(self) -> str:
        """Identity used to apply a change once (a retried DDL task skips it)."""
        return f"{self.source_file}@{self.source_offset}:{self.kind}:{self.column or ''}:{self.new_name or ''}"

    def describe(self) -> str:
        if self.kind == RENAME_COLUMN:
            what = f"rename column {self.column} to {self.new_name}"
        elif self.kind == RENAME_TABLE:
            what = f"rename table to {self.new_name}"
        elif self.kind in (ADD_COLUMN, MODIFY_COLUMN):
            what = f"{self.kind.replace('_', ' ')} {self.column} {self.type or ''}".rstrip()
        elif self.kind == DROP_COLUMN:
            what = f"drop column {self.column}"
        else:
            what = self.kind.replace("_", " ")
        return f"{self.table}: {what} (from {self.source_file} offset {self.source_offset})"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["columns"] = [list(c) for c in self.columns]
        data["keys"] = list(self.keys)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SchemaChange:
        data = dict(data)
        data["columns"] = tuple(tuple(c) for c in data.get("columns") or ())
        data["keys"] = tuple(data.get("keys") or ())
        return cls(**data)


def bounded_text(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ``...`` marking the cut (for reasons and ``source_event``)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- full column lists (here, not in ddl_text: a batch of SCHEMA events needs no SQL parser) -----------


def _checked_name(name: Any, what: str, table: str) -> str:
    if not isinstance(name, str) or not name:
        raise DdlError(f"table {table}: {what} {name!r} is not a name")
    if "\x00" in name:
        raise DdlError(f"table {table}: {what} {name!r} contains a NUL character")
    return name


def _checked_type(column_type: Any, column: str, table: str) -> str | None:
    if column_type is None:
        return None
    try:
        return canonical_type(str(column_type))
    except ValueError:
        raise DdlError(f"table {table} column {column}: {column_type!r} is not a cdclake column type") from None


def schema_changes_from_columns(
    table: str,
    previous: Sequence[tuple[str, str | None]] | None,
    announced: Sequence[tuple[str, str | None]],
    keys: Iterable[str] = (),
    *,
    seq: str | None = None,
    source_file: str | None = None,
    source_offset: int | None = None,
    source_event: str = "",
) -> list[SchemaChange]:
    """The changes from a known column list to a full announced one (Qlik and GoldenGate SCHEMA events).

    No known list gives one ``create_table``. Otherwise: ``add_column`` for new names (announced
    order), then ``drop_column`` for missing ones (known order), then ``modify_column`` where both
    types are known and differ. A full list cannot say that a column was renamed: a rename shows
    as a drop of the old name and an add of the new one (its values start again from NULL).
    Types are cdclake types or None (not said); the comparison is on canonical names.
    """
    table = _checked_name(table, "table name", table if isinstance(table, str) else "?")
    key_names = tuple(dict.fromkeys(_checked_name(k, "key column", table) for k in keys))
    fields = {
        "seq": seq,
        "source_file": source_file,
        "source_offset": source_offset,
        "source_event": bounded_text(source_event, MAX_EVENT_CHARS),
    }
    new: dict[str, str | None] = {}
    for name, column_type in announced:
        name = _checked_name(name, "column name", table)
        if name in new:
            raise DdlError(f"table {table}: the announced columns name {name!r} twice")
        new[name] = _checked_type(column_type, name, table)
    if previous is None:
        return [SchemaChange(table, CREATE_TABLE, columns=tuple(new.items()), keys=key_names, **fields)]
    old = {_checked_name(n, "column name", table): _checked_type(t, n, table) for n, t in previous}
    changes = [
        SchemaChange(
            table, ADD_COLUMN, column=name, type=column_type, keys=(name,) if name in key_names else (), **fields
        )
        for name, column_type in new.items()
        if name not in old
    ]
    changes += [SchemaChange(table, DROP_COLUMN, column=name, **fields) for name in old if name not in new]
    changes += [
        SchemaChange(table, MODIFY_COLUMN, column=name, type=column_type, **fields)
        for name, column_type in new.items()
        if name in old and column_type is not None and old[name] is not None and old[name] != column_type
    ]
    return changes
