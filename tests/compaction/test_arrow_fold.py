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

from cdclake.compaction.arrow_fold import fold_arrow, fold_driver
from cdclake.compaction.folding import fold_part
from cdclake.compaction.lake_tables import LOG_SCHEMA, table_schema
from cdclake.events import to_json
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
@given(st.lists(event_st, min_size=0, max_size=14), st.sampled_from([None, "0003"]))
def test_arrow_fold_equals_the_reference(drawn, truncate_seq):
    log = pa.Table.from_pylist(log_rows(drawn), schema=LOG_SCHEMA)
    # replays tie on order: the reference applies them in input order, the native fold by batch id
    log = log.sort_by([("_cdc_batch", "ascending")])
    reference = fold_part(log, None, truncate_seq=truncate_seq, markers=True, **ARGS)
    assert rows_of(fold_arrow(log, COLUMNS, CURRENT, truncate_seq)) == rows_of(reference)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(event_st, min_size=0, max_size=12),
    st.lists(move_st, max_size=3),
    st.sets(st.integers(1, 5)),
    st.sampled_from([None, "0003"]),
    st.booleans(),
)
def test_driver_fold_with_key_changes_and_rows_equals_the_reference(drawn, moved, ids, truncate_seq, markers):
    rows = log_rows(drawn)
    log = pa.Table.from_pylist(rows + moves(moved, len(rows)), schema=LOG_SCHEMA)
    log = log.sort_by([("_cdc_batch", "ascending")])
    current = current_rows(ids) if ids else None
    if markers:  # the merge-on-read path reads no current rows
        current = None
    args = {**ARGS, "truncate_seq": truncate_seq, "markers": markers}
    assert rows_of(fold_driver(log, current, **args)) == rows_of(fold_part(log, current, **args))
