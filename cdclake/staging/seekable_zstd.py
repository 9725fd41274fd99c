"""Files in zstd's seekable format: independent zstd frames, then a seek table in a skippable frame.

Why: staging keeps a copy of every landing file for as long as a batch may be replayed, and decode cuts big
files into pieces by byte offset (``jobs.decode.file_pieces``). Plain copies cost the disk their whole size
(the 1M Debezium bench's 5.1 GB staged at the disk's write speed, 7.8 s); compressed, a CDC JSON landing file
is 15-33x smaller. A single zstd stream could only be read from its start; in the seekable format any byte
range is read by decompressing only the frames it overlaps.

The layout is the one zstd's ``contrib/seekable_format`` specifies, so ``zstd -d`` reads these files as they
are (it skips the seek table's skippable frame):

- frames: each a standard zstd frame of at most :data:`FRAME_BYTES` of content, with its content size and
  checksum (zstd's own XXH64: a flipped bit is found when the frame is read, not decoded as other bytes);
- seek table: skippable-frame magic ``0x184D2A5E``, its size, then per frame its compressed and decompressed
  size (4 bytes each, little-endian), then the footer: the frame count (4 bytes), a descriptor byte (no
  checksums) and the seekable magic ``0x8F92EAB1``.

Untrusted bytes: a table that does not add up to the file (counts, sizes, offsets) or a frame that does not
decompress to its listed size raises :class:`SeekableError` naming the file, the frame and its offset.
"""

from __future__ import annotations

import bisect
import hashlib
import io
import os
import struct
import threading
from collections import deque
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

import zstandard

#: Content per frame: a byte range read decompresses at most this much before and after it.
FRAME_BYTES = 1 << 20
_SKIPPABLE_MAGIC = 0x184D2A5E
_SEEKABLE_MAGIC = 0x8F92EAB1
_FOOTER = struct.Struct("<IBI")  # frame count, descriptor, seekable magic
_ENTRY = struct.Struct("<II")  # compressed size, decompressed size
_CHECKSUM_FLAG = 0x80
#: The specification's bounds (``ZSTD_SEEKABLE_MAXFRAMES``, ``ZSTD_SEEKABLE_MAX_FRAME_DECOMPRESSED_SIZE``).
_MAX_FRAMES = 0x8000000
_MAX_FRAME_CONTENT = 0x40000000
#: Frames compressed ahead of the write, per writer (bounds a writer's memory to a few frames).
_AHEAD = 4


class SeekableError(OSError):
    """The file is not a whole seekable zstd file (its table or a frame does not read): an ``OSError``, as a
    file that cannot be read is to every reader of staged copies."""


_local = threading.local()


def _compress(frame: bytes) -> bytes:
    """One frame at zstd's level 1 (1.5 GB/s a core on CDC JSON, 15-33x smaller); a compressor per thread."""
    compressor = getattr(_local, "compressor", None)
    if compressor is None:
        compressor = _local.compressor = zstandard.ZstdCompressor(level=1, write_checksum=True)
    return compressor.compress(frame)


def write(chunks: Iterable[bytes], out: BinaryIO, workers: int = 1) -> tuple[int, str]:
    """Write the content ``chunks`` to ``out`` in the seekable format; return the content's size and sha256.

    ``workers`` > 1 compresses frames on that many threads while this one hashes and writes (zstd and sha256
    both release the GIL): one big file then uses more than one core."""
    digest, size = hashlib.sha256(), 0
    entries: list[tuple[int, int]] = []
    pending: deque = deque()
    pool = ThreadPoolExecutor(workers) if workers > 1 else None

    def put(frame: bytes) -> None:
        digest.update(frame)
        pending.append((len(frame), pool.submit(_compress, frame) if pool else _compress(frame)))
        while len(pending) > (_AHEAD * workers if pool else 0):
            drain()

    def drain() -> None:
        length, done = pending.popleft()
        packed = done.result() if pool else done
        out.write(packed)
        entries.append((len(packed), length))

    try:
        buffer = bytearray()
        for chunk in chunks:
            size += len(chunk)
            if not buffer and len(chunk) == FRAME_BYTES:
                put(bytes(chunk))
                continue
            buffer += chunk
            while len(buffer) >= FRAME_BYTES:
                put(bytes(buffer[:FRAME_BYTES]))
                del buffer[:FRAME_BYTES]
        if buffer:
            put(bytes(buffer))
        while pending:
            drain()
    finally:
        if pool:
            pool.shutdown(wait=True, cancel_futures=True)
    table = b"".join(_ENTRY.pack(*entry) for entry in entries) + _FOOTER.pack(len(entries), 0, _SEEKABLE_MAGIC)
    out.write(struct.pack("<II", _SKIPPABLE_MAGIC, len(table)) + table)
    return size, digest.hexdigest()


