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

from cdclake.settings import CATALOG_NAME

DEFAULT_NAMESPACE = "default"
SOURCE_TABLE_PROPERTY = "cdclake.source-table"
_UNSAFE = re.compile(r"[^a-z0-9_]+")


def _clean(part: str) -> str:
    cleaned = _UNSAFE.sub("_", part.strip().lower()).strip("_")
    return cleaned or "_"


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
