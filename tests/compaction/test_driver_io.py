"""The driver's read of a table's events (cdclake.compaction.driver_io): small chunks joined, nothing else changed."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.compaction.driver_io import coalesced


def _events(sizes: list[int]) -> pa.Table:
    start, batches = 0, []
    for size in sizes:
        seqs = pa.array([f"{i:08d}" for i in range(start, start + size)], pa.string())
        batches.append(pa.RecordBatch.from_arrays([seqs], names=["seq"]))
        start += size
    return pa.Table.from_batches(batches, pa.schema([("seq", pa.string())]))


def test_small_chunks_are_joined_and_large_ones_kept_whole():
    events = _events([3, 4, 10, 2, 2, 2])
    out = coalesced(events, rows=6)
    assert out.equals(events)  # the same rows in the same order
    assert [len(c) for c in out["seq"].chunks] == [7, 10, 6]
    assert coalesced(_events([10, 12]), rows=6)["seq"].num_chunks == 2  # nothing small: untouched


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=40), max_size=12), st.integers(min_value=1, max_value=50))
def test_coalescing_keeps_every_event_in_order(sizes, rows):
    events = _events(sizes)
    out = coalesced(events, rows=rows)
    assert out.equals(events)
    assert out["seq"].num_chunks <= max(1, events["seq"].num_chunks)
