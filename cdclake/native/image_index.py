"""Where each column's value is in an image map column, for a block of columns at once (``_image_index.c``)."""

from __future__ import annotations

import numpy as np

from cdclake.native.loader import compiled


def first_entries(
    codes: np.ndarray, row_offsets: np.ndarray, sorted_of_row: np.ndarray, low: int, high: int, m: int
) -> np.ndarray:
    """Per name code ``low .. high - 1`` and sorted event, the flat index of its row's first entry of that name (-1
    where its row has none), as an int64 array of shape ``(high - low, m)``.

    ``codes``: the entries' name codes (int64, 0 or more) in flat order; ``row_offsets``: n + 1 ascending int64
    bounds of each row's entries (0 .. the number of entries); ``sorted_of_row``: n int64, the sorted event
    (0 .. m - 1) reading each row (-1: none; no two rows read by the same one). Without C, one numpy pass over the
    block's entries."""
    codes = np.ascontiguousarray(codes, np.int64)
    row_offsets = np.ascontiguousarray(row_offsets, np.int64)
    sorted_of_row = np.ascontiguousarray(sorted_of_row, np.int64)
    c = compiled("image_index")
    if c is not None:
        found = c.first_entries(codes, row_offsets, sorted_of_row, low, high, m)
        return np.frombuffer(found, np.int64).reshape(high - low, m)
    events = np.repeat(sorted_of_row, np.diff(row_offsets))
    kept = np.flatnonzero((codes >= low) & (codes < high) & (events >= 0))
    slots, first = np.unique((codes[kept] - low) * m + events[kept], return_index=True)
    out = np.full((high - low) * m, -1, np.int64)
    out[slots] = kept[first]  # a name twice in a map: its first value, as a map lookup gives
    return out.reshape(high - low, m)
