"""The columnar engine of the JSON formats' fast paths: spans of whole records read with the reference decoder
behind every span (:class:`SpanReader`, :func:`read_spans`), the records' values as one Arrow string column of their
JSON texts and which of those texts the builder would spell otherwise (:func:`image_array`), and the whole span
assembly (:class:`EnvelopeColumns` over a :class:`RecordReader` of flat records or an :class:`EnvelopeReader` of
``{"schema", "payload"}`` ones, whose hooks CDL JSON, Debezium JSON and GoldenGate JSON state beside their reference
decoders)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from msgspec import UNSET, Raw, UnsetType

from cdclake import native
from cdclake.events.arrow import DECODED_FILE_SCHEMA
from cdclake.events.arrow_text import first_bytes, holding, replaced, with_spelt
from cdclake.events.change import Rejected, Source, value_text
from cdclake.formats._connect_decimals import with_connect_decimals
from cdclake.formats._json import unique_object
from cdclake.formats._json_shapes import JsonShapes, json_shapes
from cdclake.runtime.limits import MAX_JSON_DEPTH, MAX_RECORD_BYTES

LOG = logging.getLogger(__name__)

if TYPE_CHECKING:
    from cdclake.registry import Decoder

#: A span is cut at the first record start after this many bytes (bounds the memory of one span's records).
SPAN_BYTES = 4 << 20


def spans(data: bytes) -> Iterator[tuple[int, int]]:
    """``data`` in spans of about :data:`SPAN_BYTES` (:func:`span_end`)."""
    start, size = 0, len(data)
    while start < size:
        end = span_end(data, start)
        yield start, end
        start = end


def span_end(data: bytes, start: int) -> int:
    """The end of the span from ``start``: about :data:`SPAN_BYTES` on, cut before a line starting with ``{``
    after a line ending with ``}`` (the decode task's rule for pieces: a record is never cut)."""
    size = len(data)
    cut = start + SPAN_BYTES
    while cut < size:
        cut = data.find(b"\n{", cut)
        if cut < 0:
            return size
        line_start = data.rfind(b"\n", 0, cut) + 1
        if data[line_start:cut].rstrip().endswith(b"}"):
            return min(cut + 1, size)
        cut += 1
    return min(cut, size)


def respelt(texts: pa.Array) -> pa.BooleanArray:
    """Which JSON texts (valid JSON: msgspec checked them) the builder would spell otherwise
    (:func:`._json_shapes.json_shapes`' ``spelt``)."""
    return pa.array(json_shapes(texts).spelt)


def raw_texts(raws: list) -> pa.Array | None:
    """The JSON texts ``raws`` (``msgspec.Raw``: bytes-like) as one ``large_string`` array, copied once;
    None when one is not valid UTF-8."""
    lengths = np.fromiter(map(len, raws), np.int64, len(raws))
    offsets = np.zeros(len(raws) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    texts = pa.Array.from_buffers(
        pa.large_string(), len(raws), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(raws))]
    )
    try:
        texts.validate(full=True)  # UTF-8
    except pa.ArrowInvalid:
        return None
    return texts


def record_starts(text: bytes, records: int) -> np.ndarray | None:
    """The first byte of each line of ``text`` (a span that msgspec read as ``records`` lines); None when the
    lines are not the records one to one, or one is at the record size limit (the reference words it)."""
    ends = np.flatnonzero(np.frombuffer(text, np.uint8) == 10)
    if len(ends) != records:
        return None
    starts = np.concatenate(([0], ends[:-1] + 1))
    return None if int((ends - starts).max()) >= MAX_RECORD_BYTES else starts


#: Distinct schema blocks of a span looked for by comparison before hashing (a span holds a few).
_RECENT_BLOCKS = 16


def schema_texts(heads: list) -> list[bytes]:
    """Each record's schema block (``Raw``) as bytes, one object per distinct block of the span, so that the
    block is copied, hashed (a bytes object keeps its hash) and counted once. Blocks are compared with the
    span's first distinct ones before any is hashed: a Debezium block is about 4 KB, and copying and hashing it
    per record cost more than the records' brackets."""
    texts: list[bytes] = []
    recent: list[tuple[Any, bytes]] = []
    by_text: dict[bytes, bytes] = {}
    for head in heads:
        text = next((known for raw, known in recent if raw == head), None)
        if text is None:
            text = bytes(head)
            text = by_text.setdefault(text, text)
            if len(recent) < _RECENT_BLOCKS:
                recent.append((head, text))
        texts.append(text)
    return texts


def shallow(text: bytes, starts: np.ndarray, heads: list[bytes]) -> bool:
    """Whether no record (a line from each of ``starts``, a JSON object holding its schema block) holds more
    brackets than the depth limit, so none can nest deeper than the reference reads. ``heads``: each record's
    schema block (:func:`schema_texts`: one object per distinct block). Where a line starts with its block
    (``{"schema":<head>,...``), the block's brackets are counted once per distinct block and the rest of the
    line by one count (:func:`cdclake.native.bracket_counts`: every line at once in C where built); other lines
    are counted whole."""
    ends = np.append(starts[1:], len(text)).astype(np.int64)
    data = np.frombuffer(text, np.uint8)
    at = np.minimum(starts[:, None] + np.arange(len(_HEADED), dtype=np.int64), len(text) - 1)
    headed = (data[at] == _HEADED_BYTES).all(axis=1)  # a line shorter than the prefix meets its newline first
    by_head: dict[int, tuple[int, int]] = {}
    for head in heads:
        if id(head) not in by_head:
            by_head[id(head)] = (len(head), head.count(b"{") + head.count(b"["))
    sizes = np.array([by_head[id(head)] for head in heads], np.int64).reshape(len(heads), 2)
    froms = starts.astype(np.int64) + np.where(headed, len(_HEADED) + sizes[:, 0], 0)
    in_heads = np.where(headed, 1 + sizes[:, 1], 0)  # the envelope's brace (past the prefix) and the block's
    counts = native.bracket_counts(text, np.minimum(froms, ends), ends)
    return int((counts + in_heads).max(initial=0)) <= MAX_JSON_DEPTH


