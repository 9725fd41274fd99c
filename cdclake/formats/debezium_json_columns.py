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
  column the schema does not name (GoldenGate JSON's rules, :func:`.columnar.respelt`), and
  ``null``. Every other value (Connect decimals, dates, times, timestamps, escapes, the unavailable-
  value placeholder) is read by the reference's JSON reader and converted by the reference's
  ``convert_row``, one value at a time.
- The scalar columns and ``meta`` come from the reference's own helpers (``table_name``,
  ``record_position``, ``change_time``, ``transaction_ids``, ``event_meta``), record by record, and the
  ``SCHEMA`` announcements from the decoder's ``_announce``.
- Anything else (a record the reference rejects or skips, a tombstone, a key record, a Lindorm or
  HBase record, a truncate, a bare payload, a value its field refuses): the span is left to the
  reference decoder (``None``), which reads on from there (``DebeziumJsonDecoder.decode_columns``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from msgspec import UNSET, Raw

from cdclake.events.arrow import DECODED_FILE_SCHEMA, DecodedBuilder
from cdclake.events.change import ChangeEvent, Source, joined_text, meta_text, value_text
from cdclake.formats import _kafka_connect as kc
from cdclake.formats._connect_decimals import connect_decimal_kind
from cdclake.formats.columnar import (
    CONVERT,
    DROPPED,
    EPOCH_KINDS,
    REFUSED,
    SCHEMA_READER,
    VALUE_READER,
    EnvelopeReader,
    SpanReader,
    builder_text,
    decoded_batch,
    image_array,
    image_or_none,
    kind_of_kept,
)
from cdclake.formats.debezium_json import (
    RecordError,
    change_time,
    check_images,
    envelope,
    event_meta,
    listed_columns,
    transaction_ids,
)
from cdclake.registry import register_columns
from cdclake.runtime.limits import MAX_RAW_BYTES

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
#: Schema plans kept per decoder (distinct schema blocks of a batch: a few per table).
_PLANS = 256
_READER = EnvelopeReader("Debezium", _PAYLOAD, images=dict.fromkeys(("before", "after"), Raw))


class _Plan:
    """What one schema block says, worked out once: its name, the image structs' fields, how each
    column's values are judged, the ``column_types`` of each combination of images, the full column list."""

    __slots__ = ("columns", "happy", "kinds", "layout", "names", "schema_name", "structs", "types", "types_texts")

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema_name = schema.get("name")
        envelope_fields = kc.struct_fields(schema) or {}
        self.structs = {image: envelope_fields.get(image) for image in ("before", "after")}
        self.kinds = {image: _kinds(struct) for image, struct in self.structs.items()}
        #: per image, per column of a Connect decimal or an integer date, time or timestamp: the reference's
        #: conversion of its common case (``_kafka_connect.happy_path``)
        self.happy = {
            image: {n: f for n, spec in (kc.struct_fields(struct) or {}).items() if (f := kc.happy_path(spec))}
            for image, struct in self.structs.items()
        }
        before_types, after_types = (kc.column_types(self.structs[i]) for i in ("before", "after"))
        self.types = {
            (False, False): {},
            (True, False): before_types,
            (False, True): after_types,
            (True, True): {**before_types, **after_types},
        }
        #: each combination's ``column_types`` as a meta's last member, written once (``events.joined_text``)
        self.types_texts = {shape: meta_text({"column_types": t} if t else {}) for shape, t in self.types.items()}
        listed = kc.memoized("listed", listed_columns, self.structs["after"]) or kc.memoized(
            "listed", listed_columns, self.structs["before"]
        )
        self.columns, self.names = (list(listed[0]), listed[1]) if listed else (None, None)
        self.layout = dict(self.columns) if self.columns is not None else None


def _kinds(struct: Any) -> dict[str, int]:
    """Per field of an image struct, how its values are judged (a column it does not name: ``UNNAMED``)."""
    fields = kc.struct_fields(struct) or {}
    return {name: _kind(spec) for name, spec in fields.items()}


def _kind(spec: dict[str, Any]) -> int:
    """A field's kind: a Connect decimal or an integer date or timestamp (the happy path's,
    ``_kafka_connect.happy_path``), else by the types the reference keeps."""
    if spec.get("name") == kc.CONNECT_DECIMAL and spec.get("type") == "bytes":  # the happy path's decimals
        decimal = connect_decimal_kind(kc.int_param(spec, "scale"))
        if decimal is not None:
            return decimal
    logical = kc.INTEGER_LOGICAL.get(spec.get("name")) if spec.get("type") in kc.INT_TYPES else None  # type: ignore[arg-type]
    return EPOCH_KINDS.get(logical, CONVERT) if logical else kind_of_kept(kc.kept_types(spec))


def _plan(plans: dict[bytes, _Plan | None], raw: bytes) -> _Plan | None:
    """The plan of a schema block's text (None: not a non-empty object the reference reads alike)."""
    plan = plans.get(raw)
    if plan is None:
        try:
            schema = SCHEMA_READER.decode(raw.decode("utf-8"))
        except (ValueError, RecursionError):
            return None
        if not isinstance(schema, dict) or not schema:
            return None
        if len(plans) >= _PLANS:
            plans.clear()
        plan = plans[raw] = _Plan(schema)
    return plan


def _batch(
    decoder: DebeziumJsonDecoder,
    cache: dict[bytes, _Plan | None],
    records: list,
    starts: np.ndarray,
    schemas: list[bytes],
    split: bool,
    file: str,
) -> pa.RecordBatch | None:
    """The span's rows: scalars record by record, image values a column at a time (None: outside the shape).
    ``schemas``: each record's schema block (``columnar.schema_texts``). ``split``: the images were read as
    ``Raw`` texts, split in C (``columnar.image_array``)."""
    n = len(records)
    plans, tables, ops, seqs, stamps, tx_ids, payloads = [], [], [], [], [], [], []
    befores: list[Any] = []
    afters: list[Any] = []
    for record, schema in zip(records, schemas, strict=True):
        plan = _plan(cache, schema)
        p = record.payload
        # the payload's members as the reference's dict holds them (every member the reader has, in order)
        payload = {f: v for f in p.__struct_fields__ if (v := getattr(p, f)) is not UNSET}
        if plan is None:
            return None
        try:
            env = envelope(decoder, payload)
            before, after = image_or_none(env.images["before"]), image_or_none(env.images["after"])
            check_images(env.op, env.op_code, before, after)
        except RecordError:
            return None
        if env.op == "TRUNCATE" or env.lindorm:  # Lindorm: its HBase and deleted-column rules are the reference's
            return None
        src = env.source
        plans.append(plan)
        tables.append(env.table)
        ops.append(env.op)
        seqs.append((env.seq, env.seq_from))
        stamps.append(change_time(src, payload))
        tx_ids.append(transaction_ids(payload, src))
        payloads.append((env.op_code, src, payload))
        befores.append(before)
        afters.append(after)
    unavailable: list[list[str]] = [[] for _ in range(n)]
    kept: dict[str, list] = {}
    try:
        arrays = {}
        for name, images in (("before", befores), ("after", afters)):
            image = image_array(
                images,
                [plan.kinds[name] for plan in plans],
                _converter(decoder, name, plans),
                decoder.placeholder_probes,
                unavailable,
                DECODED_FILE_SCHEMA.field(name).type,
                _dropped_text(decoder),
                split,
            )
            if image is None:
                return None
            arrays[name], kept[name] = image
        metas = []
        for i, (op_code, src, present) in enumerate(payloads):
            plan = plans[i]
            shape = (befores[i] is not None, afters[i] is not None)
            meta = event_meta({"op": op_code}, src, seqs[i][1], present, plan.schema_name, unavailable[i], {})
            metas.append(joined_text(meta_text(meta), plan.types_texts[shape]))  # column_types: the last member
        keys = decoder.keys
        batch = decoded_batch(
            n,
            {
                **arrays,
                "table": tables,
                "op": ops,
                "seq": [s for s, _ in seqs],
                "event_ts": stamps,
                "tx_id": [t for t, _ in tx_ids],
                "tx_pos": [p for _, p in tx_ids],
                "keys": [keys] * n,
                "meta": metas,
                "source_file": [file] * n,
                "source_offset": pa.array(starts, pa.int64()),
            },
        )
    except (pa.ArrowException, UnicodeEncodeError, OverflowError):  # text that is not valid Unicode, ...
        return None
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


def _dropped_text(decoder: DebeziumJsonDecoder) -> str | None:
    """The placeholder's JSON text where it has no escape (``_converted`` drops that text in any column)."""
    placeholder = decoder.placeholder
    if placeholder is None:
        return None
    text = json.dumps(placeholder, ensure_ascii=False)
    return None if "\\" in text else text


def _converter(decoder: DebeziumJsonDecoder, image: str, plans: list[_Plan]):
    """The reference's conversion of one value of ``image`` (``image_array``'s ``convert``)."""

    def convert(owner: int, column: str, text: str, probed: bool) -> Any:
        plan = plans[owner]
        happy = None if probed else plan.happy[image].get(column)
        if happy is not None:
            value = _happy_text(happy, text)
            if value is not None:
                return value
        return _converted(decoder, plan.structs[image], column, text)

    return convert


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
    return None if converted is kc.ANOTHER_WAY else value_text(converted)


def _converted(decoder: DebeziumJsonDecoder, struct: Any, column: str, text: str) -> Any:
    """One value as the reference gives it: :data:`DROPPED` (the unavailable-value placeholder),
    :data:`REFUSED` (its field refuses it: the reference words it), else its JSON text."""
    try:
        value = VALUE_READER.decode(text)
    except (ValueError, RecursionError):
        return REFUSED
    placeholder = decoder.placeholder
    if placeholder is not None:
        if value == placeholder or value == [placeholder]:
            return DROPPED
        if (
            value == decoder._placeholder_b64
            and ((kc.struct_fields(struct) or {}).get(column) or {}).get("type") == "bytes"
        ):
            return DROPPED
    try:
        converted = kc.convert_row({column: value}, struct)[column]
    except kc.ConnectValueError:
        return REFUSED
    return builder_text(converted)


class DebeziumJsonColumns(SpanReader):
    """Debezium JSON's columnar path (the module docstring) over one decoder."""

    def __init__(self, decoder: DebeziumJsonDecoder) -> None:
        super().__init__(decoder)
        #: each schema block's plan, by the block's text (at most ``_PLANS``)
        self.plans: dict[bytes, _Plan | None] = {}

    def span(self, span: bytes, file: str, offset: int) -> pa.RecordBatch | None:
        """The events of ``span`` as one record batch of ``DECODED_FILE_SCHEMA`` (``offset``: the span's first
        byte's), exactly as the reference decoder and the builder give them; None when a record is outside
        the shape this path reads (see the module docstring)."""
        return _READER.read_batch(span, offset, lambda *read: _batch(self.decoder, self.plans, *read, file))


@register_columns("debezium-json")
def debezium_json_columns(decoder: DebeziumJsonDecoder) -> DebeziumJsonColumns | None:
    """The path reads Kafka Connect's ``JsonConverter`` shape; not HBase tables (``hbase`` ``true``)."""
    return None if decoder.hbase == "true" else DebeziumJsonColumns(decoder)
