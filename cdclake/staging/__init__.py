"""Landing files into batches.

Owns staging (`stage`: a local folder or S3, each file exactly once), the batch folder and its manifest
(`batch`), reading landing and staged files (`reading`), and the seekable zstd container (`seekable_zstd`).

The names other packages import are exported here (``__all__``), each loaded from its module when first
asked for (PEP 562): importing the package alone loads none of its modules.
"""

from cdclake import lazy_exports

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

__all__, __getattr__, __dir__ = lazy_exports(__name__, _NAMES, _MODULES)
