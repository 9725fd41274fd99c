"""Avro binary and object container file (OCF) framing, shared by ``goldengate-avro-*`` and ``qlik-avro``.

fastavro's compiled reader trusts its input, so both decoders frame what it reads themselves and
compare every declared length with the bytes that remain: zig-zag varints, map and array block
counts, OCF block counts, sizes and record counts, and decompression bounded by a limit. These
mechanics live here once. What each format accepts, the words of its rejections and its limits
stay in the format's module (limits are passed in at call time: tests patch the module names).
"""

from __future__ import annotations

import bz2
import io
import lzma
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import fastavro

from cdclake.runtime.limits import MAX_RAW_BYTES

OCF_MAGIC = b"Obj\x01"
SYNC_SIZE = 16
#: The fewest bytes a value of each primitive type takes (arrays of zero-byte items are refused).
PRIMITIVE_SIZES = {"null": 0, "boolean": 1, "int": 1, "long": 1, "float": 4, "double": 8, "bytes": 1, "string": 1}

#: A codec's decompressor: (block data, limit) -> at most ``limit + 1`` bytes (more means too big).
Decompressor = Callable[[bytes, int], bytes]


class SchemaError(ValueError):
    """A schema that cannot (or must not) be used for decoding."""


class Malformed(ValueError):
    """Bytes that are not what the framing requires."""


class Truncated(Malformed):
    """Framing that runs past the end of the data."""


# --- Avro binary --------------------------------------------------------------------------------


def read_varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """An Avro long (zig-zag varint) at ``pos``: (value, position after it)."""
    result = shift = 0
    for _ in range(10):
        if pos >= end:
            raise Truncated("ends inside a number")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
    raise Malformed("has a number longer than 10 bytes")


