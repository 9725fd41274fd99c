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

The format's rules are the reference module's, stated once there and called here: each record's envelope
(``goldengate_json.envelope``: table, op, pos, primary keys and keys; which images an event keeps), its
``meta`` (``event_meta``), its seq and event_ts (``_gg_common.pos_to_seq`` and ``op_ts_time``) and the
metadata-change rule with its ``SCHEMA`` event (``new_columns``, ``schema_ddl``). Where this module reads a
rule a column at a time (:func:`_envelopes`, :func:`_seqs`, :func:`_event_times`, :func:`_meta_texts`), it
decides only the plain values and hands any other to the rule itself; each says which rule it must agree with.
What it holds of its own is where the path stops (below).

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
  (``new_columns``: a piece that starts with a partial update learns the other columns later).
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
from cdclake.formats._gg_common import SEQ_WIDTH, op_ts_time, pos_to_seq
from cdclake.formats.columnar import (
    VALUE_READER,
    SpanReader,
    image_or_none,
    raw_texts,
    record_starts,
    respelt,
    split_first,
    split_images,
    writer_order,
)
from cdclake.formats.goldengate_json import (
    SCHEMA_EVENT_META,
    Envelope,
    RecordError,
    envelope,
    event_meta,
    new_columns,
    schema_ddl,
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
#: ``meta`` of the reference's SCHEMA event for a column first seen in a record, as the builder writes it.
_SCHEMA_EVENT_META = meta_text(dict(SCHEMA_EVENT_META))
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
    """The span's columns, each built over all records at once where it can be (None: outside the shape): the
    envelopes are the format's own (:func:`_envelopes`), seq and event_ts read a column at a time (:func:`_seqs`,
    :func:`_event_times`). ``split``: the images are ``Raw`` object texts, split in C."""
    found = _envelopes(decoder, records)
    if found is None:
        return None  # the reference rejects a record
    envelopes, codes = found
    kept = _kept_images(records, envelopes, codes)
    if kept is None:
        return None
    befores, afters = kept
    code_array = pa.array(codes, pa.int32())
    tables = [e.table for e in envelopes]
    splits = (split_images(befores), split_images(afters)) if split else None
    if splits is not None:
        layouts, announced = _split_layouts(decoder._layouts, tables, codes, *splits)
    else:
        layouts, announced = _layouts(decoder._layouts, tables, codes, befores, afters)
    try:
        stamps, op_ts_texts = _event_times([r.op_ts for r in records])
        if stamps is None:
            return None
        positions = [r.pos for r in records]
        pos_texts = pa.array(positions, pa.string())
        arrays = {
            "table": pa.array(tables, pa.string()).take(code_array),
            "op": pa.array([e.op for e in envelopes], pa.string()).take(code_array),
            "seq": _seqs(positions, pos_texts),
            "event_ts": stamps,
            "keys": pa.array([e.keys for e in envelopes], pa.list_(pa.string())).take(code_array),
            "meta": _meta_texts(records, envelopes, code_array, pos_texts, op_ts_texts),
        }
        for index, (name, images) in enumerate((("before", befores), ("after", afters))):
            type_ = DECODED_FILE_SCHEMA.field(name).type
            image = _image_array(images, type_) if splits is None else _split_image_array(splits[index], type_)
            if image is None:
                return None
            arrays[name] = image
    except (pa.ArrowException, UnicodeEncodeError):  # text that is not valid Unicode: the reference's business
        return None
    batch = _record_batch(arrays, starts, file)
    if announced:
        batch = _with_schema_events(batch, announced, [envelopes[codes[i]].keys for i, _, _ in announced])
    decoder._layouts = layouts
    return batch


def _envelopes(decoder: GoldenGateJsonDecoder, records: list) -> tuple[list[Envelope], list[int]] | None:
    """The records' envelopes (``goldengate_json.envelope``) without seq and event_ts (``order=False``), each
    distinct one once, and each record's code into them: read so, an envelope depends on the record's table,
    op_type and primary_keys, and on its pos only by the rule that a pos be given, which this must agree with:
    a pos that is a non-empty string (all, as a rule) is one ``envelope`` accepts, and a record with any other
    is ``envelope``'s to refuse, one at a time. (An envelope per record took about a fifth of a span's decode.)
    None: a record ``envelope`` refuses (the reference rejects it)."""
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
    """The images the events keep: none for a record whose envelope says so (``imaged``: a truncate), else
    the record's (a raw ``null`` image is the splitter's to read: no image). Their values' types are the
    reader's to check (dicts of ``Raw``, or objects split in C). None: a truncate that carries an image, which
    the reference checks (``goldengate_json.images``: an object; no member twice) before it drops it, and
    this path checks only the images it keeps."""
    befores = [None if r.before is UNSET else r.before for r in records]
    afters = [None if r.after is UNSET else r.after for r in records]
    if not all(e.imaged for e in envelopes):
        for index, code in enumerate(codes):
            if not envelopes[code].imaged:
                if image_or_none(befores[index]) is not None or image_or_none(afters[index]) is not None:
                    return None
                befores[index] = afters[index] = None
    return befores, afters


def _record_batch(arrays: dict[str, pa.Array], starts: np.ndarray, file: str) -> pa.RecordBatch:
    """``arrays`` as one batch of ``DECODED_FILE_SCHEMA``, with the records' source and nulls elsewhere."""
    n = len(starts)
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
    return pa.RecordBatch.from_arrays(columns, schema=DECODED_FILE_SCHEMA)


def _with_schema_events(
    batch: pa.RecordBatch, announced: list[tuple[int, list[str], list[str]]], keys: list[list[str] | None]
) -> pa.RecordBatch:
    """``batch`` with the reference's ``SCHEMA`` event (``_new_columns``) just before each record that
    announces columns: ``(record index, the table's columns, the added ones)``, and the record's ``keys`` (one
    each). As ``schema_event_before`` makes it, it carries the record's table, seq, event_ts, keys and source;
    its ``ddl`` is ``schema_ddl``'s (no column types: the path reads no schema file)."""
    at = np.array([index for index, _, _ in announced], np.int64)
    rows = batch.take(pa.array(at))
    ddl = [meta_text(schema_ddl(known, added, k, {})) for (_, known, added), k in zip(announced, keys, strict=True)]
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
    known_layouts: dict[str, dict[str, None]], tables: list[str], codes: list[int], befores: list, afters: list
) -> tuple[dict[str, dict[str, None]], list[tuple[int, list[str], list[str]]]]:
    """The reference's metadata-change rule (``goldengate_json.new_columns``) over the span, record by record
    (``tables[codes[i]]``: record i's table). Returns the decoder's layouts after the span (copies: kept only
    if the span is read here) and the announcements ``(record index, the table's columns, the added ones)``."""
    layouts = dict(known_layouts)
    announced = []
    for index, (code, before, after) in enumerate(zip(codes, befores, afters, strict=True)):
        table = tables[code]
        added = new_columns(layouts, table, before, after)
        if added is not None:
            announced.append((index, list(layouts[table]), added))
    return layouts, announced


