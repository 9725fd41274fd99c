"""The C splitter of image objects (``cdclake.native.split_objects``) and its use by the JSON columnar paths:
held to msgspec's dict reading (names, value texts, layouts) and to the dict path's record batches."""

from __future__ import annotations

import itertools
import json
from unittest import mock

import msgspec
import numpy as np
import pytest
from fuzzing import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec import Raw

from cdclake import native
from cdclake.bench.generate import generate
from cdclake.formats import columnar as json_columns
from cdclake.registry import columnar_reader, get_decoder
from cdclake.runtime.limits import MAX_JSON_DEPTH

#: The tests of the splitter itself: it has no Python equivalent (the callers read dicts instead).
needs_c = pytest.mark.skipif(not native.available("json_objects"), reason="the C splitter is not built or is off")

_DICTS = msgspec.json.Decoder(dict[str, Raw] | None)

_NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cc",), exclude_characters='"\\'), max_size=6)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(st.characters(codec="utf-8"), max_size=8),
)
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_NAMES, inner, max_size=3))


def _compact(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


@st.composite
def _images(draw) -> list[bytes]:
    """Image texts as a compact writer spells them: objects (names from a few lists, so layouts repeat) or null;
    nested values sometimes spelt with blanks inside, as ``Raw`` keeps them."""
    layouts = draw(st.lists(st.lists(_NAMES, unique=True, max_size=5), min_size=1, max_size=4))
    texts = []
    for _ in range(draw(st.integers(0, 12))):
        if draw(st.booleans()) and draw(st.booleans()):
            texts.append(b"null")
            continue
        names = draw(st.sampled_from(layouts))
        members = []
        for name in names:
            value = draw(_VALUES)
            spaced = isinstance(value, list | dict) and draw(st.booleans())
            text = json.dumps(value, ensure_ascii=False).encode() if spaced else _compact(value)
            members.append(_compact(name) + b":" + text)
        texts.append(b"{" + b",".join(members) + b"}")
    return texts


def _split(texts: list[bytes]):
    offsets = np.zeros(len(texts) + 1, np.int64)
    np.cumsum([len(t) for t in texts], out=offsets[1:])
    return native.split_objects(b"".join(texts), offsets)


@needs_c
@pytest.mark.fuzz
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=_images())
def test_objects_split_as_msgspec_reads_them(texts: list[bytes]):
    split = _split(texts)
    assert split is not None
    counts, layouts, name_offsets, name_data, value_offsets, value_data, firsts, members = split
    read = [_DICTS.decode(t) for t in texts]
    names = [name for image in read if image for name in image]
    values = [bytes(v) for image in read if image for v in image.values()]
    assert members == len(names)
    assert np.frombuffer(counts, np.int32).tolist() == [-1 if image is None else len(image) for image in read]
    ends = np.frombuffer(name_offsets, np.int64)
    assert [name_data[a:b].decode() for a, b in itertools.pairwise(ends)] == names
    ends = np.frombuffer(value_offsets, np.int64)
    assert [value_data[a:b] for a, b in itertools.pairwise(ends)] == values
    # a layout is one list of names: the same index for the same list, a new one for another
    lists = [names[first : first + count] for first, count in firsts]
    assert len({tuple(names) for names in lists}) == len(lists)
    for image, layout in zip(read, np.frombuffer(layouts, np.int32).tolist(), strict=True):
        assert layout == -1 if image is None else lists[layout] == list(image)


@needs_c
@pytest.mark.parametrize(
    "text",
    [
        b'{"a":1 }',  # a blank the dict reader's write-back would not give back
        b'{"a": 1}',
        b'{ "a":1}',
        b'{"a":1, "b":2}',
        b'{"a\\u0062":1}',  # an escape in a name
        b"[1,2]",  # not an object
        b'"text"',
        b"1",
        b"{}x",
    ],
)
def test_texts_outside_the_compact_shape_are_not_split(text: bytes):
    assert _split([b'{"x":1}', text]) is None


@needs_c
def test_split_images_leaves_a_name_twice_and_text_outside_utf8_to_the_dict_reader():
    with pytest.raises(json_columns.Unsplit):
        json_columns.split_images([Raw(b'{"a":1,"a":2}')])
    with pytest.raises(json_columns.Unsplit):
        json_columns.split_images([Raw(b'{"a":"\xff"}')])
    split = json_columns.split_images([Raw(b'{"a":1,"b":[1, 2]}'), None, Raw(b"{}")])
    assert split.names.to_pylist() == ["a", "b"]
    assert split.texts.to_pylist() == ["1", "[1, 2]"]
    assert split.sizes.tolist() == [2, 0, 0] and split.absent.tolist() == [False, True, False]


@needs_c
def test_bad_offsets_are_refused():
    with pytest.raises(ValueError, match="bounds"):
        native.split_objects(b"{}", b"")
    with pytest.raises(ValueError, match="out of the texts"):
        native.split_objects(b"{}", np.array([0, 3], np.int64))
    with pytest.raises(ValueError, match="ascending"):
        native.split_objects(b"{}{}", np.array([0, 3, 2, 4], np.int64))


