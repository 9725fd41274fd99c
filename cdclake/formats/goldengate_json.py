"""GoldenGate for Big Data JSON formatter output (format id ``goldengate-json``, vendor doc §6.3).

Why it is written this way:

- Landing files hold the formatter's messages one per line, concatenated or
  pretty-printed, optionally separated by ``jsonDelimiter``. One scanner
  (``JSONDecoder.raw_decode`` in a loop, :mod:`._json_framing`) reads all of these
  framings, so the writer's ``prettyPrint`` setting never has to be known.
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

import datetime as dt
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from msgspec import UNSET, Raw

from cdclake.events.arrow import DECODED_FILE_SCHEMA
from cdclake.events.arrow_text import replaced
from cdclake.events.change import ChangeEvent, Rejected, meta_text
from cdclake.formats._gg_common import (
    ESCAPED,
    OP_OPTIONS,
    SEQ_WIDTH,
    ByteOffsets,
    OpKeys,
    decode_escaping,
    op_and_order_of,
    op_ts_time,
    pos_to_seq,
    python_codec,
    schema_event_before,
)
from cdclake.formats._json import json_kind, truncation_hint
from cdclake.formats._json_framing import JsonFraming, JsonLimits, JsonRecord, line_of, scan_records
from cdclake.formats.columnar import (
    EnvelopeColumns,
    Kept,
    RecordReader,
    SpanColumns,
    events_before,
    image_or_none,
    reference_converter,
)
from cdclake.options import OptionError, Options
from cdclake.registry import Decoder, register, register_columns
from cdclake.runtime.limits import MAX_JSON_DEPTH as MAX_DEPTH
from cdclake.runtime.limits import MAX_RAW_BYTES, MAX_RECORD_BYTES, MAX_SCHEMA_BYTES

#: Top-level members the formatter writes (everything else goes to ``meta["extra"]``).
_KNOWN_MEMBERS = frozenset(
    {"table", "op_type", "op_ts", "current_ts", "pos", "primary_keys", "priamry_keys", "tokens", "before", "after"}
)
#: Table 6-4 options that only shape the writer's output: accepted, checked, otherwise unused.
_WRITER_BOOL_OPTIONS = (
    "prettyPrint",
    "generateSchema",
    "versionSchemas",
    "iso8601Format",
    "includePrimaryKeys",
    "treatAllColumnsAsStrings",
)
#: JSON schema types -> the column types understood by normalize (``meta["column_types"]``).
_SCHEMA_TYPES = {"string": "string", "number": "double", "integer": "long", "boolean": "boolean"}

_NEXT_RECORD_LINE = re.compile(r"\n[ \t\r\f\v]*\{")


@register("goldengate-json")
class GoldenGateJsonDecoder(Decoder):
    """Decoder of GoldenGate JSON formatter messages (see the module docstring)."""

    option_names = frozenset(
        {"jsonDelimiter", "schemaDirectory", "encoding"}
        | {name for name, _, _ in OP_OPTIONS}
        | set(_WRITER_BOOL_OPTIONS)
    )
    record_state = ("_layouts",)
    independent_records = True

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self.op_keys = OpKeys(options)
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
        #: Per table, the columns seen so far, in order (a dict: every record asks whether its columns are in it).
        self._layouts: dict[str, dict[str, None]] = {}
        # Between records: whitespace and delimiters, in any number. The delimiter is tried first, one
        # whitespace character at a time, so that whitespace inside it (CDATA[\n]) is not eaten apart;
        # its non-blank core alone is accepted too (a writer on another OS may change its line ends).
        self._core = self.delimiter.strip() or self.delimiter if self.delimiter else None
        alternatives = [self.delimiter, self._core] if self.delimiter else []
        alternatives = [re.escape(a) for a in dict.fromkeys(alternatives)] + [r"[ \t\r\n\f\v]"]
        resume = f"the next {self.delimiter!r} delimiter" if self.delimiter else "the next line starting with '{'"
        self._framing = JsonFraming(
            resync=self._resync,
            resume=resume,
            json_error=self._json_error,
            encoding_error=self._encoding_error,
            separators=re.compile(f"(?:{'|'.join(alternatives)})*"),
        )

    # --- framing -------------------------------------------------------------

    def decode(self, data: bytes, file: str) -> Iterator[ChangeEvent | Rejected]:
        """Events and rejected records of one landing file (already gunzipped), in file order."""
        codec = self._codec_for(data)
        text, escapes = decode_escaping(data, codec)
        base = 0
        if text.startswith("\ufeff"):  # byte order mark
            base = len("\ufeff".encode(codec))
            text = text[1:]
        identity = len(text) + base == len(data) and data.isascii()
        offsets = ByteOffsets(text, codec, base, identity, escapes)
        limits = JsonLimits(MAX_RECORD_BYTES, MAX_DEPTH, MAX_RAW_BYTES)
        for record in scan_records(data, file, text, offsets, self._framing, limits):
            if isinstance(record, Rejected):
                yield record
                continue
            event = self._event(record)
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

    def _json_error(self, exc: json.JSONDecodeError, text: str, start: int) -> str:
        if exc.pos < len(text) and ESCAPED.match(text, exc.pos):
            return self._encoding_error(text, exc.pos)
        reason = f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        if not text.startswith("{", start):
            reason += f" (a record must be a JSON object starting with '{{', this one starts with {text[start]!r})"
        return reason + truncation_hint(exc, text)

    def _encoding_error(self, text: str, char_pos: int) -> str:
        byte = ord(text[char_pos]) - 0xDC00
        return (
            f"bytes that are not valid {self.encoding} at line {line_of(text, char_pos)} (first bad byte 0x{byte:02x});"
            " set the encoding option to the writer's encoding"
        )

    # --- one record ------------------------------------------------------------

    def _event(self, json_record: JsonRecord) -> ChangeEvent | Rejected:
        """Map one formatter message to a :class:`ChangeEvent` (or say why it cannot be)."""
        record, reject = json_record.value, json_record.reject
        if not isinstance(record, dict):
            return reject(f"record is a JSON {json_kind(record)}, not an object")
        key_member = "primary_keys" if "primary_keys" in record else "priamry_keys"
        get = record.get
        try:
            env = envelope(self, get("table"), get("op_type"), get("pos"), get("op_ts"), key_member, get(key_member))
            before, after = images(env, get("before"), get("after"))
        except RecordError as exc:
            return reject(str(exc))
        meta = event_meta(record, env.record_keys)
        column_types = self._column_types(env.table)
        if isinstance(column_types, str):
            return reject(column_types)
        if column_types:
            meta["column_types"] = column_types
        return ChangeEvent(
            table=env.table,
            op=env.op,
            seq=env.seq,
            event_ts=env.event_ts,
            source=json_record.source,
            keys=env.keys,
            before=before,
            after=after,
            meta=meta,
        )

    # --- metadata change events (§6.3.6) -------------------------------------------

    def _new_columns(self, event: ChangeEvent) -> ChangeEvent | None:
        """A ``SCHEMA`` event before the first record of a table that carries a column never seen
        for it before (:func:`new_columns`)."""
        added = new_columns(self._layouts, event.table, event.before, event.after)
        if added is None:
            return None
        ddl = schema_ddl(self._layouts[event.table], added, event.keys, event.meta.get("column_types") or {})
        return schema_event_before(event, event.keys, ddl, dict(SCHEMA_EVENT_META))

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


# --- the envelope: the format's rules, read by the reference and the columnar path alike ----------------------


class RecordError(ValueError):
    """A record the format's rules refuse; its text is the reject reason."""