#: The start of a line that holds its schema block first (as Kafka Connect's JSON writer writes it).
_HEADED = b'{"schema":'
_HEADED_BYTES = np.frombuffer(_HEADED, np.uint8)


def read_spans(
    decode: Callable[[bytes, str], Iterator[Any]],
    decode_span: Callable[[bytes, str, int], pa.RecordBatch | tuple[pa.RecordBatch, int] | None],
    data: bytes,
    file: str,
) -> Iterator[Any]:
    """A columnar path's read of a file (:meth:`SpanReader.read`): each span of ``data`` as the path reads it.
    A span it does not read (``decode_span`` gives None, or raises: :func:`guarded_span`) is the reference
    ``decode``'s, alone (:func:`reference_window`), and the path goes on after it. Where the format's records are
    not independent of each other, or the window does not end cleanly, the reference reads the whole ``data``
    again and gives what it finds from that span on, as without the path. ``decode_span`` may read less than its
    span (``(batch, bytes read)``): the next span starts there."""
    decoder = decode.__self__  # type: ignore[attr-defined]  # a decoder's bound ``decode``
    start, size = 0, len(data)
    while start < size:
        end = span_end(data, start)
        read = guarded_span(decoder, decode_span, data[start:end], file, start)
        if read is not None:
            batch, used = read if isinstance(read, tuple) else (read, end - start)
            yield batch
            start += used
            continue
        window = reference_window(decoder, data, file, start, end)
        if window is not None:
            yield from window
            start = end
            continue
        if decoder.independent_records:  # what is before cannot matter
            yield from reference_from(decoder, data, file, start, size)
        else:
            yield from (item for item in decode(data, file) if item.source.offset >= start)
        return


class SpanReader:
    """A format's columnar path over one decoder (``registry.ColumnarReader``): a subclass reads one span of
    records (:meth:`span`) and keeps what it works out per decoder (e.g. schema plans); :meth:`read` runs it over
    a file with the reference decoder behind it (:func:`read_spans`)."""

    def __init__(self, decoder: Decoder) -> None:
        self.decoder = decoder

    def span(self, span: bytes, file: str, offset: int) -> pa.RecordBatch | tuple[pa.RecordBatch, int] | None:
        """One span's records as a batch (or ``(batch, bytes read)``); None: the reference reads the span."""
        raise NotImplementedError

    def read(self, data: bytes, file: str) -> Iterator[Any]:
        return read_spans(self.decoder.decode, self.span, data, file)


def reference_window(decoder: Decoder, data: bytes, file: str, start: int, end: int) -> list[Any] | None:
    """What the reference ``decode`` gives for the records of ``data[start:end]`` (whole lines) when reading all
    of ``data``, without reading the rest: the window is given with one blank line for each line before it, so
    that the line numbers in its reasons count from the file's first line, and its offsets are moved back by
    the difference. None (the decoder's record state put back) where this cannot stand for the whole read:

    - the decoder's records depend on each other (``Decoder.independent_records``: DataHub's update halves);
    - it is left between two records that belong together (``Decoder.between_records``: a Kafka key record);
    - the window rejected a record: a record the reference cannot parse is parsed on past its line, and what
      the reason says of it can depend on text after the window (a record cut short swallows the next one and
      fails on the line after that; found by the differential fuzz test). Valid records end at their last brace.
    """
    if not decoder.independent_records:
        return None
    saved = decoder.checkpoint()
    items = list(reference_from(decoder, data, file, start, end))
    if any(type(item) is Rejected for item in items) or not decoder.between_records():
        decoder.rollback(saved)
        return None
    return items


def reference_from(decoder: Decoder, data: bytes, file: str, start: int, end: int) -> Iterator[Any]:
    """The reference's items of the records of ``data[start:end]`` (``start``: a line's first byte) read alone:
    given one blank line for each line before ``start`` (so that the line numbers in reasons count from the
    file's first line), their offsets moved back by the difference. Only for a decoder whose records are
    independent (``Decoder.independent_records``): for one whose records join, what comes before matters."""
    lines = data.count(b"\n", 0, start)
    shift = start - lines
    for item in decoder.decode(b"\n" * lines + data[start:end], file):
        item.source = Source(item.source.file, item.source.offset + shift)
        yield item


def guarded_span(
    decoder: Decoder,
    decode_span: Callable[[bytes, str, int], pa.RecordBatch | tuple[pa.RecordBatch, int] | None],
    span: bytes,
    file: str,
    offset: int,
) -> pa.RecordBatch | tuple[pa.RecordBatch, int] | None:
    """``decode_span``'s read of ``span``, or None where it raises: whatever the fast path cannot decide is the
    reference's (``decoder.decode``) to decide, record by record, and never fails the batch. The decoder's
    record state is put back as the span found it (``Decoder.checkpoint``), so the reference announces what it
    would have; the fault is logged (it is a gap in the fast path, worth a look), with the file and offset."""
    saved = decoder.checkpoint()
    try:
        return decode_span(span, file, offset)
    except Exception as exc:  # any fault of the fast path: the reference reads from this span on
        decoder.rollback(saved)
        LOG.warning(
            "%s: the columnar path gave up at byte %d (%s: %s); the reference decoder reads from there",
            file,
            offset,
            type(exc).__name__,
            str(exc)[:200],
            exc_info=True,
        )
        return None


