"""Helpers shared by the GoldenGate decoders (``goldengate-delimited``, ``goldengate-xml``; op keys,
``op_ts`` and ``pos`` rules, encodings and ``SCHEMA`` events also ``goldengate-json`` and
``goldengate-avro-*``).

What lives here is what every GoldenGate formatter has in common (vendor doc §6.2-§6.7): op keys
(``insertOpKey``...), ``pos`` as the ordering key, ``op_ts`` in UTC, tokens, the table's columns
(from our ``columns`` option or an Avro ``.avsc`` in ``schemaDir``), text values read as typed
values, and the ``SCHEMA`` events announcing a table's layout. It also holds the byte-level
plumbing every text decoder needs (the other JSON decoders use it too): Java charset names,
undecodable bytes kept as escapes so that they reject only their record, and byte offsets of
decoded text.
"""

from __future__ import annotations

import codecs
import datetime as dt
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, cast

from cdclake.events.change import ChangeEvent
from cdclake.formats._timestamps import from_match
from cdclake.options import OptionError, Options
from cdclake.runtime.limits import MAX_RAW_BYTES, MAX_SCHEMA_BYTES
from cdclake.schema.coltypes import BOOLEAN, DOUBLE, LONG, STRING, canonical_type

#: ``seq`` width: ``pos`` digits are left-padded with zeros to this many characters.
SEQ_WIDTH = 32

OP_OPTIONS = (
    ("insertOpKey", "I", "INSERT"),
    ("updateOpKey", "U", "UPDATE"),
    ("deleteOpKey", "D", "DELETE"),
    ("truncateOpKey", "T", "TRUNCATE"),
)

ESCAPE_ERRORS = "cdclake-gg-byte-escape"
ESCAPED = re.compile("[\udc00-\udcff]")
_DIGITS = re.compile(r"[0-9]+")
#: Timestamps as the text formatters write them: a date alone, or a time after a blank, ``T`` or ``:``.
_TS = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})(?:[ T:](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?"
)
#: ``op_ts`` as the JSON and Avro formatters write it: the time is required, after a blank or ``T``.
OP_TS = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?"
)
#: Java charset names Python does not know under the same spelling.
_JAVA_CHARSETS = {"iso8859_1": "latin-1", "unicodebig": "utf-16", "unicodelittle": "utf-16-le", "ms932": "cp932"}


def _escape_bytes(exc: UnicodeError) -> tuple[str, int]:
    """Decode error handler: each undecodable byte b becomes the lone surrogate U+DC00+b.

    Unlike ``surrogateescape`` it also works for bytes below 0x80 (UTF-16, UTF-32), and the
    escapes mark exactly the bytes to reject.
    """
    if isinstance(exc, UnicodeDecodeError):
        bad = exc.object[exc.start : exc.end]
        return "".join(chr(0xDC00 + b) for b in bad), exc.end
    raise exc


codecs.register_error(ESCAPE_ERRORS, _escape_bytes)


# --- encodings and offsets ------------------------------------------------------------------


def python_codec(name: str, option: str = "encoding") -> str:
    """The Python codec for a Java charset name (``UTF-8``, ``ISO-8859-1``, ``Cp1252``...)."""
    key = name.strip().lower().replace("-", "_")
    try:
        info = codecs.lookup(_JAVA_CHARSETS.get(key, name.strip()))
    except LookupError:
        info = None
    if info is None or not getattr(info, "_is_text_encoding", True):
        raise OptionError(f"option {option}={name!r} is not a known character encoding")
    return info.name


def codec_for(codec: str, data: bytes) -> tuple[str, int]:
    """(codec to decode ``data`` with, length of its byte order mark).

    UTF-16/32 without a stated byte order: the BOM decides, else big-endian (as Java reads).
    A UTF-8 BOM is skipped whatever the encoding option says it is UTF-8.
    """
    if codec in ("utf-16", "utf-32"):
        little = b"\xff\xfe\x00\x00" if codec == "utf-32" else b"\xff\xfe"
        big = b"\x00\x00\xfe\xff" if codec == "utf-32" else b"\xfe\xff"
        if data.startswith(little):
            return f"{codec}-le", len(little)
        return f"{codec}-be", len(big) if data.startswith(big) else 0
    if data.startswith(b"\xef\xbb\xbf") and codec in ("utf-8", "utf-8-sig"):
        return "utf-8", 3
    return codec, 0


