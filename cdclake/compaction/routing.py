"""Which events a batch folds, and where: change-log rows of the batch's events (key, old key,
bucket), keys linked by key changes, and the worker each key-change component goes to.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdclake.compaction.arrow_typing import image_keys, typed_images
from cdclake.compaction.lake_tables import ROUTED_SCHEMA
from cdclake.events.arrow_text import text_buckets
from cdclake.events.change import ROW_OPS, image_from_text
from cdclake.merge import PreparedEvent, bucket_of, key_of, keyed_event, prepare
from cdclake.schema.coltypes import CastError
from cdclake.schema.evolution import ColumnMap

#: More keys linked by key changes than this are folded by reading whole buckets.
MAX_LINK_ROUNDS = 8


def _prepare_row(row: dict[str, Any], keys: list[str], types: dict[str, str], cmap: ColumnMap | None = None):
    return _prepare_event(
        row["op"],
        row["seq"],
        row["event_ts"],
        row["before"],
        row["after"],
        (row["source_file"], row["source_offset"]),
        keys,
        types,
        cmap,
    )


def prepared_rows(
    events: pa.Table, keys: list[str], types: dict[str, str], cmap: ColumnMap | None = None
) -> list[PreparedEvent]:
    """``[_prepare_row(row, ...) for row in events.to_pylist()]``, the images cast column-wise
    (``arrow_typing.typed_images``: a tenth of the time); the reference's own loop wherever that says no."""
    translate = cmap is not None and bool(cmap.renames or cmap.dropped)
    before = None if translate else typed_images(events["before"].combine_chunks(), types)
    after = None if translate or before is None else typed_images(events["after"].combine_chunks(), types)
    if before is None or after is None:
        return [_prepare_row(row, keys, types, cmap) for row in events.to_pylist()]
    read = ("op", "seq", "event_ts", "source_file", "source_offset")
    op, seq, event_ts, files, offsets = (events[n].to_pylist() for n in read)
    try:
        return [
            keyed_event(op[i], seq[i], event_ts[i], before[i], after[i], (files[i], offsets[i]), keys)
            for i in range(events.num_rows)
        ]
    except CastError:  # an event without a key: the reference words it
        return [_prepare_row(row, keys, types, cmap) for row in events.to_pylist()]


def _prepare_event(
    op: str,
    seq: str | None,
    event_ts: Any,
    before: Any,
    after: Any,
    source: tuple[str, int],
    keys: list[str],
    types: dict[str, str],
    cmap: ColumnMap | None = None,
):
    before, after = image_from_text(before), image_from_text(after)
    if cmap is not None:  # old-layout events read in the current layout (renames, drops, ignored columns)
        before, after = cmap.translate(before, types), cmap.translate(after, types)
    return prepare(op, seq, event_ts, before, after, source, keys=keys, types=types)


def route_events(
    batches: Iterator[pa.RecordBatch],
    keys: list[str],
    types: dict[str, str],
    buckets: int,
    batch_id: str,
    cmap: ColumnMap | None = None,
) -> Iterator[pa.RecordBatch]:
    """Change-log rows of a batch's row events: key, old key, bucket (or why not).

    Images are typed and keyed column-wise in Arrow (``arrow_typing``); only the events its patterns do
    not vouch for (and every event whose names a column map translates) go through the reference,
    ``merge.prepare``, one at a time, so each outcome is the reference's. The logged columns are taken
    from the batch as Arrow, so an event's text is never rebuilt row by row. TRUNCATE events are logged
    by the truncate step, not here.
    """
    translate = cmap is not None and bool(cmap.renames or cmap.dropped)
    for batch in batches:
        is_row = pc.fill_null(pc.is_in(batch.column("op"), pa.array(sorted(ROW_OPS), pa.string())), False)
        picked = batch if pc.all(is_row).as_py() is not False else batch.filter(is_row)
        count = picked.num_rows
        nothing = pa.nulls(count, pa.string())
        if translate:
            key, old_key, unsure = nothing, nothing, np.ones(count, dtype=bool)
        else:
            before_keys, unsure_before = image_keys(picked.column("before"), keys, types)
            after_keys, unsure_after = image_keys(picked.column("after"), keys, types)
            key, old_key = _chosen_keys(picked.column("op"), before_keys, after_keys)
            unsure = unsure_before | unsure_after | ~_valid(key)  # no key: the reference words the error
        error = nothing
        if unsure.any():  # the reference's outcome for those rows, as Python lists (most batches: none)
            sure = pa.array(~unsure)
            found = pc.if_else(sure, key, pa.scalar(None, pa.string())).to_pylist()
            old = pc.if_else(sure, old_key, pa.scalar(None, pa.string())).to_pylist()
            errors: list[str | None] = [None] * count
            _route_by_reference(picked, np.flatnonzero(unsure), found, old, errors, keys, types, cmap)
            key, old_key, error = (pa.array(values, pa.string()) for values in (found, old, errors))
        yield from _routed_batches(picked, key, old_key, error, buckets, batch_id)


