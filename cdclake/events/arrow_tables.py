"""Takes from a table of many chunks without joining them.

Why: Arrow's ``take`` on a chunked column joins all of its chunks into one array first, once per take. A
large table split by bucket or by lake table was therefore joined once (``combine_chunks``: a copy of every
row, serial, before any take ran), then taken from: each row copied twice, and the join on one core. Taking
each record batch's own rows copies each chosen row once, and can run in the threads that write the parts.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


class ChunkedTake:
    """Rows of ``table`` by ascending positions, taken batch by batch (``table``'s chunks are not joined)."""

    __slots__ = ("_batches", "_firsts", "schema")

    def __init__(self, table: pa.Table) -> None:
        self.schema = table.schema
        self._batches = table.to_batches()  # slices where the columns' chunks differ: no copy
        self._firsts = np.cumsum([0] + [batch.num_rows for batch in self._batches], dtype=np.int64)

    def take(self, positions: np.ndarray) -> pa.Table:
        """The rows at ``positions`` (ascending), in that order: the same rows as ``table.take(positions)``."""
        positions = np.asarray(positions, np.int64)
        owner = np.searchsorted(self._firsts, positions, side="right") - 1
        cuts = np.searchsorted(owner, np.arange(len(self._batches) + 1))
        parts = [
            batch.take(positions[cuts[i] : cuts[i + 1]] - self._firsts[i])
            for i, batch in enumerate(self._batches)
            if cuts[i + 1] > cuts[i]
        ]
        return pa.Table.from_batches(parts, schema=self.schema)
