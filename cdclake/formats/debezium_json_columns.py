"""Debezium JSON read a span of records at a time into Arrow columns: the decode task's fast path.

Why: the reference decoder (:mod:`.debezium_json`) parses each record with Python's JSON reader,
builds a :class:`ChangeEvent`, and the decode task's builder renders every image value back to JSON
text: about 120 us a record, where the naive Spark job reads the same JSON in the JVM. Most landing
files are Kafka Connect's ``JsonConverter`` output with schemas: one compact ``{"schema", "payload"}``
record per line, UTF-8, a handful of distinct schema blocks per file. For a span of such records
msgspec reads every record in one C call, keeping the schema block and each image value as JSON text
(``Raw``); each distinct schema block is read once; the values are judged a column at a time.

What makes it exact (the same record batch as the reference and the builder, held so by
``tests/formats/test_debezium_json_columns.py``):

- msgspec writes the records back byte for byte: no blanks, no member it does not know, no member
  twice (a repeated member would be dropped by the read and missing from the write), numbers spelt
  as the reference reads them.
- A value is kept as its text only where the reference's conversion keeps the parsed value and the
  builder writes it back as that text: an integer of an integer field, a number of a float field, a
  boolean of a boolean field, a string without a backslash of a plain string field, any scalar of a
  column the schema does not name (GoldenGate JSON's rules, :func:`._json_columns.respelt`), and
  ``null``. Every other value (Connect decimals, dates, times, timestamps, escapes, the unavailable-
  value placeholder) is read by the reference's JSON reader and converted by the reference's
  ``convert_row``, one value at a time.
- The scalar columns and ``meta`` come from the reference's own helpers (``_table_name``,
  ``_position``, ``_event_ts``, ``transaction_ids``, ``event_meta``), record by record, and the
  ``SCHEMA`` announcements from the decoder's ``_announce``.
- Anything else (a record the reference rejects or skips, a tombstone, a key record, a Lindorm or
  HBase record, a truncate, a bare payload, a value its field refuses): the span is left to the
  reference decoder (``None``), which reads on from there (``DebeziumJsonDecoder.decode_columns``).
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from msgspec import UNSET, Raw, UnsetType

from cdclake.event_arrow import DECODED_FILE_SCHEMA, DecodedBuilder
from cdclake.events import ChangeEvent, Source, meta_text, value_text
from cdclake.formats import _kafka_connect as kc
from cdclake.formats._json import _unique_object
from cdclake.formats._json_columns import raw_texts, record_starts, respelt
from cdclake.formats.debezium_json import (
    OPS,
    _event_ts,
    _listed_columns,
    _position,
    _table_name,
    event_meta,
    transaction_ids,
)
from cdclake.limits import MAX_JSON_DEPTH, MAX_RAW_BYTES

if TYPE_CHECKING:
    from cdclake.formats.debezium_json import DebeziumJsonDecoder

#: The payload members this path reads, in the order Debezium writes them (any other: the reference reads).
_PAYLOAD: dict[str, object] = {
    "before": dict[str, Raw] | None,
    "after": dict[str, Raw] | None,
    "source": dict[str, Any] | None,
    "transaction": Any,
    "op": Any,
    "ts_ms": Any,
    "ts_us": Any,
    "ts_ns": Any,
}
_ENVELOPE = msgspec.json.Decoder(dict[str, Raw])
_READERS: dict[tuple[str, ...], msgspec.json.Decoder] = {}
#: Numbers as the reference's reader reads them (``Decimal``); written back as numbers for the byte check.
_WRITE = msgspec.json.Encoder(decimal_format="number")
#: The reference scanner's reading of a schema block: exact numbers, a repeated member name refused.
_SCHEMA_READER = json.JSONDecoder(parse_float=Decimal, parse_constant=Decimal, object_pairs_hook=_unique_object)
_VALUE_READER = json.JSONDecoder(parse_float=Decimal, parse_constant=Decimal)
#: Schema plans kept per decoder (distinct schema blocks of a batch: a few per table).
_PLANS = 256

# how a column's values are judged (see the module docstring)
_UNNAMED, _INT, _FLOAT, _BOOL, _STR, _CONVERT = range(6)
_KIND_OF_KEPT = {(int,): _INT, (int, Decimal): _FLOAT, (bool,): _BOOL, (str,): _STR}
_INTEGER = r"^-?(?:0|[1-9][0-9]*)$"


def _reader(names: tuple[str, ...]) -> msgspec.json.Decoder | None:
    """A reader of envelopes whose payload has these members in this order, every other member of
    :data:`_PAYLOAD` placed where Debezium writes it; None: a member this path does not read."""
    reader = _READERS.get(names)
    if reader is None:
        if not set(names) <= _PAYLOAD.keys() or len(_READERS) >= 64:
            return None
        order = list(names)
        canonical = list(_PAYLOAD)
        for index, name in enumerate(canonical):
            if name not in order:
                later = [order.index(n) for n in canonical[index + 1 :] if n in order]
                order.insert(min(later) if later else len(order), name)
        payload = msgspec.defstruct(
            "DebeziumPayload", [(n, _PAYLOAD[n] | UnsetType, UNSET) for n in order], forbid_unknown_fields=True
        )
        envelope = msgspec.defstruct(
            "DebeziumEnvelope", [("schema", Raw), ("payload", payload)], forbid_unknown_fields=True
        )
        reader = _READERS[names] = msgspec.json.Decoder(envelope, float_hook=Decimal)
    return reader


class _Plan:
    """What one schema block says, worked out once: its name, the image structs' fields, how each
    column's values are judged, the ``column_types`` of each combination of images, the full column list."""

    __slots__ = ("columns", "happy", "kinds", "layout", "names", "schema_name", "structs", "types")

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema_name = schema.get("name")
        envelope_fields = kc.struct_fields(schema) or {}
        self.structs = {image: envelope_fields.get(image) for image in ("before", "after")}
        self.kinds = {image: _kinds(struct) for image, struct in self.structs.items()}
        #: per image, per column of a Connect decimal or an integer date, time or timestamp: the reference's
        #: conversion of its common case (``_kafka_connect._happy_path``)
        self.happy = {
            image: {n: f for n, spec in (kc.struct_fields(struct) or {}).items() if (f := kc._happy_path(spec))}
            for image, struct in self.structs.items()
        }
        before_types, after_types = (kc.column_types(self.structs[i]) for i in ("before", "after"))
        self.types = {
            (False, False): {},
            (True, False): before_types,
            (False, True): after_types,
            (True, True): {**before_types, **after_types},
        }
        listed = kc.memoized("listed", _listed_columns, self.structs["after"]) or kc.memoized(
            "listed", _listed_columns, self.structs["before"]
        )
        self.columns, self.names = (list(listed[0]), listed[1]) if listed else (None, None)
        self.layout = dict(self.columns) if self.columns is not None else None


