"""Huawei CDL JSON read a span of records at a time into Arrow columns: the decode task's fast path.

The same design as Debezium JSON's (:mod:`.debezium_json_columns`, docs/decisions.md "Debezium JSON read
as columns"), for CDL's Kafka Connect envelope: one compact ``{"schema", "payload"}`` record per line,
UTF-8, the payload members CDL writes in the order it writes them. msgspec reads a span in one C call,
each schema block is worked out once per distinct text (the reference's ``schema_plan``), each image
value is kept as its JSON text where the reference keeps the parsed value (``cdl_json.kept_types``),
else converted by the reference's ``connect_value``. Every scalar and ``meta`` come from the format's one
statement of its envelope (``cdl_json.envelope``, and ``check_images`` for which images an operation needs):
this module holds no envelope rule of its own, only where the path stops (the list below).

Left to the reference (from the first span holding one): anything it rejects, heartbeats (``OPERATION``
``HEARTBEAT`` or the heartbeat table), a delete without a before image or with a data image, a bare
payload, a member CDL does not write, blanks, a record whose brackets could nest deeper than the limit.
Held to the reference by ``tests/formats/test_cdl_json_columns.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from msgspec import UNSET, Raw

from cdclake.events.arrow import DECODED_FILE_SCHEMA
from cdclake.events.change import joined_text, meta_text
from cdclake.formats import _kafka_connect as kc
from cdclake.formats._datahub import RecordError
from cdclake.formats.cdl_json import (
    CHECKED_TYPES,
    CONNECT,
    check_images,
    connect_value,
    envelope,
    kept_types,
    schema_plan,
)
from cdclake.formats.columnar import (
    DATE_DAYS,
    SCHEMA_READER,
    TEXT_DECIMAL,
    TS_MILLIS,
    UNNAMED,
    EnvelopeReader,
    SpanReader,
    decoded_batch,
    image_array,
    image_or_none,
    kind_of_kept,
    reference_converter,
)
from cdclake.registry import register_columns

if TYPE_CHECKING:
    import numpy as np

    from cdclake.formats.cdl_json import CdlJsonDecoder

#: The payload members this path reads, in the order CDL writes them (any other: the reference reads).
_PAYLOAD: dict[str, object] = {
    "DATA_STORE": Any,
    "SEG_OWNER": Any,
    "TABLE_NAME": Any,
    "TIMESTAMP": Any,
    "OPERATION": Any,
    "LOB_COLUMNS": Any,
    "transaction": Any,
    "unique": Any,
    "data": dict[str, Raw] | None,
    "before": dict[str, Raw] | None,
    "message_version": Any,
    "message_type": Any,
    "HEARTBEAT_IDENTIFIER": Any,
}
_IMAGES = ("before", "data")
_PLANS = 256
_READER = EnvelopeReader("Cdl", _PAYLOAD, images=dict.fromkeys(_IMAGES, Raw))


class _Plan:
    """The reference's ``schema_plan`` of one schema block, and how each image column's values are judged."""

    __slots__ = ("fields", "hints", "hints_text", "kinds")

    def __init__(self, schema: Any) -> None:
        self.fields, _, hints = kc.memoized("cdl-plan", schema_plan, schema)
        self.hints = dict(hints)
        #: the last member of every meta of the schema's events, written once (``events.joined_text``)
        self.hints_text = meta_text({"column_types": self.hints} if self.hints else {})
        self.kinds = {
            image: {col: _kind(spec) for col, spec in self.fields.get(image, {}).items()} for image in _IMAGES
        }


#: ``connect_value``'s integer dates and timestamps (``millis_text``; ``from_epoch`` in days): converted at once.
_EPOCH_NAMES = {CONNECT + "Timestamp": TS_MILLIS, CONNECT + "Date": DATE_DAYS}


def _kind(spec: dict[str, Any]) -> int:
    """A field's kind: an integer date or timestamp, the vendor's text decimal (``_decimal`` of any JSON type),
    any value kept for a type ``connect_value`` does not check (CDL's ``double``: a third of the bench's values went one
    at a time before), else by the types the reference keeps (``kept_types``)."""
    name = spec.get("name")
    if isinstance(name, str) and name.endswith(".cdc.data.Decimal") and name not in _EPOCH_NAMES:
        return TEXT_DECIMAL
    if name is None and spec.get("type") not in CHECKED_TYPES:
        return UNNAMED
    return _EPOCH_NAMES.get(name, kind_of_kept(kept_types(spec)))  # type: ignore[arg-type]


def _plan(plans: dict[bytes, _Plan | None], raw: bytes) -> _Plan | None:
    """The plan of a schema block's text (None: one the reference refuses or reads otherwise)."""
    plan = plans.get(raw)
    if plan is None:
        try:
            plan = _Plan(SCHEMA_READER.decode(raw.decode("utf-8")))
        except (ValueError, RecursionError, RecordError):
            return None
        if len(plans) >= _PLANS:
            plans.clear()
        plans[raw] = plan
    return plan