def read_block_count(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """Item count of the next block of an Avro map or array (0 ends it) and the position after it.

    A negative count is followed by the block's size in bytes, which the readers here do not need.
    """
    count, pos = read_varint(data, pos, end)
    if count < 0:
        count = -count
        _, pos = read_varint(data, pos, end)
    return count, pos


def read_header_entry(
    data: bytes, pos: int, end: int, read_length: Callable[[bytes, int, int, str], tuple[int, int]]
) -> tuple[str, bytes, int]:
    """(key, value, position after them) of one metadata entry of an OCF header; ``read_length`` is
    the format's check of a declared length. Bad UTF-8 in a key is replaced: keys are only looked up."""
    length, pos = read_length(data, pos, end, "metadata key")
    key = data[pos : pos + length].decode("utf-8", "replace")
    pos += length
    length, pos = read_length(data, pos, end, "metadata value")
    return key, data[pos : pos + length], pos + length


def candidate_names(name: str, namespace: str) -> list[str]:
    """The full names a type reference may mean, in Avro's order: a dotted name as written,
    else the name in the enclosing namespace, then the bare name."""
    if "." in name:
        return [name]
    return [f"{namespace}.{name}", name] if namespace else [name]


def lazy_slice(data: bytes, start: int, end: int) -> Callable[[], bytes]:
    """A record's bytes, copied (capped) only when asked for (rejected records)."""
    return lambda: data[start : min(end, start + MAX_RAW_BYTES)]


# --- decompression ------------------------------------------------------------------------------


def _deflate(data: bytes, limit: int) -> bytes:
    return zlib.decompressobj(-15).decompress(data, limit + 1)


def _bzip2(data: bytes, limit: int) -> bytes:
    return bz2.BZ2Decompressor().decompress(data, max_length=limit + 1)


def _xz(data: bytes, limit: int) -> bytes:
    return lzma.LZMADecompressor().decompress(data, max_length=limit + 1)


def zstd_all_frames(data: bytes, limit: int) -> bytes:
    """Every zstandard frame of the block, read in chunks up to ``limit + 1`` bytes."""
    import zstandard

    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data))
    chunks, total = [], 0
    while total <= limit:
        chunk = reader.read(min(1 << 20, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


#: The codecs the standard library reads; a format adds its own (zstandard, snappy, lz4).
STDLIB_CODECS: dict[str, Decompressor] = {"deflate": _deflate, "bzip2": _bzip2, "xz": _xz}


def decompress(codec: str, data: bytes, limit: int, codecs: Mapping[str, Decompressor]) -> bytes:
    """A block's data decompressed to at most ``limit`` bytes; :class:`Malformed` says why not.

    ``codec`` is one of ``codecs`` (or ``null``): formats check the header's codec before any block.
    """
    if codec == "null":
        return data
    try:
        out = codecs[codec](data, limit)
    except Malformed:
        raise
    except Exception as exc:  # zlib.error, OSError, EOFError, LZMAError, ZstdError, ...
        raise Malformed(f"cannot be decompressed with codec {codec}: {exc}") from None
    if len(out) > limit:
        raise Malformed(f"decompresses to more than {limit} bytes")
    return out


# --- OCF blocks ---------------------------------------------------------------------------------


def frame_block(data: bytes, pos: int, end: int) -> tuple[int, int, int]:
    """(record count, size, offset of the data) of the block at ``pos``, checked against what remains.

    The sync marker after the data is the format's to check (its words differ).
    """
    count, body = read_varint(data, pos, end)
    size, body = read_varint(data, body, end)
    if count < 0 or size < 0:
        raise Malformed(f"declares {count} records in {size} bytes")
    if size > end - body:
        raise Truncated(f"declares {size} bytes but only {end - body} remain: the file is truncated")
    return count, size, body


class Inflater:
    """Decompresses the blocks of one file: each to at most ``block_limit`` bytes (an uncompressed
    block too, as it bounds its records), all of them to ``file_limit`` (as for a gzip file)."""

    def __init__(self, codec: str, codecs: Mapping[str, Decompressor], block_limit: int, file_limit: int) -> None:
        self.codec, self.codecs = codec, codecs
        self.block_limit, self.file_limit = block_limit, file_limit
        self.inflated = 0

    def content(self, data: bytes, body: int, size: int, count: int) -> bytes:
        """The decompressed data of the block at ``body``; :class:`Malformed` says why it cannot be read."""
        if self.codec == "null" and size > self.block_limit:
            raise Malformed(f"is {size} bytes, larger than the limit of {self.block_limit} for a block")
        if self.inflated > self.file_limit:
            raise Malformed(f"comes after blocks that inflate to more than {self.file_limit} bytes in all")
        content = decompress(self.codec, data[body : body + size], self.block_limit, self.codecs)
        self.inflated += len(content)
        if count > len(content):
            raise Malformed(f"declares {count} records in {len(content)} bytes")
        return content


@dataclass(slots=True)
class OcfBlock:
    """A framed, decompressed block. Records of an uncompressed block get their own offsets and bytes
    in the file; records of a compressed block share the block's offset and keep their own
    decompressed bytes (a copy of the whole block for each would let a small block of many bad
    records quarantine gigabytes)."""

    number: int
    start: int
    body: int
    stop: int  # offset of the sync marker after the data
    count: int
    content: bytes
    exact: bool  # uncompressed: offsets and bytes are the file's

    def offset(self, at: int) -> int:
        """The offset that a record at ``at`` in the content is reported at."""
        return self.body + at if self.exact else self.start

    def rest(self, data: bytes, at: int) -> bytes:
        """The bytes from ``at`` in the content to the end of the block (capped)."""
        if self.exact:
            offset = self.body + at
            return data[offset : min(self.stop, offset + MAX_RAW_BYTES)]
        return self.content[at : at + MAX_RAW_BYTES]


@dataclass(slots=True)
class BadRecord:
    """Where reading a block stopped: ``error`` is what the reader raised; None when the record
    took no bytes, or when ``trailing`` bytes follow the last record the block counts."""

    index: int
    offset: int
    raw: bytes
    error: BaseException | None = None
    trailing: int = 0


def block_records(
    data: bytes, block: OcfBlock, parsed_schema: Any, buffer: io.BytesIO
) -> Iterator[tuple[int, int, Any, Callable[[], bytes]] | BadRecord]:
    """(index, offset, record, raw bytes) of each record of ``block``; a :class:`BadRecord` ends it.

    ``buffer`` is reused from block to block. A record of no bytes ends the block, so that a count
    can never loop without reading (the formats refuse such schemas already).
    """
    buffer.seek(0)
    buffer.truncate()
    buffer.write(block.content)
    at = 0
    for index in range(block.count):
        offset = block.offset(at)
        buffer.seek(at)
        try:
            record = fastavro.schemaless_reader(buffer, parsed_schema, None)
        except Exception as exc:  # whatever the reader raises, the rest of the block is rejected
            yield BadRecord(index, offset, block.rest(data, at), exc)
            return
        after = buffer.tell()
        if after == at:
            yield BadRecord(index, offset, b"")
            return
        if block.exact:
            yield index, offset, record, lazy_slice(data, offset, block.body + after)
        else:
            yield index, offset, record, lazy_slice(block.content, at, after)
        at = after
    if at < len(block.content):  # a count smaller than the records written must not drop them unseen
        yield BadRecord(block.count, block.offset(at), block.rest(data, at), trailing=len(block.content) - at)


def bad_record_reason(block: OcfBlock, bad: BadRecord, label: str, describe: Callable[[BaseException], str]) -> str:
    """Why reading ``block`` stopped at ``bad``, in words; ``label`` is what the format calls a block
    and ``describe`` words what the reader raised."""
    where = f"{label} {block.number} at offset {block.start}"
    if bad.trailing:
        return f"{where} has {bad.trailing} bytes after its {block.count} records"
    record = f"record {bad.index + 1} of {block.count} in {where}"
    if bad.error is None:
        return f"{record} takes no bytes"
    return f"{record} cannot be read: {describe(bad.error)}; skipped the rest of the block"