def _kinds(struct: Any) -> dict[str, int]:
    """Per field of an image struct, how its values are judged (a column it does not name: ``_UNNAMED``)."""
    fields = kc.struct_fields(struct) or {}
    return {name: _KIND_OF_KEPT.get(kc._kept_types(spec), _CONVERT) for name, spec in fields.items()}


def _plan(decoder: DebeziumJsonDecoder, raw: bytes) -> _Plan | None:
    """The plan of a schema block's text (None: not a non-empty object the reference reads alike)."""
    plans = decoder._column_plans
    plan = plans.get(raw)
    if plan is None:
        try:
            schema = _SCHEMA_READER.decode(raw.decode("utf-8"))
        except (ValueError, RecursionError):
            return None
        if not isinstance(schema, dict) or not schema:
            return None
        if len(plans) >= _PLANS:
            plans.clear()
        plan = plans[raw] = _Plan(schema)
    return plan


def decode_span(decoder: DebeziumJsonDecoder, span: bytes, file: str, offset: int) -> pa.RecordBatch | None:
    """The events of ``span`` as one record batch of ``DECODED_FILE_SCHEMA`` (``offset``: the span's first
    byte's), exactly as the reference decoder and the builder give them; None when a record is outside
    the shape this path reads (see the module docstring)."""
    if not span or span.startswith(b"\xef\xbb\xbf"):
        return None
    text = span if span.endswith(b"\n") else span + b"\n"
    try:
        envelope = _ENVELOPE.decode(text[: text.index(b"\n")])
        if tuple(envelope) != ("schema", "payload"):
            return None
        reader = _reader(tuple(_ENVELOPE.decode(envelope["payload"])))
        if reader is None:
            return None
        records = reader.decode_lines(text)
        if not records or _WRITE.encode_lines(records) != text:
            return None
    except (msgspec.DecodeError, msgspec.ValidationError, msgspec.EncodeError, UnicodeEncodeError):
        return None
    starts = record_starts(text, len(records))
    if starts is None:
        return None
    count = text.count  # a record's brackets bound its depth (one C search each)
    if (
        max(
            count(b"{", a, b) + count(b"[", a, b)
            for a, b in zip(starts.tolist(), [*starts[1:].tolist(), len(text)], strict=True)
        )
        > MAX_JSON_DEPTH
    ):
        return None  # it may nest deeper than the reference reads: the reference says
    return _batch(decoder, records, starts + offset, file)


