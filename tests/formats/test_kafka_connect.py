"""Kafka Connect row conversion: the per-field happy paths give what the general converter gives."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.formats import kafka_connect as kc

_FIELDS = [
    {"type": "bytes", "name": kc.CONNECT_DECIMAL, "parameters": {"scale": "2"}, "field": "amount"},
    {"type": "bytes", "name": kc.CONNECT_DECIMAL, "parameters": {"scale": "0"}, "field": "whole"},
    {"type": "int32", "name": "io.debezium.time.Date", "field": "day"},
    {"type": "int64", "name": "io.debezium.time.MicroTime", "field": "clock"},
    {"type": "int64", "name": "io.debezium.time.MicroTimestamp", "field": "at"},
    {"type": "int64", "name": kc.CONNECT_TIMESTAMP, "field": "ms"},
    {"type": "int64", "field": "n"},
    {"type": "string", "field": "s"},
]
_SCHEMA = {"type": "struct", "fields": _FIELDS}


def _b64(number: int) -> str:
    size = max(1, (number.bit_length() + 8) // 8)
    return base64.b64encode(number.to_bytes(size, "big", signed=True)).decode()


_LONGEST = base64.b64encode(b"\x01" * kc.MAX_DECIMAL_BYTES).decode()
_TOO_LONG = base64.b64encode(b"\x01" * (kc.MAX_DECIMAL_BYTES + 1)).decode()
_VALUES = st.one_of(
    st.integers(min_value=-(10**20), max_value=10**20),
    st.integers(min_value=-(10**80), max_value=10**80).map(_b64),
    st.sampled_from(["", " AdTA", "AdTA", "12.50", "!!", "W5s=", "1e3", "-", _LONGEST, _TOO_LONG]),
    st.booleans(),
    st.none(),
    st.text(max_size=6),
)


def _one_by_one(row: dict) -> dict | str:
    fields = {f["field"]: f for f in _FIELDS}
    try:
        return {name: kc.convert_value(value, fields.get(name), name) for name, value in row.items()}
    except kc.ConnectValueError as exc:
        return str(exc)


def _row(row: dict) -> dict | str:
    try:
        return kc.convert_row(row, _SCHEMA)
    except kc.ConnectValueError as exc:
        return str(exc)


@settings(max_examples=300, deadline=None)
@given(st.fixed_dictionaries({}, optional={f["field"]: _VALUES for f in _FIELDS}))
def test_a_row_converts_as_its_values_do_one_by_one(row) -> None:
    got, expected = _row(row), _one_by_one(row)
    assert repr(got) == repr(expected)  # repr: the Decimal's exponent, and the reason's words


def test_the_happy_paths_give_the_general_answers() -> None:
    row = {"amount": "AdTA", "whole": "W5s=", "day": 19757, "clock": 3723004005, "at": 1, "ms": -1}
    assert kc.convert_row(row, _SCHEMA) == {
        "amount": kc.Decimal("1200.00"),
        "whole": kc.Decimal(23451),
        "day": "2024-02-04",
        "clock": "01:02:03.004005",
        "at": "1970-01-01T00:00:00.000001Z",
        "ms": "1969-12-31T23:59:59.999000Z",
    }
    with pytest.raises(kc.ConnectValueError, match="column day"):
        kc.convert_row({"day": 10**12}, _SCHEMA)
