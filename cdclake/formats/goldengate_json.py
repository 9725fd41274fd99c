"""GoldenGate for Big Data JSON formatter output (format id ``goldengate-json``, vendor doc §6.3).

Why it is written this way:

- Landing files hold the formatter's messages one per line, concatenated or
  pretty-printed, optionally separated by ``jsonDelimiter``. One scanner
  (``JSONDecoder.raw_decode`` in a loop) reads all of these framings, so the
  writer's ``prettyPrint`` setting never has to be known.
- Numbers are read as ``Decimal`` (``17520.00`` stays exact) and a missing
  column stays an absent key while a NULL column is a present key with None:
  the merge's partial updates depend on that difference.
- One bad record must not cost the file: it becomes a :class:`Rejected` (with
  its bytes and byte offset, so it can be replayed) and scanning resumes at the
  next ``jsonDelimiter``, or else at the next line starting with ``{`` (how every
  GoldenGate record starts, pretty-printed or not). Bytes that are invalid in
  the file's encoding are kept as escapes so that they reject only their record.
- ``pos`` (trail file number + RBA) gives the commit order; it is zero-padded to
  32 digits so that string order equals numeric order (20 digits is usual, 23
  occur). ``current_ts`` is processing time and is only kept in ``meta``.
"""

from __future__ import annotations

import codecs
import datetime as dt
import json
import os
import re
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

from cdclake.events import ChangeEvent, Rejected, Source
from cdclake.formats._json import JsonScanner, duplicate_reason, nests_deeper, truncation_hint
from cdclake.limits import MAX_JSON_DEPTH as MAX_DEPTH
from cdclake.limits import MAX_RAW_BYTES, MAX_RECORD_BYTES, MAX_SCHEMA_BYTES
from cdclake.options import OptionError, Options
from cdclake.registry import Decoder, register

#: ``seq`` width: ``pos`` digits are left-padded with zeros to this many characters.
SEQ_WIDTH = 32

#: Top-level members the formatter writes (everything else goes to ``meta["extra"]``).
_KNOWN_MEMBERS = frozenset(
    {"table", "op_type", "op_ts", "current_ts", "pos", "primary_keys", "priamry_keys", "tokens", "before", "after"}
)
_OP_OPTIONS = (("insertOpKey", "I", "INSERT"), ("updateOpKey", "U", "UPDATE"), ("deleteOpKey", "D", "DELETE"))
_OP_OPTIONS += (("truncateOpKey", "T", "TRUNCATE"),)
#: Table 6-4 options that only shape the writer's output: accepted, checked, otherwise unused.
_WRITER_BOOL_OPTIONS = (
    "prettyPrint",
    "generateSchema",
    "versionSchemas",
    "iso8601Format",
    "includePrimaryKeys",
    "treatAllColumnsAsStrings",
)
#: Java charset names Python does not know under the same spelling.
_JAVA_CHARSETS = {"iso8859_1": "latin-1", "unicodebig": "utf-16", "unicodelittle": "utf-16-le", "ms932": "cp932"}
#: JSON schema types -> the column types understood by normalize (``meta["column_types"]``).
_SCHEMA_TYPES = {"string": "string", "number": "double", "integer": "long", "boolean": "boolean"}

_ESCAPE_ERRORS = "cdclake-byte-escape"
_ESCAPED = re.compile("[\udc00-\udcff]")
_DIGITS = re.compile(r"[0-9]+")
_NEXT_RECORD_LINE = re.compile(r"\n[ \t\r\f\v]*\{")
_TS = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?"
)


def _escape_bytes(exc: UnicodeError) -> tuple[str, int]:
    """Decode error handler: each undecodable byte b becomes the lone surrogate U+DC00+b.

    Unlike ``surrogateescape`` it also works for bytes below 0x80 (UTF-16, UTF-32),
    and the escapes mark exactly the bytes to reject.
    """
    if isinstance(exc, UnicodeDecodeError):
        bad = exc.object[exc.start : exc.end]
        return "".join(chr(0xDC00 + b) for b in bad), exc.end
    raise exc