def is_ascii_compatible(codec: str) -> bool:
    """Whether markup characters are single ASCII bytes in ``codec`` (so bytes can be scanned)."""
    probe = "<?xml operation/>![]-'\"= \t\r\n"
    try:
        return probe.encode(codec) == probe.encode("ascii")
    except (UnicodeError, LookupError):
        return False


def _stateless_ascii(codec: str) -> bool:
    """Whether ``codec`` writes each ASCII character as that one byte, whatever came before it."""
    try:
        name = codecs.lookup(codec).name
    except LookupError:
        return False
    return name in ("utf-8", "ascii") or name.startswith(("iso8859-", "cp125"))


def decode_escaping(data: bytes, codec: str) -> tuple[str, bool]:
    """``data`` decoded, each undecodable byte escaped (:data:`ESCAPE_ERRORS`), and whether any was.

    A strict decode first (as fast, one C pass); the escaping one only when it fails. Knowing there
    is no escape spares a scan of the whole text for one and a split of every record's text.
    """
    try:
        return data.decode(codec), False
    except UnicodeDecodeError:
        return data.decode(codec, ESCAPE_ERRORS), True


class ByteOffsets:
    """Maps increasing character positions of decoded text to byte offsets in the input.

    ``escapes``: whether the text may hold escaped bytes (False when :func:`decode_escaping` found none).
    """

    def __init__(self, text: str, codec: str, base: int, identity: bool, escapes: bool = True) -> None:
        self._text, self._base, self._identity = text, base, identity
        self.codec = codec
        self.escapes = escapes
        self._encoder = codecs.getincrementalencoder(codec)()
        self._char, self._byte = 0, base
        #: An ASCII chunk is one byte a character, counted without encoding it: for UTF-8 and the stateless
        #: 8-bit codecs only (a stateful one, e.g. ISO-2022-JP, writes an escape to get back to ASCII).
        self._ascii = _stateless_ascii(codec)

    def at(self, char_pos: int) -> int:
        if self._identity:
            return self._base + char_pos
        if char_pos < self._char:
            # Rare (a rejected record's end is looked up after a later start): restart from the top.
            self._encoder.reset()
            self._char, self._byte = 0, self._base
        chunk = self._text[self._char : char_pos]
        if not self.escapes:
            self._byte += len(chunk) if self._ascii and chunk.isascii() else len(self._encoder.encode(chunk))
            self._char = char_pos
            return self._byte
        for index, piece in enumerate(ESCAPED.split(chunk)):
            if index:
                self._byte += 1  # one escaped (undecodable) byte
            self._byte += len(self._encoder.encode(piece))
        self._char = char_pos
        return self._byte


def encoded_length(text: str, codec: str) -> int:
    """Bytes ``text`` took in the input (each escaped undecodable byte counts one)."""
    pieces = ESCAPED.split(text)
    return sum(len(p.encode(codec)) for p in pieces) + len(pieces) - 1


def decode_text(data: bytes, codec: str) -> tuple[str, ByteOffsets]:
    """The file as text (BOM dropped, bad bytes escaped) and its character -> byte offset map."""
    codec, bom = codec_for(codec, data)
    text = data[bom:].decode(codec, ESCAPE_ERRORS)
    if text.startswith("\ufeff"):  # a byte order mark the codec does not consume (UTF-16LE named)
        bom += len("\ufeff".encode(codec))
        text = text[1:]
    identity = len(text) + bom == len(data) and (data.isascii() or codec in ("latin-1", "iso8859-1"))
    return text, ByteOffsets(text, codec, bom, identity)


def encoding_error(text: str, char_pos: int, encoding: str, byte_offset: int) -> str:
    """Reason for an undecodable byte at ``char_pos`` (an escape made by :data:`ESCAPE_ERRORS`)."""
    byte = ord(text[char_pos]) - 0xDC00
    return (
        f"bytes that are not valid {encoding} (first bad byte 0x{byte:02x} at byte {byte_offset});"
        " set the encoding option to the writer's encoding"
    )


