"""Reading landing files and their staged copies: gzip detection and size limits.

Every reader accepts gzip-compressed files (DESIGN.md section 2). The gzip
magic number decides, not the file name, because landing zones rename files.
A staged copy is a seekable zstd file (:mod:`cdclake.staging.seekable_zstd`) named with :data:`STAGED_SUFFIX`,
which staging adds to every name it writes: a batch staged before that holds plain copies, read as they are.
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
from pathlib import Path
from typing import IO

from cdclake.runtime.limits import MAX_FILE_BYTES
from cdclake.staging import seekable_zstd

GZIP_MAGIC = b"\x1f\x8b"
#: The name ending of a staged copy in the seekable zstd format (staging appends it to the landing name).
STAGED_SUFFIX = ".staged.zst"
#: Read (and decompress) in pieces of this size.
_CHUNK = 16 * 1024**2


class LandingFileError(ValueError):
    """The file as a whole cannot be read (the whole file is quarantined)."""


def read_landing_bytes(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The decompressed content of a landing file.

    Buffers are sized by what the file holds, never by the limit: ``read(max_bytes + 1)`` makes
    CPython reserve a buffer of the limit (4 GiB) for every file, which fails under a
    virtual-memory cap (``ulimit -v``, YARN's vmem check) even for a file of one byte.
    """
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > max_bytes:
            raise LandingFileError(f"{path}: file is larger than the limit of {max_bytes} bytes")
        data = handle.read(size + 1) if size else _read_capped(handle, max_bytes)
        if size and len(data) > size:  # the file grew while being read: read what it now holds, capped
            data += _read_capped(handle, max_bytes - len(data))
    if len(data) > max_bytes:
        raise LandingFileError(f"{path}: file is larger than the limit of {max_bytes} bytes")
    return maybe_gunzip(data, str(path), max_bytes)


def maybe_gunzip(data: bytes, name: str, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """Decompress gzip data (all members); other data is returned as is."""
    if not data.startswith(GZIP_MAGIC):
        return data
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as handle:
            out = _read_capped(handle, max_bytes)
    except (OSError, EOFError, zlib.error) as exc:
        raise LandingFileError(f"{name}: gzip data is corrupt or truncated ({exc})") from exc
    if len(out) > max_bytes:
        raise LandingFileError(f"{name}: decompressed size exceeds the limit of {max_bytes} bytes")
    return out


def _read_capped(handle: IO[bytes], max_bytes: int) -> bytes:
    """Up to ``max_bytes + 1`` bytes of ``handle`` in chunks (so a buffer never exceeds the data)."""
    out = io.BytesIO()  # getvalue() hands over its buffer: no second copy of the content
    while out.tell() <= max_bytes:
        chunk = handle.read(min(_CHUNK, max_bytes + 1 - out.tell()))
        if not chunk:
            break
        out.write(chunk)
    return out.getvalue()


def open_staged(path: str | Path) -> IO[bytes] | seekable_zstd.Reader:
    """A staged copy opened for ``read`` / ``seek`` / ``tell`` over the landing file's bytes."""
    return seekable_zstd.Reader(path) if str(path).endswith(STAGED_SUFFIX) else open(path, "rb")


def content_size(handle: IO[bytes] | seekable_zstd.Reader) -> int:
    """The landing file's size, of a staged copy opened by :func:`open_staged`."""
    return handle.size if isinstance(handle, seekable_zstd.Reader) else os.fstat(handle.fileno()).st_size


def staged_size(path: str | Path) -> int:
    """The landing file's size, from its staged copy."""
    with open_staged(path) as handle:
        return content_size(handle)


def read_staged_raw(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The landing file's bytes as they landed (not gunzipped), from its staged copy."""
    with open_staged(path) as handle:
        if content_size(handle) > max_bytes:
            raise LandingFileError(f"{path}: file is larger than the limit of {max_bytes} bytes")
        return handle.read()


def read_staged_bytes(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The decompressed content of a landing file, from its staged copy (:func:`read_landing_bytes`' rules)."""
    if not str(path).endswith(STAGED_SUFFIX):
        return read_landing_bytes(path, max_bytes)
    return maybe_gunzip(read_staged_raw(path, max_bytes), str(path), max_bytes)