@dataclass(slots=True)
class Envelope:
    """What a formatter message says apart from its images and ``meta`` (:func:`envelope`)."""

    table: str
    op: str
    #: ``pos`` as a seq and ``op_ts`` read (None: left to the caller, ``envelope(order=False)``)
    seq: str | None
    event_ts: dt.datetime | None
    #: ``primary_keys`` as the record gives them (None: not given), kept in ``meta``
    record_keys: list[str] | None
    #: the event's keys: the keys option declares or overrides the record's (DESIGN 2)
    keys: list[str] | None
    #: whether the event keeps the record's images (:func:`images`: a truncate keeps none)
    imaged: bool


def envelope(
    decoder: GoldenGateJsonDecoder,
    table: Any,
    op_type: Any,
    pos: Any,
    op_ts: Any,
    key_member: str,
    record_keys: Any,
    order: bool = True,
) -> Envelope:
    """The format's envelope rules, for both the reference and the columnar path, in the reference's order:
    table (or the table option), op (``op_type`` by the op keys), ``pos``, ``op_ts`` (``_gg_common``'s
    ``op_and_order_of``, shared with the Avro formatter's) and ``primary_keys`` (``key_member``: the member that
    holds them, ``priamry_keys`` in old writers). ``order`` False: ``op_ts`` is not read, and seq and event_ts
    are left to the caller (None), which must read them by ``pos_to_seq`` and ``op_ts_time`` as
    ``op_and_order_of`` does. RecordError: a record these rules refuse."""
    if decoder.table_override:
        table = decoder.table_override
    elif not isinstance(table, str) or not table:
        raise RecordError('record has no table name (member "table" missing or not a string)')
    found = op_and_order_of(op_type, pos, op_ts, decoder.op_keys, _kind_and_value, order)
    if isinstance(found, str):
        raise RecordError(found)
    op, seq, event_ts = found
    keys = decoder.keys
    if record_keys is not None:
        if not isinstance(record_keys, list) or not all(isinstance(k, str) for k in record_keys):
            raise RecordError(f"{key_member} must be a list of column names, not {record_keys!r}")
        keys = decoder.keys or list(record_keys)
    return Envelope(table, op, seq, event_ts, record_keys, keys, op != "TRUNCATE")


