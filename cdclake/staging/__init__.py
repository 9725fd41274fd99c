"""Landing files into batches.

Owns staging (`stage`: a local folder or S3, each file exactly once), the batch folder and its manifest
(`batch`), reading landing and staged files (`reading`), and the seekable zstd container (`seekable_zstd`).

The names other packages import are exported here (``__all__``), each loaded from its module when first
asked for (PEP 562): importing the package alone loads none of its modules.
"""

import importlib

#: Modules of this package exported as themselves.
_MODULES = ("seekable_zstd", "stage")
#: The other public names, by the module of this package that defines them.
_NAMES = {
    "batch": (
        "Manifest",
        "StagedFile",
        "read_manifest",
        "read_report",
        "safe_batch_id",
        "write_json_atomic",
        "write_report",
    ),
    "reading": (
        "GZIP_MAGIC",
        "STAGED_SUFFIX",
        "LandingFileError",
        "content_size",
        "maybe_gunzip",
        "open_staged",
        "read_landing_bytes",
        "read_staged_bytes",
        "read_staged_raw",
        "staged_size",
    ),
    "stage": (
        "StagingError",
        "batch_id_for_run",
        "content_batch_id",
        "s3_client_from_connection",
        "safe_relative",
        "sha256_of",
        "stage_files",
        "stage_local",
        "stage_source",
    ),
}
_HOME = {name: module for module, names in _NAMES.items() for name in names} | {m: m for m in _MODULES}

__all__ = [
    "GZIP_MAGIC",
    "STAGED_SUFFIX",
    "LandingFileError",
    "Manifest",
    "StagedFile",
    "StagingError",
    "batch_id_for_run",
    "content_batch_id",
    "content_size",
    "maybe_gunzip",
    "open_staged",
    "read_landing_bytes",
    "read_manifest",
    "read_report",
    "read_staged_bytes",
    "read_staged_raw",
    "s3_client_from_connection",
    "safe_batch_id",
    "safe_relative",
    "seekable_zstd",
    "sha256_of",
    "stage",
    "stage_files",
    "stage_local",
    "stage_source",
    "staged_size",
    "write_json_atomic",
    "write_report",
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
