"""Alibaba DataHub BLOB JSON read a span of records at a time into Arrow columns: the decode task's fast path.

The same design as CDL JSON's (:mod:`.cdl_json_columns`, docs/decisions.md "Debezium JSON read as columns")
for DataHub's envelope: one compact ``{"schema", "payload", "version"}`` message per line, UTF-8, the members
in the order the vendor's document writes them or sorted by name (real messages, Apache Paimon's samples:
``{"payload":{"after":...,"before":null,"ddl":null,"op":...},"schema":...}``). msgspec reads a span in one
C call; each schema block is worked out once per distinct text (the format's ``schema_block``: source, table,
keys, column plan); each image value is kept as its JSON text where the reference keeps the parsed value, text
decimals (``DOUBLE``) lose their quotes and epoch milliseconds (``DATE``) become timestamps a column at a
time, anything else goes through the reference's ``blob_value``. Every scalar and ``meta`` come from the format's
one statement of its envelope (``datahub_blob.envelope``, ``meta_tail``, and ``row_op`` for which images an op
needs and the event it makes): this module holds no envelope rule of its own, only where the path stops (below).

Update halves: ``UPDATE_BEFOR`` + ``UPDATE_AFTER`` sharing a sequence id become one ``UPDATE`` where the second
one is read, with the reference's joined ``meta`` (``_datahub.pair_meta``). A span is read up to the first
record a pair would cut (a half whose partner is not in the span, or any record between it and its partner's
reach): the next span starts there, so no pair is split between spans (``read_spans``).

Left to the reference (from the first span holding one): anything it rejects, markers, DDL and truncates, an
insert with a before image or a delete with an after image (the reference converts, then drops, them), two
halves of one side, a half whose partner is not in the span's reach, a bare payload, a member DataHub does not
write, blanks, a record whose brackets could nest deeper than the limit. Held to the reference by
``tests/formats/test_datahub_blob_columns.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from msgspec import UNSET, Raw

from cdclake.events.arrow import DECODED_FILE_SCHEMA
from cdclake.events.change import joined_text, meta_text
from cdclake.formats._datahub import RecordError, from_epoch, pair_meta
from cdclake.formats.columnar import (
    BOOL,
    CONVERT,
    INT,
    SCHEMA_READER,
    STR,
    TEXT_DECIMAL,
    TS_MILLIS,
    UNNAMED,
    EnvelopeReader,
    SpanReader,
    Unsplit,
    decoded_batch,
    image_array,
    image_or_none,
    reference_converter,
)
from cdclake.formats.datahub_blob import (
    ROW_OPS,
    blob_value,
    envelope,
    meta_tail,
    row_op,
    schema_block,
    schema_object,
)
from cdclake.registry import register_columns

if TYPE_CHECKING:
    from cdclake.formats.datahub_blob import DataHubBlobDecoder

_IMAGE = dict[str, dict[str, Raw] | None] | None
#: The payload members this path reads, in the order DataHub writes them (any other: the reference reads).
_PAYLOAD: dict[str, object] = {
    "op": Any,
    "before": _IMAGE,
    "after": _IMAGE,
    "sequenceId": Any,
    "timestamp": Any,
    "ddl": Any,  # a row's: not read (its own op is read by the reference)
}
#: An image holder with its ``dataColumn`` object read as ``Raw`` text, to split in C (``columnar.image_array``).
_SPLIT_IMAGE = dict[str, Raw] | None
_READER = EnvelopeReader("Blob", _PAYLOAD, {"version": Any}, dict.fromkeys(("before", "after"), _SPLIT_IMAGE))
_PLANS = 256
#: How each StreamX type's values are judged (``blob_value``: kept, converted at once, or one at a time).
_KINDS = {"STRING": STR, "LONG": INT, "BOOLEAN": BOOL, "DOUBLE": TEXT_DECIMAL, "DATE": TS_MILLIS, "BYTES": CONVERT}
#: The ops this path reads (markers, DDL and truncates: the reference's).
_READ_OPS = ROW_OPS - {"TRUNCATE"}


class _Plan:
    """A schema block as the format reads it (``datahub_blob.schema_block``), worked out once for every message
    that repeats it, with how this path judges each column's values and its messages' ``meta`` tails."""

    __slots__ = ("_tails", "block", "kinds")

    def __init__(self, decoder: DataHubBlobDecoder, schema: Any) -> None:
        self.block = schema_block(decoder, schema_object(schema))
        self.kinds = {column: _KINDS.get(kind, UNNAMED) for column, kind in self.block.types.items()}
        self._tails: dict[Any, str] = {}

    def tail(self, version: Any) -> dict[str, Any]:
        """The members a message's ``meta`` takes from its schema block and ``version`` (``datahub_blob.meta_tail``:
        no ``extra``, as this path reads no member DataHub does not write)."""
        return meta_tail(self.block, version)

    def tail_text(self, version: Any) -> str:
        """:meth:`tail`'s JSON text, written once per plan and version (the column types are most of a meta)."""
        if type(version) is not str and version is not None:
            return meta_text(self.tail(version))
        text = self._tails.get(version)
        if text is None:
            if len(self._tails) >= _PLANS:
                self._tails.clear()
            text = self._tails[version] = meta_text(self.tail(version))
        return text


