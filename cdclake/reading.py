"""Reading landing files: gzip detection and size limits.

Every reader accepts gzip-compressed files (DESIGN.md section 2). The gzip
magic number decides, not the file name, because landing zones rename files.
"""

from __future__ import annotations

import gzip
import io
import zlib
from pathlib import Path

GZIP_MAGIC = b"\x1f\x8b"

#: Largest decompressed landing file read into memory at once (bytes).
MAX_FILE_BYTES = 4 * 1024**3


class LandingFileError(ValueError):
    """The file as a whole cannot be read (the whole file is quarantined)."""


def read_landing_bytes(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The decompressed content of a landing file."""
    with open(path, "rb") as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise LandingFileError(f"{path}: file is larger than the limit of {max_bytes} bytes")
    return maybe_gunzip(data, str(path), max_bytes)


def maybe_gunzip(data: bytes, name: str, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """Decompress gzip data (all members); other data is returned as is."""
    if not data.startswith(GZIP_MAGIC):
        return data
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as handle:
            out = handle.read(max_bytes + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise LandingFileError(f"{name}: gzip data is corrupt or truncated ({exc})") from exc
    if len(out) > max_bytes:
        raise LandingFileError(f"{name}: decompressed size exceeds the limit of {max_bytes} bytes")
    return out