def raw_slice(data: bytes, start: int, end: int) -> bytes:
    """A rejected record's bytes, capped at :data:`MAX_RAW_BYTES`."""
    return data[start : min(end, start + MAX_RAW_BYTES)]


# --- operation metadata -----------------------------------------------------------------------


class OpKeys:
    """The ``insertOpKey`` / ``updateOpKey`` / ``deleteOpKey`` / ``truncateOpKey`` options."""

    def __init__(self, options: Options) -> None:
        self.ops: dict[str, str] = {}
        self.help = ", ".join(f"{name}={options.str(name, default)!r}" for name, default, _ in OP_OPTIONS)
        for name, default, op in OP_OPTIONS:
            key = options.str(name, default)
            assert key is not None
            if key in self.ops:
                raise OptionError(f"option {name}={key!r} is also the key of {self.ops[key]}; op keys must differ")
            self.ops[key] = op

    def op(self, key: str | None) -> str | None:
        return self.ops.get(key) if key is not None else None


def pos_to_seq(pos: str) -> str:
    """``pos`` (trail file number + RBA) as a ``seq``: digits are zero-padded to 32 characters."""
    return pos.zfill(SEQ_WIDTH) if _DIGITS.fullmatch(pos) else pos


def parse_ts(value: Any, pattern: re.Pattern[str] = _TS) -> dt.datetime | None:
    """``YYYY-MM-DD HH:MM:SS[.f...]`` (or ISO 8601) as an aware UTC datetime; no zone means UTC.

    ``pattern`` is what the format's writer spells (the text formatters' by default); other text
    is read as ISO 8601.
    """
    if not isinstance(value, str):
        return None
    text = value.strip()
    match = pattern.fullmatch(text)
    try:
        parsed = from_match(match) if match else dt.datetime.fromisoformat(text)
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=dt.UTC)
        return parsed.astimezone(dt.UTC)
    except (ValueError, OverflowError):  # OverflowError: an offset moves the moment past year 1 or 9999
        return None


def op_ts_time(value: Any) -> dt.datetime | None:
    """``op_ts`` as the JSON and Avro formatters write it (:data:`OP_TS`), as an aware UTC datetime; None: not
    a timestamp (the record is rejected)."""
    return parse_ts(value, OP_TS)


def op_and_order(
    record: Mapping[str, Any], op_keys: OpKeys, describe: Callable[[Any], str] = repr
) -> tuple[str, str, dt.datetime] | str:
    """(op, seq, event_ts) of a JSON or Avro formatter record, from its ``op_type``, ``pos`` and
    ``op_ts``; a str is why it has none. One rule for both formats, which carry the same members;
    ``describe`` words a ``pos`` of the wrong type."""
    order = op_and_order_of(record.get("op_type"), record.get("pos"), record.get("op_ts"), op_keys, describe)
    return cast("tuple[str, str, dt.datetime] | str", order)  # read in order: seq and event_ts are set


def op_and_order_of(
    op_key: Any, pos: Any, op_ts: Any, op_keys: OpKeys, describe: Callable[[Any], str] = repr, order: bool = True
) -> tuple[str, str | None, dt.datetime | None] | str:
    """:func:`op_and_order` of the members' values. ``order`` False: only ``op_type`` and ``pos`` are checked,
    and seq and event_ts are left to the caller (None), which reads them by :func:`pos_to_seq` and
    :func:`op_ts_time` (the JSON columnar path: a column at a time)."""
    op = op_keys.ops.get(op_key) if isinstance(op_key, str) else None
    if op is None:
        return f"unknown op_type {op_key!r}; the configured op keys are {op_keys.help}"
    if pos is None or pos == "":
        return "no pos: GoldenGate records need pos for ordering"
    if isinstance(pos, bool) or not isinstance(pos, (str, int)):
        return f"pos must be a string of digits, not {describe(pos)}"
    if not order:
        return op, None, None
    event_ts = op_ts_time(op_ts)
    if event_ts is None:
        return f"op_ts {op_ts!r} is not a timestamp like 'YYYY-MM-DD HH:MM:SS.ffffff'"
    return op, pos_to_seq(str(pos)), event_ts