def images(env: Envelope, before: Any, after: Any) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The event's images: each a JSON object of column values (or null, or absent); a truncate keeps none
    (``env.imaged``). RecordError: an image that is not an object."""
    for name, image in (("before", before), ("after", after)):
        if image is not None and not isinstance(image, dict):
            raise RecordError(f"{name} must be a JSON object of column values, not a JSON {json_kind(image)}")
    return (before, after) if env.imaged else (None, None)


def event_meta(record: Mapping[str, Any], record_keys: list[str] | None) -> dict[str, Any]:
    """``meta`` of a record (its members as JSON reads them): ``pos``, ``op_ts``, ``current_ts`` and ``tokens``
    when not null, ``primary_keys`` when given, and the members the formatter does not write (``extra``)."""
    meta: dict[str, Any] = {"pos": record["pos"], "op_ts": record["op_ts"]}
    for name in ("current_ts", "tokens"):
        if record.get(name) is not None:
            meta[name] = record[name]
    if record_keys is not None:
        meta["primary_keys"] = record_keys
    extra = {k: v for k, v in record.items() if k not in _KNOWN_MEMBERS}
    if extra:
        meta["extra"] = extra
    return meta


#: ``meta`` of the ``SCHEMA`` event announcing columns first seen in a record.
SCHEMA_EVENT_META: Mapping[str, str] = MappingProxyType({"column_source": "record"})


def new_columns(
    layouts: dict[str, dict[str, None]], table: str, before: Iterable[str] | None, after: Iterable[str] | None
) -> list[str] | None:
    """The metadata-change rule (§6.3.6), for both paths: the columns a record (its images' column names,
    ``before`` / ``after``: None or empty for no image) adds to its table's (``layouts``), which a ``SCHEMA``
    event announces just before it; None: none. The formatter starts writing new columns after a metadata
    change. The first record of a table only sets the baseline (JSON carries no layout of its own, and images
    of updates and deletes may be partial), so only additions are announced; a record without columns (a
    truncate) says nothing. A table's columns that grow are a new dict (``layouts[table]``): a caller's copy
    of ``layouts`` keeps the old one."""
    known = layouts.get(table)
    if known is not None and all(map(known.__contains__, chain(before or (), after or ()))):
        return None  # the common case
    names = dict.fromkeys(chain(before or (), after or ()))
    if not names:
        return None
    if known is None:
        layouts[table] = names
        return None
    added = [n for n in names if n not in known]
    layouts[table] = {**known, **dict.fromkeys(added)}
    return added


def schema_ddl(
    columns: Iterable[str], added: list[str], keys: list[str] | None, types: Mapping[str, str]
) -> dict[str, Any]:
    """``ddl`` of the ``SCHEMA`` event announcing ``added`` (:func:`new_columns`): the table's columns after
    them, typed where a schema file says (``types``), and the record's keys."""
    return {"columns": [{"name": n, "type": types.get(n)} for n in columns], "added": added, "keys": list(keys or [])}


