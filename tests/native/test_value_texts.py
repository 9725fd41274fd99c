"""Integer dates and timestamps, and Kafka Connect decimals, spelt in C (``cdclake.native``'s ``epoch_texts``,
``connect_decimals``) as their numpy and Arrow paths spell them (through ``columnar._with_epoch_texts`` and
``_connect_decimals.with_connect_decimals``, each with the C and without: ``native.disabled``); the splice likewise."""

from __future__ import annotations

import base64
import importlib

import numpy as np
import pyarrow as pa
import pytest
from fuzzing import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake import native
from cdclake.events import arrow_text
from cdclake.formats import _connect_decimals as connect_decimals
from cdclake.formats import columnar as json_columns
from cdclake.formats._connect_decimals import CONNECT_DECIMAL_KIND
from cdclake.formats._json_shapes import json_shapes
from cdclake.formats.columnar import DATE_DAYS, TS_MICROS, TS_MILLIS, TS_NANOS, UNNAMED
from cdclake.native.value_texts import DAY_US as _DAY_US
from cdclake.native.value_texts import MAX_US as _MAX_US
from cdclake.native.value_texts import MIN_US as _MIN_US

#: The compiled module, for the checks of its own arguments (None where it is not built).
try:
    _value_texts = importlib.import_module("cdclake.native._value_texts")
except ImportError:
    _value_texts = None
