"""``coltypes.cast``: what a binary column accepts (issue 56: the input never chooses an allocation)."""

from __future__ import annotations

import resource

import pytest

from cdclake.schema.coltypes import BINARY, STRING, CastError, cast


def test_binary_accepts_base64_text_and_bytes() -> None:
    assert cast("AAE=", BINARY) == b"\x00\x01"
    assert cast(b"\x07", BINARY) == b"\x07"
    assert cast(None, BINARY) is None


@pytest.mark.parametrize("value", [10**12, 3, True, [1, 2, 3], {"a": 1}, 1.5, "not base64!", "AAE"])
def test_binary_refuses_anything_else_with_a_reason(value) -> None:
    with pytest.raises(CastError, match="is not a valid binary"):
        cast(value, BINARY)


def test_a_huge_integer_allocates_nothing() -> None:
    """``bytes(10**12)`` was a terabyte of zeros; the refusal must not grow the process at all."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(CastError):
        cast(10**12, BINARY)
    with pytest.raises(CastError):
        cast(200_000_000, BINARY)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000  # KiB


def test_a_lone_surrogate_is_not_a_string_value() -> None:
    """JSON may spell one (``"\\ud800"``); Arrow and Iceberg refuse it, and a table's whole commit failed on it."""
    with pytest.raises(CastError, match="is not a valid string"):
        cast("a\ud800b", STRING)
    assert cast("é ü 😀", STRING) == "é ü 😀"


def test_a_nested_value_s_text_escapes_a_lone_surrogate() -> None:
    text = cast({"a": "\ud800", "b": "é"}, STRING)
    assert text == '{"a":"\\ud800","b":"é"}'
    text.encode("utf-8")  # Unicode text now