def _kind_and_value(value: Any) -> str:
    """``object {'a': 1}``: a value's JSON type and repr, for reasons."""
    return f"{json_kind(value)} {value!r}"


# --- the columnar path (the decode task's: formats.columnar.EnvelopeColumns over this module's rules) --------

#: The members the columnar path reads, in the order GoldenGate writes them, and how (any other: the reference's).
_COLUMNAR_MEMBERS: dict[str, object] = {
    "table": str,
    "op_type": str,
    "op_ts": str,
    "current_ts": str | None,
    "pos": str,
    "primary_keys": list[str],
    "tokens": dict[str, str] | None,
    "before": dict[str, Raw] | None,
    "after": dict[str, Raw] | None,
}
#: ``op_ts`` as GoldenGate writes it by default, read by one Arrow cast (:func:`_event_times`).
_PLAIN_TS = r"^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}$"
_TS_TYPE = pa.timestamp("us", tz="UTC")
#: Text that JSON writes otherwise (a quote, a backslash, a control character): such a ``meta`` is written by
#: ``events.meta_text`` one record at a time.
_ESCAPED_TEXT = r'["\\\x00-\x1f]'


@register_columns("goldengate-json")
def goldengate_json_columns(decoder: GoldenGateJsonDecoder) -> GoldenGateJsonColumns | None:
    """The path reads the records GoldenGate writes by default: no delimiter, UTF-8, no schema file."""
    if decoder.delimiter or decoder.codec != "utf-8" or decoder.schema_path is not None:
        return None
    return GoldenGateJsonColumns(decoder)


class GoldenGateJsonColumns(EnvelopeColumns):
    """The formatter's default records (one compact record per line, UTF-8, the members GoldenGate writes in its
    order, scalar column values) a span at a time (docs/decisions 0043): each distinct envelope once from
    :func:`envelope`; seq, event_ts and ``meta`` a column at a time, each agreeing value for value with the
    reference's rule (``pos_to_seq``, ``op_ts_time``, :func:`event_meta`) and leaving it every value but the plain
    ones; a column value kept as its text unless the builder spells it otherwise (then read and written again); the
    ``SCHEMA`` events of :func:`new_columns` just before their records. Where it stops (the reference reads the span):
    a record :func:`envelope` refuses, a truncate carrying an image, a nested value, text that is not valid Unicode, a
    member the formatter does not write, blanks or escapes msgspec would write otherwise."""

    reader = RecordReader("GoldenGate", _COLUMNAR_MEMBERS, images=dict.fromkeys(("before", "after"), Raw))

    def columns(self, records: list, schemas: list[bytes] | None, starts: np.ndarray) -> SpanColumns | None:
        found = _envelopes(self.decoder, records)  # type: ignore[arg-type]
        if found is None:
            return None  # the reference rejects a record
        envelopes, codes = found
        kept = _kept_images(records, envelopes, codes)
        if kept is None:
            return None
        try:
            scalars = _span_scalars(records, envelopes, codes)
        except (pa.ArrowException, UnicodeEncodeError):  # text that is not valid Unicode: the reference's business
            return None
        return None if scalars is None else SpanColumns(scalars, *kept, None, (envelopes, codes), starts, len(records))

    def converter(self, image: str, plans: list[Any] | None) -> Callable[[int, str, str, bool], Any]:
        return _VALUE_TEXT

    def finish(self, batch: pa.RecordBatch, rows: Any, kept: dict[str, list], file: str) -> pa.RecordBatch:
        decoder: GoldenGateJsonDecoder = self.decoder  # type: ignore[assignment]
        envelopes, codes = rows
        layouts, announced = _span_layouts(decoder._layouts, envelopes, codes, kept["before"], kept["after"])
        if announced:
            batch = _with_schema_events(batch, announced, [envelopes[codes[i]].keys for i, _, _ in announced])
        decoder._layouts = layouts
        return batch