# How a column's values are judged by :func:`image_array`: kept as their JSON text when the reference keeps the
# parsed value of that JSON type unchanged (``UNNAMED``: a column its schema does not name, any scalar), else
# converted one at a time (``CONVERT``).
UNNAMED, INT, FLOAT, BOOL, STR, CONVERT = range(6)
# Integer dates and timestamps (days; milli-, micro-, nanoseconds since the epoch): converted at once
# (``_with_epoch_texts``) where the value is a JSON integer of the years 1000-9999, else like ``CONVERT``; the
# kinds ``native.epoch_texts`` reads.
DATE_DAYS, TS_MILLIS, TS_MICROS, TS_NANOS = range(6, 10)
# A decimal the reference reads from a JSON number or from text (``Decimal(text)``): a number is kept as its text,
# text spelt as ``Decimal`` writes it loses its quotes (``_with_decimal_texts``), anything else like ``CONVERT``.
TEXT_DECIMAL = 10
#: Text ``str(Decimal(text))`` gives back unchanged (with GoldenGate JSON's respelling rules on top).
_PLAIN_DECIMAL = r'^"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?"$'
#: The integer logical kinds by ``(logical kind, units per second)`` (``kafka_connect.INTEGER_LOGICAL``'s).
EPOCH_KINDS = {("date", 0): DATE_DAYS, ("timestamp", 1_000): TS_MILLIS}
EPOCH_KINDS |= {("timestamp", 1_000_000): TS_MICROS, ("timestamp", 1_000_000_000): TS_NANOS}
_KIND_OF_KEPT = {(int,): INT, (int, Decimal): FLOAT, (bool,): BOOL, (str,): STR}
#: What a converter gives for a value the reference drops from its image, or refuses (it words why).
DROPPED, REFUSED = object(), object()


def kind_of_kept(kept: tuple[type, ...]) -> int:
    """The kind of a field whose values the reference keeps when of exactly these Python types."""
    return _KIND_OF_KEPT.get(kept, CONVERT)