def _plan(decoder: DataHubBlobDecoder, known: dict[bytes, _Plan | None], raw: bytes) -> _Plan | None:
    """The plan of a schema block's text (None: one the reference refuses)."""
    plans = known
    plan = plans.get(raw)
    if plan is None:
        try:
            plan = _Plan(decoder, SCHEMA_READER.decode(raw.decode("utf-8")))
        except (ValueError, RecursionError, RecordError):
            return None
        if len(plans) >= _PLANS:
            plans.clear()
        plans[raw] = plan
    return plan


class _Row:
    """One event of the span: what the reference's ``ChangeEvent`` holds, images as ``Raw`` texts (``side``: the
    half of an update it is, else None). A half's ``meta`` holds only its own members (:data:`_OWN_MEMBERS`) and
    ``version`` its message's: the join writes the rest from its plan (``_joined``), and a half left unpaired is
    never given (the span is cut before it)."""

    __slots__ = ("after", "after_plan", "before", "before_plan", "event_ts", "keys", "meta", "offset", "op")
    __slots__ += ("seq", "side", "table", "vendor_op", "version")  # type: ignore[assignment]

    def __init__(
        self,
        op: str,
        before: Any,
        after: Any,
        before_plan: _Plan,
        after_plan: _Plan,
        table: str,
        seq: str,
        event_ts: Any,
        keys: Any,
        meta: Any,
        offset: int,
        side: str | None = None,
        vendor_op: str | None = None,
        version: Any = None,
    ) -> None:
        self.op, self.before, self.after, self.before_plan, self.after_plan = op, before, after, before_plan, after_plan
        self.table, self.seq, self.event_ts = table, seq, event_ts
        self.keys, self.meta, self.offset = keys, meta, offset
        self.side, self.vendor_op, self.version = side, vendor_op, version


def _rows(
    decoder: DataHubBlobDecoder,
    known: dict[bytes, _Plan | None],
    records: list,
    offsets: list[int],
    schemas: list[bytes],
    split: bool,
) -> tuple[int, list[_Row]] | None:
    """(how many records were read, their events in the reference's order): each message by
    ``DataHubBlobDecoder._message``'s rules, each update's halves joined where the second is read
    (``UpdatePairs.add``). None: a record outside the shape. ``schemas``: each record's schema block
    (``columnar.schema_texts``: one object per distinct block, so its plan is looked up once).
    ``split``: the images' ``dataColumn`` read as ``Raw`` texts."""
    rows: list[_Row | None] = []
    pending: dict[tuple[str, str], int] = {}
    pairs: list[tuple[int, int]] = []
    plans: dict[int, _Plan | None] = {}
    for index, (record, offset, schema) in enumerate(zip(records, offsets, schemas, strict=True)):
        plan = plans.get(id(schema), _NO_PLAN)
        if plan is _NO_PLAN:
            plan = plans[id(schema)] = _plan(decoder, known, schema)
        row = _row(record, offset, plan, split)  # type: ignore[arg-type]
        if row is None:
            return None
        rows.append(row)
        if row.side is None:
            continue
        key = (row.table, row.seq)
        other = pending.pop(key, None)
        if other is None:
            pending[key] = index
            continue
        first = rows[other]
        assert first is not None
        if first.side == row.side:
            return None  # the reference rejects the second one
        rows[index] = _joined(first, row)
        rows[other] = None
        pairs.append((other, index))
    read_to = _cut(len(records), pending.values(), pairs)
    if read_to == 0:
        return None
    return read_to, [row for row in rows[:read_to] if row is not None]