@pytest.fixture(scope="module")
def bench_spans(tmp_path_factory) -> dict[str, bytes]:
    """The first span of a generated Debezium, CDL and DataHub BLOB file (images with the unavailable-value
    placeholder, decimals, dates, partial images: many layouts a span; BLOB's update halves)."""
    out = tmp_path_factory.mktemp("gen")
    generated, _ = generate(["debezium-json", "cdl-json", "datahub-blob"], out, 3_000, file_events=3_000)
    spans = {}
    for format_id, gen in generated.items():
        data = gen.files[0].read_bytes()
        spans[format_id] = data[: json_columns.span_end(data, 0)]
    return spans


@needs_c
@pytest.mark.parametrize("format_id", ["debezium-json", "cdl-json", "datahub-blob"])
def test_a_split_span_gives_the_batch_of_the_dict_path(bench_spans, format_id):
    span = bench_spans[format_id]
    with mock.patch.object(json_columns, "split_images", wraps=json_columns.split_images) as splits:
        split = columnar_reader(get_decoder(format_id)).span(span, "f", 0)
    with native.disabled():
        dicts = columnar_reader(get_decoder(format_id)).span(span, "f", 0)
    assert splits.call_count == 2  # both image columns, once
    if isinstance(split, tuple):  # BLOB: (batch, bytes read)
        assert split[1] == dicts[1]
        split, dicts = split[0], dicts[0]
    assert split is not None and split.num_rows > 100
    assert split.equals(dicts)


def test_a_blob_image_holder_with_another_member_is_read_with_dicts(bench_spans):
    span = bench_spans["datahub-blob"]
    odd = span.replace(b'"after":{"dataColumn":', b'"after":{"other":[1],"dataColumn":', 1)
    assert odd != span
    with native.disabled():
        dicts = columnar_reader(get_decoder("datahub-blob")).span(odd, "f", 0)
    assert dicts is None  # a holder member that is not an object: the dict reader leaves the span to the reference
    assert columnar_reader(get_decoder("datahub-blob")).span(odd, "f", 0) is None


@needs_c
def test_a_span_the_splitter_refuses_is_read_with_dicts(bench_spans):
    """A blank between two image members: msgspec's dict reader reads the span (and its write-back check sends
    it to the reference), so the splitter's refusal costs a second read, never a different batch."""
    span = bench_spans["debezium-json"]
    odd = span.replace(b'"after":{"ORDER_ID":', b'"after":{"ORDER_ID": ', 1)
    assert odd != span
    with mock.patch.object(json_columns, "split_images", wraps=json_columns.split_images) as splits:
        batch = columnar_reader(get_decoder("debezium-json")).span(odd, "f", 0)
    assert splits.call_count >= 1  # the splitter was asked first
    with native.disabled():
        assert batch == columnar_reader(get_decoder("debezium-json")).span(odd, "f", 0)


_BRACKETY = st.text(st.sampled_from('{}[]"a:,\\'), max_size=12).map(str.encode)


@st.composite
def _records(draw) -> tuple[bytes, list[bytes]]:
    """Lines of a span with their schema blocks: most start with the block, some with another member or short."""
    heads = draw(st.lists(st.sampled_from([b"{}", b'{"a":[1]}', b"[" * 300 + b"]" * 300, b'{"b":"{["}']), min_size=1))
    lines = []
    for head in heads:
        rest = draw(st.sampled_from([b"{}", b"[" * 250 + b"]" * 250, b'"x"'])) + draw(_BRACKETY)
        shape = draw(st.sampled_from(["headed", "payload first", "short"]))
        if shape == "headed":
            lines.append(b'{"schema":' + head + b',"payload":' + rest + b"}")
        elif shape == "payload first":
            lines.append(b'{"payload":' + rest + b',"schema":' + head + b"}")
        else:
            lines.append(draw(st.sampled_from([b"{}", b"[", b'{"schema'])))
    return lines, heads


@pytest.mark.fuzz
@settings(max_examples=examples(200), deadline=None)
@given(_records())
def test_the_bracket_bound_in_c_is_the_line_by_line_one(records):
    """``shallow`` over the counts (in C and in Python) equals a count of each whole line, lines with and without
    their block first, near and past the depth limit, lines shorter than the block's prefix."""
    lines, heads = records
    text = b"\n".join(lines) + b"\n"
    starts = np.array([0, *np.cumsum([len(line) + 1 for line in lines])[:-1]], np.int64)
    blocks = json_columns.schema_texts([Raw(head) for head in heads])
    expected = max(line.count(b"{") + line.count(b"[") for line in lines) <= MAX_JSON_DEPTH
    for off in (False, True):
        with native.disabled(off):
            assert json_columns.shallow(text, starts, blocks) == expected


def test_bracket_counts_count_each_range_and_refuse_bad_ones():
    bounds = np.array([0, 2, 5], np.int64), np.array([4, 2, 8], np.int64)
    for off in (False, True):
        with native.disabled(off):
            assert native.bracket_counts(b"{[x]{a[[", *bounds).tolist() == [2, 0, 2]
    if not native.available("json_objects"):
        return  # the bounds are checked by the C
    for froms, tos in (([0], [10]), ([-1], [2]), ([3], [2]), ([0, 1], [2])):
        with pytest.raises(ValueError):
            native.bracket_counts(b"{[x]{a[[", np.array(froms, np.int64), np.array(tos, np.int64))