def _scalar(_owner: int, _column: str, value: Any) -> Any:
    """A column value as the reference keeps it; a nested one is the reference's (ValueError)."""
    if isinstance(value, (dict, list)):
        raise ValueError("a nested value")
    return value


_VALUE_TEXT = reference_converter(_scalar)


def _envelopes(decoder: GoldenGateJsonDecoder, records: list) -> tuple[list[Envelope], list[int]] | None:
    """The records' envelopes (:func:`envelope`) without seq and event_ts (``order=False``), each distinct one
    once, and each record's code into them: read so, an envelope depends on the record's table, op_type and
    primary_keys, and on its pos only by the rule that a pos be given, which this must agree with: a pos that is a
    non-empty string (all, as a rule) is one ``envelope`` accepts, and a record with any other is ``envelope``'s to
    refuse, one at a time. (An envelope per record took about a fifth of a span's decode.) None: a record
    ``envelope`` refuses (the reference rejects it)."""
    index: dict[tuple[Any, Any, tuple[str, ...] | None], int] = {}
    envelopes: list[Envelope] = []
    codes = []
    try:
        for r in records:
            keys = None if (given := r.primary_keys) is UNSET else given
            distinct = (r.table, r.op_type, None if keys is None else tuple(keys))
            code = index.get(distinct)
            if code is None:
                code = index[distinct] = len(envelopes)
                envelopes.append(envelope(decoder, r.table, r.op_type, r.pos, r.op_ts, "primary_keys", keys, False))
            codes.append(code)
        if not all(r.pos for r in records):  # an empty or missing pos (``UNSET``)
            for r in (r for r in records if not r.pos):
                keys = None if (given := r.primary_keys) is UNSET else given
                envelope(decoder, r.table, r.op_type, r.pos, r.op_ts, "primary_keys", keys, False)
    except RecordError:
        return None
    return envelopes, codes


def _kept_images(records: list, envelopes: list[Envelope], codes: list[int]) -> tuple[list, list] | None:
    """The images the events keep: none for a record whose envelope says so (``imaged``: a truncate), else the
    record's (a raw ``null`` image is the splitter's to read: no image). Their values' types are the reader's to
    check (dicts of ``Raw``, or objects split in C). None: a truncate that carries an image, which the reference
    checks (:func:`images`: an object; no member twice) before it drops it, and this path checks only the images
    it keeps."""
    befores = [None if r.before is UNSET else r.before for r in records]
    afters = [None if r.after is UNSET else r.after for r in records]
    if not all(e.imaged for e in envelopes):
        for index, code in enumerate(codes):
            if not envelopes[code].imaged:
                if image_or_none(befores[index]) is not None or image_or_none(afters[index]) is not None:
                    return None
                befores[index] = afters[index] = None
    return befores, afters


def _span_scalars(records: list, envelopes: list[Envelope], codes: list[int]) -> dict[str, Any] | None:
    """The span's scalar columns and ``meta``, each built over all records at once: table, op and keys from the
    envelopes (``codes``: each record's), seq (:func:`_seqs`), event_ts (:func:`_event_times`; None: a value it
    rejects) and meta (:func:`_meta_texts`)."""
    code_array = pa.array(codes, pa.int32())
    stamps, op_ts_texts = _event_times([r.op_ts for r in records])
    if stamps is None:
        return None
    positions = [r.pos for r in records]
    pos_texts = pa.array(positions, pa.string())
    return {
        "table": pa.array([e.table for e in envelopes], pa.string()).take(code_array),
        "op": pa.array([e.op for e in envelopes], pa.string()).take(code_array),
        "seq": _seqs(positions, pos_texts),
        "event_ts": stamps,
        "keys": pa.array([e.keys for e in envelopes], pa.list_(pa.string())).take(code_array),
        "meta": _meta_texts(records, envelopes, code_array, pos_texts, op_ts_texts),
    }


