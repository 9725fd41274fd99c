"""GoldenGate JSON read a span of records at a time into Arrow columns: the decode task's fast path.

Why: the reference decoder (:mod:`.goldengate_json`) builds a :class:`ChangeEvent` per record and the
decode task's builder renders every image value back to JSON text, about 60-80 us a record in Python,
while the naive Spark job reads the same JSON in the JVM. Most landing files are the formatter's default
shape: one compact record per line, UTF-8, the members GoldenGate writes in the order it writes them,
scalar column values. For a span of such records msgspec reads every record in one C call, keeps each
image as its JSON text (``Raw``), the C splitter (``columnar.split_images``) cuts the images into their
column names and value texts (the map values the builder would have written, checked below) straight into
Arrow's buffers, and the columns are built a column at a time (``meta`` too, where its texts need no escape).
Where the splitter is not built, or an image is not the compact object it reads, msgspec reads the images as
dicts of ``Raw`` value texts instead (the same columns, slower).

What makes it exact (the same record batch as the reference and the builder, held so by
``tests/formats/test_goldengate_json_columns.py``):

- msgspec writes the records back byte for byte (``encode_lines``): no blanks, no escapes msgspec
  would spell otherwise, no member it does not know, no member twice (a repeated column would be
  dropped by the read and missing from the write). So the text is what both readers read alike.
- A value's text is the builder's when it is ``null``, ``true``, ``false``, a plain integer or
  decimal (``Decimal``'s own spelling: not ``-0``, no exponent, not below 1e-6), or a string without
  a backslash; any other value is read by the reference's JSON reader and written by the builder's
  writer, one at a time.
- A record with a column its table's layout lacks gets the reference's ``SCHEMA`` event just before it
  (``_new_columns``: a piece that starts with a partial update learns the other columns later).
- A nested value, a string that is not valid Unicode, a record the reference would reject, or anything
  else outside the shape: the span is left to the reference decoder (``None``), which reads on from there
  (``GoldenGateJsonDecoder.decode_columns``).
"""

from __future__ import annotations

from itertools import chain
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from msgspec import UNSET, Raw, UnsetType

from cdclake.events.arrow import DECODED_FILE_SCHEMA
from cdclake.events.arrow_text import replaced
from cdclake.events.change import meta_text, value_text
from cdclake.formats._gg_common import OP_TS, SEQ_WIDTH, parse_ts, pos_to_seq
from cdclake.formats.columnar import (
    VALUE_READER,
    SpanReader,
    raw_texts,
    record_starts,
    respelt,
    split_first,
    split_images,
    writer_order,
)
from cdclake.registry import register_columns

if TYPE_CHECKING:
    from cdclake.formats.goldengate_json import GoldenGateJsonDecoder


#: The members this path reads, and how (any other member: the reference reads the span).
_MEMBERS: dict[str, object] = {
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
#: The image members as one ``Raw`` object text each, for the C splitter (``columnar.split_images``).
_IMAGES = ("before", "after")
_NAMES = msgspec.json.Decoder(dict[str, Raw])
_READERS: dict[tuple[tuple[str, ...], bool], msgspec.json.Decoder] = {}


def _reader(names: tuple[str, ...], split: bool) -> msgspec.json.Decoder | None:
    """A reader of records with these members in this order (the writer's: ``encode_lines`` writes a
    struct's fields in their order, so the same order writes the same bytes back), the images as dicts of
    ``Raw`` value texts or, with ``split``, as one ``Raw`` text each; None: a member this path does not read."""
    reader = _READERS.get((names, split))
    if reader is None:
        if not set(names) <= _MEMBERS.keys() or len(_READERS) >= 128:
            return None
        order = writer_order(names, list(_MEMBERS))
        fields = [(n, (Raw if split and n in _IMAGES else _MEMBERS[n]) | UnsetType, UNSET) for n in order]
        record = msgspec.defstruct("GoldenGateRecord", fields, forbid_unknown_fields=True)
        reader = _READERS[(names, split)] = msgspec.json.Decoder(record)
    return reader


_WRITE = msgspec.json.Encoder()
#: ``meta`` of the reference's SCHEMA event for a column first seen in a record.
_SCHEMA_EVENT_META = '{"column_source":"record"}'
#: ``op_ts`` as GoldenGate writes it by default, read by one Arrow cast (``_event_times``).
_PLAIN_TS = r"^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}$"
_TS_TYPE = pa.timestamp("us", tz="UTC")


def _read_records(
    decoder: GoldenGateJsonDecoder, text: bytes, names: tuple[str, ...], split: bool, file: str, offset: int
) -> pa.RecordBatch | None:
    """The span's records as :meth:`GoldenGateJsonColumns.span` reads them, the images as dicts or (``split``) as
    raw texts split in C: about a third of a span's decode went to building a Python string and ``Raw`` per image
    member and gathering them back into Arrow (:class:`Unsplit` where the splitter does not read an image)."""
    try:
        reader = _reader(names, split)
        if reader is None:
            return None
        records = reader.decode_lines(text)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):  # e.g. a name not valid UTF-8
        return None
    try:
        # with raw images their texts are written back as read: the splitter checks them (compact objects)
        if not records or _WRITE.encode_lines(records) != text:
            return None
    except (msgspec.EncodeError, UnicodeEncodeError):  # e.g. a lone surrogate from a \ud800 escape
        return None
    starts = record_starts(text, len(records))
    if starts is None:
        return None
    return _batch(decoder, records, starts + offset, file, split)


