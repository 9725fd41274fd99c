"""The C scanners of value forms (``cdclake._native._text_forms``) read each pattern they stand for exactly as
Arrow's regex kernel does (``compaction.arrow_typing._matches``' two paths)."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake._native import _text_forms
from cdclake.compaction import arrow_typing

_DECIMALS = [arrow_typing._decimal_pattern(t) for t in ("decimal(10,2)", "decimal(5,0)", "decimal(38,18)")]
_PATTERNS = [*arrow_typing._FORMS, arrow_typing._BOOL]

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
)


def _regex(values: pa.Array, pattern: str) -> np.ndarray:
    return pc.fill_null(pc.match_substring_regex(values, pattern), False).to_numpy(zero_copy_only=False)


@settings(max_examples=200, deadline=None)
@given(texts=st.lists(st.one_of(st.none(), _TEXTS), max_size=30), start=st.integers(0, 3), large=st.booleans())
def test_each_scanned_form_matches_as_its_pattern(texts, start, large):
    values = pa.array(texts, pa.large_string() if large else pa.string()).slice(min(start, len(texts)))
    for pattern in _PATTERNS + _DECIMALS:
        assert arrow_typing._matches(values, pattern).tolist() == _regex(values, pattern).tolist(), pattern


def test_the_number_pattern_s_longest_integer():
    values = pa.array(["1" * 300, "1" * 301, "-" + "9" * 300 + ".5e-999", "1e1000"])
    assert arrow_typing._matches(values, arrow_typing._NUMBER).tolist() == _regex(values, arrow_typing._NUMBER).tolist()
    assert arrow_typing._matches(values, arrow_typing._NUMBER).tolist() == [True, False, True, False]


def test_the_decimal_patterns_are_scanned_and_the_calendar_ones_are_not():
    assert all(pattern in arrow_typing._FORMS for pattern in _DECIMALS)
    assert arrow_typing._ISO_DATE not in arrow_typing._FORMS
    with mock.patch.object(arrow_typing, "_TEXT_FORMS", None):  # the regex path where the module is not built
        values = pa.array(["12.50", "1.234", "-0"])
        assert arrow_typing._matches(values, _DECIMALS[0]).tolist() == [True, False, True]


@pytest.mark.parametrize("scan, args", [("number_forms", (18, 0, 0, 1)), ("quoted_forms", (1,))])
def test_bad_offsets_are_refused(scan, args):
    with pytest.raises(ValueError, match="out of the texts"):
        getattr(_text_forms, scan)(b"12", np.array([0, 3], np.int64), *args)
    with pytest.raises(ValueError, match="ascending"):
        getattr(_text_forms, scan)(b"1212", np.array([0, 3, 2, 4], np.int64), *args)