def _span_layouts(
    known_layouts: dict[str, dict[str, None]], envelopes: list[Envelope], codes: list[int], before: Kept, after: Kept
) -> tuple[dict[str, dict[str, None]], list[tuple[int, list[str], list[str]]]]:
    """The metadata-change rule (:func:`new_columns`) over the span's records (``before`` / ``after``: each one's
    image column names, None: no image). Returns the decoder's layouts after the span (copies: kept only if the
    span is read here) and the announcements ``(record index, the table's columns, the added ones)``. Split images
    share one name list per layout, and a (record envelope, so table; before layout; after layout) once within the
    table's columns stays within them (``new_columns`` only adds): the rule runs once per such combination."""
    layouts = dict(known_layouts)
    announced = []
    within: set[tuple[int, int, int]] = set()
    before_layouts = map(id, before) if before.layout is None else before.layout  # a name list's id: its layout
    after_layouts = map(id, after) if after.layout is None else after.layout
    for index, combination in enumerate(zip(codes, before_layouts, after_layouts, strict=True)):
        if combination in within:
            continue
        table = envelopes[combination[0]].table
        added = new_columns(layouts, table, before[index], after[index])
        if added is not None:
            announced.append((index, list(layouts[table]), added))
        within.add(combination)
    return layouts, announced


def _with_schema_events(
    batch: pa.RecordBatch, announced: list[tuple[int, list[str], list[str]]], keys: list[list[str] | None]
) -> pa.RecordBatch:
    """``batch`` with the reference's ``SCHEMA`` event (:meth:`GoldenGateJsonDecoder._new_columns`) just before each
    record that announces columns: ``(record index, the table's columns, the added ones)``, and the record's
    ``keys`` (one each). As ``schema_event_before`` makes it, it carries the record's table, seq, event_ts, keys and
    source; its ``ddl`` is :func:`schema_ddl`'s (no column types: the path reads no schema file)."""
    at = np.array([index for index, _, _ in announced], np.int64)
    rows = batch.take(pa.array(at))
    ddl = [meta_text(schema_ddl(known, added, k, {})) for (_, known, added), k in zip(announced, keys, strict=True)]
    replaced_columns = {
        "op": pa.array(["SCHEMA"] * len(at), pa.string()),
        "ddl": pa.array(ddl, pa.string()),
        "meta": pa.array([meta_text(dict(SCHEMA_EVENT_META))] * len(at), pa.string()),
    }
    for name in ("before", "after"):
        replaced_columns[name] = pa.nulls(len(at), DECODED_FILE_SCHEMA.field(name).type)
    for name, column in replaced_columns.items():
        index = DECODED_FILE_SCHEMA.get_field_index(name)
        rows = rows.set_column(index, DECODED_FILE_SCHEMA.field(index), column)
    return events_before(batch, at, rows)


def _meta_texts(
    records: list, envelopes: list[Envelope], codes: pa.Array, positions: pa.Array, op_ts: pa.Array
) -> pa.Array:
    """Every record's ``meta`` as the builder writes the reference's (:func:`event_meta`, written by
    ``events.meta_text``), which this must agree with: joined a column at a time (one ``orjson`` call per record was
    a tenth of a span's decode), but for a record with ``tokens`` or whose texts need an escape, which
    :func:`_meta_text` writes. ``codes``: each record's envelope (:func:`_envelopes`)."""
    current_ts = pa.array([None if r.current_ts is UNSET else r.current_ts for r in records], pa.string())
    odd = np.zeros(len(records), bool)
    for texts in (positions, op_ts, current_ts):
        odd |= _flags(pc.match_substring_regex(texts, _ESCAPED_TEXT))
    if any(r.tokens is not UNSET and r.tokens is not None for r in records):
        odd |= np.fromiter((r.tokens is not UNSET and r.tokens is not None for r in records), bool, len(records))
    keyed = ["" if e.record_keys is None else f',"primary_keys":{meta_text(e.record_keys)}' for e in envelopes]
    current_part = pc.binary_join_element_wise(',"current_ts":"', current_ts, '"', "", null_handling="emit_null")
    joined = pc.binary_join_element_wise(
        '{"pos":"',
        positions,
        '","op_ts":"',
        op_ts,
        '"',
        pc.coalesce(current_part, ""),
        pa.array(keyed, pa.string()).take(codes),
        "}",
        "",
        null_handling="emit_null",
    )
    rows = np.flatnonzero(odd)
    if not len(rows):
        return joined
    at = codes.to_numpy()
    texts = [_meta_text(records[i], envelopes[at[i]].record_keys) for i in rows]  # only these go through Python
    return replaced(joined, rows, pa.array(texts, pa.string()))