def _batch(
    decoder: GoldenGateJsonDecoder, records: list, starts: np.ndarray, file: str, split: bool = False
) -> pa.RecordBatch | None:
    """The span's columns, each built over all records at once where it can be (None: outside the shape).
    ``split``: the images are ``Raw`` object texts, split in C."""
    n = len(records)
    ops_by_key = decoder.op_keys.ops
    override, configured = decoder.table_override, decoder.keys
    tables = [override] * n if override else [r.table for r in records]
    ops = [ops_by_key.get(r.op_type) if type(r.op_type) is str else None for r in records]
    positions = [r.pos for r in records]
    if UNSET in tables or "" in tables or None in ops or UNSET in positions or "" in positions:
        return None  # rejected by the reference: no table, an unknown op_type, no pos
    # (a raw ``null`` image is the splitter's to read: no image)
    befores = [None if r.before is UNSET else r.before for r in records]
    afters = [None if r.after is UNSET else r.after for r in records]
    if "TRUNCATE" in ops:
        for index in [i for i, op in enumerate(ops) if op == "TRUNCATE"]:
            befores[index] = afters[index] = None
    splits = (split_images(befores), split_images(afters)) if split else None
    if splits is not None:
        layouts, announced = _split_layouts(decoder._layouts, tables, *splits)
    else:
        layouts, announced = _layouts(decoder._layouts, tables, befores, afters)
    op_ts = [r.op_ts for r in records]
    if UNSET in op_ts:
        return None
    record_keys = [None if r.primary_keys is UNSET else r.primary_keys for r in records]
    key_codes, distinct_keys = _key_codes(record_keys)
    keys = [configured if k is None else configured or list(k) for k in distinct_keys]
    try:
        op_ts_texts, pos_texts = pa.array(op_ts, pa.string()), pa.array(positions, pa.string())
        stamps = _event_times(op_ts, op_ts_texts)
        if stamps is None:
            return None
        arrays = {
            "table": pa.array(tables, pa.string()),
            "op": pa.array(ops, pa.string()),
            "seq": _seqs(positions, pos_texts),
            "event_ts": stamps,
            "keys": pa.array(keys, pa.list_(pa.string())).take(key_codes),
            "meta": _meta_texts(records, record_keys, pos_texts, op_ts_texts, key_codes, distinct_keys),
        }
        for index, (name, images) in enumerate((("before", befores), ("after", afters))):
            type_ = DECODED_FILE_SCHEMA.field(name).type
            image = _image_array(images, type_) if splits is None else _split_image_array(splits[index], type_)
            if image is None:
                return None
            arrays[name] = image
    except (pa.ArrowException, UnicodeEncodeError):  # text that is not valid Unicode: the reference's business
        return None
    nulls = pa.nulls(n)
    columns = []
    for field in DECODED_FILE_SCHEMA:
        if field.name in arrays:
            columns.append(arrays[field.name])
        elif field.name == "source_file":
            columns.append(pa.array([file] * n, pa.string()))
        elif field.name == "source_offset":
            columns.append(pa.array(starts, pa.int64()))
        else:
            columns.append(nulls.cast(field.type))
    batch = pa.RecordBatch.from_arrays(columns, schema=DECODED_FILE_SCHEMA)
    if announced:
        codes = key_codes.to_numpy()
        batch = _with_schema_events(batch, announced, {i: keys[codes[i]] for i, _, _ in announced})
    decoder._layouts = layouts
    return batch


