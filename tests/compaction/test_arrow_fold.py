"""The driver's native fold gives the rows and counts of the reference fold (``fold_part`` over
``merge.refold``) on random change logs: several batches, partial updates, upserts, deletes, replays,
a watermark; with key changes (their components go to the reference) and current rows passed through."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
from changelogs import BUCKETS, COLUMNS, CURRENT, event_st, image, log_rows, rows_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdclake.compaction.arrow_fold import chain_keys, fold_arrow, fold_driver
from cdclake.compaction.folding import fold_part
from cdclake.compaction.lake_tables import LOG_SCHEMA, table_schema
from cdclake.events.change import to_json
from cdclake.merge import bucket_of

ARGS = {"keys": ["id"], "columns": COLUMNS, "batch_id": CURRENT, "buckets": BUCKETS}

move_st = st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 6), st.sampled_from(["b0", "b1", "b2"]))


def moves(drawn, first_offset: int) -> list[dict]:
    """Key changes (UPDATE old -> new), logged as routing logs them: under the new key, and under the old
    key's bucket too (role ``link``) when it differs."""
    rows = []
    for offset, (old, new, seq, batch) in enumerate(drawn, start=first_offset):
        if old == new:
            continue
        key, old_key = to_json([new]), to_json([old])
        row = {
            "_key": key,
            "_old_key": old_key,
            "_cdc_bucket": bucket_of(key, BUCKETS),
            "_role": "main",
            "op": "UPDATE",
            "seq": f"{seq:04d}",
            "event_ts": dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=seq),
            "tx_id": None,
            "tx_pos": None,
            "before": image(old, {"name"}, {"name": "moved"}),
            "after": image(new, {"name"}, {"name": "moved"}),
            "meta": None,
            "source_file": "f",
            "source_offset": offset,
            "_cdc_batch": batch,
        }
        rows.append(row)
        if bucket_of(old_key, BUCKETS) != row["_cdc_bucket"]:
            rows.append({**row, "_cdc_bucket": bucket_of(old_key, BUCKETS), "_role": "link"})
    return rows


def chunked(log: pa.Table, size: int) -> pa.Table:
    """``log`` in chunks of ``size`` rows (0: one chunk), as a large batch's log append arrives: the fold reads
    each chunk's images where they are."""
    return pa.Table.from_batches(log.to_batches(max_chunksize=size), schema=log.schema) if size else log


def current_rows(ids: set[int]) -> pa.Table:
    rows = [
        {
            "id": i,
            "name": f"row{i}",
            "qty": Decimal("9.00"),
            "at": None,
            "_cdc_op": "INSERT",
            "_cdc_seq": f"{i % 3:04d}",
            "_cdc_ts": None,
            "_cdc_batch": "b0",
            "_cdc_bucket": bucket_of(to_json([i]), BUCKETS),
            "_cdc_key": to_json([i]),
        }
        for i in sorted(ids)
    ]
    return pa.Table.from_pylist(rows, schema=table_schema(COLUMNS))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(event_st, min_size=0, max_size=14), st.sampled_from([None, "0003"]), st.sampled_from([0, 1, 4]))
def test_arrow_fold_equals_the_reference(drawn, truncate_seq, chunk):
    log = pa.Table.from_pylist(log_rows(drawn), schema=LOG_SCHEMA)
    # replays tie on order (seq, file, offset): every fold breaks the tie by batch id, none by the log's order
    log = chunked(log.sort_by([("_cdc_batch", "descending")]), chunk)
    reference = fold_part(log, None, truncate_seq=truncate_seq, markers=True, **ARGS)
    assert rows_of(fold_arrow(log, COLUMNS, CURRENT, truncate_seq)) == rows_of(reference)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(event_st, min_size=0, max_size=12),
    st.lists(move_st, max_size=3),
    st.sets(st.integers(1, 5)),
    st.sampled_from([None, "0003"]),
    st.booleans(),
    st.sampled_from([0, 1, 3]),
)
def test_driver_fold_with_key_changes_and_rows_equals_the_reference(drawn, moved, ids, truncate_seq, markers, chunk):
    rows = log_rows(drawn)
    log = pa.Table.from_pylist(rows + moves(moved, len(rows)), schema=LOG_SCHEMA)
    log = chunked(log.sort_by([("_cdc_batch", "descending")]), chunk)
    current = current_rows(ids) if ids else None
    if markers:  # the merge-on-read path reads no current rows
        current = None
    args = {**ARGS, "truncate_seq": truncate_seq, "markers": markers}
    assert rows_of(fold_driver(log, current, **args)) == rows_of(fold_part(log, current, **args))


def _this_batch(drawn) -> list:
    """``drawn`` events all of the current batch, none replayed: the logs whose chains fold as one key."""
    return [
        (op, key, seq, CURRENT, after, before, values, False) for op, key, seq, _, after, before, values, _ in drawn
    ]


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(event_st, min_size=0, max_size=12),
    st.lists(move_st, min_size=1, max_size=4),
    st.sets(st.integers(1, 5)),
    st.sampled_from([None, "0003"]),
    st.booleans(),
    st.sampled_from([0, 2]),
)
def test_key_change_chains_of_one_batch_fold_as_the_reference(drawn, moved, ids, truncate_seq, markers, chunk):
    rows = log_rows(_this_batch(drawn))
    moved = [(old, new, seq, CURRENT) for old, new, seq, _ in moved]
    log = chunked(pa.Table.from_pylist(rows + moves(moved, len(rows)), schema=LOG_SCHEMA), chunk)
    current = None if markers else (current_rows(ids) if ids else None)
    args = {**ARGS, "truncate_seq": truncate_seq, "markers": markers}
    assert rows_of(fold_driver(log, current, **args)) == rows_of(fold_part(log, current, **args))


