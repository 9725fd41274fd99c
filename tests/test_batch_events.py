"""The driver normalize's value kinds agree with the reference rule (``coltypes.kind_of``)."""

from __future__ import annotations

import re

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.events.batch import _ROW_OPS, _kind, _only, _table_rows
from cdclake.events.change import value_text
from cdclake.schema.coltypes import kind_of

_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 10**38 - 1, 10**38, 0]),
    st.decimals(allow_nan=False, allow_infinity=False, places=3),
    st.text(max_size=20),
    st.lists(st.integers(), max_size=3),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_VALUES, min_size=1, max_size=40))
def test_the_kind_of_each_value_text_is_the_kind_of_its_value(values) -> None:
    texts = pa.array([value_text(v) for v in values], pa.string())
    expected = [kind_of(v) if not isinstance(v, list) else "string" for v in values]
    # decimals with places: their text keeps the point (1.000), so the text says double as kind_of does
    assert _kind(texts).to_pylist() == expected


def test_a_sql_null_falls_through_to_double_as_in_the_sql_case() -> None:
    assert _kind(pa.array([None, "12", "null"], pa.string())).to_pylist() == ["double", "bigint", None]


def _sql_case_kind(text: str | None) -> str | None:
    """Normalize's SQL ``CASE`` (``_KIND_SQL``) in Python: the reference for texts that are no value's."""
    if text == "null":
        return None
    if text in ("true", "false"):
        return "boolean"
    if text is not None and text[:1] in ('"', "{", "["):
        return "string"
    if text is None or not re.fullmatch(r"-?[0-9]+", text) or text.endswith("\n"):
        return "double"
    if -(2**63) <= int(text) < 2**63:
        return "bigint"
    return "decimal(38,0)" if len(str(abs(int(text)))) <= 38 else "string"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.none(),
            st.text(alphabet='-0123456789 .e\n"{[١２', max_size=45),
            st.from_regex(r"-?0{0,25}[0-9]{0,42}", fullmatch=True),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_the_kind_of_any_text_is_the_sql_case_kind(texts) -> None:
    # texts no value writes (leading zeros, a lone or doubled minus, other scripts' digits, a trailing newline)
    assert _kind(pa.array(texts, pa.string())).to_pylist() == [_sql_case_kind(t) for t in texts]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["INSERT", "UPDATE", "DELETE", "SCHEMA", "TRUNCATE", None]), max_size=90))
def test_only_keeps_the_events_of_the_ops_in_order(ops):
    events = pa.table({"op": pa.array(ops, pa.string()), "at": pa.array(range(len(ops)), pa.int64())})
    kept = _only(events, _ROW_OPS)
    assert kept.to_pylist() == [r for r in events.to_pylist() if r["op"] in _ROW_OPS.to_pylist()]
    if all(op in _ROW_OPS.to_pylist() for op in ops):
        assert kept is events  # nothing dropped: no copy


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c", None]), min_size=1, max_size=40))
def test_table_rows_name_every_row_once(names):
    chunked = pa.chunked_array([pa.array(names[:3], pa.string()), pa.array(names[3:], pa.string())])
    seen = []
    for table, rows in _table_rows(chunked):
        positions = list(range(len(names))) if rows is None else rows.tolist()
        assert all(names[i] == table for i in positions)
        seen += positions
    assert sorted(seen) == list(range(len(names)))


def test_read_ahead_gives_every_item_in_order_and_reads_the_next_one_early() -> None:
    import threading

    from cdclake.events.batch import read_ahead

    asked = []
    second_read = threading.Event()

    def items():
        for n in range(5):
            asked.append(n)
            if n == 1:
                second_read.set()
            yield n

    got = []
    for item in read_ahead(items()):
        if item == 0:  # the consumer still holds the first item: the second is read meanwhile
            assert second_read.wait(timeout=30)
        got.append(item)
    assert got == asked == [0, 1, 2, 3, 4]
    assert list(read_ahead(iter(()))) == []


def test_read_ahead_raises_the_reader_error_where_its_item_was_due() -> None:
    import pytest

    from cdclake.events.batch import read_ahead

    def items():
        yield "first"
        raise OSError("chunk 2 unreadable")

    reader = read_ahead(items())
    assert next(reader) == "first"
    with pytest.raises(OSError, match="chunk 2 unreadable"):
        next(reader)
