"""Column types and schema changes.

Owns the lake's column types and casts (`coltypes`), the one model of a schema change (`changes`), DDL text
and announced column lists read into it (`ddl_text`, `events`), and the evolution rules (`evolution`).

The names other packages import are exported here (``__all__``), each loaded from its module when first
asked for (PEP 562): importing the package alone loads none of its modules.
"""

import importlib

#: Modules of this package exported as themselves.
_MODULES: tuple[str, ...] = ()
#: The other public names, by the module of this package that defines them.
_NAMES = {
    "changes": (
        "ADD_COLUMN",
        "CREATE_TABLE",
        "DROP_COLUMN",
        "DROP_TABLE",
        "MAX_EVENT_CHARS",
        "MODIFY_COLUMN",
        "RENAME_COLUMN",
        "RENAME_TABLE",
        "TRUNCATE",
        "DdlError",
        "SchemaChange",
        "schema_changes_from_columns",
    ),
    "coltypes": (
        "BINARY",
        "BOOLEAN",
        "DATE",
        "DECIMAL_INTEGER",
        "DOUBLE",
        "LONG",
        "STRING",
        "TIMESTAMP",
        "CastError",
        "arrow_type",
        "canonical_type",
        "cast",
        "kind_of",
        "quote_ident",
        "type_from_engine",
        "unify",
    ),
    "ddl_text": ("MAX_DDL_BYTES", "MAX_QUOTE_CHARS", "parse_ddl"),
    "events": ("changes_from_events",),
    "evolution": (
        "DEFAULT_POLICY",
        "HISTORY_PROPERTY",
        "POLICIES",
        "ColumnMap",
        "IncompatibleChange",
        "check",
        "column_map",
        "evolve_columns",
        "history_entry",
        "is_noop",
        "parse_history",
        "widens",
    ),
}
_HOME = {name: module for module, names in _NAMES.items() for name in names} | {m: m for m in _MODULES}

__all__ = [
    "ADD_COLUMN",
    "BINARY",
    "BOOLEAN",
    "CREATE_TABLE",
    "DATE",
    "DECIMAL_INTEGER",
    "DEFAULT_POLICY",
    "DOUBLE",
    "DROP_COLUMN",
    "DROP_TABLE",
    "HISTORY_PROPERTY",
    "LONG",
    "MAX_DDL_BYTES",
    "MAX_EVENT_CHARS",
    "MAX_QUOTE_CHARS",
    "MODIFY_COLUMN",
    "POLICIES",
    "RENAME_COLUMN",
    "RENAME_TABLE",
    "STRING",
    "TIMESTAMP",
    "TRUNCATE",
    "CastError",
    "ColumnMap",
    "DdlError",
    "IncompatibleChange",
    "SchemaChange",
    "arrow_type",
    "canonical_type",
    "cast",
    "changes_from_events",
    "check",
    "column_map",
    "evolve_columns",
    "history_entry",
    "is_noop",
    "kind_of",
    "parse_ddl",
    "parse_history",
    "quote_ident",
    "schema_changes_from_columns",
    "type_from_engine",
    "unify",
    "widens",
]


def __getattr__(name: str):  # -> Any (not annotated: the package imports nothing, not even ``typing``)
    """A name of :data:`__all__`, from its module, imported now if it was not yet."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    loaded = importlib.import_module(f"{__name__}.{module}")
    return loaded if module == name else getattr(loaded, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
