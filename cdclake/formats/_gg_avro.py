"""Shared machinery of the GoldenGate Avro decoders (``goldengate-avro-row``, ``goldengate-avro-op``).

Vendor doc §6.4 (Avro row), §6.5 (Avro operation), §6.6 (Avro OCF), §6.4.7.3 (generic wrapper);
user documentation in ``docs/formats/goldengate-avro.md``. Why it is written this way:

- Three containers, told apart from the bytes: an Avro object container file (magic ``Obj\\x01``,
  schema in the header), raw binary messages (schemaless; the table's ``.avsc`` from
  ``schemaDir``), or ``generic_wrapper`` messages whose payload is decoded with the schema whose
  ``schema_hash`` (Java ``String.hashCode()`` of the schema text) or ``schema_fingerprint``
  (Avro's 64-bit Rabin fingerprint of the parsing canonical form) matches.
- fastavro's compiled reader does the decoding, but only after our own checks, because it trusts
  its input: the OCF framing (header map, block counts and sizes, sync markers) is parsed by our
  own code (shared with ``qlik-avro`` in :mod:`._avro_binary`) with every declared length compared
  to the bytes that remain; decompression is bounded; recursive
  schemas are refused (fastavro's C reader recurses once per nesting level and a recursive schema
  lets data nest until the process crashes), as are arrays of items that take no bytes (a huge
  declared count would loop for hours on a few bytes of input). Strings and bytes are read from a
  ``BytesIO``, which never allocates more than the data holds.
- Logical types are stripped before fastavro sees a schema and converted here, so that decimals
  keep every digit (fastavro rounds to the context precision) and out-of-range dates or times
  reject their record with a reason instead of raising from deep inside the reader.
- A table's layout is announced by a ``SCHEMA`` event before its first event in a decoder run,
  and again before the first event read with another schema (new OCF header, newer ``.avsc``,
  another wrapper hash), as the other GoldenGate decoders do.
"""

from __future__ import annotations

import array
import datetime as dt
import io
import json
import os
import re
import sys
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar

import fastavro
import fastavro.schema

from cdclake.events.change import ChangeEvent, Rejected, Source, format_ts
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
from cdclake.formats._gg_common import OP_OPTIONS, OpKeys, op_and_order, python_codec, schema_event_before
from cdclake.formats._json import loads_unique
from cdclake.options import OptionError, Options
from cdclake.registry import Decoder
from cdclake.runtime.limits import MAX_AVRO_TYPE_DEPTH as MAX_TYPE_DEPTH
from cdclake.runtime.limits import (
    MAX_BLOCK_BYTES,
    MAX_DECIMAL_PRECISION,
    MAX_FILE_BYTES,
    MAX_RAW_BYTES,
    MAX_RECORD_BYTES,
    MAX_RESYNC_TRIES,
    MAX_SCHEMA_BYTES,
    MAX_SCHEMA_FILES,
    MAX_SCHEMA_JSON_DEPTH,
)
from cdclake.runtime.limits import MAX_OCF_HEADER_ENTRIES as MAX_HEADER_ENTRIES

#: Operation metadata fields the formatters write before the column data (Table 6-5, 6-8).
META_FIELDS = ("table", "op_type", "op_ts", "current_ts", "pos", "primary_keys", "tokens")
IMAGE_FIELDS = ("before", "after")
MISSING_SUFFIX = "_isMissing"

#: Options that only shape the writer's output: accepted and checked, otherwise unused.
WRITER_BOOL_OPTIONS = ("treatAllColumnsAsStrings", "versionSchemas", "iso8601Format", "generateSchema")
#: Both spellings occur in the vendor doc (Table 6-6/6-9 vs §6.4.5 and §6.4.7.3).
WRAP_OPTIONS = ("wrapMessageInGenericAvroMessage", "wrapMessageInGenericAvroSchema")
PK_UPDATE_HANDLING = ("abend", "update", "delete-insert")
OPTION_NAMES = frozenset(
    {name for name, _, _ in OP_OPTIONS}
    | set(WRITER_BOOL_OPTIONS)
    | set(WRAP_OPTIONS)
    | {"encoding", "pkUpdateHandling", "lineDelimiter", "schemaDirectory", "schemaFilePath"}
    | {"genericWrapperUseFingerprint"}
)

#: The generic wrapper schema of §6.4.7.3, and the variant with a 64-bit fingerprint.
WRAPPER_HASH_SCHEMA = {
    "type": "record",
    "name": "generic_wrapper",
    "namespace": "oracle.goldengate",
    "fields": [
        {"name": "table_name", "type": "string"},
        {"name": "schema_hash", "type": "int"},
        {"name": "payload", "type": "bytes"},
    ],
}
WRAPPER_FINGERPRINT_SCHEMA = {
    **WRAPPER_HASH_SCHEMA,
    "fields": [
        {"name": "table_name", "type": "string"},
        {"name": "schema_fingerprint", "type": "long"},
        {"name": "payload", "type": "bytes"},
    ],
}
WRAPPER_KINDS = ("schema_hash", "schema_fingerprint")

_PRIMITIVE_COLUMN_TYPES = {
    "boolean": "boolean",
    "int": "bigint",
    "long": "bigint",
    "float": "double",
    "double": "double",
    "bytes": "binary",
    "string": "string",
}
_PYTHON_KINDS: dict[type, tuple[str, ...]] = {
    bool: ("boolean",),
    int: ("int", "long"),
    float: ("float", "double"),
    str: ("string", "enum"),
    bytes: ("bytes", "fixed"),
    dict: ("record", "map"),
    list: ("array",),
}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_DATE = dt.date(1970, 1, 1)
_DIGITS = re.compile(r"[0-9]+")
_VERSION_TAIL = re.compile(r"[0-9][0-9_\-:.T ]*[0-9]")


