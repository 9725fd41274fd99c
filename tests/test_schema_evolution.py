"""Schema evolution rules (pure): compatibility, name translation, column lists."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.schema.changes import (
    ADD_COLUMN,
    DROP_COLUMN,
    MODIFY_COLUMN,
    RENAME_COLUMN,
    SchemaChange,
)
from cdclake.schema.evolution import ColumnMap, check, column_map, evolve_columns, is_noop, widens

T = "S.T"


def change(kind, column=None, new_name=None, type_=None, offset=0):
    return SchemaChange(T, kind, column=column, new_name=new_name, type=type_, source_file="f", source_offset=offset)


@pytest.mark.parametrize(
    ("old", "new", "ok"),
    [
        ("bigint", "bigint", True),
        ("decimal(10,2)", "decimal(12,2)", True),
        ("decimal(10,2)", "decimal(9,2)", False),
        ("decimal(10,2)", "decimal(12,3)", False),
        ("string", "bigint", False),
        ("bigint", "string", False),
        ("bigint", "decimal(20,0)", False),
        ("double", "double", True),
    ],
)
def test_widening(old, new, ok):
    assert widens(old, new) is ok


def test_incompatible_changes_say_how_to_rebuild():
    cols = {"ID": "bigint", "NAME": "string", "AMT": "decimal(10,2)"}
    narrowing = check(change(MODIFY_COLUMN, "NAME", type_="bigint"), cols, ["ID"])
    assert "string cannot change to bigint" in narrowing and "cdc_rebuild" in narrowing
    key = check(change(DROP_COLUMN, "ID"), cols, ["ID"])
    assert "primary-key column ID" in key
    assert check(change(RENAME_COLUMN, "ID", "KEY"), cols, ["ID"]) is not None
    assert check(change(MODIFY_COLUMN, "AMT", type_="decimal(14,2)"), cols, ["ID"]) is None
    assert check(change(ADD_COLUMN, "EMAIL", type_="string"), cols, ["ID"]) is None
    assert check(change(RENAME_COLUMN, "NAME", "AMT"), cols, ["ID"]).startswith(f"{T}: rename column NAME")


def test_evolve_columns_in_order():
    cols = [("ID", "bigint"), ("A", "string"), ("B", "bigint")]
    out = evolve_columns(
        cols,
        [
            change(RENAME_COLUMN, "A", "A2"),
            change(ADD_COLUMN, "C", type_="double"),
            change(DROP_COLUMN, "B"),
            change(MODIFY_COLUMN, "C", type_="string"),  # not a widening: left as is
        ],
    )
    assert out == [("ID", "bigint"), ("A2", "string"), ("C", "double")]


def test_column_map_translates_old_layout_images():
    cmap = column_map(
        [
            {"kind": RENAME_COLUMN, "column": "A", "new_name": "B"},
            {"kind": RENAME_COLUMN, "column": "B", "new_name": "C"},
            {"kind": DROP_COLUMN, "column": "X", "new_name": None},
        ]
    )
    current = {"ID", "C"}
    assert cmap.translate({"ID": 1, "A": "old", "X": 9}, current) == {"ID": 1, "C": "old"}
    assert cmap.translate({"ID": 1, "B": "mid"}, current) == {"ID": 1, "C": "mid"}
    assert cmap.translate({"ID": 1, "C": "new", "A": "stale"}, current) == {"ID": 1, "C": "new"}
    assert cmap.translate({"ID": 1, "UNKNOWN": 1}, current) == {"ID": 1, "UNKNOWN": 1}  # the cast names it
    # a name re-added after a drop is a column again
    readded = column_map([{"kind": DROP_COLUMN, "column": "X", "new_name": None}, change(ADD_COLUMN, "X")])
    assert readded.translate({"X": 1}, {"X"}) == {"X": 1}
    assert ColumnMap.from_dict(cmap.to_dict()) == cmap


def test_noop_detection_makes_retries_safe():
    cols = {"ID": "bigint", "B": "string"}
    assert is_noop(change(RENAME_COLUMN, "A", "B"), cols)  # already renamed
    assert not is_noop(change(RENAME_COLUMN, "B", "C"), cols)
    assert is_noop(change(DROP_COLUMN, "Z"), cols)
    assert is_noop(change(ADD_COLUMN, "B", type_="string"), cols)
    assert not is_noop(change(ADD_COLUMN, "C", type_="string"), cols)


names = st.sampled_from(["A", "B", "C", "D"])
ops = st.one_of(
    st.tuples(st.just(RENAME_COLUMN), names, names),
    st.tuples(st.just(DROP_COLUMN), names, st.none()),
    st.tuples(st.just(ADD_COLUMN), names, st.none()),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(ops, max_size=6))
def test_translation_agrees_with_the_evolved_layout(steps):
    """Law: a value written under a column's name at any point ends in that column's current name
    (or is gone when the column was dropped), as long as no name is used for two columns over time
    (reusing a name needs sequence order: a documented limit of the translation)."""
    columns = [("ID", "bigint"), ("A", "string")]
    history: list[SchemaChange] = []
    used = {"ID", "A"}
    tracked = "A"  # the column that holds the value written at the start
    for kind, col, new in steps:
        names_now = {n for n, _ in columns}
        if kind == RENAME_COLUMN and (col not in names_now or new in used or col == "ID"):
            continue
        if kind == DROP_COLUMN and (col not in names_now or col == "ID"):
            continue
        if kind == ADD_COLUMN and col in used:
            continue
        used |= {col, new} - {None}
        c = change(kind, col, new, "string")
        history.append(c)
        columns = evolve_columns(columns, [c])
        if tracked is not None and col == tracked:
            tracked = new if kind == RENAME_COLUMN else None
    current = {n for n, _ in columns}
    out = column_map(history).translate({"ID": 1, "A": "v"}, current)
    if tracked is None:
        assert set(out) == {"ID"}
    else:
        assert out == {"ID": 1, tracked: "v"}
