"""The scanners of value forms (``cdclake.native``'s ``number_forms``, ``quoted_forms``, ``iso_forms``: C, and the
regular expressions they stand for without it) read each pattern exactly as Arrow's regex kernel does
(``compaction.arrow_typing._matches``); normalize's kinds and routing's judgement alike in C and in Python."""

from __future__ import annotations

import importlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from fuzzing import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake import native
from cdclake.compaction import arrow_typing
from cdclake.events import batch as batch_events

#: The compiled module, for the checks of its own arguments (None where it is not built).
try:
    _text_forms = importlib.import_module("cdclake.native._text_forms")
except ImportError:
    _text_forms = None
needs_c = pytest.mark.skipif(_text_forms is None, reason="cdclake.native._text_forms is not built")

_DECIMALS = [arrow_typing._decimal_pattern(t) for t in ("decimal(10,2)", "decimal(5,0)", "decimal(38,18)")]
_PATTERNS = [*arrow_typing._FORMS, arrow_typing._BOOL, *arrow_typing._ISO_FORMS]

# number-like and string-like texts near the patterns' edges, and anything else
_PIECES = st.sampled_from(["-", "0", "1", "9", "00", ".", "e", "E", "+", '"', "\\", "\n", "\x01", "é", "a", " "])
_DIGITS = st.text("0123456789", min_size=0, max_size=25)
_TEXTS = st.one_of(
    st.lists(_PIECES, max_size=8).map("".join),
    st.builds(
        lambda sign, whole, point, fraction, e, exponent: f"{sign}{whole}{point}{fraction}{e}{exponent}",
        st.sampled_from(["", "-"]),
        _DIGITS,
        st.sampled_from(["", "."]),
        _DIGITS,
        st.sampled_from(["", "e", "E-", "e+"]),
        st.text("0123456789", max_size=4),
    ),
    st.text(max_size=6).map(lambda t: f'"{t}"'),
    st.text(max_size=6),
    st.sampled_from(["true", "false", "null", "True", "truex"]),
    # calendar texts: each field at and past its bounds, either separator, fractions of 0-7 digits, zones
    st.builds(
        lambda y, mo, d, sep, h, mi, sec, frac, zone, q: f'"{y}-{mo}-{d}{sep}{h}:{mi}:{sec}{frac}{zone}{q}',
        st.sampled_from(["1899", "1900", "1999", "2000", "2999", "3000", "20x4", "024"]),
        st.sampled_from(["00", "01", "09", "10", "12", "13", "1", "0a"]),
        st.sampled_from(["00", "01", "09", "19", "29", "30", "31", "32", "40"]),
        st.sampled_from(["T", " ", "t", "", "X"]),
        st.sampled_from(["00", "09", "19", "20", "23", "24", "30"]),
        st.sampled_from(["00", "59", "60", "5"]),
        st.sampled_from(["00", "59", "60"]),
        st.sampled_from(["", ".", ".1", ".123456", ".1234567"]),
        st.sampled_from(["", "Z", "+01:00", "-23:59", "+24:00", "+01:60", "+0100", "z", "ZZ"]),
        st.sampled_from(['"', "", '""']),
    ),
    st.builds(
        lambda y, mo, d, q: f'"{y}-{mo}-{d}{q}',
        st.sampled_from(["1900", "1999", "2999", "1899", "3000"]),
        st.sampled_from(["00", "01", "12", "13"]),
        st.sampled_from(["00", "01", "31", "32"]),
        st.sampled_from(['"', "", 'T"', '""']),
    ),
)


def _regex(values: pa.Array, pattern: str) -> np.ndarray:
    return pc.fill_null(pc.match_substring_regex(values, pattern), False).to_numpy(zero_copy_only=False)


@pytest.mark.fuzz
@settings(max_examples=examples(200), deadline=None)
@given(texts=st.lists(st.one_of(st.none(), _TEXTS), max_size=30), start=st.integers(0, 3), large=st.booleans())
def test_each_scanned_form_matches_as_its_pattern(texts, start, large):
    values = pa.array(texts, pa.large_string() if large else pa.string()).slice(min(start, len(texts)))
    for off in (False, True):
        with native.disabled(off):
            for pattern in _PATTERNS + _DECIMALS:
                assert arrow_typing._matches(values, pattern).tolist() == _regex(values, pattern).tolist(), pattern


def test_the_number_pattern_s_longest_integer():
    values = pa.array(["1" * 300, "1" * 301, "-" + "9" * 300 + ".5e-999", "1e1000"])
    for off in (False, True):
        with native.disabled(off):
            matched = arrow_typing._matches(values, arrow_typing._NUMBER).tolist()
            assert matched == _regex(values, arrow_typing._NUMBER).tolist() == [True, False, True, False]


def _calendar_variants() -> list[str]:
    """A valid timestamp and date with one field at a time set to each value at and past its bounds."""
    fields = {
        "y": ["1899", "1900", "1999", "2000", "2999", "3000"],
        "mo": ["00", "01", "09", "10", "12", "13", "20"],
        "d": ["00", "01", "09", "10", "29", "30", "31", "32", "39", "40"],
        "sep": ["T", " ", "t"],
        "h": ["00", "09", "10", "19", "20", "23", "24", "29", "30"],
        "mi": ["00", "59", "60", "69"],
        "s": ["00", "59", "60"],
        "f": ["", ".", ".1", ".123456", ".1234567"],
        "z": ["", "Z", "+00:00", "-23:59", "+24:00", "+20:00", "+19:59", "+01:60", "+0100", "+01:0"],
    }
    base = {"y": "2024", "mo": "02", "d": "29", "sep": "T", "h": "23", "mi": "59", "s": "59", "f": ".5", "z": "Z"}
    out = []
    for name, values in fields.items():
        for value in values:
            v = {**base, name: value}
            out.append(f'"{v["y"]}-{v["mo"]}-{v["d"]}{v["sep"]}{v["h"]}:{v["mi"]}:{v["s"]}{v["f"]}{v["z"]}"')
            out.append(f'"{v["y"]}-{v["mo"]}-{v["d"]}"')
    return out


