"""Qlik (Attunity) Replicate Avro messages (format id ``qlik-avro``).

Source: Qlik Replicate, "Metadata and data messages" (MapR Streams / Kafka targets) and "The
Replicate envelope". User documentation: ``docs/formats/qlik-avro.md``. Why it is written this way:

- A landing file is either consecutive ``MessageEnvelope`` records in Avro binary (each starts
  with the fixed magic ``atMSG`` and is self-delimiting), optionally separated by line breaks (a
  Kafka sink's byte-array separator), or an Avro object container file (OCF) whose records are
  envelopes, envelope bytes, or bare metadata / data messages. The envelope is read by our own
  bounded reader, so that every declared length is checked against the bytes that remain and a
  bad envelope costs only itself: decoding resumes at the next ``atMSG``.
- A metadata message (type ``MD``) carries its own Avro schema (``messageSchema``) and announces,
  under its ``schemaId``, the ``dataSchema`` of the table's data messages (type ``DT``, which
  carry only ``messageSchemaId``). The decoder remembers every announced schema id across the
  files of a batch (``stateful``): metadata often sits in an earlier file. A data message whose
  schema id was not announced yet is rejected (kept whole, so a run that reads the metadata
  first can decode it).
- Schemas come from the data, so they are checked before fastavro sees them: recursive types
  and arrays of zero-byte items are refused (fastavro trusts its input: the first lets data nest
  until the process crashes, the second lets a corrupt count loop for hours), depth is bounded.
- Order: ``seq`` = ``changeSequence`` (35 fixed-width digits: 16 of time, 19 of counter).
  ``REFRESH`` (full-load) rows have none: their seq is 35 zeros, which sorts before every
  change, so a later change of the same key always wins; ties among them fall back to file
  order.
- ``columnMask`` tells a NULL from a column that was not replicated. Real data reads the mask as
  one big-endian hex number whose bit 0 is ordinal 1 (``int(mask, 16) >> (ordinal - 1) & 1``;
  the vendor text says little-endian), so that is what is done; the Avro form is the same
  number as big-endian bytes. A column whose bit is clear is left out of the image (missing).
"""

from __future__ import annotations

import datetime as dt
import io
import json
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

import fastavro
import fastavro.schema

from cdclake.events.change import ChangeEvent, Rejected, Source, format_ts, to_json
from cdclake.formats._avro_binary import (
    OCF_MAGIC,
    PRIMITIVE_SIZES,
    STDLIB_CODECS,
    SYNC_SIZE,
    BadRecord,
    Decompressor,
    Inflater,
    Malformed,
    OcfBlock,
    SchemaError,
    Truncated,
    bad_record_reason,
    block_records,
    candidate_names,
    frame_block,
    lazy_slice,
    read_block_count,
    read_header_entry,
    read_varint,
    zstd_all_frames,
)
from cdclake.formats._json import loads_unique
from cdclake.formats.kafka_connect import parse_timestamp
from cdclake.options import Options
from cdclake.registry import Decoder, register
from cdclake.runtime.limits import MAX_BLOCK_BYTES, MAX_FILE_BYTES, MAX_RAW_BYTES, MAX_RECORD_BYTES, MAX_SCHEMA_BYTES
from cdclake.runtime.limits import MAX_QLIK_MAP_ENTRIES as MAX_MAP_ENTRIES
from cdclake.runtime.limits import MAX_QLIK_TYPE_DEPTH as MAX_TYPE_DEPTH
from cdclake.schema.coltypes import canonical_type

MAGIC = b"atMSG"
#: Parsed schemas kept (by text) for reuse.
MAX_CACHED_SCHEMAS = 512
#: ``changeSequence`` width; shorter digit strings are left-padded with zeros.
SEQ_WIDTH = 35
#: ``seq`` of REFRESH rows (no changeSequence): before every change.
REFRESH_SEQ = "0" * SEQ_WIDTH

#: The envelope's Avro schema, as the vendor documents it.
ENVELOPE_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "MessageEnvelope",
    "fields": [
        {"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": 5}},
        {"name": "type", "type": "string"},
        {"name": "headers", "type": ["null", {"type": "map", "values": "string"}]},
        {"name": "messageSchemaId", "type": ["null", "string"]},
        {"name": "messageSchema", "type": ["null", "string"]},
        {"name": "message", "type": "bytes"},
    ],
}

OPS = {"REFRESH": "UPSERT", "INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE"}
#: Data message header fields with a meaning here (others go to ``meta["headers_extra"]``).
_HEADER_FIELDS = frozenset(
    {
        "operation",
        "changeSequence",
        "timestamp",
        "streamPosition",
        "transactionId",
        "changeMask",
        "columnMask",
        "externalSchemaId",
        "transactionEventCounter",
        "transactionLastEvent",
    }
)
#: Replicate data types -> our column types (NUMERIC is decimal(precision, scale)).
_QLIK_TYPES = {
    "BOOLEAN": "boolean",
    "BYTES": "binary",
    "BLOB": "binary",
    "DATE": "date",
    "TIME": "string",
    "DATETIME": "timestamp",
    "INT1": "bigint",
    "INT2": "bigint",
    "INT4": "bigint",
    "INT8": "bigint",
    "UINT1": "bigint",
    "UINT2": "bigint",
    "UINT4": "bigint",
    "UINT8": "decimal(20,0)",
    "REAL4": "double",
    "REAL8": "double",
    "STRING": "string",
    "WSTRING": "string",
    "CLOB": "string",
    "NCLOB": "string",
}
_INT_QLIK = frozenset({"INT1", "INT2", "INT4", "INT8", "UINT1", "UINT2", "UINT4", "UINT8"})
_NUMBER_QLIK = frozenset({"NUMERIC", "DECIMAL", "REAL4", "REAL8"})
_BLANKS = b" \t\r\n"
_HEX = re.compile(r"[0-9A-Fa-f]+")
_DIGITS = re.compile(r"[0-9]+")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,4})?")


