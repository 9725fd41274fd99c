"""The batch steps: each module's ``run(spark, ...)`` is one step, and the ``spark_jobs/`` entry points,
:mod:`cdclake.pipeline` (the local ``apply``) and the command line call them.

Owns decode (`decode`: staged files -> canonical events and quarantine; in local mode its tasks run in local
processes, `decode_pool` and `decode_processes`), normalize (`normalize`: per table the change log, the layout
and the schema changes), applying schema changes (`ddl`) and truncates (`truncate`), compacting every table of a
batch (`compact`, over :mod:`cdclake.compaction`), rebuilds from the change log or the archive (`rebuild`),
table maintenance (`maintain`) and tombstone retention (`retention`). The steps distribute library code: what a
merge means lives in :mod:`cdclake.compaction` and :mod:`cdclake.merge`.

The names other packages import are exported here (``__all__``), each loaded from its module when first
asked for (PEP 562): importing the package alone loads none of its modules.
"""

from cdclake import lazy_exports

#: Modules of this package exported as themselves.
_MODULES = ("compact", "ddl", "decode", "maintain", "normalize", "rebuild", "retention", "truncate")
#: The other public names, by the module of this package that defines them.
_NAMES = {
    "ddl": ("SchemaPolicyError", "has_changes"),
    "decode": (
        "DECODED_SPARK_DDL",
        "OCF_BLOCKS",
        "decode_files",
        "decode_items",
        "decode_to_files",
        "file_pieces",
        "piece_test",
    ),
    "decode_pool": ("run_tasks",),
    "normalize": ("unsafe_columns",),
    "rebuild": ("source_batches",),
    "truncate": ("has_truncates",),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _NAMES, _MODULES)