def parse_tokens(text: str, kv_delimiter: str, pair_delimiter: str) -> dict[str, str] | str:
    """``K1=V1,K2=V2`` as a dict; a str result is the reason it cannot be read.

    A piece without the key/value delimiter continues the previous value (a token value may
    contain the pair delimiter, GoldenGate does not escape it).
    """
    tokens: dict[str, str] = {}
    if text == "":
        return tokens
    last: str | None = None
    for piece in text.split(pair_delimiter):
        key, sep, value = piece.partition(kv_delimiter)
        if not sep:
            if last is None:
                return (
                    f"tokens field {text[:80]!r} is not key{kv_delimiter}value pairs separated by {pair_delimiter!r}"
                    " (check keyValueDelimiter, keyValuePairDelimiter and includeTokens)"
                )
            tokens[last] += pair_delimiter + piece
            continue
        tokens[key] = value
        last = key
    return tokens


# --- columns --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str = STRING
    key: bool = False
    #: False when no schema gave the type (the column's text is kept as a string).
    known: bool = True


@dataclass(frozen=True, slots=True)
class Layout:
    """A table's columns and where they come from (``source``: a sentence fragment)."""

    columns: tuple[Column, ...]
    source: str
    version: str | None = None

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def types(self) -> dict[str, str]:
        """Column types given by a schema (``meta["column_types"]``); columns without one are left out."""
        return {c.name: c.type for c in self.columns if c.known}

    def keys(self) -> list[str]:
        return [c.name for c in self.columns if c.key]


def parse_columns_option(value: str | None) -> dict[str | None, Layout]:
    """The ``columns`` option: ``TABLE(COL[:type][:key],...);TABLE2(...)`` or ``COL[:type][:key],...``.

    Without a ``TABLE(...)`` wrapper the list applies to every table (key ``None``). Types are
    the column types of :mod:`cdclake.schema.coltypes` (``decimal(10,2)`` may contain a comma).
    """
    layouts: dict[str | None, Layout] = {}
    if value is None or not value.strip():
        return layouts
    for spec in _split_top(value, ";"):
        if not spec.strip():
            continue
        table: str | None = None
        body = spec.strip()
        head, paren, rest = body.partition("(")
        if paren and ":" not in head and body.endswith(")") and head.strip():
            table, body = head.strip(), rest[:-1]
        if table in layouts:
            raise OptionError(f"option columns names table {table or '(all tables)'} twice")
        columns: list[Column] = []
        for item in _split_top(body, ","):
            columns.append(_column_spec(item, table))
        if not columns:
            raise OptionError(f"option columns gives no column for table {table or '(all tables)'}")
        names = [c.name for c in columns]
        if len(set(names)) != len(names):
            raise OptionError(f"option columns names a column twice for table {table or '(all tables)'}")
        where = f"columns option ({table})" if table else "columns option"
        layouts[table] = Layout(tuple(columns), where)
    return layouts


def _column_spec(item: str, table: str | None) -> Column:
    parts = [p.strip() for p in _split_top(item, ":")]
    name = parts[0]
    if not name:
        raise OptionError(f"option columns has an empty column name for table {table or '(all tables)'}")
    col_type, key = STRING, False
    for part in parts[1:]:
        if part.lower() == "key":
            key = True
        elif part:
            try:
                col_type = canonical_type(part)
            except ValueError as exc:
                raise OptionError(f"option columns: column {name}: {exc}") from None
    return Column(name, col_type, key)