def _with_schema_events(
    batch: pa.RecordBatch, announced: list[tuple[int, list[str], list[str]]], keys: dict[int, Any]
) -> pa.RecordBatch:
    """``batch`` with the reference's ``SCHEMA`` event (``_new_columns``) just before each record that
    announces columns: ``(record index, the table's columns, the added ones)``; it carries the record's
    table, seq, event_ts, keys and source."""
    at = np.array([index for index, _, _ in announced], np.int64)
    rows = batch.take(pa.array(at))
    ddl = [
        meta_text({"columns": [{"name": n, "type": None} for n in known], "added": added, "keys": list(keys[i] or [])})
        for i, known, added in announced
    ]
    replaced = {
        "op": pa.array(["SCHEMA"] * len(at), pa.string()),
        "ddl": pa.array(ddl, pa.string()),
        "meta": pa.array([_SCHEMA_EVENT_META] * len(at), pa.string()),
    }
    for name in ("before", "after"):
        replaced[name] = pa.nulls(len(at), DECODED_FILE_SCHEMA.field(name).type)
    for name, column in replaced.items():
        index = DECODED_FILE_SCHEMA.get_field_index(name)
        rows = rows.set_column(index, DECODED_FILE_SCHEMA.field(index), column)
    # each SCHEMA event sorts just before its record: record i at 2i + 1, its announcement at 2i
    order = np.argsort(np.concatenate((np.arange(batch.num_rows) * 2 + 1, at * 2)), kind="stable")
    both = pa.Table.from_batches([batch, rows]).combine_chunks()
    return both.take(pa.array(order)).to_batches()[0]


def _layouts(
    known_layouts: dict[str, dict[str, None]], tables: list[str], befores: list, afters: list
) -> tuple[dict[str, dict[str, None]], list[tuple[int, list[str], list[str]]]]:
    """The reference's metadata-change rule (``_new_columns``) over the span: a table's first image sets its
    columns; a later image with columns not among them adds them, announced by a ``SCHEMA`` event.
    Returns the decoder's layouts after the span (copies: kept only if the span is read here) and the
    announcements ``(record index, the table's columns, the added ones)``."""
    layouts = dict(known_layouts)
    announced = []
    for index, (table, before, after) in enumerate(zip(tables, befores, afters, strict=True)):
        if not before and not after:  # no columns (a truncate, empty images): nothing said of the layout
            continue
        before, after = before or {}, after or {}
        known = layouts.get(table)
        if known is None:
            layouts[table] = dict.fromkeys([*before, *after])
        elif not (known.keys() >= after.keys() and known.keys() >= before.keys()):
            added = [n for n in dict.fromkeys([*before, *after]) if n not in known]
            known = layouts[table] = {**known, **dict.fromkeys(added)}
            announced.append((index, list(known), added))
    return layouts, announced


def _split_layouts(
    known_layouts: dict[str, dict[str, None]], tables: list[str], before: Any, after: Any
) -> tuple[dict[str, dict[str, None]], list[tuple[int, list[str], list[str]]]]:
    """:func:`_layouts` over split images (``columnar._Split``): each record's columns are its images'
    layouts, and a (table, before layout, after layout) once within the table's columns stays within them
    (they only grow), so the rule runs once per distinct combination that adds columns, not per record."""
    layouts = dict(known_layouts)
    announced = []
    within: set[tuple[str, int, int]] = set()
    for index, combination in enumerate(zip(tables, before.layout, after.layout, strict=True)):
        if combination in within:
            continue
        table, before_layout, after_layout = combination
        names = [
            *(before.layouts[before_layout] if before_layout >= 0 else ()),
            *(after.layouts[after_layout] if after_layout >= 0 else ()),
        ]
        if not names:  # no columns (a truncate, empty images): nothing said of the layout
            continue
        known = layouts.get(table)
        if known is None:
            layouts[table] = dict.fromkeys(names)
        elif not known.keys() >= set(names):
            added = [n for n in dict.fromkeys(names) if n not in known]
            known = layouts[table] = {**known, **dict.fromkeys(added)}
            announced.append((index, list(known), added))
        within.add(combination)
    return layouts, announced


