"""The lake tables as the outside reads them.

Owns Iceberg identifiers from source names (`naming`), reading tables without a JVM (`tables`), and how the
Parquet files written outside Spark are laid out: which columns carry statistics and dictionary pages, and the
batch's intermediate files' codec (`parquet_stats`).

The names other packages import are exported here (``__all__``), each loaded from its module when first
asked for (PEP 562): importing the package alone loads none of its modules.
"""

import importlib

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
_HOME = {name: module for module, names in _NAMES.items() for name in names} | {m: m for m in _MODULES}

__all__ = [
    "BATCH_PROPERTY",
    "INTERMEDIATE_COMPRESSION",
    "SOURCE_TABLE_PROPERTY",
    "TableNotFound",
    "column_name_problem",
    "dictionary_columns",
    "iceberg_identifier",
    "intermediate_options",
    "load_table",
    "open_catalog",
    "read_rows",
    "s3_properties",
    "snapshot_summaries",
    "spark_table_name",
    "statistics_columns",
    "write_intermediate",
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