def _split_top(text: str, sep: str) -> list[str]:
    """Split on ``sep`` outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


_AVRO_META_FIELDS = frozenset({"table", "op_type", "op_ts", "current_ts", "pos", "primary_keys", "tokens"})
_VERSION_SUFFIX = re.compile(r"[0-9][0-9._:TZ+-]*")


class SchemaDir:
    """Columns of a table from ``<table>.avsc`` / ``<table>_<timestamp>.avsc`` in a directory.

    The newest versioned file applies (timestamps compared number by number), else the plain
    file. The directory is looked at again for every landing file (:meth:`new_file`), so a new
    version written between two files applies from the next file on.
    """

    def __init__(self, path: str | None) -> None:
        if path and not os.path.isdir(path):
            raise OptionError(f"schema directory {path!r} does not exist or is not a directory")
        self.path = Path(path) if path else None
        self._listing: list[str] | None = None
        self._per_file: dict[str, Layout | str | None] = {}
        self._parsed: dict[tuple[str, int, int], Layout | str] = {}

    def new_file(self) -> None:
        self._listing = None
        self._per_file = {}

    def layout(self, table: str) -> Layout | str | None:
        """The table's layout, None without a schema file, or a str saying why it cannot be read."""
        if self.path is None:
            return None
        if table not in self._per_file:
            self._per_file[table] = self._find(table)
        return self._per_file[table]

    def _find(self, table: str) -> Layout | str | None:
        if any(sep in table for sep in ("/", "\\", "\x00")) or table.startswith(".."):
            return None
        assert self.path is not None
        if self._listing is None:
            try:
                self._listing = sorted(os.listdir(self.path))
            except OSError as exc:
                return f"cannot list schema directory {self.path}: {exc}"
        versions = []
        prefix = table + "_"
        for name in self._listing:
            if name.startswith(prefix) and name.endswith(".avsc"):
                suffix = name[len(prefix) : -len(".avsc")]
                if _VERSION_SUFFIX.fullmatch(suffix):
                    versions.append((tuple(int(d) for d in re.findall(r"\d+", suffix)), name))
        if versions:
            name = max(versions)[1]
        elif f"{table}.avsc" in self._listing:
            name = f"{table}.avsc"
        else:
            return None
        return self._read(self.path / name)

    def _read(self, path: Path) -> Layout | str:
        try:
            stat = path.stat()
        except OSError as exc:
            return f"cannot read Avro schema file {path}: {exc}"
        cache_key = (str(path), stat.st_mtime_ns, stat.st_size)
        if cache_key not in self._parsed:
            self._parsed[cache_key] = read_avsc(path)
        return self._parsed[cache_key]


def read_avsc(path: Path) -> Layout | str:
    """Columns of a GoldenGate Avro schema: row formatter fields (metadata fields skipped) or the
    ``after`` record of an operation formatter schema (``*_isMissing`` flags skipped)."""
    try:
        with open(path, "rb") as handle:
            content = handle.read(MAX_SCHEMA_BYTES + 1)
    except OSError as exc:
        return f"cannot read Avro schema file {path}: {exc}"
    if len(content) > MAX_SCHEMA_BYTES:
        return f"Avro schema file {path} is larger than {MAX_SCHEMA_BYTES} bytes; fix or remove it"
    try:
        schema = json.loads(content.decode("utf-8-sig"))
        fields = schema["fields"]
        if not isinstance(fields, list):
            raise TypeError("fields is not a list")
        nested = {f.get("name"): f.get("type") for f in fields if isinstance(f, dict)}
        image = _record_of(nested.get("after")) or _record_of(nested.get("before"))
        if image is not None:
            fields = image["fields"]
        names = {f["name"] for f in fields}
        columns = []
        for field in fields:
            name = field["name"]
            if not isinstance(name, str):
                raise TypeError("a field name is not a string")
            if image is None and name in _AVRO_META_FIELDS:
                continue
            if name.endswith("_isMissing") and name[: -len("_isMissing")] in names:
                continue
            columns.append(Column(name, avro_type(field.get("type"))))
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        return f"Avro schema file {path} is not a readable record schema ({exc}); fix or remove it"
    return Layout(tuple(columns), f"Avro schema {path.name}", version=path.name)


def _record_of(avro: Any) -> dict[str, Any] | None:
    for branch in avro if isinstance(avro, list) else [avro]:
        if isinstance(branch, dict) and branch.get("type") == "record" and isinstance(branch.get("fields"), list):
            return branch
    return None