def _key_codes(record_keys: list) -> tuple[pa.Array, list]:
    """Each record's ``primary_keys`` (None: not given) as a code into the distinct lists, and those lists: each
    distinct list is converted once and taken into place (a conversion per record was a twentieth of a span)."""
    index: dict[tuple[str, ...] | None, int] = {}
    distinct: list = []
    codes = []
    for keys in record_keys:
        known = None if keys is None else tuple(keys)
        code = index.get(known)
        if code is None:
            code = index[known] = len(distinct)
            distinct.append(keys)
        codes.append(code)
    return pa.array(codes, pa.int32()), distinct


#: Text that JSON writes otherwise (a quote, a backslash, a control character): such a ``meta`` is written by
#: ``events.meta_text`` one record at a time.
_ESCAPED_TEXT = r'["\\\x00-\x1f]'


def _meta_texts(
    records: list, record_keys: list, positions: pa.Array, op_ts: pa.Array, key_codes: pa.Array, distinct_keys: list
) -> pa.Array:
    """Every record's :func:`_meta_text`, joined a column at a time where its members' texts need no escape and no
    record has ``tokens`` (one ``orjson`` call per record was a tenth of a span's decode); record by record
    otherwise. ``key_codes`` / ``distinct_keys``: the records' ``primary_keys`` (:func:`_key_codes`)."""
    current = [None if r.current_ts is UNSET else r.current_ts for r in records]
    if any(r.tokens is not UNSET and r.tokens is not None for r in records):
        return pa.array([_meta_text(r, k) for r, k in zip(records, record_keys, strict=True)], pa.string())
    current_ts = pa.array(current, pa.string())
    texts = (positions, op_ts, current_ts)
    if any(pc.any(pc.match_substring_regex(t, _ESCAPED_TEXT)).as_py() for t in texts):
        return pa.array([_meta_text(r, k) for r, k in zip(records, record_keys, strict=True)], pa.string())
    keyed = ["" if k is None else f',"primary_keys":{meta_text(k)}' for k in distinct_keys]
    current_part = pc.binary_join_element_wise(',"current_ts":"', current_ts, '"', "", null_handling="emit_null")
    joined = pc.binary_join_element_wise(
        '{"pos":"',
        positions,
        '","op_ts":"',
        op_ts,
        '"',
        pc.coalesce(current_part, ""),
        pa.array(keyed, pa.string()).take(key_codes),
        "}",
        "",
        null_handling="emit_null",
    )
    return joined


def _event_times(op_ts: list[str], texts: pa.Array) -> pa.Array | None:
    """``op_ts`` (``texts``: the same as an Arrow array) as the reference reads it (``parse_ts``): in one cast
    where every value is spelt ``YYYY-MM-DD HH:MM:SS.ffffff`` (year 1 on), else one at a time; None: a value
    it rejects."""
    if (
        pc.all(pc.match_substring_regex(texts, _PLAIN_TS)).as_py()
        and not pc.any(pc.starts_with(texts, "0000-")).as_py()
    ):
        try:
            return pc.cast(texts, pa.timestamp("us")).cast(_TS_TYPE)
        except pa.ArrowInvalid:
            pass  # a day or time that does not exist: the reference says which
    stamps = [parse_ts(text, OP_TS) for text in op_ts]
    return None if None in stamps else pa.array(stamps, _TS_TYPE)


def _seqs(positions: list[str], texts: pa.Array) -> pa.Array:
    """``pos_to_seq`` of every position (``texts``: the same as an Arrow array): digits padded in one kernel
    when all are digits."""
    if pc.all(pc.match_substring_regex(texts, "^[0-9]+$")).as_py():
        return pc.utf8_lpad(texts, SEQ_WIDTH, "0")
    return pa.array([pos_to_seq(p) for p in positions], pa.string())


