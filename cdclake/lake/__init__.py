"""The lake tables as the outside reads them.

Owns Iceberg identifiers from source names (`naming`), reading tables without a JVM (`tables`), and how the
Parquet files written outside Spark are laid out: which columns carry statistics and dictionary pages, and the
batch's intermediate files' codec (`parquet_stats`).

The names other packages import are exported here (``__all__``), each loaded from its module when first
asked for (PEP 562): importing the package alone loads none of its modules.
"""

from cdclake import lazy_exports

#: Modules of this package exported as themselves.
_MODULES: tuple[str, ...] = ()
#: The other public names, by the module of this package that defines them.
_NAMES = {
    "naming": ("SOURCE_TABLE_PROPERTY", "column_name_problem", "iceberg_identifier", "spark_table_name"),
    "parquet_stats": (
        "INTERMEDIATE_COMPRESSION",
        "dictionary_columns",
        "intermediate_options",
        "statistics_columns",
        "write_intermediate",
    ),
    "tables": (
        "BATCH_PROPERTY",
        "TableNotFound",
        "load_table",
        "open_catalog",
        "read_rows",
        "s3_properties",
        "snapshot_summaries",
    ),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _NAMES, _MODULES)