def _batch(decoder: DebeziumJsonDecoder, records: list, starts: np.ndarray, file: str) -> pa.RecordBatch | None:
    """The span's rows: scalars record by record, image values a column at a time (None: outside the shape)."""
    n = len(records)
    plans, tables, ops, seqs, stamps, tx_ids, payloads = [], [], [], [], [], [], []
    befores: list[dict[str, Raw] | None] = []
    afters: list[dict[str, Raw] | None] = []
    override = decoder.table_override
    for record in records:
        plan = _plan(decoder, bytes(record.schema))
        payload = record.payload
        op_code = payload.op
        op = OPS.get(op_code) if type(op_code) is str else None
        if plan is None or op is None or op == "TRUNCATE":
            return None
        src = payload.source
        src = {} if src is UNSET or src is None else src
        if "namespace" in src:  # Lindorm: its HBase and deleted-column rules are the reference's
            return None
        table = override or _table_name(src)
        position = _position(src)
        before = None if payload.before is UNSET else payload.before
        after = None if payload.after is UNSET else payload.after
        if not table or position is None or (before is None if op == "DELETE" else after is None):
            return None
        # the members the reference's helpers read of the payload (no other is there: the reader has none)
        present = {f: v for f in ("transaction", "ts_ms", "ts_us", "ts_ns") if (v := getattr(payload, f)) is not UNSET}
        plans.append(plan)
        tables.append(table)
        ops.append(op)
        seqs.append(position)
        stamps.append(_event_ts(src, present))
        tx_ids.append(transaction_ids(present, src))
        payloads.append((op_code, src, present))
        befores.append(before)
        afters.append(after)
    unavailable: list[list[str]] = [[] for _ in range(n)]
    kept: dict[str, list] = {}
    try:
        arrays = {}
        for name, images in (("before", befores), ("after", afters)):
            image = _image_array(decoder, name, images, plans, unavailable, DECODED_FILE_SCHEMA.field(name).type)
            if image is None:
                return None
            arrays[name], kept[name] = image
        metas = []
        for i, (op_code, src, present) in enumerate(payloads):
            plan = plans[i]
            column_types = plan.types[(befores[i] is not None, afters[i] is not None)]
            meta = event_meta({"op": op_code}, src, seqs[i][1], present, plan.schema_name, unavailable[i], column_types)
            metas.append(meta_text(meta))
        keys = decoder.keys
        arrays.update(
            table=pa.array(tables, pa.string()),
            op=pa.array(ops, pa.string()),
            seq=pa.array([s for s, _ in seqs], pa.string()),
            event_ts=pa.array(stamps, DECODED_FILE_SCHEMA.field("event_ts").type),
            tx_id=pa.array([t for t, _ in tx_ids], pa.string()),
            tx_pos=pa.array([p for _, p in tx_ids], DECODED_FILE_SCHEMA.field("tx_pos").type),
            keys=pa.array([keys] * n, DECODED_FILE_SCHEMA.field("keys").type),
            meta=pa.array(metas, pa.string()),
            source_file=pa.array([file] * n, pa.string()),
            source_offset=pa.array(starts, pa.int64()),
        )
    except (pa.ArrowException, UnicodeEncodeError, OverflowError):  # text that is not valid Unicode, ...
        return None
    nulls = pa.nulls(n)
    columns = [arrays[f.name] if f.name in arrays else nulls.cast(f.type) for f in DECODED_FILE_SCHEMA]
    batch = pa.RecordBatch.from_arrays(columns, schema=DECODED_FILE_SCHEMA)
    return _announced(decoder, batch, plans, kept, file)


