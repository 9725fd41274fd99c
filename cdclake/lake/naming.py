"""Source table names -> Iceberg identifiers.

Source names are spelled by the source (``GG.TCUSTORD``, ``CAT.SCHEMA.TABLE``,
``db.tbl``); Iceberg identifiers here are lower-case ``namespace.table`` made of
``[a-z0-9_]`` so that Spark (case-insensitive) and pyiceberg (case-sensitive)
name the same table. The original name is kept in the table property
``cdclake.source-table`` and checked on every write, so two source names that
map to one identifier fail loudly instead of mixing rows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from cdclake.runtime.settings import CATALOG_NAME

DEFAULT_NAMESPACE = "default"
SOURCE_TABLE_PROPERTY = "cdclake.source-table"
_UNSAFE = re.compile(r"[^a-z0-9_]+")
#: Parts Spark's lexer reads as a number literal (``123``, ``1e5``, ``10l``, ``12bd``), not a name.
_NUMBER_LITERAL = re.compile(r"\d+(?:[lsy]|(?:e\d+)?(?:bd|d|f)?)")
#: Lake columns with this prefix (in any letter case) are cdclake's own (``_cdc_op`` ...).
RESERVED_PREFIX = "_cdc_"
#: Columns of the SCD2 history table besides the source's.
HISTORY_COLUMNS = ("valid_from", "valid_to", "is_current")


def _clean(part: str) -> str:
    cleaned = _UNSAFE.sub("_", part.strip().lower()).strip("_")
    if _NUMBER_LITERAL.fullmatch(cleaned):
        return "_" + cleaned  # unquoted in SQL text, a number would not parse as a name
    return cleaned or "_"


def column_name_problem(name: str, others: Iterable[str] = (), scd2: bool = False) -> str | None:
    """Why a source column name cannot be a lake column (None: it can; it is always quoted).

    Any other text is stored exactly (backticks, quotes, dots, spaces, unicode): names
    reach SQL only through ``quote_ident`` and the DataFrame API only under aliases.
    ``others``: the table's other columns (Spark resolves names regardless of case).
    """
    if not name:
        return "is empty (Iceberg refuses an empty column name)"
    if "\x00" in name:
        return "contains a NUL character (engines that read names as C strings would cut it there)"
    if name.lower().startswith(RESERVED_PREFIX):
        return f"starts with {RESERVED_PREFIX}, which is reserved for cdclake's metadata columns"
    if scd2 and name.lower() in HISTORY_COLUMNS:
        return f"is a metadata column of the table's SCD2 history ({', '.join(HISTORY_COLUMNS)})"
    for other in others:
        if other != name and other.lower() == name.lower():
            return f"differs only in letter case from column {other!r} (Spark resolves names case-insensitively)"
    return None


def iceberg_identifier(source_table: str, namespace: str | None = None) -> tuple[str, str]:
    """``GG.TCUSTORD`` -> ``("gg", "tcustord")``; ``namespace`` overrides the prefix."""
    parts = [p for p in source_table.split(".") if p.strip()]
    if not parts:
        raise ValueError(f"empty table name {source_table!r}")
    table = _clean(parts[-1])
    if namespace:
        ns = _clean(namespace)
    elif len(parts) > 1:
        ns = "_".join(_clean(p) for p in parts[:-1])
    else:
        ns = DEFAULT_NAMESPACE
    return ns, table


def spark_table_name(source_table: str, namespace: str | None = None) -> str:
    """Fully qualified Spark name, e.g. ``lake.gg.tcustord`` (parts are already safe)."""
    ns, table = iceberg_identifier(source_table, namespace)
    return f"{CATALOG_NAME}.{ns}.{table}"
