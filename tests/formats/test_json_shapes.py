"""The byte-level shapes of JSON texts answer as the Arrow kernels they replaced (``equal``, ``starts_with``,
``is_in``, ``match_substring``, an integer regular expression) do."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake import native
from cdclake.formats._json_shapes import json_shapes
from cdclake.formats.columnar import respelt

_NUMBERS = st.one_of(
    st.integers(-(10**20), 10**20).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["-0", "0", "-0.0", "0.0000001", "-0.0000001", "0.000000", "-0.0000009", "0.00001", "1e5"]),
    st.sampled_from(["1E-7", "-2.5e+10", "10", "-10", "0.5", "123.000", "7.0E3"]),
)
_SCALARS = st.one_of(
    st.none(), st.booleans(), st.text(alphabet=st.sampled_from('ab"\\e\n\u00e9/'), max_size=6), _NUMBERS
)
_VALUES = st.recursive(
    _SCALARS, lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner)
)


def _text(value: object) -> str:
    if isinstance(value, str) and value and (value[0] in "-0123456789"):
        try:
            float(value)
            return value  # a number's own spelling
        except ValueError:
            pass
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _kernels(texts: pa.Array) -> dict[str, list[bool]]:
    """The shapes as the Arrow kernels gave them before (nulls count as False)."""

    def flags(array: pa.Array) -> np.ndarray:
        return np.asarray(pc.fill_null(array, False).to_numpy(zero_copy_only=False), bool)

    literal_or_string = pc.or_(pc.starts_with(texts, '"'), pc.is_in(texts, pa.array(["true", "false", "null"])))
    exponent = pc.and_not(pc.or_(pc.match_substring(texts, "e"), pc.match_substring(texts, "E")), literal_or_string)
    odd = pc.or_(pc.match_substring(texts, "\\"), exponent)
    for prefix in ("{", "[", "0.000000", "-0.000000"):
        odd = pc.or_(odd, pc.starts_with(texts, prefix))
    spelt = flags(pc.or_(odd, pc.equal(texts, "-0")))
    null = flags(pc.equal(texts, "null"))
    string = flags(pc.starts_with(texts, '"'))
    boolean = flags(pc.is_in(texts, pa.array(["true", "false"])))
    number = ~string & ~boolean & ~null & ~spelt & flags(texts.is_valid())
    integer = flags(pc.match_substring_regex(texts, r"^-?(?:0|[1-9][0-9]*)$")) & ~spelt
    return {
        "null": null.tolist(),
        "boolean": boolean.tolist(),
        "string": string.tolist(),
        "number": number.tolist(),
        "integer": integer.tolist(),
        "spelt": spelt.tolist(),
        "backslash": flags(pc.match_substring(texts, "\\")).tolist(),
    }


@pytest.mark.parametrize("in_c", [True, False], ids=["c-scan", "numpy"])
def test_shapes_are_the_kernels_answers(in_c):
    """Both ways (the C scan where the module is built, and the numpy passes) answer as the kernels did."""
    if in_c and not native.available("text_forms"):
        pytest.skip("the C module is not built")

    @settings(max_examples=200, deadline=None)
    @given(
        st.lists(st.one_of(_VALUES.map(_text), st.none()), max_size=25),
        st.sampled_from([pa.string(), pa.large_string()]),
        st.integers(0, 4),
    )
    def check(values, type_, cut):
        texts = pa.array(values, type_)
        for array in (texts, texts.slice(min(cut, len(values)))):
            with native.disabled(not in_c):
                shapes = json_shapes(array)
            assert {name: getattr(shapes, name).tolist() for name in _kernels(array)} == _kernels(array)

    check()


def test_the_cases_respelt_names():
    texts = pa.array(['"a\\"b"', "1e5", "-0", "0.0000001", "0.0000012", "-0.0000001", "[1]", '{"a":1}', "12", "0"])
    assert respelt(texts).to_pylist() == [True, True, True, True, False, True, True, True, False, False]
    shapes = json_shapes(texts)
    assert shapes.integer.tolist() == [False] * 8 + [True, True]
    assert shapes.number.tolist() == [False] * 4 + [True] + [False] * 3 + [True, True]
    assert json_shapes(pa.array(["1.5", "true", "null", '"x"'])).number.tolist() == [True, False, False, False]
