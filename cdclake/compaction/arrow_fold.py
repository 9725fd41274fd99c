"""The fast fold over Arrow and numpy: keys without key changes, folded in closed form; the driver runs it, and
so does each Python worker of the workers' fold (``spark_fold``, one bucket at a time).

:func:`cdclake.merge.refold` applies a key's logged events one by one in order. For a key that no
key change touches, that loop has a closed form, computed here with vector operations (no Python per event):

- the *reset* is the key's last INSERT / UPSERT / DELETE (every event below the truncate
  watermark left out);
- the row is gone when the last event is a DELETE (or no event is left);
- each column is the value of the last event at or after the reset (after it, for a DELETE) whose
  after image has the column (a partial update leaves the others alone); failing that, when the reset
  is a DELETE or there is none, the before image of the first event after it (an UPDATE onto no row
  starts from its before image); else NULL;
- ``_cdc_op`` / ``_cdc_seq`` / ``_cdc_ts`` / ``_cdc_batch`` are the last event's.

The values stay JSON text through the fold (choosing a value needs no type); only the chosen ones are cast
(``arrow_typing.typed_values``), each typed exactly as the reference model types it. Applied / stale counts follow
:func:`refold`: an event of this batch is stale when it is below the watermark or older than an event of another
batch for its key; an event logged twice (same batch, file, offset, seq and op: a batch re-run after snapshot
expiry appends its rows again) counts once, as :func:`refold` counts it. Ties in order fall to the batch, then the
op, so that copies of one event sit together and every run orders a key's events alike.

One stable sort by key and order, then every rule is a vector operation over the sorted events, and each key's
answer is the last (or first) flagged event of its run. A key-change component that is one chain of this batch's
events folds as one key under its last key (:func:`chain_keys`); other components still go through ``fold_part``
(the reference model). ``tests/compaction/test_arrow_fold.py`` and the fold parity suite
(``tests/compaction/test_fold_differential.py``) hold it to ``fold_part``.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdclake import native
from cdclake.compaction.arrow_typing import typed_values
from cdclake.compaction.folding import fold_part, out_schema
from cdclake.compaction.lake_tables import META_NAMES, table_schema
from cdclake.events.arrow_tables import ChunkedTake
from cdclake.schema.evolution import ColumnMap

#: The ops that reset a key: its row starts again from the event (a DELETE: from nothing).
RESET_OPS = ("INSERT", "UPSERT", "DELETE")
#: A key's events in the reference's order (seq, file, offset), ties by batch; then op, so that every copy of a
#: logged event (one identity: batch, file, offset, seq, op) sits next to the others, whatever the log's order.
_ORDER = ("_key", "_seq", "source_file", "source_offset", "_cdc_batch", "op")


def _np(array) -> np.ndarray:
    return np.asarray(array.to_numpy(zero_copy_only=False))


def _flag(array) -> np.ndarray:
    """A boolean Arrow array as numpy, NULL as False."""
    return _np(pc.fill_null(array, False)).astype(bool)


def _differs(array: pa.Array) -> np.ndarray:
    """``out[i]``: row ``i`` differs from row ``i - 1`` (NULLs equal each other, as in a window's order)."""
    n = len(array)
    out = np.ones(n, dtype=bool)
    if n > 1:
        now, before = array.slice(1), array.slice(0, n - 1)
        changed = pc.fill_null(pc.not_equal(now, before), False)
        out[1:] = _flag(pc.or_(changed, pc.xor(pc.is_valid(now), pc.is_valid(before))))
    return out


def _run_ends(flags: np.ndarray, gid: np.ndarray, groups: int, last: bool = True) -> np.ndarray:
    """Per key (run of ``gid``), the position of its last (else first) flagged event; -1 if none."""
    idx = np.flatnonzero(flags)
    out = np.full(groups, -1, dtype=np.int64)
    if idx.size:
        g = gid[idx]
        edge = np.ones(idx.size, dtype=bool)
        if last:
            edge[:-1] = g[1:] != g[:-1]
        else:
            edge[1:] = g[1:] != g[:-1]
        out[g[edge]] = idx[edge]
    return out


#: The most bytes of flat indexes :class:`_Image` answers in one pass over an image's entries (a block of names).
INDEX_BLOCK_BYTES = 64 * 2**20


class _Image:
    """One image column (a map of column -> JSON text) flattened once, looked up per column name.

    The maps stay in the events' own order and chunks (no copy of every image's text into the sorted order, nor
    into one array: the largest part of a bulk batch, and fresh memory costs the kernel's clearing here);
    ``order`` (the sorted position -> row of the map column) turns each lookup's answers into the sorted order.
    One pass over the entries answers a block of names at once, straight into the sorted order
    (:func:`cdclake.native.first_entries`: in C where built, else numpy); where a row is read by more than one sorted
    event, each lookup scans the entries for its name."""

    def __init__(self, images: pa.MapArray | pa.ChunkedArray, order: np.ndarray):
        chunks = images.chunks if isinstance(images, pa.ChunkedArray) else [images]
        self.code_of: dict[str, int] = {}
        bounds, codes, values = [], [], []
        first = 0
        for chunk in chunks:
            offsets = _np(chunk.offsets).astype(np.int64)  # absolute into the children (a slice keeps them)
            start, end = (int(offsets[0]), int(offsets[-1])) if offsets.size else (0, 0)
            flat_start = sum(len(v) for v in values)
            bounds.append(offsets[:-1] - start + flat_start)  # each row's first entry, in the flat order
            encoded = pc.dictionary_encode(chunk.keys.slice(start, end - start))
            # each chunk's own dictionary, its codes mapped onto the codes of every chunk's names
            codes_here = [self.code_of.setdefault(k, len(self.code_of)) for k in encoded.dictionary.to_pylist()]
            codes.append(np.asarray(codes_here, np.int64)[_np(encoded.indices).astype(np.int64)])
            values.append(chunk.items.slice(start, end - start))
            first += len(chunk)
        self.codes = np.concatenate(codes) if codes else np.zeros(0, np.int64)
        self.row_offsets = np.concatenate([*bounds, [len(self.codes)]]).astype(np.int64)
        self.values = values
        self.value_firsts = np.cumsum([0] + [len(v) for v in values], dtype=np.int64)
        self.n = first
        self.order = order
        self._sorted_of_row = self._sorted_rows()
        self._block: tuple[int, np.ndarray] | None = None  # the names answered last (``_first_entries``)
        self._parents: np.ndarray | None = None

    def _sorted_rows(self) -> np.ndarray | None:
        """The sorted event reading each row (-1: none), or None where a row is read by more than one."""
        sorted_of_row = np.full(self.n, -1, dtype=np.int64)
        sorted_of_row[self.order] = np.arange(len(self.order), dtype=np.int64)
        return sorted_of_row if np.count_nonzero(sorted_of_row >= 0) == len(self.order) else None

    def _first_entries(self, code: int) -> np.ndarray:
        """Code ``code``'s flat index per sorted event, from a block of names answered in one pass over the
        entries (:func:`cdclake.native.first_entries`; a block holds at most :data:`INDEX_BLOCK_BYTES`)."""
        names = max(1, INDEX_BLOCK_BYTES // max(1, 8 * len(self.order)))
        low = code - code % names
        if self._block is None or self._block[0] != low:
            high = min(low + names, len(self.code_of))
            found = native.first_entries(self.codes, self.row_offsets, self._sorted_of_row, low, high, len(self.order))
            self._block = low, found
        return self._block[1][code - low]

    def lookup(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(has the name, per sorted event; the flat index of its value, -1 where absent)."""
        code = self.code_of.get(name)
        if code is None:
            return np.zeros(len(self.order), dtype=bool), np.full(len(self.order), -1, dtype=np.int64)
        if self._sorted_of_row is not None:
            at = self._first_entries(code)
            return at >= 0, at
        # a row read twice: the name's entries found by a scan, mapped to the rows
        if self._parents is None:
            self._parents = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self.row_offsets))
        present = np.zeros(self.n, dtype=bool)
        at = np.full(self.n, -1, dtype=np.int64)
        flat_idx = np.flatnonzero(self.codes == code)
        events = self._parents[flat_idx]
        present[events] = True
        at[events[::-1]] = flat_idx[::-1]  # a duplicated name: its first value, as a map lookup gives
        return present[self.order], at[self.order]

    def texts(self, at: np.ndarray) -> pa.Array:
        """The values at flat indexes ``at`` (NULL where -1), taken in Arrow: no Python string per value, and from
        each chunk its own values (a take from many chunks would join them all first)."""
        if len(self.values) == 1:
            return self.values[0].take(pa.array(at, pa.int64(), mask=at < 0))
        owner = np.searchsorted(self.value_firsts, at, side="right") - 1
        owner[at < 0] = -1
        if len(self.values) < 2**15:  # numpy's stable sort of 16-bit integers is a radix sort, of wider a merge sort
            owner = owner.astype(np.int16)
        by_owner = np.argsort(owner, kind="stable")
        cuts = np.searchsorted(owner[by_owner], np.arange(-1, len(self.values) + 1))
        pieces = [pa.nulls(int(cuts[1] - cuts[0]), self.values[0].type if self.values else pa.string())]
        for i, chunk in enumerate(self.values):
            rows = by_owner[cuts[i + 1] : cuts[i + 2]]
            if len(rows):
                pieces.append(chunk.take(pa.array(at[rows] - self.value_firsts[i], pa.int64())))
        # the pieces hold the values in ``by_owner``'s order: put each back at its place
        back = np.empty(len(at), np.int64)
        back[by_owner] = np.arange(len(at), dtype=np.int64)
        return pa.concat_arrays(pieces).take(pa.array(back, pa.int64()))


def _first_copies(new_order: np.ndarray, ev: pa.Table, op: pa.Array) -> np.ndarray:
    """Per sorted event (sorted by :data:`_ORDER`): whether it is the first row of its identity in its key, the
    identity ``merge.refold`` counts an event by (batch, file, offset, seq, op); ``new_order`` says where
    (key, seq, file, offset) changes."""
    return new_order | _differs(ev["_cdc_batch"].combine_chunks()) | _differs(op)


#: The change-log columns the fold reads besides the images.
SCALARS = ["_key", "seq", "source_file", "source_offset", "_cdc_batch", "op", "event_ts", "_cdc_bucket"]


def fold_arrow(
    events: pa.Table,
    columns: list[tuple[str, str]],
    batch_id: str,
    truncate_seq: str | None,
    scalars: pa.Table | None = None,
    image_rows: np.ndarray | None = None,
) -> pa.Table:
    """Per key of ``events`` (change-log rows, no key changes): ``row`` / ``gone`` rows and one ``stats``
    row, as ``fold_part`` with markers gives them (real column names, :func:`out_schema`).

    ``scalars`` (:data:`SCALARS`) and ``image_rows``: fold these rows instead, row ``i`` reading its images
    at row ``image_rows[i]`` of ``events``; so a caller folds a part of a large batch, or relabeled keys,
    without copying its images (a filter of the map columns was most of a 400k-event fold)."""
    schema = out_schema(columns)
    if scalars is None:
        scalars = events.select(SCALARS)
        image_rows = np.arange(events.num_rows, dtype=np.int64)
    n = scalars.num_rows
    if n:
        seq = pc.fill_null(scalars["seq"], "")
        table = scalars.select(["_key", "source_file", "source_offset", "_cdc_batch", "op"]).append_column("_seq", seq)
        order = pc.sort_indices(table, sort_keys=[(c, "ascending", "at_start") for c in _ORDER])
        ev = scalars.append_column("_seq", seq).take(order).combine_chunks()
    else:
        order = pa.array([], pa.uint64())
        ev = scalars.append_column("_seq", pa.array([], pa.string()))
    key = ev["_key"].combine_chunks()
    seq = ev["_seq"].combine_chunks()
    new_key = _differs(key)
    gid = np.cumsum(new_key) - 1
    groups = int(gid[-1]) + 1 if n else 0
    new_order = new_key | _differs(seq) | _differs(ev["source_file"].combine_chunks())
    new_order |= _differs(ev["source_offset"].combine_chunks())
    o3 = np.cumsum(new_order)  # dense rank of (key, seq, file, offset): compared within a key only
    pos = np.arange(n)
    op = ev["op"].combine_chunks()
    live = _flag(pc.greater_equal(seq, truncate_seq)) if truncate_seq is not None else np.ones(n, dtype=bool)
    is_reset = _flag(pc.is_in(op, pa.array(RESET_OPS)))
    is_delete = _flag(pc.equal(op, "DELETE"))
    mine = _flag(pc.equal(ev["_cdc_batch"], batch_id))

    reset_g = _run_ends(live & is_reset, gid, groups)
    other_g = _run_ends(~mine, gid, groups)
    newest_other = np.where(other_g >= 0, o3[np.maximum(other_g, 0)], -1)[gid] if n else np.zeros(0, np.int64)
    reset = reset_g[gid] if n else np.zeros(0, np.int64)
    after_reset = (reset < 0) | (pos > reset)
    in_window = live & (after_reset | ((pos == reset) & ~is_delete))
    current = (newest_other < 0) | (o3 >= newest_other)
    # an event logged twice (a batch re-run after snapshot expiry appends its rows again) counts once, as the
    # reference counts it (``merge.refold``); both copies still fold, to the same row
    counted = mine & _first_copies(new_order, ev, op)
    applied = int(np.count_nonzero(counted & live & current))
    stale = int(np.count_nonzero(counted & ~(live & current)))

    last_g = _run_ends(live, gid, groups)
    gone = (last_g < 0) | is_delete[np.maximum(last_g, 0)] if n else np.zeros(0, dtype=bool)
    base_applies = (reset_g < 0) | is_delete[np.maximum(reset_g, 0)] if n else np.zeros(0, dtype=bool)
    base_g = _run_ends(live & after_reset, gid, groups, last=False)
    sorted_rows = np.asarray(image_rows, np.int64)[_np(order).astype(np.int64)]
    after = _Image(events["after"], sorted_rows)
    before = _Image(events["before"], sorted_rows)

    arrays = []
    for name, type_name in columns:
        present, at = after.lookup(name)
        chosen = _run_ends(in_window & present, gid, groups)
        has = (chosen >= 0) & ~gone
        b_present, b_at = before.lookup(name)
        from_base = ~(chosen >= 0) & base_applies & (base_g >= 0) & ~gone
        from_base[from_base] = b_present[base_g[from_base]]
        written = after.texts(np.where(has, at[np.maximum(chosen, 0)], -1))
        texts = pc.fill_null(written, "null")  # a present value is never "not written"
        if from_base.any():
            texts = pc.if_else(pa.array(has), texts, before.texts(np.where(from_base, b_at[np.maximum(base_g, 0)], -1)))
        else:
            texts = pc.if_else(pa.array(has), texts, pa.scalar(None, pa.string()))
        arrays.append(typed_values(texts, type_name))

    last = np.where(gone, -1, last_g)
    pick = pa.array(last, pa.int64(), mask=last < 0)
    starts = np.flatnonzero(new_key)
    buckets = ev["_cdc_bucket"].combine_chunks()
    bucket = np.maximum.reduceat(_np(buckets).astype(np.int64), starts) if n else np.zeros(0, np.int64)
    meta = [
        op.take(pick),
        seq.take(pick),
        ev["event_ts"].combine_chunks().take(pick),
        ev["_cdc_batch"].combine_chunks().take(pick),
        pa.array(bucket, pa.int32()),
        key.take(pa.array(starts, pa.int64())),
        pc.if_else(pa.array(gone, pa.bool_()), "gone", "row").cast(pa.string()),
        pa.nulls(groups, pa.string()),
    ]
    rows = pa.Table.from_arrays([*arrays, *meta], schema=schema)
    info = {"applied": applied, "stale": stale, "deleted_keys": int(np.count_nonzero(gone))}
    stats = pa.Table.from_pylist([{"_cdc_kind": "stats", "_cdc_info": json.dumps(info)}], schema=schema)
    return pa.concat_tables([rows, stats])


def chain_keys(events: pa.Table, pairs: list[tuple[str, str]], batch_id: str) -> tuple[dict[str, str], list[str]]:
    """The key-change components of ``events`` (change-log rows of linked keys; ``pairs``: (new key, old key))
    that fold as ONE key: each key -> the component's last key, and the keys left without a row.

    A component qualifies when its key changes form one chain A -> B -> ... -> Z, every one of its events is of
    this batch (the reference counts an event stale against other batches' events of its own keys, not of the
    chain's), each key change is one event, and a key has no event after it moved away nor before it was
    moved to (before the change that named it). Then the reference (``merge._apply_one``) moves each key's row
    on to the next key at its change (or starts from the change's before image where there is no row, as any
    update without a row does) and never finds a row at the new key: folding every event of the chain, in
    order, under Z is the same fold, and A ... Y end without rows. Every other component goes to the reference.
    """
    succ: dict[str, str] = {}
    pred: dict[str, str] = {}
    broken: set[str] = set()
    for new, old in pairs:
        if old in succ or new in pred:
            broken |= {old, new}
        succ.setdefault(old, new)
        pred.setdefault(new, old)
    if not events.num_rows:
        return {}, []
    this_batch = pc.fill_null(pc.equal(events["_cdc_batch"], batch_id), False)
    foreign = set(events.filter(pc.invert(this_batch))["_key"].to_pylist())  # keys with another batch's event
    seq = pc.fill_null(events["seq"], "")
    by_order = pa.table({"s": seq, "f": events["source_file"], "o": events["source_offset"]})
    order = pc.sort_indices(by_order, sort_keys=[("s", "ascending"), ("f", "ascending"), ("o", "ascending")])
    ordered = by_order.take(order)
    step = _differs(ordered["s"].combine_chunks()) | _differs(ordered["f"].combine_chunks())
    step |= _differs(ordered["o"].combine_chunks())
    rank = np.empty(events.num_rows, np.int64)  # the reference's order as a dense rank: ties are equal
    rank[_np(order).astype(np.int64)] = np.cumsum(step)
    is_link = _flag(pc.equal(events["_role"], "link")) if "_role" in events.column_names else None
    keys = events["_key"].to_pylist()
    old_keys = events["_old_key"].to_pylist()
    first: dict[str, int] = {}  # a key's earliest event other than the change that named it
    last: dict[str, int] = {}  # a key's latest event
    change: dict[str, list[int]] = {}  # the ranks of the change naming a key (main rows)
    for i, (key, old_key) in enumerate(zip(keys, old_keys, strict=True)):
        r = int(rank[i])
        if r > last.get(key, -1):
            last[key] = r
        if old_key is None:
            if r < first.get(key, 1 << 62):
                first[key] = r
        elif is_link is None or not is_link[i]:
            change.setdefault(key, []).append(r)
    chained: dict[str, str] = {}
    gone: list[str] = []
    for head in [k for k in succ if k not in pred]:
        chain = [head]
        while chain[-1] in succ and len(chain) <= len(succ):
            chain.append(succ[chain[-1]])
        ok = len(set(chain)) == len(chain) and not (broken | foreign) & set(chain)
        for old, new in itertools.pairwise(chain):
            at = change.get(new, [])
            ok = ok and len(at) == 1 and last.get(old, -1) < at[0] < first.get(new, 1 << 62)
            if not ok:
                break
        if ok:
            chained.update(dict.fromkeys(chain, chain[-1]))
            gone.extend(chain[:-1])
    return chained, gone


def _relabeled(events: pa.Table, chained: dict[str, str], buckets: int) -> tuple[np.ndarray, pa.Table, pa.Table]:
    """(the rows of ``events`` of ``chained``'s keys, less the second copy of a key change; their
    :data:`SCALARS` under their chain's last key and its bucket; the other events)."""
    from cdclake.merge import bucket_of

    names = list(chained)
    in_chain = _flag(pc.is_in(events["_key"], pa.array(names, pa.string())))
    picked = in_chain.copy()
    if "_role" in events.column_names:
        picked &= ~_flag(pc.equal(events["_role"], "link"))
    rows = np.flatnonzero(picked)
    scalars = events.select(SCALARS).take(rows)
    at = pc.index_in(scalars["_key"], pa.array(names, pa.string()))
    last = pa.array([chained[k] for k in names], pa.string()).take(at)
    bucket = pa.array([bucket_of(chained[k], buckets) for k in names], pa.int32()).take(at)
    for name, column in (("_key", last), ("_cdc_bucket", bucket)):
        index = scalars.schema.get_field_index(name)
        scalars = scalars.set_column(index, scalars.schema.field(index), column.cast(scalars.schema.field(index).type))
    return rows, scalars, events.take(np.flatnonzero(~in_chain))


def _gone_rows(keys: list[str], columns: list[tuple[str, str]], buckets: int) -> pa.Table:
    """``gone`` rows of ``keys`` (a chain's keys left without a row), and their count as deleted keys."""
    from cdclake.merge import bucket_of

    schema = out_schema(columns)
    rows = [{"_cdc_key": k, "_cdc_bucket": bucket_of(k, buckets), "_cdc_kind": "gone"} for k in sorted(keys)]
    info = {"applied": 0, "stale": 0, "deleted_keys": len(keys)}
    rows.append({"_cdc_kind": "stats", "_cdc_info": json.dumps(info)})
    return pa.Table.from_pylist(rows, schema=schema)


def can_fold_arrow(rows: pa.Table | None, cmap: ColumnMap | None) -> bool:
    """The driver's native fold covers the layout: no renamed or dropped columns (their events are read
    through the column map, in the reference) and every current row carries its ``_cdc_key``."""
    if cmap is not None and (cmap.renames or cmap.dropped):
        return False
    return rows is None or rows["_cdc_key"].null_count == 0


def fold_driver(
    events: pa.Table,
    rows: pa.Table | None,
    *,
    keys: list[str],
    columns: list[tuple[str, str]],
    batch_id: str,
    buckets: int,
    truncate_seq: str | None,
    cmap: ColumnMap | None = None,
    markers: bool = False,
) -> pa.Table:
    """``fold_part``'s output (same arguments, same rows) with the keys outside key-change components
    folded by :func:`fold_arrow`; falls back to ``fold_part`` where :func:`can_fold_arrow` says no."""
    args = {"keys": keys, "columns": columns, "batch_id": batch_id, "buckets": buckets, "truncate_seq": truncate_seq}
    if not can_fold_arrow(rows, cmap):
        return fold_part(events, rows, cmap=cmap, markers=markers, **args)
    # rows are picked by position, never by a filter of the whole batch: its image maps are most of its bytes;
    # and from each chunk its own (a take from many chunks joins them all first, once per take)
    moved = events.select(["_key", "_old_key"]).take(np.flatnonzero(_np(pc.is_valid(events["_old_key"]))))
    pairs = sorted(set(zip(moved["_key"].to_pylist(), moved["_old_key"].to_pylist(), strict=True)))
    linked = sorted({key for pair in pairs for key in pair})  # every key of a component: a pair names them all
    in_component = _flag(pc.is_in(events["_key"], pa.array(linked, pa.string()))) if linked else None
    native_rows = np.arange(events.num_rows) if in_component is None else np.flatnonzero(~in_component)
    scalars = events.select(SCALARS)
    if in_component is not None:
        scalars = scalars.take(native_rows)
    parts = []
    if in_component is not None:
        component_rows = np.flatnonzero(in_component)
        component_events = ChunkedTake(events).take(component_rows)
        chained, gone_keys = chain_keys(component_events, pairs, batch_id)
        if chained:
            chain_rows, relabeled, component_events = _relabeled(component_events, chained, buckets)
            scalars = pa.concat_tables([scalars, relabeled])
            native_rows = np.concatenate([native_rows, component_rows[chain_rows]])
            parts.append(_gone_rows(gone_keys, columns, buckets))
        if component_events.num_rows:
            parts.append(fold_part(component_events, None, cmap=cmap, markers=True, **args))
    parts.append(fold_arrow(events, columns, batch_id, truncate_seq, scalars, native_rows))
    if rows is not None and rows.num_rows:
        affected = pa.concat_arrays([events["_key"].combine_chunks(), moved["_old_key"].combine_chunks()])
        kept = pc.invert(pc.is_in(rows["_cdc_key"], affected))
        if truncate_seq is not None:  # rows whose events are not in the log (a table older than its log)
            kept = pc.and_(kept, pc.greater_equal(pc.fill_null(rows["_cdc_seq"], ""), truncate_seq))
        passed = rows.filter(kept).select([n for n, _ in columns] + META_NAMES).cast(table_schema(columns))
        n = passed.num_rows
        kinds = [pa.array(["row"] * n, pa.string()), pa.nulls(n, pa.string())]
        parts.append(pa.Table.from_arrays([*passed.columns, *kinds], schema=out_schema(columns)))
    out = pa.concat_tables(parts)
    if not markers:
        out = out.filter(pc.not_equal(out["_cdc_kind"], "gone"))
    return out