# --- hashes -----------------------------------------------------------------------------------


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()``: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, as an int32."""
    units = array.array("H", text.encode("utf-16-be", "surrogatepass"))
    if sys.byteorder == "little":
        units.byteswap()
    h = 0
    for unit in units:
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def avro_fingerprint(schema: Any) -> int:
    """Avro's 64-bit Rabin fingerprint (CRC-64-AVRO) of the parsing canonical form, as Java's signed long.

    The same number as Java's ``SchemaNormalization.parsingFingerprint64(schema)``.
    """
    canonical = fastavro.schema.to_parsing_canonical_form(schema)
    little_endian = bytes.fromhex(fastavro.schema.fingerprint(canonical, "CRC-64-AVRO"))
    return int.from_bytes(little_endian, "little", signed=True)


def schema_text_hashes(text: str, parsed_json: Any) -> frozenset[int]:
    """Java string hashes of the spellings a writer may have hashed for this schema.

    The schema text as stored (GoldenGate writes ``Schema.toString(true)``); without surrounding
    blanks, with Unix or Windows line ends, with or without a final line end; and in Avro's
    compact form (``Schema.toString()``: the same members in the same order, no blanks).
    """
    unix = text.strip().replace("\r\n", "\n")
    windows = unix.replace("\n", "\r\n")
    variants = {text, text.strip(), unix, unix + "\n", windows, windows + "\r\n"}
    variants.add(json.dumps(parsed_json, ensure_ascii=False, separators=(",", ":")))
    return frozenset(java_string_hash(v) for v in variants)


# --- schema analysis ----------------------------------------------------------------------------


@dataclass(slots=True)
class AvroType:
    """One analysed Avro type: what fastavro reads, and how its values become event values."""

    stripped: Any
    kind: str
    min_size: int
    height: int
    column_type: str | None = None
    nullable: bool = False
    convert: Callable[[Any], Any] | None = None
    fields: tuple[tuple[str, AvroType], ...] = ()
    name: str | None = None


@dataclass(slots=True)
class AvroSchema:
    """A usable schema: its text, analysis, fastavro form and identities."""

    text: str
    root: AvroType
    parsed: Any
    fingerprint: int
    hashes: frozenset[int]
    origin: str
    table: str | None = None
    version: str | None = None
    layouts: dict[str, Any] = field(default_factory=dict)

    @property
    def version_id(self) -> str:
        """The schema's identity in ``SCHEMA`` events: its fingerprint as 16 hex digits."""
        return f"{self.fingerprint & 0xFFFFFFFFFFFFFFFF:016x}"


def load_schema(text: str, origin: str, table: str | None = None, version: str | None = None) -> AvroSchema:
    """Analyse schema text; :class:`SchemaError` says why it cannot be used."""
    if len(text) > MAX_SCHEMA_BYTES:
        raise SchemaError(f"schema {origin} is larger than {MAX_SCHEMA_BYTES} characters")
    try:
        document = loads_unique(text)
    except RecursionError:
        raise SchemaError(f"schema {origin} nests JSON deeper than {MAX_SCHEMA_JSON_DEPTH} levels") from None
    except ValueError as exc:
        raise SchemaError(f"schema {origin} is not JSON: {exc}") from None
    if _json_too_deep(document, MAX_SCHEMA_JSON_DEPTH):
        raise SchemaError(f"schema {origin} nests JSON deeper than {MAX_SCHEMA_JSON_DEPTH} levels")
    root = _Analyzer(origin).analyze(document)
    try:
        parsed = fastavro.parse_schema(root.stripped)
        fingerprint = avro_fingerprint(root.stripped)
    except Exception as exc:  # fastavro raises several types for bad schemas
        raise SchemaError(f"schema {origin} is not a valid Avro schema: {exc}") from None
    hashes = schema_text_hashes(text, document)
    return AvroSchema(text, root, parsed, fingerprint, hashes, origin, table, version)


