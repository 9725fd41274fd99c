"""How a process runs: settings, sources configuration, Spark session, limits.

Owns the typed runtime settings (`settings`), the sources configuration (`sources`), the Spark session
(`spark`) and its driver's class-data archive (`jvm_archive`), memory allocation (`allocator`), bounds on
hostile input (`limits`) and fault injection for the crash tests (`faults`).

The names other packages import are exported here (``__all__``), each loaded from its module when first
asked for (PEP 562): importing the package alone loads none of its modules.
"""

import importlib

#: Modules of this package exported as themselves.
_MODULES = ("allocator", "limits")
#: The other public names, by the module of this package that defines them.
_NAMES = {
    "allocator": ("configure",),
    "faults": ("AFTER_FILES_WRITTEN", "fault_point", "inside_commit"),
    "jvm_archive": ("QUICK_JIT", "driver_java_options", "warm_up_batches"),
    "limits": (
        "MAX_AVRO_TYPE_DEPTH",
        "MAX_BLOCK_BYTES",
        "MAX_CONNECT_SCHEMA_DEPTH",
        "MAX_DECIMAL_BYTES",
        "MAX_DECIMAL_CHARS",
        "MAX_DECIMAL_PRECISION",
        "MAX_FILE_BYTES",
        "MAX_JSON_DEPTH",
        "MAX_OCF_HEADER_ENTRIES",
        "MAX_QLIK_MAP_ENTRIES",
        "MAX_QLIK_TYPE_DEPTH",
        "MAX_RAW_BYTES",
        "MAX_RECORD_BYTES",
        "MAX_RESYNC_TRIES",
        "MAX_SCHEMA_BYTES",
        "MAX_SCHEMA_FILES",
        "MAX_SCHEMA_JSON_DEPTH",
        "MAX_XML_DEPTH",
    ),
    "settings": (
        "BULK_BYTES_CAP",
        "BULK_BYTES_FLOOR",
        "CATALOG_NAME",
        "REPO_ROOT",
        "CatalogSettings",
        "Settings",
        "bulk_bytes_for",
        "is_s3",
        "warehouse_location",
    ),
    "sources": ("ConfigError", "HealthThresholds", "SourceConfig", "load_sources"),
    "spark": ("build_session", "catalog_conf", "java_class", "session_conf"),
}
_HOME = {name: module for module, names in _NAMES.items() for name in names} | {m: m for m in _MODULES}

__all__ = [
    "AFTER_FILES_WRITTEN",
    "BULK_BYTES_CAP",
    "BULK_BYTES_FLOOR",
    "CATALOG_NAME",
    "MAX_AVRO_TYPE_DEPTH",
    "MAX_BLOCK_BYTES",
    "MAX_CONNECT_SCHEMA_DEPTH",
    "MAX_DECIMAL_BYTES",
    "MAX_DECIMAL_CHARS",
    "MAX_DECIMAL_PRECISION",
    "MAX_FILE_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_OCF_HEADER_ENTRIES",
    "MAX_QLIK_MAP_ENTRIES",
    "MAX_QLIK_TYPE_DEPTH",
    "MAX_RAW_BYTES",
    "MAX_RECORD_BYTES",
    "MAX_RESYNC_TRIES",
    "MAX_SCHEMA_BYTES",
    "MAX_SCHEMA_FILES",
    "MAX_SCHEMA_JSON_DEPTH",
    "MAX_XML_DEPTH",
    "QUICK_JIT",
    "REPO_ROOT",
    "CatalogSettings",
    "ConfigError",
    "HealthThresholds",
    "Settings",
    "SourceConfig",
    "allocator",
    "build_session",
    "bulk_bytes_for",
    "catalog_conf",
    "configure",
    "driver_java_options",
    "fault_point",
    "inside_commit",
    "is_s3",
    "java_class",
    "limits",
    "load_sources",
    "session_conf",
    "warehouse_location",
    "warm_up_batches",
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