# --- Avro binary --------------------------------------------------------------------------------------


def _length(data: bytes, pos: int, end: int, what: str, limit: int = MAX_SCHEMA_BYTES) -> tuple[int, int]:
    length, pos = read_varint(data, pos, end)
    if length < 0:
        raise Malformed(f"declares a negative length ({length}) for its {what}")
    if length > limit:
        raise Malformed(f"declares {length} bytes for its {what}, more than the limit of {limit}")
    if length > end - pos:
        raise Truncated(f"declares {length} bytes for its {what} but only {end - pos} remain")
    return length, pos


def _string(data: bytes, pos: int, end: int, what: str, limit: int = MAX_SCHEMA_BYTES) -> tuple[str, int]:
    length, pos = _length(data, pos, end, what, limit)
    try:
        return data[pos : pos + length].decode("utf-8"), pos + length
    except UnicodeDecodeError as exc:
        raise Malformed(f"has a {what} that is not valid UTF-8 ({exc.reason})") from None


def _header(data: bytes, pos: int, end: int) -> tuple[str, str, int]:
    """One envelope header: (name, value, position after them)."""
    key, pos = _string(data, pos, end, "header name")
    value, pos = _string(data, pos, end, "header value")
    return key, value, pos


def _read_map(
    data: bytes, pos: int, end: int, what: str, read_entry: Callable[[bytes, int, int], tuple[str, Any, int]]
) -> tuple[dict[str, Any], int]:
    """An Avro map at ``pos`` of at most :data:`MAX_MAP_ENTRIES` ``what``: (entries, position after it)."""
    entries: dict[str, Any] = {}
    while True:
        count, pos = read_block_count(data, pos, end)
        if count == 0:
            return entries, pos
        if len(entries) + count > MAX_MAP_ENTRIES:
            raise Malformed(f"has more than {MAX_MAP_ENTRIES} {what}")
        for _ in range(count):
            key, value, pos = read_entry(data, pos, end)
            entries[key] = value


def _optional_string(data: bytes, pos: int, end: int, what: str) -> tuple[str | None, int]:
    branch, pos = read_varint(data, pos, end)
    if branch == 0:
        return None, pos
    if branch != 1:
        raise Malformed(f"has union branch {branch} for its {what} (0 = null, 1 = string)")
    return _string(data, pos, end, what)


def read_envelope(data: bytes, pos: int, end: int) -> tuple[dict[str, Any], int]:
    """The envelope at ``pos`` (``ENVELOPE_SCHEMA``) and the position after it."""
    if data[pos : pos + len(MAGIC)] != MAGIC:
        raise Malformed("does not start with the magic 'atMSG'")
    pos += len(MAGIC)
    kind, pos = _string(data, pos, end, "type", 64)
    branch, pos = read_varint(data, pos, end)
    headers: dict[str, str] | None = None
    if branch == 1:
        headers, pos = _read_map(data, pos, end, "headers", _header)
    elif branch != 0:
        raise Malformed(f"has union branch {branch} for its headers (0 = null, 1 = map)")
    schema_id, pos = _optional_string(data, pos, end, "messageSchemaId")
    schema, pos = _optional_string(data, pos, end, "messageSchema")
    length, pos = _length(data, pos, end, "message", MAX_RECORD_BYTES)
    envelope = {
        "magic": MAGIC,
        "type": kind,
        "headers": headers,
        "messageSchemaId": schema_id,
        "messageSchema": schema,
        "message": data[pos : pos + length],
    }
    return envelope, pos + length


# --- schemas ------------------------------------------------------------------------------------------


@dataclass(slots=True)
class AvroSchema:
    """A checked schema: fastavro's parsed form and the parsing canonical form."""

    document: Any
    parsed: Any
    canonical: str


def load_schema(text: str, origin: str) -> AvroSchema:
    """Check and parse a schema that came with the data; :class:`SchemaError` says why not."""
    if len(text) > MAX_SCHEMA_BYTES:
        raise SchemaError(f"{origin} is longer than {MAX_SCHEMA_BYTES} characters")
    try:
        document = loads_unique(text)
    except RecursionError:
        raise SchemaError(f"{origin} nests JSON too deeply") from None
    except ValueError as exc:
        raise SchemaError(f"{origin} is not JSON ({exc})") from None
    if _SchemaCheck(origin).walk(document, "", 1) == 0:
        raise SchemaError(f"{origin}: its values take no bytes (a count of them could not be checked); not supported")
    try:
        parsed = fastavro.parse_schema(document)
        canonical = fastavro.schema.to_parsing_canonical_form(parsed)
    except Exception as exc:  # fastavro raises several types for bad schemas
        raise SchemaError(f"{origin} is not a valid Avro schema ({type(exc).__name__}: {exc})") from None
    return AvroSchema(document, parsed, canonical)


