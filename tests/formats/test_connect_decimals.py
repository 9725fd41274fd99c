"""Connect decimals a column at a time give the reference's happy path's text, or leave the value to it."""

from __future__ import annotations

import base64
import json

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.events.change import value_text
from cdclake.formats import kafka_connect as kc
from cdclake.formats._connect_decimals import connect_decimal_kind, with_connect_decimals


def _reference(text: str, scale: int) -> str | None:
    """The happy path's JSON text of one value (None: it leaves the value to the whole conversion)."""
    happy = kc.happy_path({"type": "bytes", "name": kc.CONNECT_DECIMAL, "parameters": {"scale": str(scale)}})
    converted = happy(json.loads(text))
    return None if converted is kc.ANOTHER_WAY else value_text(converted)


def _columns(texts: list[str], scales: list[int], probed: list[bool] | None = None):
    kinds = np.array([connect_decimal_kind(s) for s in scales], np.int8)
    slow = np.ones(len(texts), bool)
    probe = np.array(probed or [False] * len(texts), bool)
    out = with_connect_decimals(pa.array(texts, pa.large_string()), kinds, slow, probe).to_pylist()
    return out, slow


def _check(texts: list[str], scales: list[int]) -> int:
    out, slow = _columns(texts, scales)
    for text, scale, got, left in zip(texts, scales, out, slow, strict=True):
        if left:
            assert got == text  # left to the reference unchanged
        else:
            assert got == _reference(text, scale), (text, scale)
    return int((~slow).sum())


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.binary(min_size=0, max_size=10), st.sampled_from([0, 1, 2, 4, 6, 7, 9, 18, 38, 63])),
        min_size=1,
        max_size=40,
    )
)
def test_any_bytes_and_scale_give_the_happy_paths_text(values):
    texts = [json.dumps(base64.b64encode(raw).decode()) for raw, _ in values]
    _check(texts, [scale for _, scale in values])


@pytest.mark.parametrize(
    "inner",
    ["", "=", "==", "QQ", "QQ=", "QR==", "QUI=", "QUK=", "Q===", "QQ==QQ==", "QUJD=", "AAAA", "////", "/w==", "gA==",
     "AA==", "A\\/==", "QQ\\u003d\\u003d", "QUJDRA==", "QUJDREVGR0g=", "QUJDREVGR0hJ", "gAAAAAAAAAA=", "f/////////8=",
     "AAAAAAAAAAA=", "QU JD", "QUJD\\n", "-_-_", "QUJ-"],
)  # fmt: skip
@pytest.mark.parametrize("scale", [0, 2, 7])
def test_odd_texts_are_read_as_the_reference_reads_them_or_left_to_it(inner, scale):
    _check([f'"{inner}"'], [scale])


def test_the_common_case_is_read_and_the_rest_is_left():
    texts = ['"AeJA"', '"/w=="', '"gAAAAAAAAAA="', '"AQ=="', '"QUJDREVGR0hJ"', "12", '"QR=="', "null"]
    out, slow = _columns(texts, [2, 0, 0, 9, 0, 0, 0, 2])
    assert out[:2] == ["1234.56", "-1"] and out[2:] == texts[2:]
    assert slow.tolist() == [False, False, True, True, True, True, True, True]
    # int64's least value has no int64 magnitude; 1E-9 is spelt with an exponent; 9 bytes; a number; bits set
    # past the last byte; ``null`` (kept by the image's own rule)


def test_probed_values_are_left_to_the_reference():
    out, slow = _columns(['"AeJA"', '"AeJA"'], [2, 2], [True, False])
    assert slow.tolist() == [True, False] and out == ['"AeJA"', "1234.56"]


def test_scales_outside_the_kinds_have_no_kind():
    assert connect_decimal_kind(None) is None and connect_decimal_kind(-1) is None and connect_decimal_kind(64) is None
    assert connect_decimal_kind(0) == 32 and connect_decimal_kind(63) == 95