#: :func:`_rows`' mark of a schema block whose plan is not looked up yet.
_NO_PLAN = object()


def _cut(records: int, unpaired: Any, pairs: list[tuple[int, int]]) -> int:
    """The most records a span can give (from its first) with no update split: none past a half whose partner
    is not in the span, none that splits a pair."""
    cut = min(unpaired, default=records)
    if cut == records or not pairs:
        return cut
    firsts, seconds = np.array(pairs).T
    while True:
        split = (firsts < cut) & (seconds >= cut)
        if not split.any():
            return cut
        cut = int(firsts[split].min())


def _row(record: Any, offset: int, plan: _Plan | None, split: bool) -> _Row | None:
    """One message's event (or half) by the format's envelope rules (``datahub_blob.envelope``, ``row_op``)
    (``plan``: its schema block's; None: one the reference refuses); None: one it rejects or that this path
    leaves to it."""
    if plan is None:
        return None
    p = record.payload
    timestamp = None if p.timestamp is UNSET else p.timestamp
    sequence = None if p.sequenceId is UNSET else p.sequenceId
    try:
        env = envelope(p.op, plan.block, timestamp, sequence)
        if env.op not in _READ_OPS:
            return None
        before, after = p.before, p.after  # no holder (UNSET, null, empty: falsy): no image, without a call
        before, after = _image(before, split) if before else None, _image(after, split) if after else None
        op, side = row_op(env, before, after)
    except RecordError:
        return None
    table, seq, keys = env.block.table, env.seq, env.block.keys
    assert table is not None and seq is not None  # envelope: a row message has both
    version = None if record.version is UNSET else record.version
    if side is not None:
        return _Row(
            op, before, after, plan, plan, table, seq, env.event_time, keys, env.meta, offset, side, env.op, version
        )
    if (env.op == "INSERT" and before is not None) or (env.op == "DELETE" and after is not None):
        return None  # the reference converts, then drops, the image
    meta = joined_text(meta_text(env.meta), plan.tail_text(version))
    return _Row(op, before, after, plan, plan, table, seq, env.event_time, keys, meta, offset)


def _event_ts_array(values: list[Any]) -> pa.Array:
    """The event times of ``_row`` (``datahub_blob.Envelope.event_time``: integer epoch milliseconds, or the
    reference's ``epoch_millis`` ``datetime`` for any other) as the decoded column (integers converted at once)."""
    millis = [v for v in values if type(v) is int]
    if not millis:
        return pa.array(values, DECODED_FILE_SCHEMA.field("event_ts").type)
    if len(millis) < len(values) - values.count(None):
        values = [from_epoch(v, "milliseconds") if type(v) is int else v for v in values]
        return pa.array(values, DECODED_FILE_SCHEMA.field("event_ts").type)
    ints = pa.array(values, pa.int64())
    return pc.multiply(ints, 1_000).cast(DECODED_FILE_SCHEMA.field("event_ts").type)


def _image(holder: Any, split: bool) -> Any:
    """``payload.<image>.dataColumn`` (None: no image), as the reference's ``_image`` finds it. ``split``: the
    holder's members are ``Raw`` texts; one beside ``dataColumn`` is left to the dict reader (:class:`Unsplit`),
    which checks that it is an object or null written as the writer writes it."""
    if holder is UNSET or not holder:
        return None
    if split:
        if len(holder) != 1 or "dataColumn" not in holder:
            raise Unsplit
        return image_or_none(holder["dataColumn"])
    return holder.get("dataColumn")


def _joined(first: _Row, second: _Row) -> _Row:
    """The reference's ``UPDATE`` of two halves (``UpdatePairs.add``), where the second one is read."""
    before, after = (first, second) if first.side == "before" else (second, first)
    b_half, a_half = (before.vendor_op, before.offset, before.meta), (after.vendor_op, after.offset, after.meta)
    plan, version = before.before_plan, before.version
    if plan is after.after_plan and version == after.version and type(version) in (str, type(None)):
        meta: dict[str, Any] | str = _pair_text(b_half, a_half, plan.tail_text(version))
    else:  # each half's whole meta, as the reference's halves hold it
        b_half = (*b_half[:2], {**before.meta, **before.before_plan.tail(before.version)})
        a_half = (*a_half[:2], {**after.meta, **after.after_plan.tail(after.version)})
        meta = pair_meta(b_half, a_half)
    return _Row(
        "UPDATE",
        before.before,
        after.after,
        before.before_plan,
        after.after_plan,
        after.table,
        after.seq,
        after.event_ts if after.event_ts is not None else before.event_ts,
        after.keys or before.keys,
        meta,
        min(before.offset, after.offset),
    )