needs_c = pytest.mark.skipif(_value_texts is None, reason="cdclake.native._value_texts is not built")
# the years' edges in each unit, and a step either side
_EDGES = [0, 4_000_000, 4_000_001, -4_000_000, _MIN_US // _DAY_US, _MAX_US // _DAY_US]
for per_us in (1, 1_000):
    _EDGES += [_MIN_US // per_us, _MAX_US // per_us, _MIN_US // per_us - 1, _MAX_US // per_us + 1]
_EDGES += [_MIN_US * 1_000, _MAX_US * 1_000 + 999, _MAX_US * 1_000 + 1_000, _MIN_US * 1_000 - 1]
_NUMBERS = st.one_of(
    st.sampled_from(_EDGES).flatmap(lambda n: st.integers(n - 2, n + 2)),
    st.integers(-(10**16), 10**16),
    st.integers(-(10**6), 10**6),
)
_TEXTS = st.one_of(
    _NUMBERS.map(str),
    st.sampled_from(["-0", "007", "1.5", '"2024-01-01"', "null", "true", "12345678901234567", "-1234567890123456"]),
)


def _both(texts: list[str], kinds: list[int], probed: list[bool]) -> tuple[list, list, list, list]:
    array = pa.array(texts, pa.large_string())
    kinds_of = np.array(kinds, np.int8)
    shapes = json_shapes(array)
    answers = []
    for off in (False, True):
        slow = np.ones(len(texts), bool)
        with native.disabled(off):
            out = json_columns._with_epoch_texts(array, kinds_of, slow, np.array(probed, bool), shapes.integer)
        answers += [out.to_pylist(), slow.tolist()]
    return answers  # type: ignore[return-value]


@pytest.mark.fuzz
@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(
        st.tuples(_TEXTS, st.sampled_from([DATE_DAYS, TS_MILLIS, TS_MICROS, TS_NANOS, UNNAMED]), st.booleans()),
        max_size=20,
    )
)
def test_epoch_texts_are_the_arrow_path_s(rows):
    texts, kinds, probed = (list(column) for column in zip(*rows, strict=True)) if rows else ([], [], [])
    in_c, c_slow, arrow, arrow_slow = _both(texts, kinds, probed)
    assert in_c == arrow
    assert c_slow == arrow_slow


def test_the_years_edges_and_the_units():
    in_c, _, arrow, _ = _both(
        [str(_MIN_US // 1_000), str(_MAX_US // 1_000), "-1", "1717200000123", "19876", "-1001", str(_MIN_US)],
        [TS_MILLIS, TS_MILLIS, TS_NANOS, TS_MILLIS, DATE_DAYS, TS_NANOS, TS_MICROS],
        [False] * 7,
    )
    assert in_c == arrow
    assert in_c == [
        '"1000-01-01T00:00:00.000000Z"',
        '"9999-12-31T23:59:59.999000Z"',
        '"1969-12-31T23:59:59.999999Z"',
        '"2024-06-01T00:00:00.123000Z"',
        '"2024-06-02"',
        '"1969-12-31T23:59:59.999998Z"',
        str(_MIN_US),  # 18 characters: converted one at a time by the reference
    ]


@needs_c
def test_rows_outside_the_column_are_refused():
    offsets = np.array([0, 1], np.int64)
    with pytest.raises(ValueError, match="a row outside the column"):
        _value_texts.epoch_texts(b"1", offsets, np.array([1], np.int64), np.array([TS_MICROS], np.int8))
    with pytest.raises(ValueError, match="do not fit the texts"):
        _value_texts.epoch_texts(b"1", offsets, np.array([0], np.int64), np.array([], np.int8))
    text, bounds = b'"AQ=="', np.array([0, 6], np.int64)
    for scale, done in ((5, b"\x01"), (64, b"\x00"), (-1, b"\x00")):  # a scale outside 0-63 is not read here
        answer = _value_texts.connect_decimals(text, bounds, np.array([0], np.int64), np.array([scale], np.int8))
        assert answer[0] == done


def _base64(number: int, size: int) -> str:
    return base64.b64encode(number.to_bytes(size, "big", signed=True)).decode()


_DECIMAL_TEXTS = st.one_of(
    st.integers(1, 8).flatmap(
        lambda size: st.integers(-(2 ** (8 * size - 1)), 2 ** (8 * size - 1) - 1).map(lambda n: _base64(n, size))
    ),
    st.sampled_from(["AA==", "AAE=", "AB==", "AAB=", "////", "gAAAAAAAAAA=", "AAAAAAAAAAAA", "A===", "=AAA", "AA=A"]),
    st.text("ABCab+/=09", min_size=0, max_size=13),
).map(lambda t: f'"{t}"')


@pytest.mark.fuzz
@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(_DECIMAL_TEXTS, st.integers(0, 63), st.booleans()), max_size=20))
def test_connect_decimals_are_the_numpy_path_s(rows):
    texts = pa.array([t for t, _, _ in rows], pa.large_string())
    kinds = np.array([CONNECT_DECIMAL_KIND + scale for _, scale, _ in rows], np.int8)
    probed = np.array([p for _, _, p in rows], bool)
    answers = []
    for off in (False, True):
        slow = np.ones(len(rows), bool)
        with native.disabled(off):
            out = connect_decimals.with_connect_decimals(texts, kinds, slow, probed)
        answers.append((out.to_pylist(), slow.tolist()))
    assert answers[0] == answers[1]


def test_connect_decimals_of_each_scale_and_sign():
    texts = pa.array([f'"{_base64(n, 8)}"' for n in (5, -123, 0, 10**18, -(2**63) + 1, 7)], pa.large_string())
    kinds = np.array([CONNECT_DECIMAL_KIND + s for s in (2, 1, 3, 0, 4, 12)], np.int8)
    slow = np.ones(6, bool)
    out = connect_decimals.with_connect_decimals(texts, kinds, slow, np.zeros(6, bool))
    assert out.to_pylist() == ["0.05", "-12.3", "0.000", str(10**18), "-922337203685477.5807", f'"{_base64(7, 8)}"']
    assert slow.tolist() == [False] * 5 + [True]  # 7E-12 is written with an exponent: the reference's


_SPLICE_TEXTS = st.one_of(st.none(), st.text(max_size=6), st.sampled_from(["", "é", '"2024-01-01"']))


@pytest.mark.fuzz
@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(st.tuples(_SPLICE_TEXTS, st.booleans(), st.text(max_size=6)), max_size=20),
    st.integers(0, 3),
    st.sampled_from([pa.string(), pa.large_string()]),
)
def test_splice_is_replace_with_mask(rows, cut, type_):
    """The C splice gives ``pc.replace_with_mask``'s column: nulls kept, slices read from their offset, either
    string type, the replaced rows' new texts in order."""
    texts = pa.array(["x"] * cut + [t for t, _, _ in rows] + ["y"], type_).slice(cut, len(rows))
    at = np.array([i for i, (text, chosen, _) in enumerate(rows) if chosen and text is not None], np.int64)
    new = pa.array([rows[i][2] for i in at.tolist()], pa.large_string())
    answers = []
    for off in (False, True):
        with native.disabled(off):
            out = arrow_text.replaced(texts, at, new)
        out.validate(full=True)
        answers.append((out.type, out.to_pylist()))
    assert answers[0] == answers[1]
    assert answers[0][1] == [rows[i][2] if i in set(at.tolist()) else rows[i][0] for i in range(len(rows))]


@needs_c
def test_splice_refuses_rows_out_of_order_or_outside():
    data, offsets = b"abc", np.array([0, 1, 2, 3], np.int64)
    new, new_offsets = b"xy", np.array([0, 1, 2], np.int64)
    assert _value_texts.splice(data, offsets, np.array([0, 2], np.int64), new_offsets, new) == (
        np.array([0, 1, 2, 3], np.int64).tobytes(),
        b"xby",
    )
    for rows in ([2, 0], [1, 1], [0, 3], [-1, 0]):
        with pytest.raises(ValueError, match="rows not ascending inside the column"):
            _value_texts.splice(data, offsets, np.array(rows, np.int64), new_offsets, new)
    with pytest.raises(ValueError, match="do not fit"):
        _value_texts.splice(data, offsets, np.array([0], np.int64), new_offsets, new)  # two texts for one row
    with pytest.raises(ValueError, match="offsets do not fit the texts"):
        _value_texts.splice(b"ab", offsets, np.array([0], np.int64), new_offsets[:2], new)
    with pytest.raises(ValueError, match="offsets not ascending"):
        _value_texts.splice(data, np.array([0, 2, 1, 3], np.int64), np.array([0], np.int64), new_offsets[:2], new)