def test_a_chain_of_key_changes_folds_under_its_last_key():
    # 1 inserted, updated; 1 -> 2; 2 updated; 2 -> 3; 3 updated. 4: its own key, untouched by the chain
    drawn = [
        ("INSERT", 1, 1, CURRENT, {"name", "qty"}, set(), {"name": "a", "qty": "1.50", "at": None}, False),
        ("UPDATE", 1, 2, CURRENT, {"qty"}, {"qty"}, {"name": None, "qty": 2, "at": None}, False),
        ("INSERT", 4, 2, CURRENT, {"name"}, set(), {"name": "b", "qty": None, "at": None}, False),
    ]
    rows = log_rows(drawn)
    rows += moves([(1, 2, 3, CURRENT)], len(rows))
    rows += log_rows(
        [("UPDATE", 2, 4, CURRENT, {"at"}, set(), {"name": None, "qty": None, "at": "2024-01-01 00:00:00"}, False)]
    )
    rows[-1]["source_offset"] = len(rows)
    rows += moves([(2, 3, 5, CURRENT)], len(rows))
    log = pa.Table.from_pylist(rows, schema=LOG_SCHEMA)
    moved = log.filter(pa.compute.is_valid(log["_old_key"]))
    pairs = sorted(set(zip(moved["_key"].to_pylist(), moved["_old_key"].to_pylist(), strict=True)))
    chained, gone = chain_keys(log.filter(pa.compute.is_valid(log["_key"])), pairs, CURRENT)
    assert chained == dict.fromkeys([to_json([1]), to_json([2]), to_json([3])], to_json([3]))
    assert sorted(gone) == [to_json([1]), to_json([2])]
    for markers in (True, False):
        args = {**ARGS, "truncate_seq": None, "markers": markers}
        folded = fold_driver(log, None, **args)
        assert rows_of(folded) == rows_of(fold_part(log, None, **args))
    kept = folded.filter(pa.compute.equal(folded["_cdc_kind"], "row")).to_pylist()
    assert sorted((r["_cdc_key"], r["name"], str(r["qty"]), r["at"] is not None) for r in kept) == [
        (to_json([3]), "moved", "2.00", True),
        (to_json([4]), "b", "None", False),
    ]


def test_a_key_with_events_after_it_moved_away_goes_to_the_reference():
    drawn = [("INSERT", 1, 1, CURRENT, {"name"}, set(), {"name": "a", "qty": None, "at": None}, False)]
    rows = log_rows(drawn) + moves([(1, 2, 2, CURRENT)], 1)
    rows += [{**log_rows(drawn)[0], "seq": "0003", "source_offset": 9}]  # 1 inserted again after the move
    log = pa.Table.from_pylist(rows, schema=LOG_SCHEMA)
    assert chain_keys(log, [(to_json([2]), to_json([1]))], CURRENT) == ({}, [])
    args = {**ARGS, "truncate_seq": None, "markers": True}
    assert rows_of(fold_driver(log, None, **args)) == rows_of(fold_part(log, None, **args))


def test_a_chain_with_another_batch_s_event_goes_to_the_reference():
    # the reference counts an event stale against the other batches' events of its own keys (the moved key's
    # later event does not make the insert before the move stale): one key for the chain would count otherwise
    values = {"name": "a", "qty": None, "at": None}
    rows = log_rows([("INSERT", 1, 1, CURRENT, {"name"}, set(), values, False)]) + moves([(1, 2, 2, CURRENT)], 1)
    rows += [{**log_rows([("UPDATE", 2, 3, "b2", {"name"}, set(), values, False)])[0], "source_offset": 5}]
    log = pa.Table.from_pylist(rows, schema=LOG_SCHEMA)
    assert chain_keys(log, [(to_json([2]), to_json([1]))], CURRENT) == ({}, [])
    args = {**ARGS, "truncate_seq": None, "markers": True}
    assert rows_of(fold_driver(log, None, **args)) == rows_of(fold_part(log, None, **args))
    assert rows_of(fold_part(log, None, **args))[1] == {"applied": 1, "stale": 1, "deleted_keys": 1}


def test_a_key_change_made_twice_goes_to_the_reference():
    # the second 1 -> 2 finds no row at 1: the reference starts 2 again from its before image
    values = {"name": "a", "qty": "1.50", "at": None}
    rows = log_rows([("INSERT", 1, 1, CURRENT, {"name", "qty"}, set(), values, False)])
    rows += moves([(1, 2, 2, CURRENT)], 1)
    rows += [
        {**log_rows([("UPDATE", 2, 3, CURRENT, {"qty"}, set(), {**values, "qty": 2}, False)])[0], "source_offset": 5}
    ]
    rows += moves([(1, 2, 4, CURRENT)], 6)
    log = pa.Table.from_pylist(rows, schema=LOG_SCHEMA)
    assert chain_keys(log, [(to_json([2]), to_json([1]))], CURRENT) == ({}, [])
    args = {**ARGS, "truncate_seq": None, "markers": True}
    assert rows_of(fold_driver(log, None, **args)) == rows_of(fold_part(log, None, **args))
