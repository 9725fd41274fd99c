"""The table layout: what normalize settles per source table before the lake is touched, and what the later
steps (DDL, truncate, compact; rebuild writes its own) read from the batch's ``tables.json``.

``tables.json`` keeps its JSON (``TableLayout.to_json`` / ``from_json``): a field normalize does not always set
is absent rather than null, and the file is written with sorted keys, so batches staged before this type read
the same and new ones are written byte for byte as before. Readers outside the jobs (the monitoring pages, the
DAG, replay) read the file's JSON as it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdclake.staging.batch import write_json_atomic

__all__ = ["LAYOUTS_FILE", "TableLayout", "read_layouts", "write_layouts"]

#: The batch's layouts by source table (normalize writes it; ``staging.batch`` lists the batch's files).
LAYOUTS_FILE = "tables.json"


@dataclass(frozen=True)
class TableLayout:
    """One source table's lake table: its names, primary key, columns and types, and what normalize found."""

    #: Iceberg identifier (``namespace.table``)
    identifier: str
    #: the table's name in Spark (``catalog.namespace.table``)
    spark_name: str
    #: primary-key columns (the configuration's over the format's); None: neither gave any (``error`` says so)
    keys: tuple[str, ...] | None
    #: (column, type) in table order: the lake table's columns, then the new ones
    columns: tuple[tuple[str, str], ...]
    #: columns the lake table does not have yet
    new_columns: tuple[str, ...] = ()
    #: the lake table existed when normalize looked
    exists: bool = False
    #: new columns left out under the ``ignore`` schema policy (None: none were)
    ignored_columns: tuple[str, ...] | None = None
    #: old column names -> current ones and dropped names (``schema.evolution.ColumnMap.to_dict``)
    column_map: dict[str, Any] | None = None
    #: the table's schema policy: evolve, fail or ignore
    policy: str | None = None
    #: the batch's events of the table per op
    counts: dict[str, int] | None = None
    #: the batch's ``TRUNCATE TABLE`` statements of the table
    ddl_truncates: int | None = None
    #: the table keeps an SCD2 history table
    scd2: bool = False
    #: new column names the lake cannot hold -> why (the row events carrying them are quarantined)
    unsafe_columns: dict[str, str] | None = None
    #: why the table's row events cannot be written (all quarantined; the later steps skip the table)
    error: str | None = None

    @property
    def has_truncates(self) -> bool:
        """The batch truncates the table (a TRUNCATE event or a ``TRUNCATE TABLE`` statement)."""
        return bool((self.counts or {}).get("TRUNCATE") or self.ddl_truncates)

    def to_json(self) -> dict[str, Any]:
        """The layout as ``tables.json`` holds it (the optional fields only when set)."""
        doc: dict[str, Any] = {
            "identifier": self.identifier,
            "spark_name": self.spark_name,
            "keys": None if self.keys is None else list(self.keys),
            "columns": [[name, col_type] for name, col_type in self.columns],
            "new_columns": list(self.new_columns),
            "exists": self.exists,
        }
        if self.ignored_columns is not None:
            doc["ignored_columns"] = list(self.ignored_columns)
        optional = {
            "column_map": self.column_map,
            "policy": self.policy,
            "counts": self.counts,
            "ddl_truncates": self.ddl_truncates,
        }
        doc.update({k: v for k, v in optional.items() if v is not None})
        doc["scd2"] = self.scd2
        if self.unsafe_columns is not None:
            doc["unsafe_columns"] = dict(self.unsafe_columns)
        if self.error is not None:
            doc["error"] = self.error
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> TableLayout:
        """A layout from ``tables.json`` (a field it lacks takes its default)."""
        keys = doc.get("keys")
        ignored = doc.get("ignored_columns")
        return cls(
            identifier=doc["identifier"],
            spark_name=doc["spark_name"],
            keys=None if keys is None else tuple(keys),
            columns=tuple((name, col_type) for name, col_type in doc.get("columns") or ()),
            new_columns=tuple(doc.get("new_columns") or ()),
            exists=bool(doc.get("exists", False)),
            ignored_columns=None if ignored is None else tuple(ignored),
            column_map=doc.get("column_map"),
            policy=doc.get("policy"),
            counts=doc.get("counts"),
            ddl_truncates=doc.get("ddl_truncates"),
            scd2=bool(doc.get("scd2", False)),
            unsafe_columns=doc.get("unsafe_columns"),
            error=doc.get("error"),
        )


def read_layouts(batch_dir: str | Path) -> dict[str, TableLayout]:
    """The batch's layouts by source table (its ``tables.json``, which must exist)."""
    docs = json.loads((Path(batch_dir) / LAYOUTS_FILE).read_text())
    return {table: TableLayout.from_json(doc) for table, doc in docs.items()}


def write_layouts(batch_dir: str | Path, layouts: Mapping[str, TableLayout]) -> None:
    """Write the batch's ``tables.json`` (atomically, keys sorted)."""
    write_json_atomic(Path(batch_dir) / LAYOUTS_FILE, {table: layout.to_json() for table, layout in layouts.items()})