class _Analyzer:
    """Walks a schema once: checks it is safe, strips logical types, compiles value converters."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.named: dict[str, AvroType] = {}
        self.in_progress: set[str] = set()

    def analyze(self, schema: Any) -> AvroType:
        root = self.walk(schema, "", 1)
        if root.height > MAX_TYPE_DEPTH:
            raise SchemaError(f"schema {self.origin} nests types deeper than {MAX_TYPE_DEPTH} levels")
        return root

    def fail(self, reason: str) -> SchemaError:
        return SchemaError(f"schema {self.origin}: {reason}")

    def walk(self, schema: Any, namespace: str, depth: int) -> AvroType:
        if depth > MAX_TYPE_DEPTH:
            raise self.fail(f"types nest deeper than {MAX_TYPE_DEPTH} levels")
        if isinstance(schema, str):
            return self.reference(schema, namespace)
        if isinstance(schema, list):
            return self.union(schema, namespace, depth)
        if not isinstance(schema, dict):
            raise self.fail(f"{_short(schema)} is not a type")
        kind = schema.get("type")
        if isinstance(kind, (dict, list)):
            return self.walk(kind, namespace, depth + 1)
        if not isinstance(kind, str):
            raise self.fail(f"type {_short(kind)} is not a type name")
        if kind in PRIMITIVE_SIZES:
            return self.primitive(kind, schema)
        if kind in ("record", "error"):
            return self.record(schema, namespace, depth)
        if kind == "enum":
            symbols = schema.get("symbols")
            if not isinstance(symbols, list) or not all(isinstance(s, str) for s in symbols):
                raise self.fail("an enum needs a list of symbol names")
            name = self.define(schema, namespace)
            stripped = {"type": "enum", "name": name, "symbols": symbols}
            return self.register(name, AvroType(stripped, "enum", 1, 1, "string", name=name))
        if kind == "fixed":
            size = schema.get("size")
            if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= MAX_RECORD_BYTES:
                raise self.fail(f"fixed size {_short(size)} is not a size in bytes")
            name = self.define(schema, namespace)
            column_type, convert = _logical(schema, "fixed", self)
            stripped = {"type": "fixed", "name": name, "size": size}
            return self.register(name, AvroType(stripped, "fixed", size, 1, column_type, convert=convert, name=name))
        if kind == "array":
            items = self.walk(schema.get("items"), namespace, depth + 1)
            if items.min_size == 0:
                raise self.fail(
                    "an array's items take no bytes (a corrupt item count would loop without end); "
                    "such schemas are not supported"
                )
            convert = _map_list(items.convert) if items.convert else None
            return AvroType({"type": "array", "items": items.stripped}, "array", 1, items.height + 1, convert=convert)
        if kind == "map":
            values = self.walk(schema.get("values"), namespace, depth + 1)
            convert = _map_dict(values.convert) if values.convert else None
            return AvroType({"type": "map", "values": values.stripped}, "map", 1, values.height + 1, convert=convert)
        return self.reference(kind, namespace)

    def primitive(self, kind: str, schema: dict[str, Any]) -> AvroType:
        column_type, convert = _logical(schema, kind, self)
        if kind in ("float", "double") and convert is None:
            convert = _float_to_decimal
        return AvroType(kind, kind, PRIMITIVE_SIZES[kind], 1, column_type, nullable=kind == "null", convert=convert)

    def reference(self, name: str, namespace: str) -> AvroType:
        if name in PRIMITIVE_SIZES:
            convert = _float_to_decimal if name in ("float", "double") else None
            column_type = _PRIMITIVE_COLUMN_TYPES.get(name)
            return AvroType(name, name, PRIMITIVE_SIZES[name], 1, column_type, nullable=name == "null", convert=convert)
        for candidate in candidate_names(name, namespace):
            if candidate in self.in_progress:
                raise self.fail(
                    f"the schema is recursive: type {candidate} refers to itself; recursive schemas are not supported"
                )
            if candidate in self.named:
                known = self.named[candidate]
                return AvroType(
                    candidate,
                    known.kind,
                    known.min_size,
                    known.height,
                    known.column_type,
                    known.nullable,
                    known.convert,
                    known.fields,
                    candidate,
                )
        raise self.fail(f"unknown type {name!r}")

    def union(self, branches: list[Any], namespace: str, depth: int) -> AvroType:
        if not branches:
            raise self.fail("a union needs at least one branch")
        walked = [self.walk(b, namespace, depth + 1) for b in branches]
        if any(b.kind == "union" for b in walked):
            raise self.fail("a union cannot contain a union")
        real = [b for b in walked if b.kind != "null"]
        nullable = len(real) < len(walked)
        column_type = real[0].column_type if len(real) == 1 else None
        convert = _union_converter(real)
        height = 1 + max(b.height for b in walked)
        fields = real[0].fields if len(real) == 1 else ()
        name = real[0].name if len(real) == 1 else None
        stripped = [b.stripped for b in walked]
        return AvroType(stripped, "union", 1, height, column_type, nullable, convert, fields, name)

    def record(self, schema: dict[str, Any], namespace: str, depth: int) -> AvroType:
        name = self.define(schema, namespace)
        fields = schema.get("fields")
        if not isinstance(fields, list):
            raise self.fail(f"record {name} has no list of fields")
        inner_namespace = name.rpartition(".")[0]
        self.in_progress.add(name)
        walked: list[tuple[str, AvroType]] = []
        seen: set[str] = set()
        for spec in fields:
            if not isinstance(spec, dict) or not isinstance(spec.get("name"), str) or "type" not in spec:
                raise self.fail(f"record {name} has a field without a name or type: {_short(spec)}")
            if spec["name"] in seen:
                raise self.fail(f"record {name} has two fields named {spec['name']!r}")
            seen.add(spec["name"])
            walked.append((spec["name"], self.walk(spec["type"], inner_namespace, depth + 1)))
        self.in_progress.discard(name)
        stripped = {
            "type": "record",
            "name": name,
            "fields": [{"name": n, "type": t.stripped} for n, t in walked],
        }
        converters = [(n, t.convert) for n, t in walked if t.convert]
        convert = _record_converter(converters) if converters else None
        height = 1 + max((t.height for _, t in walked), default=0)
        min_size = sum(t.min_size for _, t in walked)
        result = AvroType(stripped, "record", min_size, height, convert=convert, fields=tuple(walked), name=name)
        return self.register(name, result)

    def define(self, schema: dict[str, Any], namespace: str) -> str:
        name = schema.get("name")
        if not isinstance(name, str) or not name:
            raise self.fail(f"a {schema.get('type')} needs a name")
        if "." not in name:
            own = schema.get("namespace", namespace)
            if own is not None and not isinstance(own, str):
                raise self.fail(f"namespace {_short(own)} of {name} is not a string")
            name = f"{own}.{name}" if own else name
        if name in self.named or name in self.in_progress:
            raise self.fail(f"type {name} is defined twice")
        return name

    def register(self, name: str, avro_type: AvroType) -> AvroType:
        self.named[name] = avro_type
        return avro_type


def _logical(schema: dict[str, Any], kind: str, analyzer: _Analyzer) -> tuple[str | None, Callable | None]:
    """Column type and converter of a (possibly logical) primitive or fixed type."""
    logical = schema.get("logicalType")
    if logical == "decimal" and kind in ("bytes", "fixed"):
        precision, scale = schema.get("precision"), schema.get("scale", 0)
        if not isinstance(precision, int) or isinstance(precision, bool) or not 0 < precision <= MAX_DECIMAL_PRECISION:
            raise analyzer.fail(f"decimal precision {_short(precision)} is not between 1 and {MAX_DECIMAL_PRECISION}")
        if not isinstance(scale, int) or isinstance(scale, bool) or not 0 <= scale <= precision:
            raise analyzer.fail(f"decimal scale {_short(scale)} is not between 0 and the precision {precision}")
        column_type = f"decimal({precision},{scale})" if precision <= 38 else "string"
        size = schema.get("size") if kind == "fixed" else None
        return column_type, _decimal_converter(precision, scale, size)
    if kind == "long" and logical in _TIMESTAMP_UNITS:
        return "timestamp", _timestamp_converter(_TIMESTAMP_UNITS[logical])
    if kind == "int" and logical == "date":
        return "date", _date_to_text
    if kind == "int" and logical == "time-millis":
        return "string", _time_converter(1000)
    if kind == "long" and logical == "time-micros":
        return "string", _time_converter(1)
    return _PRIMITIVE_COLUMN_TYPES.get(kind), None


_TIMESTAMP_UNITS = {
    "timestamp-millis": 1000,
    "timestamp-micros": 1,
    "timestamp-nanos": -1000,
    "local-timestamp-millis": 1000,
    "local-timestamp-micros": 1,
    "local-timestamp-nanos": -1000,
}


def _float_to_decimal(value: float) -> Decimal:
    """A binary float as the shortest decimal that reads back as the same float (``17520.0``)."""
    return Decimal(repr(value))


def _decimal_converter(precision: int, scale: int, fixed_size: int | None) -> Callable[[bytes], Decimal]:
    limit = 10**precision
    max_bytes = fixed_size if fixed_size is not None else (precision * 3322 // 8000) + 2

    def convert(value: bytes) -> Decimal:
        if len(value) > max_bytes:
            raise ValueError(f"decimal({precision},{scale}) value of {len(value)} bytes has too many digits")
        unscaled = int.from_bytes(value, "big", signed=True)
        if abs(unscaled) >= limit:
            raise ValueError(f"value has more than the {precision} digits of its decimal({precision},{scale}) type")
        digits = tuple(int(d) for d in str(abs(unscaled)))
        return Decimal((1 if unscaled < 0 else 0, digits, -scale))

    return convert


def _timestamp_converter(micros_per_unit: int) -> Callable[[int], str]:
    def convert(value: int) -> str:
        micros = value * micros_per_unit if micros_per_unit > 0 else value // -micros_per_unit
        try:
            return format_ts(_EPOCH + dt.timedelta(microseconds=micros))  # type: ignore[return-value]
        except OverflowError:
            raise ValueError(f"timestamp {value} is outside the years 1-9999") from None

    return convert


def _date_to_text(value: int) -> str:
    try:
        return (_EPOCH_DATE + dt.timedelta(days=value)).isoformat()
    except OverflowError:
        raise ValueError(f"date {value} (days since 1970-01-01) is outside the years 1-9999") from None


def _time_converter(micros_per_unit: int) -> Callable[[int], str]:
    def convert(value: int) -> str:
        micros = value * micros_per_unit
        if not 0 <= micros < 86_400_000_000:
            raise ValueError(f"time of day {value} is outside 00:00:00-23:59:59.999999")
        seconds, fraction = divmod(micros, 1_000_000)
        return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}.{fraction:06d}"

    return convert


def _map_list(convert: Callable[[Any], Any]) -> Callable[[list[Any]], list[Any]]:
    return lambda values: [None if v is None else convert(v) for v in values]


def _map_dict(convert: Callable[[Any], Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda values: {k: None if v is None else convert(v) for k, v in values.items()}


def _record_converter(converters: list[tuple[str, Callable[[Any], Any]]]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def convert(record: dict[str, Any]) -> dict[str, Any]:
        out = dict(record)
        for name, conv in converters:
            if out.get(name) is not None:
                out[name] = conv(out[name])
        return out

    return convert


def _union_converter(branches: list[AvroType]) -> Callable[[Any], Any] | None:
    """Converter for a union's value: the branch is told by the Python type fastavro returned."""
    if not any(b.convert for b in branches):
        return None
    if len(branches) == 1:
        return branches[0].convert

    def convert(value: Any) -> Any:
        kinds = _PYTHON_KINDS.get(type(value), ())
        for branch in branches:
            if branch.kind in kinds:
                return branch.convert(value) if branch.convert else value
        return value

    return convert


