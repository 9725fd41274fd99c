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

import importlib

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
_HOME = {name: module for module, names in _NAMES.items() for name in names} | {m: m for m in _MODULES}

__all__ = [
    "DECODED_SPARK_DDL",
    "OCF_BLOCKS",
    "SchemaPolicyError",
    "compact",
    "ddl",
    "decode",
    "decode_files",
    "decode_items",
    "decode_to_files",
    "file_pieces",
    "has_changes",
    "has_truncates",
    "maintain",
    "normalize",
    "piece_test",
    "rebuild",
    "retention",
    "run_tasks",
    "source_batches",
    "truncate",
    "unsafe_columns",
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
