"""``typed_values`` (Arrow's casts where the texts' form allows) gives what ``coltypes.cast`` gives, value by
value, to the sign of a zero and the digits of a decimal."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest
from fuzzing import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.compaction.arrow_typing import typed_values
from cdclake.events.change import from_json, value_text
from cdclake.schema.coltypes import CastError, arrow_type, cast

TYPES = [
    "bigint",
    "double",
    "boolean",
    "string",
    "decimal(5,2)",
    "decimal(3,3)",
    "decimal(38,10)",
    "decimal(38,0)",
    "timestamp",
    "date",
    "binary",
]
EDGES = [
    "null",
    "0",
    "-0",
    "-0.0",
    "-0e1",
    "1e3",
    "2.5E-2",
    "1e99",
    "1e-99",
    "1" + "0" * 25,
    "9223372036854775807",
    "123456789012345678901",
    "1" * 30,
    "9" * 38,
    "-" + "9" * 38,
    "1" * 39,
    "1" * 28 + ".5",
    "0.1",
    "123.45",
    "1234.5",
    "0.125",
    "true",
    "false",
    '""',
    '"abc"',
    '"é ü"',
    '"a\\"b"',
    '"\\u00e9"',
    '"x\ty"',
    '"12"',
    '"2024-01-02 03:04:05"',
    '"2024-01-02"',
    '"2024-01-02T03:04:05.123Z"',
    '"2024-02-29T23:59:59.5+05:30"',
    '"2024-01-02T03:04:05-01:00"',
    '"2023-02-29T00:00:00Z"',
    '"2023-02-29"',
    '"9999-12-31T23:00:00-05:00"',
    # hostile: the wrong JSON type for the column, text that is not Unicode, a size the input chooses
    '{"a":1}',
    "[1,2]",
    "1000000000000",
    "-1",
    '"AAE="',
    '"not base64!"',
    '"\\ud800"',
    '"\\ud83d\\ude00"',
    "1e400",
    "-1e400",
]
numbers = (
    st.integers(-(10**22), 10**22)
    | st.decimals(allow_nan=False, allow_infinity=False, places=4)
    | st.floats(allow_nan=False, allow_infinity=False)
)
texts = st.none() | st.sampled_from(EDGES) | numbers.map(value_text) | st.text(max_size=5).map(value_text)


def _reference(values: list[str | None], type_name: str) -> list | None:
    """``coltypes.cast`` of each text; None if one is not a value of the type (routing quarantines those)."""
    try:
        return [None if t is None else cast(from_json(t), type_name) for t in values]
    except CastError:
        return None


def _exact(values: list) -> list[str]:
    return [repr(v) for v in values]  # -0.0 and 0.0, Decimal("1.5") and Decimal("1.50") differ


@pytest.mark.fuzz
@settings(max_examples=examples(200), deadline=None)
@given(values=st.lists(texts, max_size=12), type_name=st.sampled_from(TYPES))
def test_typed_values_are_the_reference_casts(values, type_name):
    expected = _reference(values, type_name)
    if expected is None:  # a text the reference refuses is never one the patterns vouch for
        with pytest.raises(CastError):
            typed_values(pa.array(values, pa.string()), type_name)
        return
    got = typed_values(pa.array(values, pa.string()), type_name)
    assert got.type == arrow_type(type_name)
    assert _exact(got.to_pylist()) == _exact(pa.array(expected, arrow_type(type_name)).to_pylist())


def test_edges_of_the_fast_forms():
    got = typed_values(pa.array(["-0", "-0.0", "1e3", None, "null"], pa.string()), "double").to_pylist()
    assert _exact(got) == ["0.0", "-0.0", "1000.0", "None", "None"]
    assert typed_values(pa.array(["1.5", "0"]), "decimal(5,2)").to_pylist() == [Decimal("1.50"), Decimal("0.00")]
    # every digit Iceberg allows (the default decimal context's 28 refused them); one more is refused
    assert cast(Decimal("9" * 38), "decimal(38,0)") == Decimal("9" * 38)
    assert typed_values(pa.array(["9" * 38]), "decimal(38,0)").to_pylist() == [Decimal("9" * 38)]
    assert typed_values(pa.array(["1" * 30 + ".25"]), "decimal(38,8)").to_pylist() == [Decimal("1" * 30 + ".25000000")]
    with pytest.raises(CastError):
        typed_values(pa.array(["1" * 31 + ".25"]), "decimal(38,8)")
    assert typed_values(pa.array(['"a\\"b"', '"é"']), "string").to_pylist() == ['a"b', "é"]
    stamps = ['"2024-01-02T03:04:05.5+01:00"', '"2024-01-02 03:04:05"']
    assert typed_values(pa.array(stamps), "timestamp").to_pylist() == [
        dt.datetime(2024, 1, 2, 2, 4, 5, 500000, tzinfo=dt.UTC),
        dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
    ]
    with pytest.raises(CastError):  # an impossible date: Arrow's cast refuses it, the reference words why
        typed_values(pa.array(['"2024-01-02"', '"2023-02-29T00:00:00"']), "timestamp")
