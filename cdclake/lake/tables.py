"""Reading lake tables without a JVM (pyiceberg on the same JDBC catalog as Spark).

The ``show`` command, reports and tests read tables and snapshot summaries
here; Spark writes them. Both use the catalog name ``lake`` and the same
catalog: ``catalog.db`` inside the warehouse folder by default, or the
database of ``CDCLAKE_CATALOG_URI`` (``cdclake.runtime.settings.CatalogSettings``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cdclake.lake.naming import SOURCE_TABLE_PROPERTY, iceberg_identifier
from cdclake.merge import META_COLUMNS
from cdclake.runtime.settings import CATALOG_NAME, CatalogSettings, is_s3, warehouse_location

BATCH_PROPERTY = "cdclake.batch-id"


class TableNotFound(LookupError):
    pass


def open_catalog(warehouse: str | Path, catalog: CatalogSettings | None = None):
    """pyiceberg's SqlCatalog on the catalog Spark writes (``catalog``: from the environment if None)."""
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = CatalogSettings.from_env() if catalog is None else catalog
    warehouse = warehouse_location(warehouse)
    if catalog.uri is None and catalog.sqlalchemy_uri is None:
        if not isinstance(warehouse, Path):  # SQLite needs a local folder
            raise TableNotFound(f"no catalog for warehouse {warehouse}: set CDCLAKE_CATALOG_URI")
        if not (warehouse / "catalog.db").exists():
            raise TableNotFound(f"no warehouse catalog at {warehouse / 'catalog.db'}")
        return SqlCatalog(CATALOG_NAME, uri=f"sqlite:///{warehouse / 'catalog.db'}", warehouse=warehouse.as_uri())
    from sqlalchemy import inspect

    location = warehouse.as_uri() if isinstance(warehouse, Path) else warehouse
    properties = {"uri": catalog.sqlalchemy_url(warehouse), "warehouse": location, "init_catalog_tables": "false"}
    if is_s3(warehouse):
        properties.update(s3_properties(catalog))
    sql_catalog = SqlCatalog(CATALOG_NAME, **properties)
    if not inspect(sql_catalog.engine).has_table("iceberg_tables"):
        # The URI itself is not shown: it may carry credentials.
        raise TableNotFound("no Iceberg catalog tables in the CDCLAKE_CATALOG_URI database yet (Spark creates them)")
    return sql_catalog


def s3_properties(catalog: CatalogSettings) -> dict[str, str]:
    """pyiceberg FileIO properties for S3 / MinIO; keys come from the AWS environment variables."""
    properties = {"s3.force-virtual-addressing": "false" if catalog.s3_path_style else "true"}
    if catalog.s3_endpoint:
        properties["s3.endpoint"] = catalog.s3_endpoint
    if catalog.s3_region:
        properties["s3.region"] = catalog.s3_region
    return properties


def load_table(warehouse: str | Path, source_table: str, namespace: str | None = None):
    from pyiceberg.exceptions import NoSuchTableError

    catalog = open_catalog(warehouse)
    ident = iceberg_identifier(source_table, namespace)
    try:
        return catalog.load_table(ident)
    except NoSuchTableError:
        raise TableNotFound(f"table {source_table} ({'.'.join(ident)}) does not exist in {warehouse}") from None


def read_rows(
    warehouse: str | Path, source_table: str, include_meta: bool = False, namespace: str | None = None
) -> list[dict[str, Any]]:
    """Current rows, sorted by primary key (stable output for people and tests)."""
    table = load_table(warehouse, source_table, namespace)
    rows = table.scan().to_arrow().to_pylist()
    keys = table.properties.get("cdclake.keys", "")
    key_cols = [k for k in keys.split(",") if k]
    rows.sort(key=lambda r: tuple(_sortable(r.get(k)) for k in key_cols) or tuple(map(_sortable, r.values())))
    if not include_meta:
        rows = [{k: v for k, v in r.items() if k not in META_COLUMNS} for r in rows]
    return rows


def _sortable(value: Any) -> tuple[int, Any]:
    return (0, "") if value is None else (1, str(value) if not isinstance(value, (int, float)) else value)


def snapshot_summaries(warehouse: str | Path, source_table: str, namespace: str | None = None) -> list[dict[str, str]]:
    """Snapshot summaries of the table's history (``main`` and its ancestors), oldest first (batch ids live here).

    Snapshots of other branches are left out: compact merges into a private branch first, and a merge
    that was never published (a lost race, a crash) is not part of the table.
    """
    table = load_table(warehouse, source_table, namespace)
    by_id = {snap.snapshot_id: snap for snap in table.snapshots()}
    lineage = []
    current = table.current_snapshot()
    while current is not None:
        lineage.append(current)
        current = by_id.get(current.parent_snapshot_id) if current.parent_snapshot_id is not None else None
    out = []
    for snap in reversed(lineage):
        summary = dict(snap.summary.additional_properties) if snap.summary else {}
        summary["operation"] = str(snap.summary.operation.value) if snap.summary else ""
        summary["snapshot-id"] = str(snap.snapshot_id)
        out.append(summary)
    return out


def source_name(table) -> str | None:
    return table.properties.get(SOURCE_TABLE_PROPERTY)