class Reader:
    """A seekable zstd file read as its content: ``read``, ``seek`` and ``tell`` count content bytes, and
    ``size`` is the content's. The last frame read is kept, so small reads in order decompress each frame once."""

    def __init__(self, path: str | Path) -> None:
        self.name = str(path)
        self._file = open(path, "rb")  # closed by close() / the context manager
        try:
            self._starts, self._offsets, self._lengths = self._table()
        except BaseException:
            self._file.close()
            raise
        self.size = self._offsets[-1]
        self._pos = 0
        self._kept: tuple[int, memoryview] | None = None

    def _table(self) -> tuple[list[int], list[int], list[int]]:
        """Each frame's position in the file, each frame's first content byte (and the content's size last),
        each frame's compressed size."""
        handle = self._file
        total = os.fstat(handle.fileno()).st_size
        if total < 8 + _FOOTER.size:
            raise SeekableError(f"{self.name}: {total} bytes is too short for a seekable zstd file")
        handle.seek(total - _FOOTER.size)
        frames, descriptor, magic = _FOOTER.unpack(handle.read(_FOOTER.size))
        if magic != _SEEKABLE_MAGIC:
            raise SeekableError(f"{self.name}: no seekable zstd footer (magic {magic:#010x})")
        entry = _ENTRY.size + (4 if descriptor & _CHECKSUM_FLAG else 0)
        table = frames * entry + _FOOTER.size
        if frames > _MAX_FRAMES or 8 + table > total:
            raise SeekableError(f"{self.name}: its seek table lists {frames} frames, more than the file holds")
        handle.seek(total - table - 8)
        skippable, length = struct.unpack("<II", handle.read(8))
        if skippable != _SKIPPABLE_MAGIC or length != table:
            raise SeekableError(f"{self.name}: its seek table's frame header does not match its footer")
        raw = handle.read(frames * entry)
        starts, offsets, lengths = [0], [0], []
        for i in range(frames):
            packed, content = _ENTRY.unpack_from(raw, i * entry)
            if content > _MAX_FRAME_CONTENT or packed == 0:
                raise SeekableError(f"{self.name}: frame {i} lists {packed} bytes holding {content}")
            starts.append(starts[-1] + packed)
            offsets.append(offsets[-1] + content)
            lengths.append(packed)
        if starts[-1] != total - table - 8:
            raise SeekableError(
                f"{self.name}: its frames add up to {starts[-1]} bytes, the file holds {total - table - 8} before "
                "its seek table"
            )
        return starts[:-1], offsets, lengths

    def _frame(self, index: int) -> memoryview:
        if self._kept is not None and self._kept[0] == index:
            return self._kept[1]
        import pyarrow as pa  # here, not at the top: staging writes copies without it (65 ms an import)

        content = self._offsets[index + 1] - self._offsets[index]
        self._file.seek(self._starts[index])
        packed = self._file.read(self._lengths[index])
        try:
            # the header's size is what zstd allocates: it must be the table's (bounded) size
            if zstandard.frame_content_size(packed) != content:
                raise zstandard.ZstdError(f"its header does not give its listed {content} bytes")
            # into Arrow's memory pool, which keeps its pages (``cdclake.runtime.allocator``): zstandard's bytes objects
            # took 0.74 s to read a 507 MB file in decode's pieces, Arrow's buffers 0.50 s, a plain file 0.37 s.
            # libzstd checks the frame's checksum
            frame = pa.decompress(packed, decompressed_size=content, codec="zstd", asbytes=False)
        except (zstandard.ZstdError, pa.ArrowException, OSError) as exc:  # Arrow raises OSError for bad data
            raise SeekableError(f"{self.name}: frame {index} at byte {self._starts[index]} is corrupt ({exc})") from exc
        if frame.size != content:
            raise SeekableError(f"{self.name}: frame {index} at byte {self._starts[index]} is not {content} bytes")
        view = memoryview(frame)
        self._kept = (index, view)
        return view

    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self._pos + n)
        if end <= self._pos:
            return b""
        # sized once; each frame is copied in and let go (a join would hold every frame of the read at once);
        # getvalue() hands over the buffer without a copy
        out = io.BytesIO()
        out.seek(end - self._pos - 1)
        out.write(b"\0")
        out.seek(0)
        while self._pos < end:
            index = bisect.bisect_right(self._offsets, self._pos) - 1
            frame = self._frame(index)
            at = self._pos - self._offsets[index]
            self._pos += out.write(frame[at : at + end - self._pos])
        return out.getvalue()

    def seek(self, pos: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._pos, os.SEEK_END: self.size}[whence]
        if base + pos < 0:
            raise ValueError(f"negative seek position {base + pos}")
        self._pos = base + pos
        return self._pos

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        self._kept = None
        self._file.close()

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