def judged_slow(
    texts: pa.Array, kinds: np.ndarray, probes: tuple[bytes, ...] | None, shapes: JsonShapes | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Which values must be converted one at a time, and which of those hold one of ``probes`` (the texts of
    a value the reference drops: the converter gets to see it). ``shapes``: the texts' (:func:`json_shapes`)."""
    shape = json_shapes(texts) if shapes is None else shapes
    fast = shape.null.copy()
    fast |= (kinds == UNNAMED) & ~shape.spelt
    fast |= (kinds == INT) & shape.integer
    fast |= (kinds == FLOAT) & shape.number
    fast |= (kinds == BOOL) & shape.boolean
    fast |= (kinds == STR) & shape.string & ~shape.spelt
    fast |= (kinds == TEXT_DECIMAL) & shape.number
    probed = np.zeros(len(kinds), bool)
    for probe in probes or ():
        if probe == b"\\":
            probed |= shape.backslash
        else:
            probed |= np.asarray(holding(texts, probe).to_numpy(zero_copy_only=False), bool)
    return ~fast | probed, probed


class Unsplit(Exception):
    """An image the splitter does not read (not the compact object the dict reader writes back): the span is read
    again with the images as dicts (:func:`split_first`)."""


#: An image member that is JSON ``null``, as the reader with raw images holds it.
_NULL = Raw(b"null")


def image_or_none(value: Any) -> Any:
    """An image member as read (a dict, a ``Raw`` object text, ``None``, ``UNSET``): None where there is no image."""
    if value is UNSET or value is None or (type(value) is Raw and len(value) == 4 and value == _NULL):
        return None
    return value


def split_first(read: Callable[[bool], Any]) -> Any:
    """``read(split)`` with the images as raw texts to split in C where the splitter runs
    (``native.available("json_objects")``), else (or where it does not read an image: :class:`Unsplit`) with the
    images as dicts."""
    if native.available("json_objects"):
        try:
            return read(True)
        except Unsplit:
            pass
    return read(False)


class _Split(NamedTuple):
    """A column of image objects split into their members: names and value texts in record order, the member
    count of each record, which records hold no image, and each record's layout (an index into ``layouts``:
    the names of one distinct member list; -1: no image)."""

    names: pa.Array
    texts: pa.Array
    sizes: np.ndarray
    absent: np.ndarray
    layout: list[int]
    layouts: list[list[str]]


def split_images(images: list[Any]) -> _Split:
    """``images`` (each a ``Raw`` object text or None) split by the C splitter (``native.split_objects``), exactly as
    the dict reader reads them; :class:`Unsplit` where one is not the compact object that reader writes back
    byte for byte (blanks between members, an escape in a name, a name twice, text that is not UTF-8)."""
    texts = [_NULL if image is None else image for image in images]
    lengths = np.fromiter(map(len, texts), np.int64, len(texts))
    offsets = np.zeros(len(texts) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    split = native.split_objects(b"".join(texts), offsets)
    if split is None:
        raise Unsplit
    counts, layout_of, name_offsets, name_data, value_offsets, value_data, firsts, entries = split
    try:
        names = pa.Array.from_buffers(
            pa.large_string(), entries, [None, pa.py_buffer(name_offsets), pa.py_buffer(name_data)]
        )
        values = pa.Array.from_buffers(
            pa.large_string(), entries, [None, pa.py_buffer(value_offsets), pa.py_buffer(value_data)]
        )
        names.validate(full=True)  # UTF-8
        values.validate(full=True)
    except pa.ArrowInvalid:
        raise Unsplit from None
    layouts = [names.slice(first, count).to_pylist() for first, count in firsts]
    if any(len(set(columns)) != len(columns) for columns in layouts):
        raise Unsplit  # a name twice: the dict reader keeps the last, and its write-back differs
    sizes = np.frombuffer(counts, np.int32)
    return _Split(names, values, np.maximum(sizes, 0), sizes < 0, np.frombuffer(layout_of, np.int32).tolist(), layouts)


class Kept(list):
    """:func:`image_array`'s column names of each image as kept (None: no image), and where the images were split in
    C and none dropped a value, each one's ``layout`` (images of one layout share one name list; -1: no image)."""

    layout: list[int] | None = None


def _walk_split(images: list[Any], kinds: list[dict[str, int]] | None) -> tuple:
    """:func:`image_array`'s walk of raw image texts: split in C, each value's kind looked up once per layout."""
    split = split_images(images)
    by_layout: dict[tuple[int, int], np.ndarray] = {}
    parts = []
    for kind, layout in zip(kinds or (), split.layout, strict=kinds is not None):
        if layout < 0:
            continue
        found = by_layout.get((id(kind), layout))
        if found is None:
            get = kind.get
            found = by_layout[(id(kind), layout)] = np.array(
                [get(name, UNNAMED) for name in split.layouts[layout]], np.int8
            )
        parts.append(found)
    kinds_of = np.concatenate(parts) if parts else np.zeros(0 if kinds is not None else len(split.texts), np.int8)
    kept = Kept(map([*split.layouts, None].__getitem__, split.layout))  # layout -1: None
    kept.layout = split.layout
    return split.names, split.texts, kinds_of, split.sizes.astype(np.int64), kept, split.absent


def _walk_dicts(images: list[dict[str, Any] | None], kinds: list[dict[str, int]] | None) -> tuple | None:
    """:func:`image_array`'s walk of image dicts (of ``Raw`` JSON texts) in Python; None: text that is not UTF-8."""
    names: list[str] = []
    raws: list[Any] = []
    flat_kinds: list[int] = []
    # per kinds dict, the last record's column names and their kinds: the records of one schema list the same
    # columns in the same order, so a list comparison stands in for a lookup per value
    last: dict[int, tuple[list[str], list[int]]] = {}
    # each image's column names (None: no image) and value count, gathered in the one pass over the images
    kept = Kept()
    counts: list[int] = []
    absent = np.zeros(len(images), bool)
    for record, kind in zip(images, [{}] * len(images) if kinds is None else kinds, strict=True):
        if record:
            columns = list(record)
            kept.append(columns)
            counts.append(len(columns))
            names.extend(columns)
            raws.extend(record.values())
            seen = last.get(id(kind))
            if seen is None or seen[0] != columns:
                get = kind.get
                seen = last[id(kind)] = (columns, [get(name, UNNAMED) for name in columns])
            flat_kinds.extend(seen[1])
        else:
            if record is None:
                absent[len(kept)] = True
            kept.append(None if record is None else [])
            counts.append(0)
    texts = raw_texts(raws)
    if texts is None:
        return None
    return pa.array(names, pa.string()), texts, np.array(flat_kinds, np.int8), np.array(counts, np.int64), kept, absent


def image_array(
    images: list[Any],
    kinds: list[dict[str, int]] | None,
    convert: Callable[[int, str, str, bool], Any],
    probes: tuple[bytes, ...] | None,
    unavailable: list[list[str]] | None,
    type_: pa.DataType,
    dropped_text: str | None = None,
    split: bool = False,
) -> tuple[pa.MapArray, Kept] | None:
    """One ``map<string,string>`` column of the records' images as the builder writes it, and each image's column
    names as kept; None: a value the reference refuses or text that is not valid Unicode. ``images``: per record
    a dict of ``Raw`` JSON texts, or with ``split`` the image's ``Raw`` object text (split in C: :class:`Unsplit`
    where it cannot be), None for no image.

    ``kinds``: per record, its columns' kinds (None: every column ``UNNAMED``). ``convert(record, column, text,
    probed)``: the reference's value as JSON text, :data:`DROPPED` (listed in ``unavailable[record]``) or
    :data:`REFUSED`.
    ``dropped_text``: a JSON text ``convert`` drops wherever it is a whole value and holds a probe (Debezium's
    unavailable-value placeholder): dropped here, without a call per value (a tenth of a bench image's values).
    """
    walked = _walk_split(images, kinds) if split else _walk_dicts(images, kinds)
    if walked is None:
        return None
    name_array, texts, kinds_of, sizes, kept, absent = walked
    shapes = json_shapes(texts)
    if kinds is None and probes is None:  # every column UNNAMED: only the texts the builder spells otherwise
        slow, probed = shapes.spelt & ~shapes.null, np.zeros(len(texts), bool)
    else:
        slow, probed = judged_slow(texts, kinds_of, probes, shapes)
        # these three clear ``slow`` where they convert
        texts = _with_epoch_texts(texts, kinds_of, slow, probed, shapes.integer)
        texts = _with_decimal_texts(texts, kinds_of, slow, probed)
        texts = with_connect_decimals(texts, kinds_of, slow, probed)
    dropped = np.zeros(len(texts), bool)
    if dropped_text is not None and probed.any():
        dropped = np.asarray(pc.equal(texts, dropped_text).to_numpy(zero_copy_only=False), bool) & probed
        slow &= ~dropped
    if slow.any() or dropped.any():
        owners = np.repeat(np.arange(len(images)), sizes)  # each value's record
    if slow.any():
        # only the slow values go through Python (a few percent of them: the rest stay in Arrow)
        at = np.flatnonzero(slow)
        slow_texts = texts.take(pa.array(at)).to_pylist()
        slow_names = name_array.take(pa.array(at)).to_pylist()
        changed: list[int] = []
        replacements: list[Any] = []
        slow_values = zip(at.tolist(), owners[at].tolist(), slow_names, slow_texts, probed[at].tolist(), strict=True)
        for index, owner, name, text, probe in slow_values:
            value = convert(owner, name, text, probe)
            if value is DROPPED:
                dropped[index] = True
            elif value is REFUSED:
                return None
            else:
                changed.append(index)
                replacements.append(value)
        if changed:
            texts = replaced(texts, np.array(changed, np.int64), pa.array(replacements, texts.type))
    values = texts.cast(pa.string())
    if dropped.any():
        at = np.flatnonzero(dropped)
        gone: dict[int, set[str]] = {}
        for owner, name in zip(owners[at].tolist(), name_array.take(pa.array(at)).to_pylist(), strict=True):
            gone.setdefault(owner, set()).add(name)
        kept.layout = None
        for owner, names in gone.items():
            unavailable[owner].extend(names)  # type: ignore[index]
            kept[owner] = [column for column in kept[owner] if column not in names]  # new lists: layouts share theirs
        keep = pa.array(~dropped, pa.bool_())
        values = values.filter(keep)
        name_array = name_array.filter(keep)  # in Arrow: a Python list of the kept names cost a tenth of the column
        sizes = np.bincount(owners[~dropped], minlength=len(images))
    offsets = np.zeros(len(images) + 1, np.int32)
    np.cumsum(sizes, out=offsets[1:])
    array = pa.MapArray.from_arrays(
        pa.array(offsets),
        name_array.cast(pa.string()),
        values,
        type=type_,
        mask=pa.array(absent),
    )
    return array, kept


def decoded_batch(rows: int, columns: dict[str, Any]) -> pa.RecordBatch:
    """A record batch of the decode task's file schema from ``columns`` by name (arrays, or lists typed by the
    schema's fields), the columns not given null."""
    nulls = pa.nulls(rows)
    arrays = []
    for field in DECODED_FILE_SCHEMA:
        given = columns.get(field.name)
        if given is None:
            arrays.append(nulls.cast(field.type))
        elif isinstance(given, pa.Array):
            arrays.append(given)
        elif field.name == "keys":
            arrays.append(repeated_values(given, field.type))
        else:
            arrays.append(pa.array(given, field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=DECODED_FILE_SCHEMA)


def events_before(batch: pa.RecordBatch, at: np.ndarray, rows: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with the events ``rows`` (the same schema) put in, each just before the record of ``batch`` at its
    index in ``at`` (e.g. a ``SCHEMA`` announcement)."""
    # record i sorts at 2i + 1, an event before it at 2i
    order = np.argsort(np.concatenate((np.arange(batch.num_rows) * 2 + 1, at * 2)), kind="stable")
    both = pa.Table.from_batches([batch, rows]).combine_chunks()
    return both.take(pa.array(order)).to_batches()[0]


def repeated_values(values: list[Any], type_: pa.DataType) -> pa.Array:
    """``pa.array(values, type_)`` of values that are a few objects repeated (each event of a schema holds its
    key list): each distinct object converted once and taken into place (100k key lists took 84 ms to convert,
    a twentieth of a BLOB span's decode)."""
    distinct = {id(value): value for value in values}
    code_of = {key: code for code, key in enumerate(distinct)}
    codes = pa.array([code_of[id(value)] for value in values], pa.int32())
    return pa.array(list(distinct.values()), type_).take(codes)


def builder_text(value: Any) -> Any:
    """``value`` as the builder writes it (``value_text``); :data:`REFUSED` for a string holding a lone surrogate
    (the builder's escape rule applies: the reference writes it)."""
    if type(value) is str and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return REFUSED
    return value_text(value)


def reference_converter(value_of: Callable[[int, str, Any], Any]) -> Callable[[int, str, str, bool], Any]:
    """:func:`image_array`'s ``convert`` from the reference's conversion of one parsed value,
    ``value_of(record, column, value)``: its JSON text, or :data:`REFUSED` where the reference raises
    (it words why)."""

    def convert(owner: int, column: str, text: str, _probed: bool) -> Any:
        try:
            value = value_of(owner, column, VALUE_READER.decode(text))
        except (ValueError, RecursionError):
            return REFUSED
        return builder_text(value)

    return convert


def _with_epoch_texts(
    texts: pa.Array, kinds: np.ndarray, slow: np.ndarray, probed: np.ndarray, integer: np.ndarray
) -> pa.Array:
    """``texts`` with each integer date or timestamp (``DATE_DAYS``, ``TS_*``: a JSON integer of the years
    1000-9999, not probed) replaced by its converted JSON text, as the reference's ``date_from_days`` /
    ``timestamp_from_epoch`` and the builder spell it; those are no longer ``slow``. ``integer``: which texts are
    JSON integers (:func:`json_shapes`)."""
    candidates = np.flatnonzero((kinds >= DATE_DAYS) & (kinds <= TS_NANOS) & ~probed)
    if not len(candidates):
        return texts
    rows = candidates[integer[candidates]]
    return with_spelt(texts, slow, rows, native.epoch_texts(texts, rows, kinds[rows]))


def _with_decimal_texts(texts: pa.Array, kinds: np.ndarray, slow: np.ndarray, probed: np.ndarray) -> pa.Array:
    """``texts`` with each ``TEXT_DECIMAL`` string that ``Decimal`` spells back unchanged (a plain decimal, none
    of the respelling rules' cases) replaced by that number's text; those are no longer ``slow``."""
    candidates = np.flatnonzero((kinds == TEXT_DECIMAL) & slow & ~probed)
    if not len(candidates):
        return texts
    chosen = texts.take(pa.array(candidates))
    inner = pc.utf8_slice_codeunits(chosen, 1, -1)
    done = _plain_decimals(chosen, inner) & ~json_shapes(inner).spelt
    if not done.any():
        return texts
    at = candidates[done]
    slow[at] = False
    return replaced(texts, at, inner.filter(pa.array(done)))


def _plain_decimals(texts: pa.Array, inner: pa.Array) -> np.ndarray:
    """Which ``texts`` (valid JSON, no nulls; ``inner``: each without its first and last character) match
    :data:`_PLAIN_DECIMAL`: a string whose inside is a plain decimal (``native.number_forms``: any digits, any
    fraction digits, no exponent)."""
    plain = native.number_forms(inner, 2**31 - 1, -1, 0, 1)
    return plain & (first_bytes(texts) == ord('"'))  # a JSON text opening with a quote is a string: it ends with one


_ENVELOPE = msgspec.json.Decoder(dict[str, Raw])
#: The reference scanner's reading of one value (exact numbers) and of a schema block (a repeated member refused).
VALUE_READER = json.JSONDecoder(parse_float=Decimal, parse_constant=Decimal)
SCHEMA_READER = json.JSONDecoder(parse_float=Decimal, parse_constant=Decimal, object_pairs_hook=unique_object)
#: Numbers as the reference's reader reads them (``Decimal``); written back as numbers for the byte check.
_WRITE = msgspec.json.Encoder(decimal_format="number")


class RecordReader:
    """Reads a span of flat JSON records, one compact record per line, each a struct of ``members`` (name -> type, in
    the order the writer writes them; a record with another member is not read), the members ordered as the span's
    first record orders them (members it lacks placed where the writer writes them).

    msgspec must write the records back to the span's exact bytes: so no blanks, no member twice (a repeated member
    would be dropped by the read and missing from the write), no escape msgspec spells otherwise, and numbers spelt
    as the reference's reader reads them (``Decimal``). ``images``: the types of the image members when a span is read
    ``split``, their image objects read as ``Raw`` texts (:func:`image_array`'s ``split``): a ``Raw`` is written back
    as read, so the splitter checks what the write-back of a dict would have."""

    #: readers kept (one per member order and ``split``; past this the reference reads)
    max_readers = 128

    def __init__(self, name: str, members: dict[str, object], images: dict[str, object] | None = None) -> None:
        self.name, self.members, self.images = name, members, images or {}
        self._readers: dict[tuple, msgspec.json.Decoder] = {}

    def span(self, span: bytes, split: bool = False) -> tuple[list, np.ndarray, list[bytes] | None] | None:
        """The records of a span, the offset of each in it and (here None) their schema blocks; None when one is
        not in this shape or is at the record size limit. ``split``: the image members as ``Raw`` texts."""
        if not span or span.startswith(b"\xef\xbb\xbf"):
            return None
        text = span if span.endswith(b"\n") else span + b"\n"
        records = self.records(text, split)
        starts = None if records is None else record_starts(text, len(records))
        return None if starts is None else (records, starts, None)

    def read_batch(self, span: bytes, offset: int, batch: Callable[[list, np.ndarray, Any, bool], Any]) -> Any:
        """A format's ``decode_span``: ``batch(records, starts, schemas, split)`` of the span's records (their
        starts counted from ``offset``), the images read as ``Raw`` texts to split in C first (:func:`split_first`);
        None where the span is not in this shape."""

        def read(split: bool) -> Any:
            read = self.span(span, split)
            if read is None:
                return None
            records, starts, schemas = read
            return batch(records, starts + offset, schemas, split)

        return split_first(read)

    def records(self, text: bytes, split: bool = False) -> list | None:
        """The records of ``text`` (whole lines), or None when it is not in this shape."""
        try:
            reader = self._reader(self._key(_ENVELOPE.decode(text[: text.index(b"\n")])), split)
            if reader is None:
                return None
            records = reader.decode_lines(text)
            if not records or _WRITE.encode_lines(records) != text:
                return None
        except (msgspec.MsgspecError, UnicodeError, KeyError, RecursionError):  # RecursionError: nested too deep
            return None
        return records

    def _key(self, first: dict[str, Raw]) -> tuple:
        """What picks the reader of a span: its first record's member names."""
        return tuple(first)

    def _reader(self, names: tuple, split: bool) -> msgspec.json.Decoder | None:
        reader = self._readers.get((names, split))
        if reader is None:
            if not self._readable(names) or len(self._readers) >= self.max_readers:
                return None
            struct = self._struct(names, split)
            reader = self._readers[(names, split)] = msgspec.json.Decoder(struct, float_hook=Decimal)
        return reader

    def _readable(self, names: tuple) -> bool:
        """Whether this reads records of these member names (:meth:`_key`)."""
        return set(names) <= self.members.keys()

    def _struct(self, names: tuple, split: bool) -> type:
        """The struct of records whose members are in the order ``names``."""
        kinds = {**self.members, **(self.images if split else {})}
        fields = [(n, kinds[n] | UnsetType, UNSET) for n in writer_order(names, list(self.members))]
        return msgspec.defstruct(f"{self.name}Record", fields, forbid_unknown_fields=True)


class EnvelopeReader(RecordReader):
    """Reads a span of Kafka Connect ``{"schema", "payload"}`` records (either member first: DataHub's writer
    sorts them) as :class:`RecordReader` reads flat ones, the schema block kept as ``Raw`` and the payload as a
    struct of ``members`` (:class:`RecordReader`'s; ``images`` too). ``tail``: other members the envelope may hold
    (name -> type, in the order the writer writes them)."""

    max_readers = 64

    def __init__(
        self,
        name: str,
        members: dict[str, object],
        tail: dict[str, object] | None = None,
        images: dict[str, object] | None = None,
    ) -> None:
        super().__init__(name, members, images)
        self.tail = tail or {}

    def span(self, span: bytes, split: bool = False) -> tuple[list, np.ndarray, list[bytes]] | None:
        """:meth:`RecordReader.span`, with each record's schema block (:func:`schema_texts`); None also where one
        may nest deeper than the reference reads (:func:`shallow`)."""
        read = super().span(span, split)
        if read is None:
            return None
        records, starts, _ = read
        schemas = schema_texts([r.schema for r in records])
        if not shallow(span if span.endswith(b"\n") else span + b"\n", starts, schemas):
            return None
        return records, starts, schemas

    def _key(self, first: dict[str, Raw]) -> tuple:
        """The first record's envelope member names and its payload's."""
        return tuple(first), tuple(_ENVELOPE.decode(first["payload"]))

    def _readable(self, names: tuple) -> bool:
        outer, inner = names
        return {"schema", "payload"} <= set(outer) <= {"schema", "payload", *self.tail} and super()._readable(inner)

    def _struct(self, names: tuple, split: bool) -> type:
        """The struct of records whose envelope members are in the order ``outer`` and payload members in the order
        ``inner``."""
        outer, inner = names
        payload = super()._struct(inner, split)
        types: dict[str, Any] = {"schema": Raw, "payload": payload}
        members = [(n, types[n]) if n in types else (n, self.tail[n] | UnsetType, UNSET) for n in outer]
        members += [(n, t | UnsetType, UNSET) for n, t in self.tail.items() if n not in outer]
        return msgspec.defstruct(f"{self.name}Envelope", members, forbid_unknown_fields=True)


def writer_order(names: tuple[str, ...], canonical: list[str]) -> list[str]:
    """Every member of ``canonical``, in the order of ``names``, the others placed where the writer writes them:
    just before the first of ``names`` that follows them in ``canonical``."""
    order = list(names)
    for index, name in enumerate(canonical):
        if name not in order:
            later = [order.index(n) for n in canonical[index + 1 :] if n in order]
            order.insert(min(later) if later else len(order), name)
    return order


@dataclass(slots=True)
class SpanRow:
    """One record of a span as :class:`EnvelopeColumns` keeps it: the scalars its format's envelope gives, the
    images as read (a dict of ``Raw`` texts, or with ``split`` the ``Raw`` object text; None), its schema
    plan, and what the format needs to write its ``meta`` (:meth:`EnvelopeColumns.metas`). ``event_ts``: a
    ``datetime``, or integer microseconds since the epoch (the column converts those at once)."""

    table: str
    op: str
    seq: str
    event_ts: Any
    tx_id: str | None
    tx_pos: int | None
    keys: list[str] | None
    before: Any
    after: Any
    plan: Any
    meta: Any


@dataclass(slots=True)
class SpanColumns:
    """A span's records as :class:`EnvelopeColumns` assembles them (:meth:`EnvelopeColumns.columns`): the scalar
    columns by name (arrays, or lists: :func:`decoded_batch`; ``meta`` too where the format writes it before the
    images are read: then its converter drops no value), each record's images as read and its plan (``plans``
    None: no plans, every column ``UNNAMED``), and the format's own state of the span for
    :meth:`EnvelopeColumns.metas` and ``finish`` (the :class:`SpanRow` list of :meth:`EnvelopeColumns.row`)."""

    scalars: dict[str, Any]
    before: list
    after: list
    plans: list | None
    rows: Any
    #: each event's first byte (the records' starts, unless :meth:`EnvelopeColumns.joined` joined records)
    offsets: Any
    #: how many of the span's records the events came from (the next span starts at the first one left)
    used: int


class EnvelopeColumns(SpanReader):
    """The columnar engine of the JSON formats (``{"schema", "payload"}`` records, Kafka Connect's shape: Debezium
    JSON, CDL JSON; flat ones: GoldenGate JSON): msgspec reads a span's records at once (:attr:`reader`), each
    distinct schema block is planned once (:meth:`read_plan`, kept per decoder), each record's scalars come from
    the format's own envelope (:meth:`row`, or the whole span's at once: :meth:`columns`; None where the path
    stops), and the image values are judged a column at a time (:func:`image_array` by the plan's kinds, the rest
    through the format's converter). A format states only those hooks, next to its reference decoder; the rules
    are the reference's."""

    #: the records' reader (member names and images as the format writes them)
    reader: RecordReader
    #: the payload members holding the before and the after image
    image_members: tuple[str, str] = ("before", "after")
    #: schema plans kept per decoder (distinct schema blocks of a batch: a few per table)
    max_plans = 256

    def __init__(self, decoder: Decoder) -> None:
        super().__init__(decoder)
        self.plans: dict[bytes, Any] = {}

    def read_plan(self, schema: bytes) -> Any | None:
        """The plan of a schema block's text (None: one the reference refuses or reads otherwise)."""
        raise NotImplementedError

    def columns(self, records: list, schemas: list[bytes] | None, starts: np.ndarray) -> SpanColumns | None:
        """The span's columns (None: the reference reads the span; ``starts``: each record's first byte): here a
        :class:`SpanRow` per record (:meth:`record_row`), joined into events (:meth:`joined`); a format may read
        its scalars a column at a time instead."""
        rows = self._rows(records, schemas)  # type: ignore[arg-type]
        events = None if rows is None else self.joined(rows, starts)
        if events is None:
            return None
        rows, offsets, used = events
        images = [row.before for row in rows], [row.after for row in rows]
        return SpanColumns(_scalars(rows), *images, [row.plan for row in rows], rows, offsets, used)

    def row(self, payload: dict[str, Any], plan: Any) -> SpanRow | None:
        """One record's row through the format's envelope (None: the reference reads the span)."""
        raise NotImplementedError

    def record_row(self, record: Any, plan: Any) -> SpanRow | None:
        """One record's row: :meth:`row` of its payload as the reference's dict holds it (every member the reader
        has, in order); a format may read the record's struct itself (None: the reference reads the span)."""
        p = record.payload
        payload = {f: v for f in p.__struct_fields__ if (v := getattr(p, f)) is not UNSET}
        for member in self.image_members:
            if member in payload:
                payload[member] = image_or_none(payload[member])
        return self.row(payload, plan)

    def joined(self, rows: list[SpanRow], starts: np.ndarray) -> tuple[list[SpanRow], Any, int] | None:
        """The span's events from its records' rows (``starts``: each one's first byte): (events, each event's
        first byte, how many records they came from). Here each row is its event; a format whose records join
        (DataHub's update halves) may read fewer records (the next span starts at the first one left). None: the
        reference reads the span."""
        return rows, starts, len(rows)

    def kinds(self, plan: Any, image: str) -> dict[str, int]:
        """How each column's values of ``image`` are judged."""
        raise NotImplementedError

    def converter(self, image: str, plans: list[Any] | None) -> Callable[[int, str, str, bool], Any]:
        """The reference's conversion of one value of ``image`` (:func:`image_array`'s ``convert``)."""
        raise NotImplementedError

    def placeholder(self) -> tuple[tuple[bytes, ...] | None, str | None]:
        """(probes, dropped text) of a value placeholder dropped from images (:func:`image_array`); none here."""
        return None, None

    def metas(self, rows: Any, unavailable: list[list[str]]) -> list[str]:
        """Each row's ``meta`` text, once the images are read (``unavailable``: the columns each dropped); not asked
        where :meth:`columns` gave ``meta``. ``rows``: :attr:`SpanColumns.rows`."""
        return [row.meta for row in rows]

    def finish(self, batch: pa.RecordBatch, rows: Any, kept: dict[str, list], file: str) -> pa.RecordBatch:
        """The span's batch as given (a format may add events, e.g. ``SCHEMA`` announcements; ``kept``: each
        image's column names, :func:`image_array`'s)."""
        return batch

    def span(self, span: bytes, file: str, offset: int) -> pa.RecordBatch | tuple[pa.RecordBatch, int] | None:
        return self.reader.read_batch(span, offset, lambda *read: self._batch(*read, file))

    def _plan(self, raw: bytes) -> Any | None:
        plan = self.plans.get(raw)
        if plan is None:
            plan = self.read_plan(raw)
            if plan is None:
                return None
            if len(self.plans) >= self.max_plans:
                self.plans.clear()
            self.plans[raw] = plan
        return plan

    def _rows(self, records: list, schemas: list[bytes]) -> list[SpanRow] | None:
        rows = []
        for record, schema in zip(records, schemas, strict=True):
            plan = self._plan(schema)
            if plan is None:
                return None
            row = self.record_row(record, plan)
            if row is None:
                return None
            rows.append(row)
        return rows

    def _batch(
        self, records: list, starts: np.ndarray, schemas: list[bytes] | None, split: bool, file: str
    ) -> pa.RecordBatch | tuple[pa.RecordBatch, int] | None:
        span = self.columns(records, schemas, starts)
        if span is None:
            return None
        n, plans = len(span.before), span.plans
        probes, dropped = self.placeholder()
        # the columns each record dropped, for ``metas`` (a format that gives ``meta`` drops none)
        unavailable = None if "meta" in span.scalars else [[] for _ in range(n)]
        kept: dict[str, list] = {}
        try:
            arrays = {}
            for member, column in zip(self.image_members, ("before", "after"), strict=True):
                images = span.before if column == "before" else span.after
                kinds = None if plans is None else [self.kinds(plan, member) for plan in plans]
                converter = self.converter(member, plans)
                field_type = DECODED_FILE_SCHEMA.field(column).type
                built = image_array(images, kinds, converter, probes, unavailable, field_type, dropped, split)
                if built is None:
                    return None
                arrays[column], kept[column] = built
            meta = span.scalars["meta"] if unavailable is None else self.metas(span.rows, unavailable)
            where = {"source_file": [file] * n, "source_offset": pa.array(span.offsets, pa.int64())}
            batch = decoded_batch(n, {**arrays, **span.scalars, "meta": meta, **where})
        except (pa.ArrowException, UnicodeEncodeError, OverflowError):  # text that is not valid Unicode, ...
            return None
        batch = self.finish(batch, span.rows, kept, file)
        return batch if span.used == len(records) else (batch, int(starts[span.used] - starts[0]))


def _scalars(rows: list[SpanRow]) -> dict[str, list[Any]]:
    """The rows' scalar columns by name (:func:`decoded_batch`)."""
    return {
        "table": [row.table for row in rows],
        "op": [row.op for row in rows],
        "seq": [row.seq for row in rows],
        "event_ts": [row.event_ts for row in rows],
        "tx_id": [row.tx_id for row in rows],
        "tx_pos": [row.tx_pos for row in rows],
        "keys": [row.keys for row in rows],
    }
