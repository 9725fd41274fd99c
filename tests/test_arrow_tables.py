"""Takes from a table of many chunks, without joining them, give ``Table.take``'s rows."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.events.arrow_tables import ChunkedTake

_IMAGE = pa.map_(pa.string(), pa.string())


def _table(sizes: list[int], misaligned: bool) -> pa.Table:
    """A table of a key, an image map and a text column, in record batches of ``sizes`` rows (``misaligned``:
    the text column chunked apart, so that its chunks do not line up with the others')."""
    rows = sum(sizes)
    images = [None if i % 5 == 0 else [(f"c{j}", f'"{i}-{j}"') for j in range(i % 3)] for i in range(rows)]
    schema = pa.schema([("k", pa.int64()), ("image", _IMAGE)])
    starts = np.cumsum([0, *sizes]).tolist()
    batches = [
        pa.record_batch([pa.array(range(s, e), pa.int64()), pa.array(images[s:e], _IMAGE)], schema=schema)
        for s, e in pairwise(starts)
    ]
    table = pa.Table.from_batches(batches, schema=schema)
    texts = [f"t{i}" for i in range(rows)]
    column = pa.chunked_array([texts[: rows // 2], texts[rows // 2 :]] if misaligned else [texts], pa.string())
    return table.append_column("text", column)


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 6), min_size=1, max_size=6),
    picks=st.lists(st.booleans(), max_size=40),
    misaligned=st.booleans(),
)
def test_chunked_take_is_the_tables_take(sizes: list[int], picks: list[bool], misaligned: bool) -> None:
    table = _table(sizes, misaligned)
    positions = np.flatnonzero(np.resize(np.array(picks or [False], bool), table.num_rows))
    taken = ChunkedTake(table).take(positions)
    assert taken.schema == table.schema
    assert taken.to_pydict() == table.take(pa.array(positions, pa.int64())).to_pydict()


def test_chunked_take_copies_no_other_rows() -> None:
    table = _table([3, 0, 4, 2], misaligned=True)
    taken = ChunkedTake(table).take(np.array([1, 3, 4, 8]))
    assert taken["k"].to_pylist() == [1, 3, 4, 8]
    assert taken["text"].to_pylist() == ["t1", "t3", "t4", "t8"]
    assert ChunkedTake(table).take(np.array([], np.int64)).num_rows == 0