def avro_type(avro: Any) -> str:
    """Our column type for an Avro field type (unions with null: the other branch)."""
    if isinstance(avro, list):
        branches = [b for b in avro if b != "null"]
        return avro_type(branches[0]) if len(branches) == 1 else STRING
    if isinstance(avro, dict):
        logical = avro.get("logicalType")
        if logical == "decimal":
            try:
                return canonical_type(f"decimal({int(avro['precision'])},{int(avro.get('scale', 0))})")
            except (ValueError, KeyError, TypeError):
                return STRING
        if logical == "date":
            return "date"
        if logical in ("timestamp-millis", "timestamp-micros", "local-timestamp-millis", "local-timestamp-micros"):
            return "timestamp"
        return avro_type(avro.get("type"))
    return {
        "string": STRING,
        "int": LONG,
        "long": LONG,
        "float": DOUBLE,
        "double": DOUBLE,
        "boolean": BOOLEAN,
        "bytes": "binary",
        "fixed": "binary",
    }.get(avro if isinstance(avro, str) else "", STRING)


_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_SPECIAL = {"nan": "NaN", "infinity": "Infinity", "-infinity": "-Infinity", "+infinity": "Infinity", "inf": "Infinity"}


def text_value(text: str, col_type: str) -> Any:
    """A column's text as the JSON value of its type (ValueError says why not).

    Numbers read as JSON would: ``3`` is an int, ``17520.00`` an exact Decimal (never a float).
    Text types (string, timestamp, date, binary) stay text exactly as written.
    """
    if col_type == LONG:
        if not _INTEGER.fullmatch(text.strip()):
            raise ValueError("not an integer")
        return int(text)
    if col_type == DOUBLE or col_type.startswith("decimal"):
        stripped = text.strip()
        if _INTEGER.fullmatch(stripped):
            return int(stripped)
        if _NUMBER.fullmatch(stripped):
            return Decimal(stripped)
        if col_type == DOUBLE and stripped.lower() in _SPECIAL:
            return Decimal(_SPECIAL[stripped.lower()])
        raise ValueError("not a number")
    if col_type == BOOLEAN:
        lowered = text.strip().lower()
        if lowered in ("true", "1"):
            return True
        if lowered in ("false", "0"):
            return False
        raise ValueError("not true or false")
    return text


def typed(text: str, column: Column) -> Any:
    """:func:`text_value`, with a reason naming the column when the text does not fit."""
    try:
        return text_value(text, column.type)
    except (ValueError, InvalidOperation) as exc:
        raise ValueError(f"column {column.name}: value {text[:80]!r} is not a valid {column.type} ({exc})") from None


# --- SCHEMA events -------------------------------------------------------------------------------


class LayoutTracker:
    """Announces a table's layout with a ``SCHEMA`` event the first time this decoder sees the
    table and whenever its columns change (before the first record using the new layout)."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[tuple[str, str], ...]] = {}

    def check(self, layout: Layout, row: ChangeEvent) -> ChangeEvent | None:
        """The ``SCHEMA`` event to put before ``row`` (read with ``layout``), or None when it is announced."""
        signature = tuple((c.name, c.type) for c in layout.columns)
        if self._seen.get(row.table) == signature:
            return None
        self._seen[row.table] = signature
        ddl: dict[str, Any] = {
            "columns": [{"name": c.name, "type": c.type} for c in layout.columns],
            "keys": list(row.keys or []),
        }
        if layout.version:
            ddl["version"] = layout.version
        return schema_event_before(row, row.keys, ddl, {"column_source": layout.source})


def schema_event_before(
    event: ChangeEvent, keys: list[str] | None, ddl: dict[str, Any], meta: dict[str, Any]
) -> ChangeEvent:
    """A ``SCHEMA`` event announcing the layout ``event`` is read with. It carries the row's seq,
    event_ts and source, so that it sorts just before the row."""
    return ChangeEvent(
        table=event.table,
        op="SCHEMA",
        seq=event.seq,
        event_ts=event.event_ts,
        source=event.source,
        keys=keys,
        ddl=ddl,
        meta=meta,
    )


def merge_types(names: Iterable[str], source: str, *layouts: Layout | None) -> Layout:
    """A layout for ``names`` (read from the data) with types and key marks from ``layouts``."""
    known: dict[str, Column] = {}
    for layout in layouts:
        if layout is not None:
            for column in layout.columns:
                known.setdefault(column.name, column)
    return Layout(tuple(known.get(n, Column(n, known=False)) for n in names), source)