class _SchemaCheck:
    """Refuses what fastavro cannot read safely: recursion, zero-byte array items, deep nesting."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.named: dict[str, int] = {}
        self.in_progress: set[str] = set()

    def fail(self, reason: str) -> SchemaError:
        return SchemaError(f"{self.origin}: {reason}")

    def walk(self, schema: Any, namespace: str, depth: int) -> int:
        """Checks ``schema``; returns the fewest bytes one of its values takes."""
        if depth > MAX_TYPE_DEPTH:
            raise self.fail(f"types nest deeper than {MAX_TYPE_DEPTH} levels")
        if isinstance(schema, str):
            return self.reference(schema, namespace)
        if isinstance(schema, list):
            for branch in schema:
                self.walk(branch, namespace, depth + 1)
            return 1
        if not isinstance(schema, dict):
            raise self.fail(f"{str(schema)[:60]!r} is not a type")
        kind = schema.get("type")
        if isinstance(kind, (dict, list)):
            return self.walk(kind, namespace, depth + 1)
        if not isinstance(kind, str):
            raise self.fail(f"type {str(kind)[:60]!r} is not a type name")
        if kind in PRIMITIVE_SIZES:
            return PRIMITIVE_SIZES[kind]
        if kind in ("record", "error"):
            name = self.fullname(schema, namespace)
            fields = schema.get("fields")
            if not isinstance(fields, list):
                raise self.fail(f"record {name} has no list of fields")
            self.in_progress.add(name)
            size = 0
            inner = name.rpartition(".")[0]
            for spec in fields:
                if not isinstance(spec, dict) or "type" not in spec:
                    raise self.fail(f"record {name} has a field without a type")
                size += self.walk(spec["type"], inner, depth + 1)
            self.in_progress.discard(name)
            self.named[name] = size
            return size
        if kind == "enum":
            self.named[self.fullname(schema, namespace)] = 1
            return 1
        if kind == "fixed":
            size = schema.get("size")
            if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= MAX_RECORD_BYTES:
                raise self.fail(f"fixed size {size!r} is not a size in bytes")
            self.named[self.fullname(schema, namespace)] = size
            return size
        if kind == "array":
            if self.walk(schema.get("items"), namespace, depth + 1) == 0:
                raise self.fail("an array's items take no bytes (a corrupt count would loop without end)")
            return 1
        if kind == "map":
            self.walk(schema.get("values"), namespace, depth + 1)
            return 1
        return self.reference(kind, namespace)

    def fullname(self, schema: dict[str, Any], namespace: str) -> str:
        name = schema.get("name")
        if not isinstance(name, str) or not name:
            raise self.fail(f"a {schema.get('type')} needs a name")
        if "." in name:
            return name
        own = schema.get("namespace", namespace)
        return f"{own}.{name}" if isinstance(own, str) and own else name

    def reference(self, name: str, namespace: str) -> int:
        if name in PRIMITIVE_SIZES:
            return PRIMITIVE_SIZES[name]
        for candidate in candidate_names(name, namespace):
            if candidate in self.in_progress:
                raise self.fail(f"type {candidate} refers to itself; recursive schemas are not supported")
            if candidate in self.named:
                return self.named[candidate]
        return 1  # unknown names: fastavro's parser says what is wrong


def read_message(message: bytes, schema: AvroSchema) -> Any:
    """One Avro binary record that must use every byte of ``message``."""
    buffer = io.BytesIO(message)
    try:
        record = fastavro.schemaless_reader(buffer, schema.parsed, None)
    except Exception as exc:  # whatever the reader raises, the message is rejected
        raise Malformed(_describe(exc)) from None
    rest = len(message) - buffer.tell()
    if rest:
        raise Malformed(f"{rest} bytes remain after the record: not written with this schema")
    return record


def _describe(exc: BaseException) -> str:
    if isinstance(exc, EOFError):
        return "the bytes end early: truncated, or not written with this schema"
    if isinstance(exc, IndexError):
        return "a union or enum index is out of range: corrupt, or not written with this schema"
    if isinstance(exc, UnicodeDecodeError):
        return f"a string is not valid UTF-8 ({exc.reason})"
    return f"{type(exc).__name__}: {exc}"


# --- values -----------------------------------------------------------------------------------------------


def mask_number(mask: Any) -> int | None:
    """A column/change mask as a number (None: no mask). Hex text or big-endian bytes."""
    if mask is None:
        return None
    if isinstance(mask, (bytes, bytearray)):
        return int.from_bytes(mask, "big") if mask else None
    if isinstance(mask, str):
        text = mask.strip()
        if not text:
            return None
        if not _HEX.fullmatch(text):
            raise ValueError(f"{mask[:40]!r} is not hexadecimal")
        return int(text, 16)
    raise ValueError(f"{type(mask).__name__} is not a mask")


def mask_text(mask: Any) -> str | None:
    """The mask as hex text for ``meta`` (bytes as upper-case hex, text as written)."""
    if isinstance(mask, (bytes, bytearray)):
        return mask.hex().upper()
    return mask if isinstance(mask, str) else None


def has_bit(mask: int, ordinal: int) -> bool:
    """Whether the column at ``ordinal`` (1-based) is set: bit 0 is ordinal 1 (real data)."""
    return ordinal >= 1 and (mask >> (ordinal - 1)) & 1 == 1


def avro_value(value: Any) -> Any:
    """A value fastavro returned, in the event contract's shapes."""
    if value is None or isinstance(value, (bool, int, str, bytes, Decimal)):
        return value
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, dt.datetime):
        return format_ts(value if value.tzinfo else value.replace(tzinfo=dt.UTC))
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.time):
        return value.replace(tzinfo=None).isoformat(timespec="microseconds")
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dict):
        return {str(k): avro_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [avro_value(v) for v in value]
    if isinstance(value, bytearray):
        return bytes(value)
    return str(value)


def typed_value(value: Any, qlik_type: str | None) -> Any:
    """Text values of typed Replicate columns as their type's value (ValueError says why not)."""
    if not isinstance(value, str) or not qlik_type:
        return value
    kind = qlik_type.upper()
    text = value.strip()
    if kind in _INT_QLIK:
        if not _INTEGER.fullmatch(text):
            raise ValueError(f"{value[:60]!r} is not an integer")
        return int(text)
    if kind in _NUMBER_QLIK:
        if _INTEGER.fullmatch(text) and len(text) < 4000:
            return int(text)
        if not _NUMBER.fullmatch(text) or len(text) > 4000:
            raise ValueError(f"{value[:60]!r} is not a number")
        try:
            return Decimal(text)
        except InvalidOperation:  # pragma: no cover - the pattern admits only numbers
            raise ValueError(f"{value[:60]!r} is not a number") from None
    if kind == "DATETIME":
        parsed = parse_timestamp(text)
        if parsed is None:
            raise ValueError(f"{value[:60]!r} is not a timestamp")
        return format_ts(parsed)
    if kind == "DATE":
        try:
            return dt.date.fromisoformat(text[:10]).isoformat()
        except ValueError:
            raise ValueError(f"{value[:60]!r} is not a date (YYYY-MM-DD)") from None
    if kind == "BOOLEAN" and text.lower() in ("true", "false", "1", "0"):
        return text.lower() in ("true", "1")
    return value


def column_type(qlik_type: str, precision: Any, scale: Any) -> str:
    """Our column type for a Replicate data type."""
    kind = qlik_type.upper()
    if kind in ("NUMERIC", "DECIMAL"):
        if isinstance(precision, int) and isinstance(scale, int) and 0 < precision <= 38 and 0 <= scale <= precision:
            return canonical_type(f"decimal({precision},{scale})")
        return "string"  # unknown or wider than Iceberg decimals: exact as text
    return _QLIK_TYPES.get(kind, "string")


# --- tables -----------------------------------------------------------------------------------------------


@dataclass(slots=True)
class TableVersion:
    """What a metadata message announced under one schema id."""

    schema_id: str
    table: str
    version: Any
    columns: list[dict[str, Any]]
    keys: list[str] | None
    data_schema: AvroSchema
    lineage: dict[str, Any]
    ordinals: dict[str, int] = field(default_factory=dict)
    qlik_types: dict[str, str] = field(default_factory=dict)
    column_types: dict[str, str] = field(default_factory=dict)


@register("qlik-avro")
class QlikAvroDecoder(Decoder):
    """Decoder of Qlik Replicate Avro envelopes and messages (see the module docstring)."""

    option_names = frozenset()
    stateful = True

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        #: schema id -> the table version it announced, or the reason its metadata was rejected.
        self.tables: dict[str, TableVersion | str] = {}
        self._by_canonical: dict[str, str] = {}
        self._announced: set[tuple[str, str]] = set()
        self._schemas: dict[str, AvroSchema | str] = {}
        #: schema id -> the accepted metadata record (kept for the next batch: metadata is sent once)
        self._metadata_records: dict[str, Any] = {}

    def export_state(self) -> str | None:
        return to_json(list(self._metadata_records.values())) if self._metadata_records else None

    def import_state(self, state: str) -> None:
        """Re-register metadata messages seen by earlier batches (their SCHEMA events were emitted then)."""
        for record in json.loads(state):
            for _ in self._metadata(record, Source("<earlier batch>", 0), lambda: b""):
                pass

    # --- containers ------------------------------------------------------------------------------------

    def decode(self, data: bytes, file: str) -> Iterator[ChangeEvent | Rejected]:
        """Events and rejected records of one landing file (already gunzipped), in file order."""
        if data.startswith(OCF_MAGIC):
            yield from self._ocf(data, file)
        else:
            yield from self._stream(data, file)

    def _stream(self, data: bytes, file: str) -> Iterator[ChangeEvent | Rejected]:
        end, pos = len(data), 0
        while True:
            while pos < end and data[pos] in _BLANKS:
                pos += 1
            if pos >= end:
                return
            start = pos
            if not data.startswith(MAGIC, pos):
                pos = _next_magic(data, pos + 1)
                where = "the end of the file" if pos >= end else f"the next envelope at offset {pos}"
                reason = (
                    f"{pos - start} bytes at offset {start} are not a Qlik envelope (an envelope starts with "
                    f"'atMSG'); skipped up to {where}"
                )
                yield Rejected(reason, Source(file, start), data[start : min(pos, start + MAX_RAW_BYTES)])
                continue
            try:
                envelope, after = read_envelope(data, start, end)
            except Malformed as exc:
                pos = _next_magic(data, start + 1)
                where = "the end of the file" if pos >= end else f"the next envelope at offset {pos}"
                reason = f"envelope at offset {start} {exc}; skipped {pos - start} bytes up to {where}"
                yield Rejected(reason, Source(file, start), data[start : min(pos, start + MAX_RAW_BYTES)])
                continue
            follow = after
            while follow < end and data[follow] in _BLANKS:
                follow += 1
            if follow < end and not data.startswith(MAGIC, follow):
                inside = _next_magic(data, start + 1)
                if inside < after:
                    # Another envelope starts inside this one's declared bytes: this one was cut short.
                    reason = (
                        f"envelope at offset {start} is cut short: it declares {after - start} bytes, but another "
                        f"envelope starts at offset {inside}; skipped {inside - start} bytes"
                    )
                    yield Rejected(reason, Source(file, start), data[start : min(inside, start + MAX_RAW_BYTES)])
                    pos = inside
                    continue
            pos = after
            yield from self._envelope(envelope, Source(file, start), lazy_slice(data, start, after))

    def _ocf(self, data: bytes, file: str) -> Iterator[ChangeEvent | Rejected]:
        end = len(data)
        try:
            header, sync, pos = _ocf_header(data)
        except Malformed as exc:
            yield Rejected(f"Avro OCF header {exc}; the file cannot be read", Source(file, 0), data[:MAX_RAW_BYTES])
            return
        codec = (header.get("avro.codec") or b"null").decode("utf-8", "replace")
        problem = _codec_problem(codec)
        schema: AvroSchema | str = "the header has no avro.schema"
        if "avro.schema" in header:
            try:
                schema = self._schema(header["avro.schema"].decode("utf-8"), "the OCF header's schema")
            except UnicodeDecodeError:
                schema = "the header's avro.schema is not valid UTF-8"
        kind = _ocf_kind(schema.document) if isinstance(schema, AvroSchema) else None
        if problem is None and isinstance(schema, str):
            problem = schema
        if problem is None and kind is None:
            problem = (
                "its records are neither Qlik envelopes (MessageEnvelope or bytes), metadata messages "
                "(schemaId, lineage, tableStructure, dataSchema) nor data messages (data, headers)"
            )
        if problem is not None:
            reason = f"Avro OCF file cannot be read: {problem}; rejected all {end - pos} bytes of blocks"
            yield Rejected(reason, Source(file, 0), data[:MAX_RAW_BYTES])
            return
        assert isinstance(schema, AvroSchema)
        data_entry: TableVersion | str | None = None
        if kind == "data":
            schema_id = self._by_canonical.get(schema.canonical)
            data_entry = self.tables.get(schema_id) if schema_id else None
        for item in _ocf_records(data, file, sync, pos, codec, schema):
            if isinstance(item, Rejected):
                yield item
                continue
            record, source, raw = item
            if kind == "envelope":
                envelope = _envelope_record(record)
                if isinstance(envelope, str):
                    yield Rejected(f"OCF record at offset {source.offset}: {envelope}", source, raw())
                else:
                    yield from self._envelope(envelope, source, raw)
            elif kind == "bytes":
                try:
                    if not isinstance(record, bytes):
                        raise Malformed("is not bytes")
                    envelope, after = read_envelope(record, 0, len(record))
                    if after != len(record):
                        raise Malformed(f"has {len(record) - after} bytes after its message")
                except Malformed as exc:
                    yield Rejected(f"envelope in the OCF record at offset {source.offset} {exc}", source, raw())
                    continue
                yield from self._envelope(envelope, source, raw)
            elif kind == "metadata":
                yield from self._metadata(record, source, raw)
            elif isinstance(data_entry, TableVersion):
                yield self._data(record, data_entry, source, raw, {})
            else:
                reason = (
                    "bare data message in an OCF whose schema no metadata message announced before it (as a "
                    "dataSchema, in this file or an earlier file of the batch); it is kept so that a run that "
                    "reads the metadata first can decode it"
                )
                if isinstance(data_entry, str):
                    reason = f"bare data message whose metadata message was rejected: {data_entry}"
                yield Rejected(reason, source, raw())

    # --- messages ------------------------------------------------------------------------------------------

    def _envelope(
        self, envelope: dict[str, Any], source: Source, raw: Callable[[], bytes]
    ) -> Iterator[ChangeEvent | Rejected]:
        kind = envelope["type"]
        extra: dict[str, Any] = {}
        if envelope.get("headers"):
            extra["envelope_headers"] = envelope["headers"]
        if kind == "MD":
            text = envelope.get("messageSchema")
            if not text:
                reason = (
                    "metadata envelope has no messageSchema (a metadata message carries the schema it is read with)"
                )
                yield Rejected(reason, source, raw())
                return
            schema = self._schema(text, "the metadata envelope's messageSchema")
            if isinstance(schema, str):
                yield Rejected(schema, source, raw())
                return
            try:
                record = read_message(envelope["message"], schema)
            except Malformed as exc:
                yield Rejected(f"metadata message cannot be read with its messageSchema: {exc}", source, raw())
                return
            yield from self._metadata(record, source, raw)
        elif kind == "DT":
            schema_id = envelope.get("messageSchemaId")
            if not schema_id:
                yield Rejected("data envelope has no messageSchemaId: its schema cannot be found", source, raw())
                return
            entry = self.tables.get(schema_id)
            if entry is None:
                reason = (
                    f"data message uses schema id {schema_id}, which no metadata message announced before it "
                    "(in this file or an earlier file of the batch); it is kept so that a run that reads the "
                    "metadata message first can decode it"
                )
                yield Rejected(reason, source, raw())
                return
            if isinstance(entry, str):
                yield Rejected(
                    f"data message uses schema id {schema_id}, whose metadata was rejected: {entry}", source, raw()
                )
                return
            try:
                record = read_message(envelope["message"], entry.data_schema)
            except Malformed as exc:
                reason = (
                    f"data message cannot be read with the dataSchema of schema id {schema_id} ({entry.table}): {exc}"
                )
                yield Rejected(reason, source, raw())
                return
            yield self._data(record, entry, source, raw, extra)
        else:
            yield Rejected(f"envelope type {kind!r} is neither MD (metadata) nor DT (data)", source, raw())

    def _schema(self, text: str, origin: str) -> AvroSchema | str:
        """The checked schema for ``text`` (cached), or the reason it cannot be used."""
        known = self._schemas.get(text)
        if known is None:
            try:
                known = load_schema(text, origin)
            except SchemaError as exc:
                known = str(exc)
            if len(self._schemas) >= MAX_CACHED_SCHEMAS:
                self._schemas.clear()
            self._schemas[text] = known
        return known

    def _metadata(self, record: Any, source: Source, raw: Callable[[], bytes]) -> Iterator[ChangeEvent | Rejected]:
        """Register the table version a metadata message announces; SCHEMA for a new (table, version)."""
        schema_id = record.get("schemaId") if isinstance(record, dict) else None
        result = self._table_version(record)
        if isinstance(result, str):
            if isinstance(schema_id, str) and schema_id:
                self.tables[schema_id] = result
            yield Rejected(f"metadata message: {result}", source, raw())
            return
        entry = result
        self.tables[entry.schema_id] = entry
        self._metadata_records[entry.schema_id] = record
        self._by_canonical[entry.data_schema.canonical] = entry.schema_id
        announced = (entry.table, str(entry.version))
        if announced in self._announced:
            return
        self._announced.add(announced)
        lineage = entry.lineage
        timestamp = lineage.get("timestamp")
        parsed = parse_timestamp(timestamp) if isinstance(timestamp, str) else None
        yield ChangeEvent(
            table=entry.table,
            op="SCHEMA",
            seq=None,
            event_ts=parsed,
            source=source,
            keys=entry.keys,
            ddl={"columns": entry.columns, "keys": list(entry.keys or []), "version": entry.version},
            meta={
                "schemaId": entry.schema_id,
                "lineage": lineage,
                "column_types": entry.column_types,
            },
        )

    def _table_version(self, record: Any) -> TableVersion | str:
        if not isinstance(record, dict):
            return "the message is not a record"
        schema_id = record.get("schemaId")
        if not isinstance(schema_id, str) or not schema_id:
            return "no schemaId"
        lineage = record.get("lineage")
        if not isinstance(lineage, dict):
            return f"schema id {schema_id}: no lineage record"
        owner, name = lineage.get("schema"), lineage.get("table")
        if not isinstance(name, str) or not name:
            return f"schema id {schema_id}: lineage has no table name"
        table = self.table_override or (f"{owner}.{name}" if isinstance(owner, str) and owner else name)
        version = lineage.get("tableVersion")
        structure = record.get("tableStructure")
        columns_spec = structure.get("tableColumns") if isinstance(structure, dict) else None
        if not isinstance(columns_spec, dict) or not columns_spec:
            return f"schema id {schema_id} ({table}): tableStructure has no tableColumns"
        columns: list[dict[str, Any]] = []
        seen_ordinals: dict[int, str] = {}
        for column, spec in columns_spec.items():
            if not isinstance(spec, dict):
                return f"schema id {schema_id} ({table}): column {column} has no properties"
            ordinal, qlik_type = spec.get("ordinal"), spec.get("type")
            if isinstance(ordinal, bool) or not isinstance(ordinal, int) or ordinal < 1:
                return f"schema id {schema_id} ({table}): column {column} has no ordinal >= 1 ({ordinal!r})"
            if ordinal in seen_ordinals:
                other = seen_ordinals[ordinal]
                return f"schema id {schema_id} ({table}): columns {other} and {column} share ordinal {ordinal}"
            seen_ordinals[ordinal] = column
            if not isinstance(qlik_type, str) or not qlik_type:
                return f"schema id {schema_id} ({table}): column {column} has no type"
            described = {
                "name": column,
                "type": column_type(qlik_type, spec.get("precision"), spec.get("scale")),
                "source_type": qlik_type,
                "ordinal": ordinal,
            }
            for prop in ("length", "precision", "scale", "primaryKeyPosition", "nullable"):
                if prop in spec:
                    described[prop] = spec[prop]
            columns.append(described)
        columns.sort(key=lambda c: c["ordinal"])
        key_positions = [
            (c["primaryKeyPosition"], c["name"])
            for c in columns
            if isinstance(c.get("primaryKeyPosition"), int) and c["primaryKeyPosition"] > 0
        ]
        keys = self.keys or [name for _, name in sorted(key_positions)] or None
        data_schema_text = record.get("dataSchema")
        if not isinstance(data_schema_text, str) or not data_schema_text:
            return f"schema id {schema_id} ({table}): no dataSchema"
        data_schema = self._schema(data_schema_text, f"the dataSchema of schema id {schema_id} ({table})")
        if isinstance(data_schema, str):
            return data_schema
        if _ocf_kind(data_schema.document) != "data":
            return f"the dataSchema of schema id {schema_id} ({table}) is not a record with data and headers fields"
        lineage_meta = {k: v for k, v in lineage.items() if k not in ("schema", "table")}
        entry = TableVersion(schema_id, table, version, columns, keys, data_schema, lineage_meta)
        entry.ordinals = {c["name"]: c["ordinal"] for c in columns}
        entry.qlik_types = {c["name"]: c["source_type"] for c in columns}
        entry.column_types = {c["name"]: c["type"] for c in columns}
        return entry

    def _data(
        self, record: Any, entry: TableVersion, source: Source, raw: Callable[[], bytes], extra: dict[str, Any]
    ) -> ChangeEvent | Rejected:
        """One data message as a row event."""
        if not isinstance(record, dict) or not isinstance(record.get("headers"), dict):
            return _data_reject(entry, "no headers record", source, raw)
        headers = record["headers"]
        order = _data_order(headers)
        if isinstance(order, str):
            return _data_reject(entry, order, source, raw)
        operation, op, change_seq, seq, event_ts, column_mask = order
        images = _data_images(record, entry, column_mask)
        if isinstance(images, str):
            return _data_reject(entry, images, source, raw)
        data, before_data = images["data"], images["beforeData"]
        if data is None and op != "DELETE":
            return _data_reject(entry, f"{operation} has no data", source, raw)
        if op == "DELETE":
            before, after = data if data is not None else before_data, None
            if before is None:
                reason = "DELETE has neither data nor beforeData: the row cannot be identified"
                return _data_reject(entry, reason, source, raw)
        else:
            before, after = (before_data if op == "UPDATE" else None), data
        tx_id = headers.get("transactionId")
        counter = headers.get("transactionEventCounter")
        last = headers.get("transactionLastEvent")
        return ChangeEvent(
            table=entry.table,
            op=op,
            seq=seq,
            event_ts=event_ts,
            source=source,
            tx_id=tx_id if isinstance(tx_id, str) and tx_id else None,
            tx_pos=counter if isinstance(counter, int) and not isinstance(counter, bool) else None,
            tx_last=last if isinstance(last, bool) else None,
            keys=entry.keys,
            before=before,
            after=after,
            meta=_data_meta(headers, operation, change_seq, entry, extra),
        )


def _data_reject(entry: TableVersion, reason: str, source: Source, raw: Callable[[], bytes]) -> Rejected:
    return Rejected(f"data message of {entry.table} (schema id {entry.schema_id}): {reason}", source, raw())


def _data_order(headers: dict[str, Any]) -> tuple[str, str, str, str, dt.datetime | None, int | None] | str:
    """A data message's (operation, op, changeSequence, seq, event_ts, column mask) from its headers; a str
    saying why the message is rejected."""
    operation = headers.get("operation")
    op = OPS.get(operation) if isinstance(operation, str) else None
    if op is None:
        return f"unknown operation {operation!r} (REFRESH, INSERT, UPDATE, DELETE)"
    change_seq = headers.get("changeSequence")
    if change_seq is None:
        change_seq = ""
    if not isinstance(change_seq, str):
        return f"changeSequence {change_seq!r} is not text"
    if change_seq == "":
        if operation != "REFRESH":
            return f"an {operation} without changeSequence cannot be ordered"
        seq = REFRESH_SEQ
    elif _DIGITS.fullmatch(change_seq):
        seq = change_seq.zfill(SEQ_WIDTH)
    else:
        return f"changeSequence {change_seq[:60]!r} is not digits"
    timestamp = headers.get("timestamp")
    event_ts = None
    if isinstance(timestamp, str) and timestamp.strip():
        event_ts = parse_timestamp(timestamp)
        if event_ts is None:
            return f"timestamp {timestamp[:60]!r} is not a timestamp"
    try:
        column_mask = mask_number(headers.get("columnMask"))
        mask_number(headers.get("changeMask"))
    except ValueError as exc:
        return f"bad mask: {exc}"
    return operation, op, change_seq, seq, event_ts, column_mask  # type: ignore[return-value]


def _data_images(record: dict[str, Any], entry: TableVersion, column_mask: int | None) -> dict[str, Any] | str:
    """The message's ``data`` and ``beforeData`` images (None: absent), columns not in the column mask left out;
    a str saying why a value cannot be read."""
    images: dict[str, dict[str, Any] | None] = {}
    for name in ("data", "beforeData"):
        image = record.get(name)
        if image is None:
            images[name] = None
            continue
        if not isinstance(image, dict):
            return f"{name} is not a record of columns"
        out: dict[str, Any] = {}
        for column, value in image.items():
            ordinal = entry.ordinals.get(column)
            if column_mask is not None and ordinal is not None and not has_bit(column_mask, ordinal):
                continue  # not replicated: missing, not NULL
            try:
                out[column] = typed_value(avro_value(value), entry.qlik_types.get(column))
            except ValueError as exc:
                qlik_type = entry.qlik_types.get(column)
                return f"{name} column {column} ({qlik_type}): {exc}"
        images[name] = out
    return images


def _data_meta(
    headers: dict[str, Any], operation: str, change_seq: str, entry: TableVersion, extra: dict[str, Any]
) -> dict[str, Any]:
    """A row event's meta: the message's headers, its table version, the envelope's ``extra``, column types."""
    meta: dict[str, Any] = {"operation": operation, "changeSequence": change_seq}
    for name in ("timestamp", "streamPosition", "transactionId", "externalSchemaId"):
        if headers.get(name) not in (None, ""):
            meta[name] = headers[name]
    for name in ("changeMask", "columnMask"):
        text = mask_text(headers.get(name))
        if text:
            meta[name] = text
    meta["schemaId"] = entry.schema_id
    meta["tableVersion"] = entry.version
    others = {k: avro_value(v) for k, v in headers.items() if k not in _HEADER_FIELDS}
    if others:
        meta["headers_extra"] = others
    meta.update(extra)
    meta["column_types"] = entry.column_types
    return meta


# --- OCF ----------------------------------------------------------------------------------------------------


def _ocf_kind(document: Any) -> str | None:
    """What the records of an OCF are: envelope, bytes (envelope bytes), metadata, data."""
    if document == "bytes" or (isinstance(document, dict) and document.get("type") == "bytes"):
        return "bytes"
    if not isinstance(document, dict) or not isinstance(document.get("fields"), list):
        return None
    names = {f.get("name") for f in document["fields"] if isinstance(f, dict)}
    if {"magic", "type", "message"} <= names:
        return "envelope"
    if {"schemaId", "tableStructure", "dataSchema"} <= names:
        return "metadata"
    if {"data", "headers"} <= names:
        return "data"
    return None


def _envelope_record(record: Any) -> dict[str, Any] | str:
    """An envelope read by fastavro from an OCF, checked; a str says what is wrong."""
    if not isinstance(record, dict):
        return "not an envelope record"
    if record.get("magic") != MAGIC:
        return f"magic {record.get('magic')!r} is not 'atMSG'"
    if not isinstance(record.get("type"), str):
        return "envelope has no type"
    if not isinstance(record.get("message"), bytes):
        return "envelope has no message bytes"
    for name in ("messageSchemaId", "messageSchema"):
        if record.get(name) is not None and not isinstance(record[name], str):
            return f"{name} is not text"
    return record


def _ocf_header(data: bytes) -> tuple[dict[str, bytes], bytes, int]:
    """(metadata, sync marker, offset of the first block) of an Avro object container file."""
    end = len(data)
    try:
        meta, pos = _read_map(data, len(OCF_MAGIC), end, "metadata entries", _metadata_entry)
    except Malformed as exc:
        raise Malformed(f"is corrupt or truncated: it {exc} (the file has {end} bytes)") from None
    if end - pos < SYNC_SIZE:
        raise Malformed(f"is truncated: it ends before its sync marker (the file has {end} bytes)")
    return meta, data[pos : pos + SYNC_SIZE], pos + SYNC_SIZE


def _metadata_entry(data: bytes, pos: int, end: int) -> tuple[str, bytes, int]:
    """One OCF header entry; keys and values up to ``MAX_SCHEMA_BYTES`` (the schema is one of them)."""
    return read_header_entry(data, pos, end, _length)


def _ocf_records(
    data: bytes, file: str, sync: bytes, pos: int, codec: str, schema: AvroSchema
) -> Iterator[tuple[Any, Source, Callable[[], bytes]] | Rejected]:
    """Records of the blocks from ``pos`` on (see :class:`OcfBlock` for their offsets and bytes)."""
    end, block = len(data), 0
    inflater = Inflater(codec, _CODECS, MAX_BLOCK_BYTES, MAX_FILE_BYTES)
    buffer = io.BytesIO()
    while pos < end:
        start = pos
        try:
            count, size, body = frame_block(data, pos, end)
            if data[body + size : body + size + SYNC_SIZE] != sync:
                raise Malformed("does not end with the file's sync marker: truncated or corrupt")
        except Malformed as exc:
            found = data.find(sync, start + 1)
            stop = end if found < 0 else found + SYNC_SIZE
            where = "the end of the file" if found < 0 else "the next sync marker"
            reason = f"OCF block {block} at offset {start} {exc}; skipped {stop - start} bytes up to {where}"
            yield Rejected(reason, Source(file, start), data[start : min(stop, start + MAX_RAW_BYTES)])
            pos, block = stop, block + 1
            continue
        pos = body + size + SYNC_SIZE
        try:
            content = inflater.content(data, body, size, count)
        except Malformed as exc:
            reason = f"OCF block {block} at offset {start} {exc}"
            yield Rejected(reason, Source(file, start), data[start : min(pos, start + MAX_RAW_BYTES)])
            block += 1
            continue
        ocf_block = OcfBlock(block, start, body, pos - SYNC_SIZE, count, content, exact=codec == "null")
        for item in block_records(data, ocf_block, schema.parsed, buffer):
            if isinstance(item, BadRecord):
                reason = bad_record_reason(ocf_block, item, "OCF block", _describe)
                yield Rejected(reason, Source(file, item.offset), item.raw)
            else:
                _, offset, record, raw = item
                yield record, Source(file, offset), raw
        block += 1


#: What OCF blocks may be compressed with (and ``null``); a zstandard block may hold several frames.
_CODECS: dict[str, Decompressor] = {**STDLIB_CODECS, "zstandard": zstd_all_frames}


def _codec_problem(codec: str) -> str | None:
    if codec in ("null", "deflate", "bzip2", "xz"):
        return None
    if codec == "zstandard":
        try:
            import zstandard  # noqa: F401
        except ImportError:
            return "codec zstandard needs the Python package zstandard, which is not installed"
        return None
    return f"codec {codec!r} is not read by cdclake (null, deflate, bzip2, xz, zstandard)"


def _next_magic(data: bytes, pos: int) -> int:
    found = data.find(MAGIC, pos)
    return len(data) if found < 0 else found