def _announced(
    decoder: DebeziumJsonDecoder, batch: pa.RecordBatch, plans: list[_Plan], kept: dict[str, list], file: str
) -> pa.RecordBatch:
    """``batch`` with the decoder's ``SCHEMA`` event just before each record whose full column list differs
    from the last one announced for its table (``DebeziumJsonDecoder._announce``)."""
    layouts = decoder._layouts
    tables = batch.column("table").to_pylist()
    at, events = [], []
    for i, plan in enumerate(plans):
        if plan.layout is None or layouts.get(tables[i]) == plan.layout:
            continue
        names = plan.names
        if names is None or any(
            image and not names.issuperset(image) for image in (kept["before"][i], kept["after"][i])
        ):
            continue  # not a full list (the reference's _schema_columns)
        row = batch.slice(i, 1).to_pylist()[0]
        event = ChangeEvent(
            table=row["table"],
            op=row["op"],
            seq=row["seq"],
            event_ts=row["event_ts"],
            source=Source(file, row["source_offset"]),
            keys=row["keys"],
        )
        announced = decoder._announce(event, list(plan.columns))
        if announced is not None:
            at.append(i)
            events.append(announced)
    if not at:
        return batch
    builder = DecodedBuilder(MAX_RAW_BYTES)
    for event in events:
        builder.add_event(event)
    rows = builder.flush()
    # each SCHEMA event sorts just before its record: record i at 2i + 1, its announcement at 2i
    order = np.argsort(np.concatenate((np.arange(batch.num_rows) * 2 + 1, np.array(at) * 2)), kind="stable")
    both = pa.Table.from_batches([batch, rows]).combine_chunks()
    return both.take(pa.array(order)).to_batches()[0]


def _image_array(
    decoder: DebeziumJsonDecoder,
    image: str,
    images: list[dict[str, Raw] | None],
    plans: list[_Plan],
    unavailable: list[list[str]],
    type_: pa.DataType,
) -> tuple[pa.MapArray, list] | None:
    """One ``map<string,string>`` column of the records' images, and each image's column names as kept
    (the placeholder's columns dropped); None: a value the reference refuses or text that is not valid Unicode."""
    names: list[str] = []
    raws: list[Raw] = []
    kinds: list[int] = []
    for record, plan in zip(images, plans, strict=True):
        if record:
            names.extend(record)
            raws.extend(record.values())
            get = plan.kinds[image].get
            kinds.extend([get(name, _UNNAMED) for name in record])
    sizes = np.fromiter((0 if r is None else len(r) for r in images), np.int64, len(images))
    owners = np.repeat(np.arange(len(images)), sizes)
    texts = raw_texts(raws)
    if texts is None:
        return None
    slow, probed = _judged_slow(decoder, texts, np.array(kinds, np.int8))
    dropped = np.zeros(len(raws), bool)
    if slow.any():
        fixed = texts.to_pylist()
        probed_at = probed.tolist()
        for index in np.flatnonzero(slow).tolist():
            owner, name, text = int(owners[index]), names[index], fixed[index]
            happy = None if probed_at[index] else plans[owner].happy[image].get(name)
            if happy is not None:
                value = _happy_text(happy, text)
                if value is not None:
                    fixed[index] = value
                    continue
            value = _converted(decoder, plans[owner].structs[image], name, text)
            if value is _DROPPED:
                dropped[index] = True
                unavailable[owner].append(name)
            elif value is _REFUSED:
                return None
            else:
                fixed[index] = value
        values = pa.array(fixed, pa.string())
    else:
        values = texts.cast(pa.string())
    kept = [None if r is None else list(r) for r in images]
    if dropped.any():
        for index in np.flatnonzero(dropped).tolist():
            kept[int(owners[index])].remove(names[index])  # type: ignore[union-attr]
        keep = ~dropped
        values = values.filter(pa.array(keep))
        names = [name for name, k in zip(names, keep.tolist(), strict=True) if k]
        sizes = np.bincount(owners[keep], minlength=len(images))
    offsets = np.zeros(len(images) + 1, np.int32)
    np.cumsum(sizes, out=offsets[1:])
    array = pa.MapArray.from_arrays(
        pa.array(offsets),
        pa.array(names, pa.string()),
        values,
        type=type_,
        mask=pa.array([r is None for r in images], pa.bool_()),
    )
    return array, kept


