"""In-order batches fold onto the current rows, without reading the change log.

A lake row is the refold of its key's logged events (``cdclake.merge.refold``), and its ``_cdc_seq``
is the seq of the last of them. When every event of this batch for a key is strictly newer than the
key's current row, the refold of the key's whole log is that row with this batch's events applied on
top, in order (``cdclake.merge.apply_events``): nothing older can surface, nothing is stale. So such a
key needs its row only, not its history. That is the common case (replication delivers in order), and
it makes a batch's cost follow the batch, not the log: reading 1,000 rows instead of their keys'
whole history. Every other key goes through the log (docs/decisions.md, "Row state"):

- no current row (a new key, or a deleted one: the tombstone is in the log);
- an event at or below the row's seq (late, replayed, or a tie broken by file and offset);
- a key change touching the key, or the key linked to one in the log;
- a row older than the truncate watermark;
- two events of the batch with the same identity (a duplicate the refold would count once).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa

from cdclake.compaction.folding import folded_output
from cdclake.compaction.routing import prepared_rows
from cdclake.merge import apply_events
from cdclake.schema.evolution import ColumnMap


def candidate_keys(events: pa.Table) -> set[str]:
    """Keys of the batch's routed events that could fold onto their row: no key change touches them
    and no event of theirs is a duplicate."""
    rows = events.select(["_key", "_old_key", "_role", "op", "seq", "source_file", "source_offset"]).to_pylist()
    moved = {k for r in rows if r["_old_key"] is not None for k in (r["_key"], r["_old_key"])}
    identities = Counter((r["_key"], r["source_file"], r["source_offset"], r["seq"], r["op"]) for r in rows)
    duplicated = {identity[0] for identity, n in identities.items() if n > 1}
    return {r["_key"] for r in rows if r["_role"] == "main" and r["_key"] is not None} - moved - duplicated


def in_order_keys(
    events: pa.Table, candidates: set[str], row_seqs: dict[str, str | None], truncate_seq: str | None
) -> set[str]:
    """The candidates whose row exists (at or above the watermark) and is older than each of their events."""
    oldest: dict[str, str] = {}
    for key, seq in zip(events["_key"].to_pylist(), events["seq"].to_pylist(), strict=True):
        if key in candidates:
            seq = seq or ""
            oldest[key] = min(oldest.get(key, seq), seq)
    out = set()
    for key in candidates:
        if key not in row_seqs:
            continue
        row_seq = row_seqs[key] or ""
        if truncate_seq is not None and row_seq < truncate_seq:
            continue
        if oldest.get(key, "") > row_seq:
            out.add(key)
    return out


def fold_onto_rows(
    events: pa.Table,
    rows: pa.Table,
    *,
    keys: list[str],
    columns: list[tuple[str, str]],
    batch_id: str,
    buckets: int,
    cmap: ColumnMap | None = None,
) -> pa.Table:
    """``rows`` (the current rows of in-order keys, with ``_cdc_key``) with ``events`` (this batch's
    events of those keys) applied in order; the same ``row`` / ``gone`` / ``stats`` rows as
    :func:`cdclake.compaction.folding.fold_part` with markers."""
    types = dict(columns)
    names = [n for n, _ in columns]
    state: dict[str, dict[str, Any]] = {row["_cdc_key"]: row for row in rows.to_pylist()}
    touched = set(state)
    prepared = prepared_rows(events, keys, types, cmap)
    stats = apply_events(state, prepared, names, batch_id)
    return folded_output([], state, touched, stats, columns=columns, buckets=buckets, markers=True)