def _meta_text(record: Any, record_keys: list[str] | None) -> str:
    """One record's ``meta`` as the builder writes it: the reference's (:func:`event_meta`) of the record's members,
    as the reference reads them (the reader knows no other member: no ``extra``)."""
    members = {name: value for name in record.__struct_fields__ if (value := getattr(record, name)) is not UNSET}
    return meta_text(event_meta(members, record_keys))


def _event_times(op_ts: list) -> tuple[pa.Array | None, pa.Array]:
    """Every record's ``event_ts`` (and its ``op_ts`` texts as an Arrow array), which must agree value for value
    with the reference's rule (``_gg_common.op_ts_time``): the values spelt ``YYYY-MM-DD HH:MM:SS.ffffff`` (year 1
    on) in one cast, any other (all, where the cast refuses one: a day that does not exist) by ``op_ts_time``
    itself. None: a value it rejects (no op_ts among them)."""
    try:
        texts = pa.array(op_ts, pa.string())
    except pa.ArrowTypeError:  # a record without op_ts (``UNSET``): ``op_ts_time`` refuses it, below
        op_ts = [None if text is UNSET else text for text in op_ts]
        texts = pa.array(op_ts, pa.string())
    plain = pc.match_substring_regex(texts, _PLAIN_TS)
    year_0 = pc.starts_with(texts, "0000-")
    if pc.all(plain, skip_nulls=False).as_py() and not pc.any(year_0).as_py():
        odd = np.arange(0)  # the common case
    else:
        plain = pc.and_not(plain, year_0)
        odd = np.flatnonzero(~_flags(plain))
    try:
        stamps = pc.cast(pc.if_else(plain, texts, None) if len(odd) else texts, pa.timestamp("us")).cast(_TS_TYPE)
    except pa.ArrowInvalid:
        stamps, odd = None, np.arange(len(op_ts))  # a day or time that does not exist: the reference says which
    if not len(odd):
        return stamps, texts
    read = [op_ts_time(op_ts[i]) for i in odd]
    if None in read:
        return None, texts
    if stamps is None:
        return pa.array(read, _TS_TYPE), texts
    mask = np.zeros(len(op_ts), bool)
    mask[odd] = True
    return pc.replace_with_mask(stamps, pa.array(mask), pa.array(read, _TS_TYPE)), texts


def _flags(flags: pa.Array) -> np.ndarray:
    """A boolean column as numpy (null: False)."""
    return pc.fill_null(flags, False).to_numpy(zero_copy_only=False)


def _seqs(positions: list[str], texts: pa.Array) -> pa.Array:
    """Every record's seq from its ``pos`` (``texts``: the same as an Arrow array), which must agree value for value
    with the reference's rule (``_gg_common.pos_to_seq``): digits padded in one kernel, any other position by
    ``pos_to_seq`` itself."""
    digits = pc.match_substring_regex(texts, "^[0-9]+$")
    padded = pc.utf8_lpad(texts, SEQ_WIDTH, "0")
    if pc.all(digits).as_py():
        return padded
    odd = np.flatnonzero(~_flags(digits))
    return replaced(padded, odd, pa.array([pos_to_seq(positions[i]) for i in odd], pa.string()))
