"""How a process runs: settings, sources configuration, Spark session, limits.

Owns the typed runtime settings (`settings`), the sources configuration (`sources`), the Spark session
(`spark`) and its driver's class-data archive (`jvm_archive`), memory allocation (`allocator`), bounds on
hostile input (`limits`) and fault injection for the crash tests (`faults`).

The names other packages import are exported here (``__all__``), each loaded from its module when first
asked for (PEP 562): importing the package alone loads none of its modules.
"""

from cdclake import lazy_exports

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

__all__, __getattr__, __dir__ = lazy_exports(__name__, _NAMES, _MODULES)