codecs.register_error(_ESCAPE_ERRORS, _escape_bytes)


def python_codec(name: str) -> str:
    """The Python codec for a Java charset name (``UTF-8``, ``ISO-8859-1``, ``Cp1252``...)."""
    key = name.strip().lower().replace("-", "_")
    try:
        info = codecs.lookup(_JAVA_CHARSETS.get(key, name.strip()))
    except LookupError:
        info = None
    if info is None or not getattr(info, "_is_text_encoding", True):
        raise OptionError(f"option encoding={name!r} is not a known character encoding")
    return info.name


@register("goldengate-json")
class GoldenGateJsonDecoder(Decoder):
    """Decoder of GoldenGate JSON formatter messages (see the module docstring)."""

    option_names = frozenset(
        {"jsonDelimiter", "schemaDirectory", "encoding"}
        | {name for name, _, _ in _OP_OPTIONS}
        | set(_WRITER_BOOL_OPTIONS)
    )

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self.op_keys: dict[str, str] = {}
        self._op_help = ", ".join(f"{name}={options.str(name, default)!r}" for name, default, _ in _OP_OPTIONS)
        for name, default, op in _OP_OPTIONS:
            key = options.str(name, default)
            if key in self.op_keys:
                raise OptionError(f"option {name}={key!r} is also the key of {self.op_keys[key]}; op keys must differ")
            self.op_keys[key] = op
        for name in _WRITER_BOOL_OPTIONS:
            options.bool(name, False)  # only validated: a typo like prettyPrint=ture is a usage error
        self.delimiter = options.str("jsonDelimiter") or None
        self.encoding = options.str("encoding") or "UTF-8"
        self.codec = python_codec(self.encoding)
        schema_dir = self.schema_dir or options.str("schemaDirectory")
        if schema_dir and not os.path.isdir(schema_dir):
            raise OptionError(f"schema directory {schema_dir!r} does not exist or is not a directory")
        self.schema_path = Path(schema_dir) if schema_dir else None
        self._schemas: dict[str, dict[str, str] | str | None] = {}
        #: columns seen per table (for metadata change events)
        self._layouts: dict[str, list[str]] = {}
        # Between records: whitespace and delimiters, in any number. The delimiter is tried first, one
        # whitespace character at a time, so that whitespace inside it (CDATA[\n]) is not eaten apart;
        # its non-blank core alone is accepted too (a writer on another OS may change its line ends).
        self._core = self.delimiter.strip() or self.delimiter if self.delimiter else None
        alternatives = [self.delimiter, self._core] if self.delimiter else []
        alternatives = [re.escape(a) for a in dict.fromkeys(alternatives)] + [r"[ \t\r\n\f\v]"]
        self._separators = re.compile(f"(?:{'|'.join(alternatives)})*")

    # --- framing -------------------------------------------------------------

    def decode(self, data: bytes, file: str) -> Iterator[ChangeEvent | Rejected]:
        """Events and rejected records of one landing file (already gunzipped), in file order."""
        codec = self._codec_for(data)
        text = data.decode(codec, _ESCAPE_ERRORS)
        base = 0
        if text.startswith("\ufeff"):  # byte order mark
            base = len("\ufeff".encode(codec))
            text = text[1:]
        offsets = _ByteOffsets(text, codec, base, identity=len(text) + base == len(data) and data.isascii())
        has_escapes = _ESCAPED.search(text) is not None
        scanner = JsonScanner()  # exact numbers (NaN, Infinity too), repeated member names noticed
        pos, end_of_text = 0, len(text)
        while True:
            match = self._separators.match(text, pos)
            pos = match.end() if match else pos
            if pos >= end_of_text:
                return
            start = pos
            try:
                value, pos = scanner.raw_decode(text, start)
            except json.JSONDecodeError as exc:
                pos = self._resync(text, start)
                yield self._reject(self._json_error(exc, text, start), file, data, offsets, start, pos, text)
                continue
            except RecursionError:
                pos = self._resync(text, start)
                reason = f"record nests JSON deeper than {MAX_DEPTH} levels (line {_line(text, start)})"
                yield self._reject(reason, file, data, offsets, start, pos, text)
                continue
            except ValueError as exc:  # e.g. an integer longer than Python converts (sys.get_int_max_str_digits)
                pos = self._resync(text, start)
                reason = f"cannot read the record at line {_line(text, start)}: {exc}"
                yield self._reject(reason, file, data, offsets, start, pos, text)
                continue
            byte_start, byte_end = offsets.at(start), offsets.at(pos)
            source = Source(file, byte_start)
            raw = _RawSlice(data, byte_start, byte_end)
            escaped = _ESCAPED.search(text, start, pos) if has_escapes else None
            if byte_end - byte_start > MAX_RECORD_BYTES:
                size = byte_end - byte_start
                yield Rejected(f"record is {size} bytes, larger than the limit of {MAX_RECORD_BYTES}", source, raw())
            elif escaped is not None:
                yield Rejected(self._encoding_error(escaped.start(), text), source, raw())
            elif nests_deeper(text, start, pos, MAX_DEPTH):
                yield Rejected(f"record nests JSON deeper than {MAX_DEPTH} levels", source, raw())
            elif scanner.duplicate is not None:
                yield Rejected(duplicate_reason(scanner.duplicate), source, raw())
            else:
                event = self._event(value, source, raw)
                if isinstance(event, ChangeEvent):
                    announce = self._new_columns(event)
                    if announce is not None:
                        yield announce
                yield event

    def _codec_for(self, data: bytes) -> str:
        """UTF-16/32 without a stated byte order: the BOM decides, else big-endian (as Java reads)."""
        if self.codec in ("utf-16", "utf-32"):
            little = b"\xff\xfe\x00\x00" if self.codec == "utf-32" else b"\xff\xfe"
            return f"{self.codec}-le" if data.startswith(little) else f"{self.codec}-be"
        return self.codec

    def _resync(self, text: str, start: int) -> int:
        """Where scanning resumes after a bad record at ``start`` (always after ``start``)."""
        if self._core:
            found = text.find(self._core, start + 1)
            return found if found >= 0 else len(text)
        found = _NEXT_RECORD_LINE.search(text, start)
        return found.end() - 1 if found else len(text)

    def _reject(
        self, reason: str, file: str, data: bytes, offsets: _ByteOffsets, start: int, end: int, text: str
    ) -> Rejected:
        """A record that could not be parsed: text[start:end] (trailing blanks dropped) is skipped."""
        if end >= len(text):
            resume = "the end of the file"
        elif self.delimiter:
            resume = f"the next {self.delimiter!r} delimiter"
        else:
            resume = "the next line starting with '{'"
        end = len(text[start:end].rstrip()) + start
        byte_start, byte_end = offsets.at(start), offsets.at(end)
        reason = f"{reason}; skipped {byte_end - byte_start} bytes up to {resume}"
        return Rejected(reason, Source(file, byte_start), data[byte_start : min(byte_end, byte_start + MAX_RAW_BYTES)])

    def _json_error(self, exc: json.JSONDecodeError, text: str, start: int) -> str:
        if exc.pos < len(text) and _ESCAPED.match(text, exc.pos):
            return self._encoding_error(exc.pos, text)
        reason = f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        if not text.startswith("{", start):
            reason += f" (a record must be a JSON object starting with '{{', this one starts with {text[start]!r})"
        return reason + truncation_hint(exc, text)

    def _encoding_error(self, char_pos: int, text: str) -> str:
        byte = ord(text[char_pos]) - 0xDC00
        return (
            f"bytes that are not valid {self.encoding} at line {_line(text, char_pos)} (first bad byte 0x{byte:02x});"
            " set the encoding option to the writer's encoding"
        )

    # --- one record ------------------------------------------------------------

    def _event(self, record: Any, source: Source, raw: _RawSlice) -> ChangeEvent | Rejected:
        """Map one formatter message to a :class:`ChangeEvent` (or say why it cannot be)."""

        def reject(reason: str) -> Rejected:
            return Rejected(reason, source, raw())

        if not isinstance(record, dict):
            return reject(f"record is a JSON {_json_kind(record)}, not an object")
        table = record.get("table")
        if self.table_override:
            table = self.table_override
        elif not isinstance(table, str) or not table:
            return reject('record has no table name (member "table" missing or not a string)')

        op_key = record.get("op_type")
        op = self.op_keys.get(op_key) if isinstance(op_key, str) else None
        if op is None:
            return reject(f"unknown op_type {op_key!r}; the configured op keys are {self._op_help}")

        pos = record.get("pos")
        if pos is None or pos == "":
            return reject("no pos: GoldenGate records need pos for ordering")
        if isinstance(pos, bool) or not isinstance(pos, (str, int)):
            return reject(f"pos must be a string of digits, not {_json_kind(pos)} {pos!r}")
        seq = str(pos)
        if _DIGITS.fullmatch(seq):
            seq = seq.zfill(SEQ_WIDTH)

        op_ts = record.get("op_ts")
        event_ts = _parse_ts(op_ts)
        if event_ts is None:
            return reject(f"op_ts {op_ts!r} is not a timestamp like 'YYYY-MM-DD HH:MM:SS.ffffff'")

        keys = self.keys
        key_member = "primary_keys" if "primary_keys" in record else "priamry_keys"
        record_keys = record.get(key_member)
        if record_keys is not None:
            if not isinstance(record_keys, list) or not all(isinstance(k, str) for k in record_keys):
                return reject(f"{key_member} must be a list of column names, not {record_keys!r}")
            keys = self.keys or list(record_keys)  # the keys option declares or overrides (DESIGN 2)

        images: dict[str, dict[str, Any] | None] = {}
        for name in ("before", "after"):
            image = record.get(name)
            if image is not None and not isinstance(image, dict):
                return reject(f"{name} must be a JSON object of column values, not a JSON {_json_kind(image)}")
            images[name] = None if op == "TRUNCATE" else image

        meta: dict[str, Any] = {"pos": pos, "op_ts": op_ts}
        for name in ("current_ts", "tokens"):
            if record.get(name) is not None:
                meta[name] = record[name]
        if record_keys is not None:
            meta["primary_keys"] = record_keys
        extra = {k: v for k, v in record.items() if k not in _KNOWN_MEMBERS}
        if extra:
            meta["extra"] = extra
        column_types = self._column_types(table)
        if isinstance(column_types, str):
            return reject(column_types)
        if column_types:
            meta["column_types"] = column_types

        return ChangeEvent(
            table=table,
            op=op,
            seq=seq,
            event_ts=event_ts,
            source=source,
            keys=keys,
            before=images["before"],
            after=images["after"],
            meta=meta,
        )

    # --- metadata change events (§6.3.6) -------------------------------------------

    def _new_columns(self, event: ChangeEvent) -> ChangeEvent | None:
        """A ``SCHEMA`` event before the first record of a table that carries a column never seen
        for it before: the formatter starts writing new columns after a metadata change (§6.3.6).

        The first record of a table only sets the baseline (JSON carries no layout of its own,
        and images of updates and deletes may be partial), so only additions are announced.
        """
        names = [*(event.before or {}), *(event.after or {})]
        if not names:  # a truncate carries no columns: it says nothing about the layout
            return None
        known = self._layouts.get(event.table)
        if known is None:
            self._layouts[event.table] = list(dict.fromkeys(names))
            return None
        added = [n for n in dict.fromkeys(names) if n not in known]
        if not added:
            return None
        known.extend(added)
        types = event.meta.get("column_types") or {}
        return ChangeEvent(
            table=event.table,
            op="SCHEMA",
            seq=event.seq,
            event_ts=event.event_ts,
            source=event.source,
            keys=event.keys,
            ddl={
                "columns": [{"name": n, "type": types.get(n)} for n in known],
                "added": added,
                "keys": list(event.keys or []),
            },
            meta={"column_source": "record"},
        )

    # --- schema files ------------------------------------------------------------

    def _column_types(self, table: str) -> dict[str, str] | str | None:
        """Column types from ``<table>.schema.json`` (read once per table); a str is an error."""
        if self.schema_path is None:
            return None
        if table not in self._schemas:
            self._schemas[table] = self._read_schema(table)
        return self._schemas[table]

    def _read_schema(self, table: str) -> dict[str, str] | str | None:
        if any(sep in table for sep in ("/", "\\", "\x00")) or table.startswith(".."):
            return None  # not a file name: no schema file can belong to it
        assert self.schema_path is not None
        path = self.schema_path / f"{table}.schema.json"
        try:
            with open(path, "rb") as handle:
                content = handle.read(MAX_SCHEMA_BYTES + 1)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return f"cannot read JSON schema file {path}: {exc}"
        if len(content) > MAX_SCHEMA_BYTES:
            return f"JSON schema file {path} is larger than {MAX_SCHEMA_BYTES} bytes; fix or remove it"
        try:
            properties = json.loads(content.decode("utf-8-sig"))["definitions"]["row"]["properties"]
            if not isinstance(properties, dict):
                raise TypeError("definitions.row.properties is not an object")
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            return f"JSON schema file {path} has no readable definitions.row.properties ({exc}); fix or remove it"
        types: dict[str, str] = {}
        for column, spec in properties.items():
            declared = spec.get("type") if isinstance(spec, dict) else None
            names = declared if isinstance(declared, list) else [declared]
            kinds = {_SCHEMA_TYPES.get(n) for n in names if isinstance(n, str) and n != "null"}
            if None in kinds or not kinds:
                continue  # object, array or no type: nothing to hint
            types[column] = kinds.pop() if len(kinds) == 1 else "double" if kinds == {"long", "double"} else "string"
        return types


