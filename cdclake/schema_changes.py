"""One structured model for every way a source announces a schema change.

DDL text (DataHub BLOB ``ALTER ...``, parsed by :mod:`cdclake.ddl_text`),
``SCHEMA`` events carrying a full column list (Qlik metadata messages,
GoldenGate schema changes, columns first seen in self-describing records) and
truncates all become :class:`SchemaChange` values, ordered like row events by
``(seq, source_file, source_offset)``. The DDL job applies them to Iceberg; the
merge uses the recorded renames and drops to read old-layout events in the new
layout (so a rebuild from the change log stays correct after a rename).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

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


@dataclass(frozen=True)
class SchemaChange:
    """One change to one source table.

    ``type`` is a cdclake column type (``cdclake.coltypes``: bigint, double,
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
