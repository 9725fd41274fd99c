"""Column types and schema changes.

Owns the lake's column types and casts (`coltypes`), the one model of a schema change (`changes`), DDL text
and announced column lists read into it (`ddl_text`, `events`), and the evolution rules (`evolution`).

The names other packages import are exported here (``__all__``), each loaded from its module when first
asked for (PEP 562): importing the package alone loads none of its modules.
"""

from cdclake import lazy_exports

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

__all__, __getattr__, __dir__ = lazy_exports(__name__, _NAMES, _MODULES)