class _RawSlice:
    """A record's bytes, copied (capped) only when the record is rejected."""

    __slots__ = ("data", "end", "start")

    def __init__(self, data: bytes, start: int, end: int) -> None:
        self.data, self.start, self.end = data, start, end

    def __call__(self) -> bytes:
        return self.data[self.start : min(self.end, self.start + MAX_RAW_BYTES)]


class _ByteOffsets:
    """Maps increasing character positions of the decoded text to byte offsets in the input."""

    def __init__(self, text: str, codec: str, base: int, identity: bool) -> None:
        self._text, self._base, self._identity = text, base, identity
        self._encoder = codecs.getincrementalencoder(codec)()
        self._char, self._byte = 0, base

    def at(self, char_pos: int) -> int:
        if self._identity:
            return self._base + char_pos
        if char_pos < self._char:  # pragma: no cover - callers only move forward
            raise ValueError("byte offsets are computed forward only")
        chunk = self._text[self._char : char_pos]
        for index, piece in enumerate(_ESCAPED.split(chunk)):
            if index:
                self._byte += 1  # one escaped (undecodable) byte
            self._byte += len(self._encoder.encode(piece))
        self._char = char_pos
        return self._byte


def _parse_ts(value: Any) -> dt.datetime | None:
    """``YYYY-MM-DD HH:MM:SS[.f...]`` (or ISO 8601) as an aware UTC datetime; no zone means UTC."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    match = _TS.fullmatch(text)
    try:
        if match:
            year, month, day, hour, minute, second, fraction, zone = match.groups()
            micros = int((fraction or "0")[:6].ljust(6, "0"))
            tz = dt.UTC
            if zone and zone not in "Zz":
                digits = zone[1:].replace(":", "")
                delta = dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
                tz = dt.timezone(delta if zone[0] == "+" else -delta)
            parsed = dt.datetime(
                int(year), int(month), int(day), int(hour), int(minute), int(second or 0), micros, tzinfo=tz
            )
        else:
            parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.astimezone(dt.UTC)


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float, Decimal)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _line(text: str, char_pos: int) -> int:
    return text.count("\n", 0, char_pos) + 1