def test_each_calendar_field_at_its_bounds():
    values = pa.array(_calendar_variants())
    for off in (False, True):
        with native.disabled(off):
            for pattern in arrow_typing._ISO_FORMS:
                scanned = arrow_typing._matches(values, pattern)
                assert scanned.tolist() == _regex(values, pattern).tolist(), pattern
                assert scanned.any()


def test_the_decimal_and_calendar_patterns_are_scanned():
    assert all(pattern in arrow_typing._FORMS for pattern in _DECIMALS)
    assert set(arrow_typing._ISO_FORMS) == {arrow_typing._ISO_DATE, arrow_typing._ISO_TIMESTAMP}
    with native.disabled():  # the regex path where the module is not built
        values = pa.array(["12.50", "1.234", "-0"])
        assert arrow_typing._matches(values, _DECIMALS[0]).tolist() == [True, False, True]


@pytest.mark.fuzz
@settings(max_examples=examples(200), deadline=None)
@given(
    texts=st.lists(
        st.one_of(st.none(), _TEXTS, st.text("-0123456789", max_size=40), st.text('{["-0x', max_size=4)), max_size=30
    ),
    start=st.integers(0, 3),
    large=st.booleans(),
)
def test_kind_codes_are_the_arrow_path_s(texts, start, large):
    """normalize's survey reads the same kind in each text with the C scan as with Arrow's kernels: nulls, slices,
    integers either side of 18 digits (the longer ones judged apart), openers, ``true`` / ``false`` / ``null``."""
    values = pa.array(texts, pa.large_string() if large else pa.string()).slice(min(start, len(texts)))
    in_c = batch_events._kind_codes(values)
    with native.disabled():
        arrow = batch_events._kind_codes(values)
    assert in_c.dtype == arrow.dtype
    assert in_c.tolist() == arrow.tolist()


def test_kind_codes_of_each_kind():
    values = pa.array(
        [
            "null",
            "true",
            "false",
            '"x"',
            '{"a":1}',
            "[1]",
            "-12",
            "1" * 18,
            "1" * 19,
            "9" * 19,
            "9" * 39,
            "1.5",
            "-",
            "",
            None,
        ]
    )
    assert batch_events._kind_codes(values).tolist() == [-1, 4, 4, 3, 3, 3, 1, 1, 1, 2, 3, 0, 0, 0, 0]


_JUDGED_TYPES = [
    "string",
    "bigint",
    "double",
    "boolean",
    "decimal(10,2)",
    "decimal(2,2)",
    "timestamp",
    "date",
    "binary",
]
_JUDGED_TEXTS = st.one_of(
    _TEXTS,
    st.sampled_from(
        [
            '"2024-01-01T00:00:00Z"',
            '"2024-02-30"',
            '"2024-02-29"',
            '"1999-12-31 23:59:59.5+01:00"',
            '"a\\nb"',
            '"\\u00e9"',
        ]
    ),
)


@pytest.mark.fuzz
@settings(max_examples=examples(200), deadline=None)
@given(
    entries=st.lists(st.tuples(st.sampled_from("abcdefz"), st.one_of(st.none(), _JUDGED_TEXTS)), max_size=30),
    types=st.lists(st.sampled_from(_JUDGED_TYPES), min_size=6, max_size=6),
    start=st.integers(0, 3),
    large=st.booleans(),
)
def test_judged_values_are_the_per_type_path_s(entries, types, start, large):
    """Routing's one C pass over every value (``_text_forms.judge``) accepts what the per-type takes and scans do:
    every type, a column the table lacks (``z``), nulls, ``null``, slices, strings with escapes, impossible dates."""
    names = (
        pa.array([n for n, _ in entries] + ["a"] * 3, pa.string())
        .slice(0, len(entries))
        .slice(min(start, len(entries)))
    )
    texts = pa.array([t for _, t in entries] + ["1"] * 3, pa.large_string() if large else pa.string())
    texts = texts.slice(0, len(entries)).slice(min(start, len(entries)))
    by_column = dict(zip("abcdef", types, strict=True))
    in_c = arrow_typing._valid_values(names, texts, by_column)
    with native.disabled():
        per_type = arrow_typing._valid_values(names, texts, by_column)
    assert in_c.tolist() == per_type.tolist()


@needs_c
def test_judge_refuses_columns_that_do_not_fit():
    with pytest.raises(ValueError, match="do not fit the texts"):
        _text_forms.judge(
            b"12", np.array([0, 1, 2], np.int64), np.array([0], np.int64), np.array([1], np.int8), np.zeros(4, np.int32)
        )
    with pytest.raises(ValueError, match="do not fit the texts"):
        _text_forms.judge(
            b"1", np.array([0, 1], np.int64), np.array([0], np.int64), np.array([1], np.int8), np.zeros(3, np.int32)
        )


@needs_c
@pytest.mark.parametrize(
    "scan, args", [("number_forms", (18, 0, 0, 1)), ("quoted_forms", (1,)), ("kind_codes", ()), ("iso_forms", (1,))]
)
def test_bad_offsets_are_refused(scan, args):
    with pytest.raises(ValueError, match="out of the texts"):
        getattr(_text_forms, scan)(b"12", np.array([0, 3], np.int64), *args)
    with pytest.raises(ValueError, match="ascending"):
        getattr(_text_forms, scan)(b"1212", np.array([0, 3, 2, 4], np.int64), *args)
