"""The columnar paths' shared span helpers: schema blocks shared per distinct text, the bracket bound."""

from __future__ import annotations

import msgspec
import numpy as np

from cdclake.formats.columnar import schema_texts, shallow
from cdclake.runtime.limits import MAX_JSON_DEPTH


def _raws(texts: list[bytes]) -> list[msgspec.Raw]:
    return [msgspec.Raw(t) for t in texts]


def test_equal_blocks_are_one_object_and_keep_their_text():
    blocks = [b'{"a":1}', b'{"b":2}', b'{"a":1}', b'{"b":2}', b'{"c":[3]}']
    texts = schema_texts(_raws(blocks))
    assert texts == blocks
    assert texts[0] is texts[2] and texts[1] is texts[3] and texts[0] is not texts[1]


def test_blocks_past_the_compared_ones_are_shared_too():
    blocks = [b'{"t":%d}' % (i % 40) for i in range(200)]
    texts = schema_texts(_raws(blocks))
    assert texts == blocks
    assert len({id(t) for t in texts}) == 40


def _line(head: bytes, payload: bytes) -> bytes:
    return b'{"schema":' + head + b',"payload":' + payload + b"}"


def _shallow(lines: list[bytes]) -> bool:
    text = b"\n".join(lines) + b"\n"
    starts = np.array([0, *np.cumsum([len(line) + 1 for line in lines])[:-1]])
    heads = schema_texts(_raws([msgspec.json.decode(line, type=dict[str, msgspec.Raw])["schema"] for line in lines]))
    return shallow(text, starts, heads)


def test_each_line_counts_its_own_blocks_and_payload_brackets():
    deep_head = b"[" * (MAX_JSON_DEPTH // 2) + b"]" * (MAX_JSON_DEPTH // 2)
    flat = b'{"a":1}'
    half = b"[" * (MAX_JSON_DEPTH // 2 - 1) + b"]" * (MAX_JSON_DEPTH // 2 - 1)
    assert _shallow([_line(deep_head, flat), _line(flat, flat)])  # 256 + 1 brackets + the envelope's
    assert _shallow([_line(flat, half), _line(deep_head, b"{}")])
    assert not _shallow([_line(flat, flat), _line(deep_head, b'{"x":' + half + b"}")])
    assert not _shallow([_line(flat, flat), _line(deep_head, b"{}"), _line(deep_head, b'{"x":' + half + b"}")])


def test_plain_decimal_strings_are_the_pattern_s():
    """The reading of ``_PLAIN_DECIMAL`` (a string holding a plain decimal) by ``native.number_forms`` answers as
    the regular expression, in C and in Python."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from cdclake import native
    from cdclake.formats import columnar

    inside = st.text(st.sampled_from('-0123456789.eE+a"\\'), max_size=8)
    texts = st.one_of(inside.map(lambda t: '"' + t + '"'), st.sampled_from(["true", "[1]", "1.5", '["1"]', "null"]))

    @settings(max_examples=300, deadline=None)
    @given(st.lists(texts, min_size=1, max_size=20))
    def check(values):
        array = pa.array(values, pa.large_string())
        inner = pc.utf8_slice_codeunits(array, 1, -1)
        expected = pc.match_substring_regex(array, columnar._PLAIN_DECIMAL).to_pylist()
        for off in (False, True):
            with native.disabled(off):
                assert columnar._plain_decimals(array, inner).tolist() == expected

    check()


def test_repeated_values_are_the_plain_conversion():
    """Shared and fresh key lists, empty lists and None convert as ``pa.array`` converts them, in their order."""
    import pyarrow as pa
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from cdclake.formats.columnar import repeated_values

    shared = [["ID"], ["A", "B"], []]
    value = st.one_of(st.sampled_from(shared), st.none(), st.lists(st.sampled_from(["ID", "X"]), max_size=2))

    @settings(max_examples=100, deadline=None)
    @given(st.lists(value, max_size=30))
    def check(values):
        type_ = pa.list_(pa.string())
        assert repeated_values(values, type_).to_pylist() == pa.array(values, type_).to_pylist()

    check()
