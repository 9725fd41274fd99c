"""The lake tables a source table becomes: the current rows, the change log, the SCD2 history.

Their DDL, the hidden metadata columns and :func:`ensure_tables` (create, or add columns).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from cdclake.compaction.lineage import table_properties
from cdclake.lake.naming import SOURCE_TABLE_PROPERTY
from cdclake.schema.coltypes import arrow_type, canonical_type, layout_schema, quote_ident

if TYPE_CHECKING:
    from cdclake.jobs.layout import TableLayout

META_DDL = "_cdc_op string, _cdc_seq string, _cdc_ts timestamp, _cdc_batch string, _cdc_bucket int, _cdc_key string"
#: The hidden columns as Arrow types (the driver's rows of a lake table end with them).
META_SCHEMA = layout_schema(META_DDL)
META_NAMES = META_SCHEMA.names
LOG_SUFFIX = "__changes"
LOG_DDL = (
    "_key string, _old_key string, _cdc_bucket int, _role string, op string, seq string, event_ts timestamp, "
    "tx_id string, tx_pos bigint, before map<string,string>, after map<string,string>, meta string, "
    "source_file string, source_offset bigint, _cdc_batch string"
)
LOG_SCHEMA = layout_schema(LOG_DDL)
#: The change log's rows as routing writes them: with the reason a row is quarantined (NULL: a good row).
ROUTED_DDL = LOG_DDL + ", _error string"
ROUTED_SCHEMA = layout_schema(ROUTED_DDL)
TRUNCATE_BUCKET = -1
#: Table property: "1" when every row has its ``_cdc_key`` (set at creation, or after one full rewrite).
ROW_KEYS_PROPERTY = "cdclake.row-keys"
#: Table properties of the main table: row-level commits write position deletes (format v2).
MOR_PROPERTIES = {"write.merge.mode": "merge-on-read"}

HISTORY_SUFFIX = "__history"
HISTORY_META_DDL = (
    "valid_from timestamp, valid_to timestamp, is_current boolean, _cdc_op string, _cdc_seq string, "
    "_cdc_ts timestamp, _cdc_batch string, _cdc_bucket int"
)
HISTORY_META_NAMES = layout_schema(HISTORY_META_DDL).names


def table_schema(columns: list[tuple[str, str]]) -> pa.Schema:
    """The Arrow schema of a lake table's rows: ``columns`` (name, Spark SQL type), then the hidden ones."""
    return pa.schema([pa.field(n, arrow_type(t)) for n, t in columns] + list(META_SCHEMA))


def sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def table_ddl(columns: list[tuple[str, str]], *extra: str) -> str:
    """Column DDL, then ``extra`` (the meta columns): a table a truncate-only batch creates has no data columns."""
    return ", ".join([*(f"{quote_ident(n)} {canonical_type(t)}" for n, t in columns), *extra])


def _create(spark, name: str, ddl: str, props: dict[str, str], if_not_exists: bool = True) -> bool:
    """``CREATE TABLE``; without ``if_not_exists``, False when another session created it first."""
    props_sql = ", ".join(f"{sql_string(k)}={sql_string(v)}" for k, v in props.items())
    try:
        spark.sql(
            f"CREATE TABLE {'IF NOT EXISTS ' if if_not_exists else ''}{name} ({ddl}) USING iceberg "
            f"PARTITIONED BY (_cdc_bucket) TBLPROPERTIES ({props_sql})"
        )
    except Exception:
        # another session won the race (Spark's TABLE_OR_VIEW_ALREADY_EXISTS, or the JDBC catalog's
        # primary-key error when both checked before either inserted): the table is there, not ours
        if if_not_exists or not spark.catalog.tableExists(name):
            raise
        return False
    return True


def ensure_namespace(spark, namespace: str) -> None:
    """``CREATE NAMESPACE IF NOT EXISTS``, safe when another session creates it at the same moment (the JDBC
    catalog checks, then inserts: the loser of the race gets a primary-key error; the namespace exists)."""
    try:
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
    except Exception:
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")  # raises again only if it is still missing


def ensure_tables(spark, source_table: str, layout: TableLayout, buckets: int) -> int:
    """Create the table and its change log, or add new columns; returns the bucket count.

    A table made before ``_cdc_key`` existed gets the column (empty; its first compaction is a full
    rewrite, see ROW_KEYS_PROPERTY) and the merge-on-read properties. Nothing is committed when the
    table is already as it should be.
    """
    name = layout.spark_name
    columns = list(layout.columns)
    common = {
        "format-version": "2",
        SOURCE_TABLE_PROPERTY: source_table,
        "cdclake.keys": ",".join(layout.keys or ()),
        "write.parquet.compression-codec": "zstd",
    }
    created = False
    if not spark.catalog.tableExists(name):
        ensure_namespace(spark, name.rsplit(".", 1)[0])
        main_props = {**common, "cdclake.buckets": str(buckets), ROW_KEYS_PROPERTY: "1", **MOR_PROPERTIES}
        created = _create(spark, name, table_ddl(columns, META_DDL), main_props, if_not_exists=False)
    if created:  # made here just now, as it should be: no checks (each costs a catalog round trip)
        _create(spark, name + LOG_SUFFIX, LOG_DDL, {**common, "cdclake.buckets": str(buckets)})
    else:
        buckets = _checked(spark, name, source_table, columns, common, buckets)
    if layout.scd2:
        hist = name + HISTORY_SUFFIX
        hist_props = {**common, "cdclake.buckets": str(buckets)}
        # with a main table made just now, try to make its history table too, without a look first; one
        # that is there already (left from a dropped main table) is checked like any other
        if created and _create(spark, hist, table_ddl(columns, HISTORY_META_DDL), hist_props, if_not_exists=False):
            return buckets
        if not spark.catalog.tableExists(hist):
            _create(spark, hist, table_ddl(columns, HISTORY_META_DDL), hist_props)
        present = {f.name for f in spark.table(hist).schema.fields}
        new = [(n, t) for n, t in columns if n not in present]
        if new:
            spark.sql(f"ALTER TABLE {hist} ADD COLUMNS ({table_ddl(new)})")
    return buckets


def _checked(
    spark, name: str, source_table: str, columns: list[tuple[str, str]], common: dict[str, str], buckets: int
) -> int:
    """An existing table: its owner checked, new columns and missing properties added, its log created if
    missing; returns its bucket count."""
    props = table_properties(spark, name)
    owner = props.get(SOURCE_TABLE_PROPERTY)
    if owner and owner != source_table:
        raise ValueError(
            f"lake table {name} holds source table {owner}, not {source_table}: two source names map to "
            f"one identifier; give the sources different namespaces to separate them"
        )
    buckets = int(props.get("cdclake.buckets", buckets))
    present = {f.name for f in spark.table(name).schema.fields}
    new = [(n, t) for n, t in columns if n not in present]
    if "_cdc_key" not in present:
        new.append(("_cdc_key", "string"))
    if new:
        spark.sql(f"ALTER TABLE {name} ADD COLUMNS ({table_ddl(new)})")
    missing = {k: v for k, v in MOR_PROPERTIES.items() if k not in props}
    if missing:
        pairs = ", ".join(f"{sql_string(k)}={sql_string(v)}" for k, v in missing.items())
        spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ({pairs})")
    if not spark.catalog.tableExists(name + LOG_SUFFIX):
        _create(spark, name + LOG_SUFFIX, LOG_DDL, {**common, "cdclake.buckets": str(buckets)})
    return buckets


MERGE_ON_READ, OVERWRITE = "merge-on-read", "overwrite"