def _json_too_deep(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        for child in children:
            if isinstance(child, (dict, list)):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# --- schema directory ---------------------------------------------------------------------------


@dataclass(slots=True)
class _SchemaFile:
    stat: tuple[int, int]
    schema: AvroSchema | None
    error: str | None
    table: str | None
    version: str | None
    wrapper: bool


class SchemaDirectory:
    """The ``.avsc`` files of ``schemaDir``: newest schema per table, lookup by hash or fingerprint.

    Re-listed at the start of every landing file (a file is re-read only when its size or
    modification time changed), so a newer schema written between two files applies from the
    next file on.
    """

    def __init__(self, path: Path, codec: str) -> None:
        self.path, self.codec = path, codec
        self._files: dict[str, _SchemaFile] = {}
        self.error: str | None = None
        self._index()

    def refresh(self) -> None:
        try:
            names = sorted(n for n in os.listdir(self.path) if n.endswith(".avsc"))
        except OSError as exc:
            self.error = f"cannot list schema directory {self.path}: {exc}"
            return
        self.error = None
        if len(names) > MAX_SCHEMA_FILES:
            self.error = f"schema directory {self.path} has more than {MAX_SCHEMA_FILES} .avsc files"
            names = names[:MAX_SCHEMA_FILES]
        files: dict[str, _SchemaFile] = {}
        for name in names:
            try:
                st = os.stat(self.path / name)
            except OSError:
                continue
            key = (st.st_mtime_ns, st.st_size)
            known = self._files.get(name)
            files[name] = known if known is not None and known.stat == key else self._load(name, key)
        self._files = files
        self._index()

    def _load(self, name: str, key: tuple[int, int]) -> _SchemaFile:
        path = self.path / name
        stem = name[: -len(".avsc")]
        wrapper = stem == "generic_wrapper"
        try:
            with open(path, "rb") as handle:
                content = handle.read(MAX_SCHEMA_BYTES + 1)
            if len(content) > MAX_SCHEMA_BYTES:
                raise SchemaError(f"schema file {path} is larger than {MAX_SCHEMA_BYTES} bytes")
            try:
                text = content.decode(self.codec)
            except UnicodeDecodeError as exc:
                reason = f"schema file {path} is not valid {self.codec} ({exc.reason} at byte {exc.start})"
                raise SchemaError(reason) from None
            text = text.removeprefix("\ufeff")
            schema = load_schema(text, name)
        except OSError as exc:
            return _SchemaFile(
                key, None, f"cannot read schema file {path}: {exc}", None if wrapper else stem, None, wrapper
            )
        except SchemaError as exc:
            return _SchemaFile(
                key, None, f"{exc} (file {path}); fix or remove it", None if wrapper else stem, None, wrapper
            )
        full_name = schema.root.name
        if wrapper or full_name in ("generic_wrapper", "oracle.goldengate.generic_wrapper"):
            return _SchemaFile(key, schema, None, None, None, True)
        table, version = _table_and_version(stem, full_name)
        schema.table, schema.version = table, version
        return _SchemaFile(key, schema, None, table, version, False)

    def _index(self) -> None:
        self.tables: dict[str, list[tuple[tuple, _SchemaFile]]] = {}
        self.by_hash: dict[int, list[AvroSchema]] = {}
        self.by_fingerprint: dict[int, list[AvroSchema]] = {}
        self.wrapper: _SchemaFile | None = None
        for entry in self._files.values():
            if entry.wrapper:
                self.wrapper = entry
                continue
            if entry.table is None:
                continue
            order = (1, ()) if entry.version is None else (0, tuple(int(d) for d in _DIGITS.findall(entry.version)))
            self.tables.setdefault(entry.table, []).append((order, entry))
            if entry.schema is not None:
                for value in entry.schema.hashes:
                    self.by_hash.setdefault(value, []).append(entry.schema)
                self.by_fingerprint.setdefault(entry.schema.fingerprint, []).append(entry.schema)

    def newest(self, table: str) -> AvroSchema | str | None:
        """The schema that applies to ``table`` now (unversioned file, else newest version); str = error."""
        versions = self.tables.get(table)
        if not versions:
            return None
        _, entry = max(versions, key=lambda item: item[0])
        return entry.schema if entry.schema is not None else entry.error

    def lookup(self, kind: str, value: int, table: str) -> AvroSchema | None:
        """The schema whose hash (or fingerprint) is ``value``; one of ``table`` if several match."""
        found = (self.by_fingerprint if kind == "schema_fingerprint" else self.by_hash).get(value, [])
        return next((s for s in found if s.table == table), found[0] if found else None)

    def known_values(self, kind: str, table: str) -> list[int]:
        """Hashes (or fingerprints) of ``table``'s schemas, for reject reasons."""
        values: set[int] = set()
        for _, entry in self.tables.get(table, []):
            if entry.schema is not None:
                if kind == "schema_fingerprint":
                    values.add(entry.schema.fingerprint)
                else:
                    values.add(java_string_hash(entry.schema.text))
        return sorted(values)


def _table_and_version(stem: str, full_name: str | None) -> tuple[str, str | None]:
    """``GG.T`` -> (GG.T, None); ``GG.T_2024-01-02_03-04-05.678`` -> (GG.T, the timestamp).

    A table whose own name ends in ``_<digits>`` is told apart by the schema's record name, which
    GoldenGate sets to the table name.
    """
    if stem == full_name:
        return stem, None
    splits = []
    for match in re.finditer("_", stem):
        table, tail = stem[: match.start()], stem[match.end() :]
        if table and _VERSION_TAIL.fullmatch(tail) and sum(c.isdigit() for c in tail) >= 8:
            splits.append((table, tail))
    for table, tail in splits:
        if table == full_name:
            return table, tail
    return splits[0] if splits else (stem, None)


# --- decompression ------------------------------------------------------------------------------


def _snappy(data: bytes, limit: int) -> bytes:
    """Avro's snappy codec: raw snappy data, then the CRC-32 of the uncompressed bytes (big-endian)."""
    if len(data) < 4:
        raise Malformed("is shorter than its 4-byte checksum")
    body, checksum = data[:-4], data[-4:]
    size = shift = 0
    for byte in body[:10]:  # the uncompressed length: an unsigned varint
        size |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    if size > limit:
        raise Malformed(f"declares {size} uncompressed bytes, more than {limit}")
    out = bytes(_snappy_decompress(body))
    if zlib.crc32(out).to_bytes(4, "big") != checksum:
        raise Malformed("fails its snappy CRC-32 check")
    return out


def _snappy_decompress(body: bytes) -> bytes:
    return _optional_module("cramjam").snappy.decompress_raw(body)


def _lz4(data: bytes, limit: int) -> bytes:
    """fastavro's lz4 codec: an lz4 block with its 4-byte little-endian uncompressed size first."""
    if len(data) < 4:
        raise Malformed("is shorter than its 4-byte size")
    size = int.from_bytes(data[:4], "little")
    if size > limit:
        raise Malformed(f"declares {size} uncompressed bytes, more than {limit}")
    return _optional_module("lz4.block").decompress(data)


#: What OCF blocks may be compressed with (and ``null``); snappy and lz4 are GoldenGate's only.
_CODECS: dict[str, Decompressor] = {**STDLIB_CODECS, "zstandard": zstd_all_frames, "snappy": _snappy, "lz4": _lz4}
_CODEC_PACKAGES = {"snappy": "cramjam", "zstandard": "zstandard", "lz4": "lz4"}


def _optional_module(name: str) -> Any:
    import importlib

    return importlib.import_module(name)


def codec_problem(codec: str) -> str | None:
    """Why blocks of ``codec`` cannot be read here (None when they can)."""
    if codec in ("null", "deflate", "bzip2", "xz"):
        return None
    package = _CODEC_PACKAGES.get(codec)
    if package is None:
        known = "null, deflate, bzip2, xz, snappy, zstandard, lz4"
        return f"codec {codec!r} is not an Avro codec cdclake reads (known: {known})"
    try:
        _optional_module("lz4.block" if codec == "lz4" else package)
    except ImportError:
        return f"codec {codec!r} needs the Python package {package}, which is not installed"
    return None


# --- binary helpers -------------------------------------------------------------------------------


def _read_length(data: bytes, pos: int, end: int, what: str) -> tuple[int, int]:
    length, pos = read_varint(data, pos, end)
    if length < 0:
        raise Malformed(f"declares a negative {what} length ({length})")
    if length > end - pos:
        raise Truncated(f"declares a {what} of {length} bytes but only {end - pos} remain")
    return length, pos


def _describe(exc: BaseException) -> str:
    """A reader exception as words."""
    if isinstance(exc, EOFError):
        detail = f" ({exc})" if str(exc) else ""
        return f"the data ends early{detail}: truncated, or not written with this schema"
    if isinstance(exc, IndexError):
        return "a union branch index is out of range: corrupt data, or not written with this schema"
    if isinstance(exc, UnicodeDecodeError):
        return f"a string is not valid UTF-8 ({exc.reason} at byte {exc.start} of the string)"
    return f"{type(exc).__name__}: {exc}"


def _bad_record(block: OcfBlock, bad: BadRecord) -> str:
    """Why reading ``block`` stopped at ``bad``, with how many records an unreadable one cost."""
    reason = bad_record_reason(block, bad, "block", _describe)
    return reason if bad.error is None else f"{reason} ({block.count - bad.index} records)"


def _read_at(buffer: io.BytesIO, pos: int, schema: AvroSchema) -> tuple[Any, int]:
    buffer.seek(pos)
    record = fastavro.schemaless_reader(buffer, schema.parsed, None)
    return record, buffer.tell()


# --- events ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class Unit:
    """One decoded Avro record with where it came from."""

    record: Any
    schema: AvroSchema
    source: Source
    raw: Callable[[], bytes]
    avro: dict[str, Any]
    table_hint: str | None


@dataclass(slots=True)
class Column:
    name: str
    type: AvroType
    flag: str | None = None


@dataclass(slots=True)
class Layout:
    """How the records of one schema map to events (built once per schema and decoder kind)."""

    columns: list[Column]
    images: dict[str, list[Column]]
    meta_types: dict[str, AvroType]
    extra: list[Column]
    column_types: dict[str, str]


class GoldenGateAvroDecoder(Decoder):
    """Base of the two GoldenGate Avro decoders: containers, schemas, metadata, SCHEMA events."""

    #: "row" or "op": which image layout the records have.
    layout_kind: ClassVar[str] = ""
    option_names = OPTION_NAMES

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self.op_keys = OpKeys(options)
        for name in WRITER_BOOL_OPTIONS:
            options.bool(name, False)
        handling = options.str("pkUpdateHandling", "abend")
        if handling not in PK_UPDATE_HANDLING:
            raise OptionError(
                f"option pkUpdateHandling must be one of {', '.join(PK_UPDATE_HANDLING)}, not {handling!r}"
            )
        wraps = {name: options.bool(name, False) for name in WRAP_OPTIONS if name in options}
        if len(set(wraps.values())) > 1:
            raise OptionError("options wrapMessageInGenericAvroMessage and wrapMessageInGenericAvroSchema disagree")
        self.wrap: bool | None = next(iter(wraps.values())) if wraps else None
        self.use_fingerprint: bool | None = None
        if "genericWrapperUseFingerprint" in options:
            self.use_fingerprint = options.bool("genericWrapperUseFingerprint", False)
        delimiter = options.str("lineDelimiter") or ""
        self.delimiter = delimiter.encode("utf-8")
        self.encoding = options.str("encoding") or "UTF-8"
        codec = python_codec(self.encoding)
        directory = self.schema_dir or options.str("schemaDirectory") or options.str("schemaFilePath")
        if directory and not os.path.isdir(directory):
            raise OptionError(f"schema directory {directory!r} does not exist or is not a directory")
        self.schemas = SchemaDirectory(Path(directory), codec) if directory else None
        self._ocf_schemas: dict[str, AvroSchema | str] = {}
        self._builtin_wrappers: dict[str, AvroSchema] = {}
        self._table_schema: dict[str, str] = {}

    # --- containers ------------------------------------------------------------------------

    def decode(self, data: bytes, file: str) -> Iterator[ChangeEvent | Rejected]:
        """Events and rejected records of one landing file (already gunzipped), in file order."""
        if self.schemas is not None:
            self.schemas.refresh()
        if not data:
            return
        if data.startswith(OCF_MAGIC):
            units = self._ocf(data, file)
        elif self._is_wrapped(data):
            units = self._wrapped(data, file)
        else:
            units = self._raw(data, file)
        for unit in units:
            if isinstance(unit, Rejected):
                yield unit
                continue
            result = self._event(unit)
            if isinstance(result, Rejected):
                yield result
                continue
            previous = self._table_schema.get(result.table)
            if previous != unit.schema.version_id:
                yield self._schema_event(result, unit, previous)
            self._table_schema[result.table] = unit.schema.version_id
            yield result

    # OCF ---------------------------------------------------------------------------------------

    def _ocf(self, data: bytes, file: str) -> Iterator[Unit | Rejected]:
        end = len(data)
        try:
            header, sync, pos = ocf_header(data)
        except Malformed as exc:
            yield Rejected(f"Avro OCF header {exc}; the file cannot be read", Source(file, 0), data[:MAX_RAW_BYTES])
            return
        schema_bytes = header.get("avro.schema")
        codec_bytes = header.get("avro.codec", b"null") or b"null"
        schema = self._ocf_schema(schema_bytes)
        codec = codec_bytes.decode("utf-8", "replace")
        problem = schema if isinstance(schema, str) else codec_problem(codec)
        if problem is not None:
            reason = f"Avro OCF file cannot be read: {problem}; rejected all {end - pos} bytes of blocks"
            yield Rejected(reason, Source(file, 0), data[:MAX_RAW_BYTES])
            return
        assert isinstance(schema, AvroSchema)
        buffer = io.BytesIO()
        inflater = Inflater(codec, _CODECS, MAX_BLOCK_BYTES, MAX_FILE_BYTES)
        block = 0
        while pos < end:
            start = pos
            try:
                count, size, body = frame_block(data, pos, end)
                if end - (body + size) < SYNC_SIZE:
                    raise Truncated("is not followed by a complete sync marker: the file is truncated")
                if data[body + size : body + size + SYNC_SIZE] != sync:
                    raise Malformed("does not end with the file's sync marker: the block is corrupt")
            except Malformed as exc:
                reason = f"block {block} at offset {start} {exc}"
                resume = data.find(sync, start + 1)
                if resume < 0:
                    reason += f"; no sync marker follows: rejected the rest of the file ({end - start} bytes)"
                    yield Rejected(reason, Source(file, start), data[start : start + MAX_RAW_BYTES])
                    return
                pos = resume + SYNC_SIZE
                reason += f"; skipped {pos - start} bytes up to the next sync marker"
                yield Rejected(reason, Source(file, start), data[start : min(pos, start + MAX_RAW_BYTES)])
                block += 1
                continue
            pos = body + size + SYNC_SIZE
            try:
                content = inflater.content(data, body, size, count)
            except Malformed as exc:
                block_raw = data[start : min(pos, start + MAX_RAW_BYTES)]
                yield Rejected(f"block {block} at offset {start} {exc}", Source(file, start), block_raw)
                block += 1
                continue
            ocf_block = OcfBlock(block, start, body, pos - SYNC_SIZE, count, content, exact=codec == "null")
            yield from self._ocf_records(data, file, schema, codec, ocf_block, buffer)
            block += 1

    def _ocf_records(
        self, data: bytes, file: str, schema: AvroSchema, codec: str, block: OcfBlock, buffer: io.BytesIO
    ) -> Iterator[Unit | Rejected]:
        """The records of one block; those of a compressed block share its offset (``meta.avro.record``
        tells them apart, see :class:`OcfBlock`)."""
        for item in block_records(data, block, schema.parsed, buffer):
            if isinstance(item, BadRecord):
                yield Rejected(_bad_record(block, item), Source(file, item.offset), item.raw)
                continue
            index, offset, record, raw = item
            avro = {"container": "ocf", "schema": "OCF header", "codec": codec, "block": block.number, "record": index}
            yield Unit(record, schema, Source(file, offset), raw, avro, schema.root.name)

    def _ocf_schema(self, schema_bytes: bytes | None) -> AvroSchema | str:
        if schema_bytes is None:
            return "the header has no avro.schema"
        try:
            text = schema_bytes.decode("utf-8")
        except UnicodeDecodeError as exc:
            return f"the header's avro.schema is not valid UTF-8 ({exc.reason} at byte {exc.start})"
        known = self._ocf_schemas.get(text)
        if known is None:
            try:
                known = load_schema(text, "of the OCF header")
                if known.root.min_size == 0:
                    raise SchemaError(
                        "schema of the OCF header: its records take no bytes, so a block's record count cannot be "
                        "checked against its size; such schemas are not supported"
                    )
            except SchemaError as exc:
                known = str(exc)
            if len(self._ocf_schemas) >= 64:
                self._ocf_schemas.clear()
            self._ocf_schemas[text] = known
        return known

    # raw messages ------------------------------------------------------------------------------

    def _raw_schema(self) -> AvroSchema | str:
        """The schema raw messages are read with: the table option's, or the only table's."""
        if self.schemas is None:
            return (
                "raw Avro messages need their table's schema: set schemaDir to the directory of "
                "FullyQualifiedTableName.avsc files (or write Avro OCF files, which carry their schema)"
            )
        if self.schemas.error:
            return self.schemas.error
        table = self.table_override
        if not table:
            tables = sorted(self.schemas.tables)
            if len(tables) != 1:
                listed = ", ".join(tables[:10]) + (", ..." if len(tables) > 10 else "") if tables else "none"
                return (
                    "raw Avro messages do not name their table: set the table option "
                    f"(schema directory {self.schemas.path} has {len(tables)} tables: {listed})"
                )
            table = tables[0]
        found = self.schemas.newest(table)
        if found is None:
            expected = f"{table}.avsc (or {table}_<timestamp>.avsc)"
            return f"no schema for table {table}: expected {expected} in {self.schemas.path}"
        return found

    def _raw(self, data: bytes, file: str) -> Iterator[Unit | Rejected]:
        schema = self._raw_schema()
        if isinstance(schema, str):
            yield Rejected(f"{schema}; rejected the whole file", Source(file, 0), data[:MAX_RAW_BYTES])
            return
        for item in self._messages(data, file, schema, f"schema {schema.origin}"):
            if isinstance(item, Rejected):
                yield item
                continue
            start, end, record = item
            avro = {"container": "raw", "schema": schema.origin}
            yield Unit(record, schema, Source(file, start), lazy_slice(data, start, end), avro, schema.table)

    def _messages(
        self, data: bytes, file: str, schema: AvroSchema, schema_text: str
    ) -> Iterator[tuple[int, int, Any] | Rejected]:
        """Consecutive schemaless messages (optionally each followed by ``lineDelimiter``)."""
        buffer, end, delimiter = io.BytesIO(data), len(data), self.delimiter
        pos = 0
        while pos < end:
            start = pos
            try:
                record, after = _read_at(buffer, start, schema)
            except Exception as exc:  # whatever the reader raises, the message is rejected
                problem = f"message at offset {start} cannot be read with {schema_text}: {_describe(exc)}"
            else:
                if after == start:
                    problem = f"{schema_text} reads a message of no bytes: it cannot frame messages"
                elif after - start > MAX_RECORD_BYTES:
                    problem = f"message at offset {start} is {after - start} bytes, larger than {MAX_RECORD_BYTES}"
                elif delimiter and after < end and not data.startswith(delimiter, after):
                    problem = (
                        f"message at offset {start} is not followed by the lineDelimiter {self.delimiter!r} "
                        f"(it ends at offset {after})"
                    )
                else:
                    yield start, after, record
                    pos = after + (len(delimiter) if delimiter and after < end else 0)
                    continue
            resume = self._resync(data, buffer, start, schema)
            if resume is None:
                hint = "" if delimiter else " (without a lineDelimiter the next message cannot be found)"
                reason = f"{problem}; rejected the rest of the file ({end - start} bytes){hint}"
                yield Rejected(reason, Source(file, start), data[start : start + MAX_RAW_BYTES])
                return
            skipped = resume - len(delimiter) - start
            reason = f"{problem}; skipped {skipped} bytes up to the next lineDelimiter"
            yield Rejected(reason, Source(file, start), data[start : start + min(skipped, MAX_RAW_BYTES)])
            pos = resume

    def _resync(self, data: bytes, buffer: io.BytesIO, start: int, schema: AvroSchema) -> int | None:
        """Start of the next message after a bad one: just after a delimiter, where a message reads."""
        delimiter = self.delimiter
        if not delimiter:
            return None
        found = start
        for _ in range(MAX_RESYNC_TRIES):
            found = data.find(delimiter, found + 1)
            if found < 0:
                return None
            candidate = found + len(delimiter)
            if candidate >= len(data):
                return len(data)
            try:
                _, after = _read_at(buffer, candidate, schema)
            except Exception:
                continue
            if after == len(data) or data.startswith(delimiter, after):
                return candidate
        return None

    # generic wrapper ---------------------------------------------------------------------------

    def _wrapper_schema(self) -> AvroSchema | str:
        """The wrapper schema: per genericWrapperUseFingerprint if set, else schemaDir's, else §6.4.7.3."""
        if self.use_fingerprint is None and self.schemas is not None and self.schemas.wrapper is not None:
            entry = self.schemas.wrapper
            if entry.schema is None:
                return entry.error or "generic_wrapper.avsc cannot be read"
            names = {name for name, _ in entry.schema.root.fields}
            if not ({"table_name", "payload"} <= names and names & set(WRAPPER_KINDS)):
                return (
                    f"{entry.schema.origin} in {self.schemas.path} is not a generic wrapper schema "
                    "(fields table_name, schema_hash or schema_fingerprint, payload)"
                )
            return entry.schema
        kind = "schema_fingerprint" if self.use_fingerprint else "schema_hash"
        if kind not in self._builtin_wrappers:
            text = json.dumps(WRAPPER_FINGERPRINT_SCHEMA if self.use_fingerprint else WRAPPER_HASH_SCHEMA)
            self._builtin_wrappers[kind] = load_schema(text, "generic_wrapper (built in)")
        return self._builtin_wrappers[kind]

    def _is_wrapped(self, data: bytes) -> bool:
        """Wrapper or raw messages: the wrap option decides; else the first message does.

        It is a wrapper when it reads as a ``generic_wrapper`` record whose hash (or fingerprint)
        names a known schema; else raw when it reads as a message of the raw schema; else a
        wrapper if it reads as one at all (its hash is then reported as unknown).
        """
        if self.wrap is not None:
            return self.wrap
        wrapper = self._wrapper_schema()
        if isinstance(wrapper, str):
            return False
        try:
            record, _ = _read_at(io.BytesIO(data), 0, wrapper)
        except Exception:
            return False
        if not _looks_wrapped(record):
            return False
        kind = next(k for k in WRAPPER_KINDS if k in record)
        if self.schemas is not None and self.schemas.lookup(kind, record[kind], record["table_name"]) is not None:
            return True
        schema = self._raw_schema()
        if isinstance(schema, str):
            return True
        try:
            _read_at(io.BytesIO(data), 0, schema)
        except Exception:
            return True
        return False

    def _wrapped(self, data: bytes, file: str) -> Iterator[Unit | Rejected]:
        wrapper = self._wrapper_schema()
        if isinstance(wrapper, str):
            yield Rejected(f"{wrapper}; rejected the whole file", Source(file, 0), data[:MAX_RAW_BYTES])
            return
        for item in self._messages(data, file, wrapper, "the generic wrapper schema"):
            if isinstance(item, Rejected):
                yield item
                continue
            start, end, message = item
            source = Source(file, start)
            raw = lazy_slice(data, start, end)
            if not _looks_wrapped(message):
                yield Rejected(f"message at offset {start} is not a generic_wrapper record", source, raw())
                continue
            table = message["table_name"]
            kind = next(k for k in WRAPPER_KINDS if k in message)
            value = message[kind]
            schema = self.schemas.lookup(kind, value, table) if self.schemas is not None else None
            if schema is None:
                yield Rejected(self._unknown_wrapped(table, kind, value, start), source, raw())
                continue
            payload = message["payload"]
            avro = {"container": "generic_wrapper", "schema": schema.origin, kind: value, "wrapper_table": table}
            if not payload:
                yield Rejected(f"generic wrapper message at offset {start} has an empty payload", source, raw())
                continue
            buffer, at = io.BytesIO(payload), 0
            while at < len(payload):
                try:
                    record, after = _read_at(buffer, at, schema)
                except Exception as exc:
                    reason = (
                        f"payload of the generic wrapper message at offset {start} (table {table}) cannot be read "
                        f"with schema {schema.origin}: {_describe(exc)}"
                    )
                    yield Rejected(reason, source, raw())
                    break
                if after == at:
                    reason = f"schema {schema.origin} reads a message of no bytes: it cannot frame the payload"
                    yield Rejected(reason, source, raw())
                    break
                yield Unit(record, schema, source, raw, dict(avro), table)
                at = after

    def _unknown_wrapped(self, table: str, kind: str, value: int, start: int) -> str:
        reason = f"generic wrapper message at offset {start} for table {table} has {kind} {value}, which matches "
        if self.schemas is None:
            return reason + "no schema: set schemaDir to the directory of the writer's .avsc files"
        reason += f"no schema in {self.schemas.path}"
        known = self.schemas.known_values(kind, table)
        if known:
            reason += f" (the {kind} of {table}'s schema files: {', '.join(map(str, known))})"
        else:
            reason += f" (no {table}.avsc there)"
        if kind == "schema_hash":
            reason += "; schema_hash is Java's String.hashCode() of the schema text"
        return reason

    # one record ----------------------------------------------------------------------------------

    def _layout(self, schema: AvroSchema) -> Layout | str:
        layout = schema.layouts.get(self.layout_kind)
        if layout is None:
            layout = self._build_layout(schema)
            schema.layouts[self.layout_kind] = layout
        return layout

    def _build_layout(self, schema: AvroSchema) -> Layout | str:
        root = schema.root
        if root.kind != "record":
            return f"schema {schema.origin} is a {root.kind}, not a record: it is not a GoldenGate message schema"
        fields = dict(root.fields)
        meta_types = {name: fields[name] for name in META_FIELDS if name in fields}
        image_records = {
            name: fields[name] for name in IMAGE_FIELDS if name in fields and fields[name].kind in ("record", "union")
        }
        image_records = {name: t for name, t in image_records.items() if t.fields}
        if self.layout_kind == "op":
            if not image_records:
                return (
                    f"schema {schema.origin} has no before/after record fields: this is not Avro operation data "
                    "(Avro row data? decode it with --format goldengate-avro-row)"
                )
            images = {name: _image_columns(t) for name, t in image_records.items()}
            columns: dict[str, Column] = {}
            for image in images.values():
                for column in image:
                    columns.setdefault(column.name, column)
            extra = [Column(n, t) for n, t in root.fields if n not in META_FIELDS and n not in IMAGE_FIELDS]
            column_list = list(columns.values())
        else:
            flagged = [t for t in image_records.values() if any(n.endswith(MISSING_SUFFIX) for n, _ in t.fields)]
            if flagged:
                return (
                    f"schema {schema.origin} has before/after records with _isMissing flags: this is Avro operation "
                    "data; decode it with --format goldengate-avro-op"
                )
            column_list = [Column(n, t) for n, t in root.fields if n not in META_FIELDS]
            images, extra = {}, []
        column_types = {c.name: c.type.column_type for c in column_list if c.type.column_type}
        return Layout(column_list, images, meta_types, extra, column_types)  # type: ignore[arg-type]

    def _event(self, unit: Unit) -> ChangeEvent | Rejected:
        """Map one formatter message to a :class:`ChangeEvent` (or say why it cannot be)."""

        def reject(reason: str) -> Rejected:
            return Rejected(reason, unit.source, unit.raw())

        layout = self._layout(unit.schema)
        if isinstance(layout, str):
            return reject(layout)
        record = unit.record
        if not isinstance(record, dict):
            return reject("message is not an Avro record")
        try:
            meta_values = {
                name: (t.convert(record[name]) if t.convert and record.get(name) is not None else record.get(name))
                for name, t in layout.meta_types.items()
            }
        except ValueError as exc:
            return reject(f"operation metadata cannot be read: {exc}")

        table = self.table_override or meta_values.get("table") or unit.table_hint
        if not isinstance(table, str) or not table:
            return reject('record has no table name (field "table" missing or empty); set the table option')

        order = op_and_order(meta_values, self.op_keys)
        if isinstance(order, str):
            return reject(order)
        op, seq, event_ts = order

        keys = self.keys
        record_keys = meta_values.get("primary_keys")
        if record_keys is not None:
            if not isinstance(record_keys, list) or not all(isinstance(k, str) for k in record_keys):
                return reject(f"primary_keys must be a list of column names, not {record_keys!r}")
            keys = self.keys or list(record_keys)

        try:
            before, after = self.images(record, op, layout)
        except ValueError as exc:
            return reject(str(exc))

        meta: dict[str, Any] = {"pos": meta_values["pos"], "op_ts": meta_values["op_ts"]}
        if meta_values.get("current_ts") is not None:
            meta["current_ts"] = meta_values["current_ts"]
        if meta_values.get("tokens"):
            meta["tokens"] = meta_values["tokens"]
        if record_keys is not None:
            meta["primary_keys"] = record_keys
        if layout.extra:
            try:
                extra = {c.name: column_value(c, record.get(c.name)) for c in layout.extra}
            except ValueError as exc:
                return reject(str(exc))
            meta["extra"] = extra
        if layout.column_types:
            meta["column_types"] = layout.column_types
        meta["avro"] = unit.avro

        return ChangeEvent(
            table=table,
            op=op,
            seq=seq,
            event_ts=event_ts,
            source=unit.source,
            keys=keys,
            before=before,
            after=after,
            meta=meta,
        )

    def images(
        self, record: dict[str, Any], op: str, layout: Layout
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """(before, after) row images of one record; ValueError says why they cannot be read."""
        raise NotImplementedError

    def _schema_event(self, event: ChangeEvent, unit: Unit, previous: str | None) -> ChangeEvent:
        """The table's layout, announced before its first event in this decoder run and before
        the first event read with another schema (same ``seq``, ``event_ts`` and ``source``)."""
        layout = self._layout(unit.schema)
        assert isinstance(layout, Layout)
        columns = [{"name": c.name, "type": c.type.column_type, "nullable": c.type.nullable} for c in layout.columns]
        ddl = {"columns": columns, "keys": list(event.keys or []), "version": unit.schema.version_id}
        meta: dict[str, Any] = {"avro": event.meta.get("avro", {})}
        if previous is not None:
            meta["previous_version"] = previous
        if unit.schema.version:
            meta["schema_version"] = unit.schema.version
        if layout.column_types:
            meta["column_types"] = layout.column_types
        return schema_event_before(event, event.keys, ddl, meta)


def _image_columns(record_type: AvroType) -> list[Column]:
    """Columns of an Avro-op image record: ``COL`` with its ``COL_isMissing`` flag when present."""
    names = {name: t for name, t in record_type.fields}
    columns = []
    for name, avro_type in record_type.fields:
        if name.endswith(MISSING_SUFFIX) and avro_type.kind == "boolean" and name[: -len(MISSING_SUFFIX)] in names:
            continue
        flag = name + MISSING_SUFFIX
        has_flag = flag in names and names[flag].kind == "boolean"
        columns.append(Column(name, avro_type, flag if has_flag else None))
    return columns


def column_value(column: Column, value: Any) -> Any:
    if value is None or column.type.convert is None:
        return value
    try:
        return column.type.convert(value)
    except ValueError as exc:
        raise ValueError(f"column {column.name}: {exc}") from None


def _looks_wrapped(record: Any) -> bool:
    if not isinstance(record, dict):
        return False
    table = record.get("table_name")
    kinds = [k for k in WRAPPER_KINDS if isinstance(record.get(k), int)]
    return (
        isinstance(table, str)
        and 0 < len(table) <= 1024
        and table.isprintable()
        and len(kinds) == 1
        and isinstance(record.get("payload"), bytes)
    )


def ocf_header(data: bytes) -> tuple[dict[str, bytes], bytes, int]:
    """(metadata, sync marker, offset of the first block) of an Avro object container file."""
    end, pos, entries = len(data), len(OCF_MAGIC), 0
    meta: dict[str, bytes] = {}
    try:
        while True:
            count, pos = read_block_count(data, pos, end)
            if count == 0:
                break
            entries += count
            if entries > MAX_HEADER_ENTRIES:
                raise Malformed(f"has more than {MAX_HEADER_ENTRIES} metadata entries")
            for _ in range(count):
                key, value, pos = read_header_entry(data, pos, end, _read_length)
                meta[key] = value
    except Truncated as exc:
        raise Truncated(f"is truncated: it {exc} (the file has {end} bytes)") from None
    except Malformed as exc:
        raise Malformed(f"is corrupt: it {exc}") from None
    if end - pos < SYNC_SIZE:
        raise Truncated(f"is truncated: it ends before its sync marker (the file has {end} bytes)")
    return meta, data[pos : pos + SYNC_SIZE], pos + SYNC_SIZE