#: The members of a message's ``meta`` that are its own; the rest (``_Plan.tail``) its schema block's and version's.
_OWN_MEMBERS = ("op", "sequenceId", "timestamp")


def _pair_text(before: tuple[str, int, dict[str, Any]], after: tuple[str, int, dict[str, Any]], tail: str) -> str:
    """``meta_text(pair_meta(before, after))`` of two halves of one schema block and version (``tail``: the text of
    the members those give, ``_Plan.tail_text``): the same members in the same order, the shared ones (most of the
    text: the column types) written once per plan rather than once per update."""
    b_meta, a_meta = before[2], after[2]
    shared = {k: v for k in _OWN_MEMBERS if k in a_meta and k in b_meta and b_meta[k] == (v := a_meta[k])}
    pair = {
        name: {
            "op": op,
            "offset": offset,
            **{k: half_meta[k] for k in _OWN_MEMBERS if k in half_meta and k not in shared and k != "op"},
        }
        for name, (op, offset, half_meta) in (("before", before), ("after", after))
    }
    return joined_text(joined_text(meta_text(shared), tail), meta_text({"pair": pair}))


def _batch(rows: list[_Row], file: str, split: bool) -> pa.RecordBatch | None:
    """The rows as columns, image values a column at a time (None: a value the reference refuses). ``split``: the
    images are ``Raw`` object texts (``columnar.image_array``)."""
    try:
        arrays = {}
        for name in ("before", "after"):
            plans = list(map(attrgetter(f"{name}_plan"), rows))
            built = image_array(
                list(map(attrgetter(name), rows)),
                [plan.kinds for plan in plans],
                _converter(name, plans),
                None,
                None,
                DECODED_FILE_SCHEMA.field(name).type,
                split=split,
            )
            if built is None:
                return None
            arrays[name] = built[0]
        return decoded_batch(
            len(rows),
            {
                **arrays,
                "table": [row.table for row in rows],
                "op": [row.op for row in rows],
                "seq": [row.seq for row in rows],
                "event_ts": _event_ts_array([row.event_ts for row in rows]),
                "keys": [row.keys for row in rows],
                "meta": [meta if type(meta := row.meta) is str else meta_text(meta) for row in rows],
                "source_file": [file] * len(rows),
                "source_offset": [row.offset for row in rows],
            },
        )
    except (pa.ArrowException, UnicodeEncodeError):  # text that is not valid Unicode
        return None


def _converter(image: str, plans: list[_Plan]) -> Callable[[int, str, str, bool], Any]:
    """The reference's conversion of one value of ``image``: its ``blob_value`` by the column's StreamX type."""
    return reference_converter(
        lambda owner, column, value: blob_value(column, plans[owner].block.types.get(column), value, image)
    )


@register_columns("datahub-blob")
class DataHubBlobColumns(SpanReader):
    """DataHub BLOB's columnar path (the module docstring) over one decoder."""

    def __init__(self, decoder: DataHubBlobDecoder) -> None:
        super().__init__(decoder)
        #: each schema block's plan, by the block's text (at most ``_PLANS``)
        self.plans: dict[bytes, _Plan | None] = {}

    def span(self, span: bytes, file: str, offset: int) -> tuple[pa.RecordBatch, int] | None:
        """The events of ``span`` as one record batch of ``DECODED_FILE_SCHEMA`` (``offset``: the span's first
        byte's) and how many of its bytes they came from, exactly as the reference decoder and the builder give
        them; None when a record is outside the shape this path reads (see the module docstring)."""

        def read(
            records: list, starts: np.ndarray, schemas: list[bytes], split: bool
        ) -> tuple[pa.RecordBatch, int] | None:
            rows = _rows(self.decoder, self.plans, records, starts.tolist(), schemas, split)
            if rows is None:
                return None
            read_to, kept = rows
            batch = _batch(kept, file, split)
            if batch is None:
                return None
            return batch, len(span) if read_to == len(records) else int(starts[read_to]) - offset

        return _READER.read_batch(span, offset, read)