_DROPPED, _REFUSED = object(), object()


def _judged_slow(decoder: DebeziumJsonDecoder, texts: pa.Array, kinds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which values the reference must read and convert (see the module docstring), and which of them may
    be the unavailable-value placeholder (they hold it, its base64, or an escape that may spell it)."""

    def flags(array: pa.Array) -> np.ndarray:
        return np.asarray(pc.fill_null(array, False).to_numpy(zero_copy_only=False), bool)

    null = flags(pc.equal(texts, "null"))
    spelt = flags(respelt(texts))  # escapes, nested values, numbers written another way
    string = flags(pc.starts_with(texts, '"'))
    boolean = flags(pc.is_in(texts, pa.array(["true", "false"])))
    number = ~string & ~boolean & ~null & ~spelt
    fast = null.copy()
    fast |= (kinds == _UNNAMED) & ~spelt
    fast |= (kinds == _INT) & flags(pc.match_substring_regex(texts, _INTEGER)) & ~spelt
    fast |= (kinds == _FLOAT) & number
    fast |= (kinds == _BOOL) & boolean
    fast |= (kinds == _STR) & string & ~spelt
    probed = np.zeros(len(kinds), bool)
    for probe in decoder._placeholder_probes or ():
        probed |= flags(pc.match_substring(texts, probe.decode()))
    return ~fast | probed, probed


def _happy_text(happy: Any, text: str) -> str | None:
    """A Connect decimal's or an integer date's, time's or timestamp's text through its field's happy path,
    read from the JSON text as the reference's reader reads it (None: the reference's whole conversion)."""
    if text[:1] == '"':
        value: Any = text[1:-1]  # an escape in it: base64 has no backslash, the happy path refuses it
    elif text.isdigit() or (text[:1] == "-" and text[1:].isdigit()):
        value = int(text)
    else:
        return None
    converted = happy(value)
    return None if converted is kc._ANOTHER_WAY else value_text(converted)


def _converted(decoder: DebeziumJsonDecoder, struct: Any, column: str, text: str) -> Any:
    """One value as the reference gives it: :data:`_DROPPED` (the unavailable-value placeholder),
    :data:`_REFUSED` (its field refuses it: the reference words it), else its JSON text."""
    try:
        value = _VALUE_READER.decode(text)
    except (ValueError, RecursionError):
        return _REFUSED
    placeholder = decoder.placeholder
    if placeholder is not None:
        if value == placeholder or value == [placeholder]:
            return _DROPPED
        if (
            value == decoder._placeholder_b64
            and ((kc.struct_fields(struct) or {}).get(column) or {}).get("type") == "bytes"
        ):
            return _DROPPED
    try:
        converted = kc.convert_row({column: value}, struct)[column]
    except kc.ConnectValueError:
        return _REFUSED
    if type(converted) is str and not converted.isascii():
        try:
            converted.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: the builder's escape rule applies
            return _REFUSED
    return value_text(converted)