def _meta_text(record: Any, record_keys: list[str] | None) -> str:
    """The reference's ``meta`` (pos, op_ts, current_ts and tokens when not null, primary_keys when present)
    as the builder writes it (``events.meta_text``)."""
    meta: dict[str, object] = {"pos": record.pos, "op_ts": record.op_ts}
    for name in ("current_ts", "tokens"):
        value = getattr(record, name)
        if value is not UNSET and value is not None:
            meta[name] = value
    if record_keys is not None:
        meta["primary_keys"] = record_keys
    return meta_text(meta)


def _image_array(images: list[dict[str, Raw] | None], type_: pa.DataType) -> pa.MapArray | None:
    """One ``map<string,string>`` column of the records' images (None: a value outside the shape)."""
    present = [image for image in images if image is not None]
    values = _value_texts(list(chain.from_iterable(image.values() for image in present)))
    if values is None:
        return None
    if len(present) == len(images):
        sizes = np.fromiter(map(len, images), np.int32, len(images))
    else:
        sizes = np.array([0 if image is None else len(image) for image in images], np.int32)
    offsets = np.zeros(len(images) + 1, np.int32)
    np.cumsum(sizes, out=offsets[1:])
    return pa.MapArray.from_arrays(
        pa.array(offsets),
        pa.array(list(chain.from_iterable(present)), pa.string()),
        values,
        type=type_,
        mask=pa.array([image is None for image in images], pa.bool_()),
    )


def _split_image_array(split: Any, type_: pa.DataType) -> pa.MapArray | None:
    """:func:`_image_array` of images split in C (``columnar._Split``)."""
    values = _spelt_texts(split.texts)
    if values is None:
        return None
    offsets = np.zeros(len(split.sizes) + 1, np.int32)
    np.cumsum(split.sizes, out=offsets[1:])
    return pa.MapArray.from_arrays(
        pa.array(offsets), split.names.cast(pa.string()), values, type=type_, mask=pa.array(split.absent)
    )


def _value_texts(raws: list[Raw]) -> pa.StringArray | None:
    """The values' JSON texts as the builder writes them (:func:`_spelt_texts`; None: text that is not valid
    Unicode)."""
    texts = raw_texts(raws)
    return None if texts is None else _spelt_texts(texts)


def _spelt_texts(texts: pa.Array) -> pa.StringArray | None:
    """Value texts (valid JSON, valid UTF-8) as the builder writes them: the text itself where it already is,
    else the reference's reading of it written again (None: a nested value or a lone surrogate)."""
    odd = np.flatnonzero(respelt(texts).to_numpy(zero_copy_only=False))
    if not len(odd):
        return texts.cast(pa.string())
    fixed = []
    for text in texts.take(pa.array(odd)).to_pylist():  # only these go through Python
        if text[:1] in ("{", "["):
            return None
        try:
            value = VALUE_READER.decode(text)
        except ValueError:
            return None
        if type(value) is str and not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate (``\\ud800``): the builder's escape rule applies
                return None
        fixed.append(value_text(value))
    return replaced(texts, odd, pa.array(fixed, texts.type)).cast(pa.string())


class GoldenGateJsonColumns(SpanReader):
    """GoldenGate JSON's columnar path (the module docstring) over one decoder."""

    def span(self, span: bytes, file: str, offset: int) -> pa.RecordBatch | None:
        """The events of ``span`` as one record batch of ``DECODED_FILE_SCHEMA`` (``offset``: the span's first
        byte's), exactly as the reference decoder and the builder give them; None when a record is
        outside the shape this path reads (see the module docstring)."""
        if not span or span.startswith(b"\xef\xbb\xbf"):
            return None
        text = span if span.endswith(b"\n") else span + b"\n"
        try:
            names = tuple(_NAMES.decode(text[: text.index(b"\n")]))
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):  # e.g. a name not valid UTF-8
            return None
        return split_first(lambda split: _read_records(self.decoder, text, names, split, file, offset))


@register_columns("goldengate-json")
def goldengate_json_columns(decoder: GoldenGateJsonDecoder) -> GoldenGateJsonColumns | None:
    """The path reads the records GoldenGate writes by default: no delimiter, UTF-8, no schema file."""
    if decoder.delimiter or decoder.codec != "utf-8" or decoder.schema_path is not None:
        return None
    return GoldenGateJsonColumns(decoder)