def _split_layouts(
    known_layouts: dict[str, dict[str, None]], tables: list[str], codes: list[int], before: Any, after: Any
) -> tuple[dict[str, dict[str, None]], list[tuple[int, list[str], list[str]]]]:
    """:func:`_layouts` over split images (``columnar._Split``): each record's columns are its images'
    layouts, and a (record envelope, so table; before layout; after layout) once within the table's columns
    stays within them (``new_columns`` only adds), so the rule runs once per distinct combination, not per
    record."""
    layouts = dict(known_layouts)
    announced = []
    within: set[tuple[int, int, int]] = set()
    for index, combination in enumerate(zip(codes, before.layout, after.layout, strict=True)):
        if combination in within:
            continue
        code, before_layout, after_layout = combination
        table = tables[code]
        added = new_columns(
            layouts,
            table,
            before.layouts[before_layout] if before_layout >= 0 else None,
            after.layouts[after_layout] if after_layout >= 0 else None,
        )
        if added is not None:
            announced.append((index, list(layouts[table]), added))
        within.add(combination)
    return layouts, announced


#: Text that JSON writes otherwise (a quote, a backslash, a control character): such a ``meta`` is written by
#: ``events.meta_text`` one record at a time.
_ESCAPED_TEXT = r'["\\\x00-\x1f]'


def _meta_texts(
    records: list, envelopes: list[Envelope], codes: pa.Array, positions: pa.Array, op_ts: pa.Array
) -> pa.Array:
    """Every record's ``meta`` as the builder writes the reference's (``goldengate_json.event_meta``, written by
    ``events.meta_text``), which this must agree with: joined a column at a time (one ``orjson`` call per
    record was a tenth of a span's decode), but for a record with ``tokens`` or whose texts need an escape,
    which :func:`_meta_text` writes. ``codes``: each record's envelope (:func:`_envelopes`)."""
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


def _event_times(op_ts: list) -> tuple[pa.Array | None, pa.Array]:
    """Every record's ``event_ts`` (and its ``op_ts`` texts as an Arrow array), which must agree value for value
    with the reference's rule (``_gg_common.op_ts_time``): the values spelt ``YYYY-MM-DD HH:MM:SS.ffffff`` (year
    1 on) in one cast, any other (all, where the cast refuses one: a day that does not exist) by
    ``op_ts_time`` itself. None: a value it rejects (no op_ts among them)."""
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
    """Every record's seq from its ``pos`` (``texts``: the same as an Arrow array), which must agree value for
    value with the reference's rule (``_gg_common.pos_to_seq``): digits padded in one kernel, any other
    position by ``pos_to_seq`` itself."""
    digits = pc.match_substring_regex(texts, "^[0-9]+$")
    padded = pc.utf8_lpad(texts, SEQ_WIDTH, "0")
    if pc.all(digits).as_py():
        return padded
    odd = np.flatnonzero(~_flags(digits))
    return replaced(padded, odd, pa.array([pos_to_seq(positions[i]) for i in odd], pa.string()))


def _meta_text(record: Any, record_keys: list[str] | None) -> str:
    """One record's ``meta`` as the builder writes it: the reference's (``event_meta``) of the record's members,
    as the reference reads them (the reader knows no other member: no ``extra``)."""
    members = {name: value for name in record.__struct_fields__ if (value := getattr(record, name)) is not UNSET}
    return meta_text(event_meta(members, record_keys))


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
