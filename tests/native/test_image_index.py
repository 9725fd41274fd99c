"""The index of image map entries (``cdclake.native.first_entries``: C, and numpy without it) and the driver fold's
use of it: every name's lookup held to the numpy scan it replaced (chunked maps, a name twice in a map, empty and
null maps, rows read by no sorted event or by two, blocks of names)."""

from __future__ import annotations

import importlib
import itertools
from unittest import mock

import numpy as np
import pyarrow as pa
import pytest
from fuzzing import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdclake import native
from cdclake.compaction import arrow_fold

#: The compiled module, for the checks of its own arguments (None where it is not built).
try:
    _image_index = importlib.import_module("cdclake.native._image_index")
except ImportError:
    _image_index = None

_NAMES = ["a", "b", "c", "d", "é"]
_ENTRIES = st.tuples(st.sampled_from(_NAMES), st.one_of(st.none(), st.sampled_from(["1", '"x"', "null"])))
_MAPS = st.one_of(st.none(), st.lists(_ENTRIES, max_size=6))


def _images(maps: list, cuts: list[int]) -> pa.ChunkedArray:
    kind = pa.map_(pa.string(), pa.string())
    bounds = [0, *sorted({min(c, len(maps)) for c in cuts}), len(maps)]
    return pa.chunked_array([pa.array(maps[lo:hi], kind) for lo, hi in itertools.pairwise(bounds) if hi > lo], kind)


def _lookups(images: pa.ChunkedArray, order: np.ndarray, way: str, block: int | None = None) -> list:
    """Each name's lookup by the index in C (``"c"``), by its numpy equivalent (``"numpy"``), or by the scan."""
    with (
        native.disabled(way != "c"),
        mock.patch.object(arrow_fold, "INDEX_BLOCK_BYTES", block or arrow_fold.INDEX_BLOCK_BYTES),
    ):
        found = arrow_fold._Image(images, order)
        if way == "scan":
            found._sorted_of_row = None
        return [tuple(a.tolist() for a in found.lookup(name)) for name in [*_NAMES, "absent", "c", "a"]]


@pytest.mark.fuzz
@settings(max_examples=examples(200), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(_MAPS, max_size=12), st.lists(st.integers(0, 12), max_size=3), st.data())
def test_every_name_s_lookup_is_the_scan_s(maps, cuts, data):
    images = _images(maps, cuts)
    rows = len(maps)
    positions = st.integers(0, max(rows - 1, 0))
    drawn = data.draw(st.lists(positions, max_size=rows, unique=data.draw(st.booleans())) if rows else st.just([]))
    order = np.asarray(drawn, np.int64)
    names = data.draw(st.sampled_from([None, 1, 2, 3]))  # per block: every name at once, or one, two or three
    block = names and names * 8 * max(1, len(order))
    scanned = _lookups(images, order, "scan")
    assert _lookups(images, order, "c", block) == scanned
    assert _lookups(images, order, "numpy", block) == scanned


def test_a_name_twice_in_a_map_gives_its_first_value_and_a_row_read_twice_falls_back():
    images = _images([[("a", "1"), ("a", "2")], None, [("b", "3")]], [])
    order = np.asarray([2, 0], np.int64)
    index = arrow_fold._Image(images, order)
    assert index._sorted_of_row is not None
    present, at = index.lookup("a")
    assert present.tolist() == [False, True] and at.tolist() == [-1, 0]
    assert index.texts(at).to_pylist() == [None, "1"]
    twice = arrow_fold._Image(images, np.asarray([0, 0, 2], np.int64))
    assert twice._sorted_of_row is None  # the numpy scan answers
    assert [a.tolist() for a in twice.lookup("a")] == [[True, True, False], [0, 0, -1]]


@pytest.mark.parametrize(
    ("codes", "offsets", "rows", "low", "high", "m", "message"),
    [
        ([0, 1], [0, 2], [0, 1], 0, 2, 2, "n \\+ 1 offsets"),
        ([0, 1], [0, 1, 1], [0, 1], 0, 2, 2, "from 0 to the number of entries"),
        ([0, 1], [0, 2, 1, 2], [0, 1, 2], 0, 2, 3, "not ascending"),
        ([0, -1], [0, 2], [0], 0, 2, 1, "negative name code"),
        ([0, 1], [0, 2], [1], 0, 2, 1, "sorted event out of range"),
        ([0, 1], [0, 2], [-2], 0, 2, 1, "sorted event out of range"),
        ([0, 1], [0, 2], [0], 1, 0, 1, "int64"),
    ],
)
@pytest.mark.skipif(_image_index is None, reason="cdclake.native._image_index is not built")
def test_bad_buffers_are_refused(codes, offsets, rows, low, high, m, message):
    with pytest.raises(ValueError, match=message):
        _image_index.first_entries(
            np.asarray(codes, np.int64), np.asarray(offsets, np.int64), np.asarray(rows, np.int64), low, high, m
        )