def _batch(
    decoder: CdlJsonDecoder,
    cache: dict[bytes, _Plan | None],
    records: list,
    starts: np.ndarray,
    schemas: list[bytes],
    split: bool,
    file: str,
) -> pa.RecordBatch | None:
    """The span's rows: scalars record by record (the format's own ``envelope``), image values a
    column at a time (None: outside the shape). ``schemas``: each record's schema block
    (``columnar.schema_texts``). ``split``: the images were read as ``Raw`` texts, split in C
    (``columnar.image_array``)."""
    n = len(records)
    plans, tables, ops, seqs, stamps, tx_ids, keys, metas = [], [], [], [], [], [], [], []
    befores: list[Any] = []
    afters: list[Any] = []
    key_lists: dict[tuple[str, ...], list[str]] = {}
    for record, schema in zip(records, schemas, strict=True):
        plan = _plan(cache, schema)
        p = record.payload
        # the payload's members as the reference's dict holds them (every member the reader has, in order)
        payload = {f: v for f in p.__struct_fields__ if (v := getattr(p, f)) is not UNSET}
        for image in _IMAGES if split else ():
            if image in payload:
                payload[image] = image_or_none(payload[image])
        if plan is None:
            return None
        try:
            env = envelope(decoder, payload)
            check_images(env.op, *env.images.values())  # a delete keyed by ``unique`` alone: the reference's
        except RecordError:
            return None
        if env.op == "HEARTBEAT" or (env.op == "DELETE" and env.images["data"] is not None):
            return None  # the reference converts, then drops, the data image of a delete
        unique = env.unique
        plans.append(plan)
        tables.append(env.table)
        ops.append(env.op)
        seqs.append(env.seq)
        stamps.append(env.event_ts)
        tx_ids.append(env.tx_id)
        if decoder.keys or not unique:
            keys.append(decoder.keys or None)
        else:  # one list object per distinct key list: the column converts each once (``repeated_values``)
            names = tuple(unique)
            keys.append(key_lists.get(names) or key_lists.setdefault(names, list(names)))
        metas.append(joined_text(meta_text(env.meta), plan.hints_text))
        befores.append(env.images["before"])
        afters.append(env.images["data"])
    try:
        arrays = {}
        for name, images in (("before", befores), ("data", afters)):
            column = "after" if name == "data" else name
            built = image_array(
                images,
                [plan.kinds[name] for plan in plans],
                _converter(name, plans),
                None,
                None,
                DECODED_FILE_SCHEMA.field(column).type,
                split=split,
            )
            if built is None:
                return None
            arrays[column] = built[0]
        return decoded_batch(
            n,
            {
                **arrays,
                "table": tables,
                "op": ops,
                "seq": seqs,
                "event_ts": stamps,
                "tx_id": tx_ids,
                "keys": keys,
                "meta": metas,
                "source_file": [file] * n,
                "source_offset": pa.array(starts, pa.int64()),
            },
        )
    except (pa.ArrowException, UnicodeEncodeError):  # text that is not valid Unicode
        return None


def _converter(image: str, plans: list[_Plan]) -> Callable[[int, str, str, bool], Any]:
    """The reference's conversion of one value of ``image``: its ``connect_value`` by the column's field schema."""
    return reference_converter(
        lambda owner, column, value: connect_value(column, image, plans[owner].fields.get(image, {}).get(column), value)
    )


@register_columns("cdl-json")
class CdlJsonColumns(SpanReader):
    """CDL JSON's columnar path (the module docstring) over one decoder."""

    def __init__(self, decoder: CdlJsonDecoder) -> None:
        super().__init__(decoder)
        #: each schema block's plan, by the block's text (at most ``_PLANS``)
        self.plans: dict[bytes, _Plan | None] = {}

    def span(self, span: bytes, file: str, offset: int) -> pa.RecordBatch | None:
        """The events of ``span`` as one record batch of ``DECODED_FILE_SCHEMA`` (``offset``: the span's first
        byte's), exactly as the reference decoder and the builder give them; None when a record is outside
        the shape this path reads (see the module docstring)."""
        return _READER.read_batch(span, offset, lambda *read: _batch(self.decoder, self.plans, *read, file))