def _valid(array: pa.Array) -> np.ndarray:
    return pc.is_valid(array).to_numpy(zero_copy_only=False)


def _chosen_keys(op: pa.Array, before_keys: pa.Array, after_keys: pa.Array) -> tuple[pa.Array, pa.Array]:
    """``merge.prepare``'s choice of key and old key, on the key texts of every event at once: a delete's
    key is its before image's (else its after's), an update's its after image's (else its before's, and the
    before's is its old key when both are there and differ), any other event's its after image's."""
    is_delete = pc.fill_null(pc.equal(op, "DELETE"), False)
    is_update = pc.fill_null(pc.equal(op, "UPDATE"), False)
    key = pc.if_else(
        is_delete,
        pc.coalesce(before_keys, after_keys),
        pc.if_else(is_update, pc.coalesce(after_keys, before_keys), after_keys),
    )
    moved = pc.and_(is_update, pc.fill_null(pc.not_equal(after_keys, before_keys), False))
    return key, pc.if_else(moved, before_keys, pa.scalar(None, pa.string()))


def _buckets(keys: pa.Array, buckets: int) -> np.ndarray:
    """``bucket_of`` of every key text (-1 for NULL), in one C pass where it is built (``arrow_text``)."""
    return text_buckets(keys, buckets)


def _route_by_reference(
    picked: pa.RecordBatch,
    rows: np.ndarray,
    found: list[str | None],
    old: list[str | None],
    errors: list[str | None],
    keys: list[str],
    types: dict[str, str],
    cmap: ColumnMap | None,
) -> None:
    """Key ``rows`` of ``picked`` by the reference (``merge.prepare``), filling ``found`` / ``old`` /
    ``errors`` in place."""
    if not len(rows):
        return
    taken = picked.take(pa.array(rows, pa.int64()))
    read = ("op", "seq", "event_ts", "before", "after", "source_file", "source_offset")
    fields = {n: taken.column(n).to_pylist() for n in read}
    for j, i in enumerate(rows.tolist()):
        try:
            event = _prepare_event(
                fields["op"][j],
                fields["seq"][j],
                fields["event_ts"][j],
                fields["before"][j],
                fields["after"][j],
                (fields["source_file"][j], fields["source_offset"][j]),
                keys,
                types,
                cmap,
            )
        except CastError as exc:
            errors[i] = str(exc)
            continue
        found[i], old[i] = event.key, event.old_key


def _routed_batches(
    picked: pa.RecordBatch,
    key: pa.Array,
    old_key: pa.Array,
    error: pa.Array,
    buckets: int,
    batch_id: str,
) -> Iterator[pa.RecordBatch]:
    """The routed rows of ``picked``: per event, in order, its ``error`` row or its ``main`` row under its
    key's bucket; then, in a batch of their own, a ``link`` row under its old key's bucket for each key
    change that crosses buckets (logged there too, so a refold of the old key finds it). The main rows are
    ``picked``'s own columns, not a copy of its images."""
    count = picked.num_rows
    failed = _valid(error) if error.null_count < count else np.zeros(count, dtype=bool)
    bucket = _buckets(key, buckets)
    old_bucket = _buckets(old_key, buckets) if old_key.null_count < count else np.full(count, -1, dtype=np.int64)
    computed = {
        "_key": key,
        "_old_key": old_key,
        "_cdc_bucket": pa.array(bucket, pa.int32(), mask=bucket < 0),
        "_role": pa.array(np.where(failed, "error", "main"), pa.string()),
        "_error": error,
    }
    yield _routed(picked, computed, batch_id)
    links = np.flatnonzero(~failed & (old_bucket >= 0) & (old_bucket != bucket))
    if len(links):
        index = pa.array(links)
        computed = {"_key": key.take(index), "_old_key": old_key.take(index), "_error": error.take(index)}
        computed["_cdc_bucket"] = pa.array(old_bucket[links], pa.int32())
        computed["_role"] = pa.array(["link"] * len(links), pa.string())
        yield _routed(picked.take(index), computed, batch_id)


