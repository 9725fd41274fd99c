"""The driver's link search finds what the log search's join rounds find: every key connected to the
batch's keys by key changes, and every key change touching them."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.compaction.routing import linked_in_driver

key_st = st.sampled_from([f"[{i}]" for i in range(8)])


def rounds(pairs: set[tuple[str, str]], known: set[str]) -> tuple[list[str], set[tuple[str, str]]]:
    """``_linked_keys`` without Spark: each round takes the pairs touching the frontier, to a fixpoint."""
    found, all_pairs, frontier = set(known), set(), set(known)
    while True:
        round_pairs = {p for p in pairs if p[0] in frontier or p[1] in frontier}
        all_pairs |= round_pairs
        new = {v for p in round_pairs for v in p} - found
        if not new:
            return sorted(found - known), all_pairs
        found |= new
        frontier = new


@settings(max_examples=200, deadline=None)
@given(st.sets(st.tuples(key_st, key_st).filter(lambda p: p[0] != p[1]), max_size=10), st.sets(key_st, min_size=1))
def test_driver_link_search_equals_the_join_rounds(pairs, known):
    table = pa.table({"_key": [k for k, _ in sorted(pairs)], "_old_key": [o for _, o in sorted(pairs)]})
    assert linked_in_driver(table, known) == rounds(pairs, known)
