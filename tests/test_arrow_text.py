"""Byte-level tests of Arrow string columns answer as Arrow's kernels do."""

from __future__ import annotations

from unittest.mock import patch

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake import native
from cdclake.events import arrow_text
from cdclake.events.arrow_text import first_bytes, holding, text_buckets
from cdclake.merge import bucket_of

_TEXT = st.text(alphabet=st.sampled_from('ab"\\eE_-x\u00e9'), max_size=8)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_TEXT, max_size=30),
    st.sampled_from([b"e", b"\\", b'"', b"ab", b"__", b"x\xc3\xa9", b'"a"', b"abab", b"aab", b'e"e']),
    st.sampled_from([pa.string(), pa.large_string()]),
    st.integers(0, 5),
)
def test_holding_is_arrows_match_substring(values, needle, type_, cut):
    """Both searches: ``find`` (a span's values) and numpy's (a column past ``_FIND_BYTES``, such as the metas)."""
    texts = pa.array(values, type_)
    for array in (texts, texts.slice(min(cut, len(values)))):
        expected = pc.match_substring(array, needle.decode()).to_pylist()
        assert holding(array, needle).to_pylist() == expected
        with patch.object(arrow_text, "_FIND_BYTES", 0):
            assert holding(array, needle).to_pylist() == expected


def test_a_match_across_two_texts_is_no_match():
    texts = pa.array(["xa", "bx", "ab", "", "e"], pa.large_string())
    assert holding(texts, b"ab").to_pylist() == [False, False, True, False, False]
    assert holding(texts.slice(1), b"e").to_pylist() == [False, False, False, True]


def test_first_bytes_of_empty_null_and_sliced_values():
    texts = pa.array(["ab", "", None, "\u00e9", '"x"'], pa.string())
    assert first_bytes(texts).tolist() == [ord("a"), 0, 0, 0xC3, ord('"')]
    assert first_bytes(texts.slice(3)).tolist() == [0xC3, ord('"')]
    assert first_bytes(pa.array([], pa.large_string())).tolist() == []


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.text(max_size=12)), max_size=30),
    st.sampled_from([pa.string(), pa.large_string()]),
    st.integers(1, 64),
    st.integers(0, 5),
)
def test_text_buckets_are_bucket_of_each_text_in_c_and_in_python(values, type_, buckets, cut):
    texts = pa.array(values, type_).slice(min(cut, len(values)))
    expected = [-1 if t is None else bucket_of(t, buckets) for t in texts.to_pylist()]
    assert text_buckets(texts, buckets).tolist() == expected
    with native.disabled():
        assert text_buckets(texts, buckets).tolist() == expected