def _routed(picked: pa.RecordBatch, computed: dict[str, pa.Array], batch_id: str) -> pa.RecordBatch:
    """``ROUTED_SCHEMA``'s columns: ``computed``'s, else ``picked``'s, else NULL."""
    rows = picked.num_rows
    computed["_cdc_batch"] = pa.array([batch_id] * rows, pa.string())
    arrays = []
    for field in ROUTED_SCHEMA:
        if field.name in computed:
            arrays.append(computed[field.name].cast(field.type))
        elif field.name in picked.schema.names:
            arrays.append(picked.column(field.name).cast(field.type))
        else:
            arrays.append(pa.nulls(rows, field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=ROUTED_SCHEMA)


def linked_in_driver(pairs: pa.Table, known: set[str]) -> tuple[list[str], set[tuple[str, str]]]:
    """What :func:`linked_keys` finds (its fixpoint run to the end), from every key change of the log in
    hand (``pairs``: ``_key``, ``_old_key``): the keys connected to ``known`` through them, and the pairs
    touching those keys."""
    found_pairs = set(zip(pairs["_key"].to_pylist(), pairs["_old_key"].to_pylist(), strict=True))
    neighbours: dict[str, set[str]] = {}
    for key, old in found_pairs:
        neighbours.setdefault(key, set()).add(old)
        neighbours.setdefault(old, set()).add(key)
    found = set(known)
    frontier = [k for k in known if k in neighbours]
    while frontier:
        key = frontier.pop()
        for other in neighbours[key]:
            if other not in found:
                found.add(other)
                frontier.append(other)
    touching = {(k, o) for k, o in found_pairs if k in found or o in found}
    return sorted(found - known), touching


def linked_keys(
    spark, log_name: str, keys_df, known: set[str] | None = None
) -> tuple[list[str], set[tuple[str, str]] | None]:
    """Keys linked to ``keys_df`` by key changes anywhere in the log, to a fixpoint.

    Only key-change pairs reach the driver (they are rare), never the key set. ``known``: the keys of
    ``keys_df`` when the driver has them (a small batch): the frontier is then broadcast, and a round
    that finds no key outside them ends the search (usually the first). Files whose ``_old_key`` is all
    null are skipped by Iceberg's column metrics, so a log without key changes costs one empty scan.

    Returns (the linked keys not in ``known``, every (key, old key) pair found: all the key changes
    that touch the final key set, which is what routing the fold by component needs; None when the
    search was cut short after ``MAX_LINK_ROUNDS``).
    """
    from pyspark.sql import functions as F

    links = spark.table(log_name).where(F.col("_old_key").isNotNull()).select("_key", "_old_key")
    found: set[str] = set(known or ())
    all_pairs: set[tuple[str, str]] = set()
    frontier, broadcast = keys_df, known is not None
    for _ in range(MAX_LINK_ROUNDS):
        side = F.broadcast(frontier) if broadcast else frontier
        # two equi-joins, not one join on `_key = k OR _old_key = k`: Spark runs an OR condition
        # as a nested loop over every link and every key of the batch
        pairs = links.join(side, links["_key"] == side["k"], "left_semi").union(
            links.join(side, links["_old_key"] == side["k"], "left_semi")
        )
        round_pairs = {(r["_key"], r["_old_key"]) for r in pairs.distinct().collect()}
        all_pairs |= round_pairs
        new = {v for pair in round_pairs for v in pair} - found
        if not new:
            return sorted(found - set(known or ())), all_pairs
        found |= new
        frontier, broadcast = spark.createDataFrame([(k,) for k in sorted(new)], "k string"), True
    return sorted(found - set(known or ())), None  # cut short: the last keys' other pairs were not searched


def component_homes(pairs: list[tuple[str, str]], buckets: int) -> dict[str, int]:
    """Every key linked by a key change -> the bucket of its component's smallest key."""
    from cdclake.merge import PreparedEvent, components

    fake = [PreparedEvent("UPDATE", "", ("", "", 0), None, k, old, None, None, ("", 0)) for k, old in pairs]
    homes: dict[str, int] = {}
    for group in components(fake):
        members = {e.key for e in group} | {e.old_key for e in group}
        homes.update(dict.fromkeys(members, bucket_of(min(members), buckets)))
    return homes


def with_part(rows, part_of: dict[str, int], keys: list[str], ddl: str):
    """Add ``_cdc_part``: the worker a row goes to (its key-change component's home, else its bucket)."""
    from pyspark.sql import functions as F

    if not part_of:
        return rows.withColumn("_cdc_part", F.col("_cdc_bucket"))

    def rows_part(it: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in it:
            parts = [part_of.get(key_of(r, keys), r["_cdc_bucket"]) for r in batch.to_pylist()]
            yield batch.append_column("_cdc_part", pa.array(parts, pa.int32()))

    return rows.mapInArrow(rows_part, f"{ddl}, _cdc_part int")
