"""Row state: a batch's in-order keys folded onto their current rows give what the refold of their whole
log gives (``fold_part`` over ``merge.refold``), and every other key is left to the log."""

from __future__ import annotations

import pyarrow as pa
from changelogs import BUCKETS, COLUMNS, event_st, log_rows, rows_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdclake.compaction.folding import fold_part
from cdclake.compaction.lake_tables import LOG_SCHEMA
from cdclake.compaction.row_state import candidate_keys, fold_onto_rows, in_order_keys
from cdclake.events.change import to_json

ARGS = {"keys": ["id"], "columns": COLUMNS, "buckets": BUCKETS}


def _split(drawn, current_batch: str = "b1"):
    """The drawn events as (the log before this batch, this batch's routed events)."""
    rows = log_rows(drawn)
    earlier = [r for r in rows if r["_cdc_batch"] != current_batch]
    batch = [r for r in rows if r["_cdc_batch"] == current_batch]
    return pa.Table.from_pylist(earlier, schema=LOG_SCHEMA), pa.Table.from_pylist(batch, schema=LOG_SCHEMA)


def _table_rows(earlier: pa.Table, truncate_seq: str | None) -> pa.Table:
    """The lake rows the earlier batches left: the refold of their log (kind ``row``)."""
    folded = fold_part(earlier, None, batch_id="b0", truncate_seq=truncate_seq, markers=True, **ARGS)
    return folded.filter(pa.compute.equal(folded["_cdc_kind"], "row"))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(event_st, min_size=1, max_size=16), st.sampled_from([None, "0003"]))
def test_in_order_keys_fold_onto_their_rows_as_the_refold_of_their_log(drawn, truncate_seq):
    earlier, batch = _split(drawn)
    rows = _table_rows(earlier, truncate_seq)
    candidates = candidate_keys(batch)
    seqs = dict(zip(rows["_cdc_key"].to_pylist(), rows["_cdc_seq"].to_pylist(), strict=True))
    in_order = in_order_keys(batch, candidates, seqs, truncate_seq)
    if not in_order:
        return
    wanted = pa.array(sorted(in_order))
    mine = batch.filter(pa.compute.is_in(batch["_key"], wanted))
    onto = fold_onto_rows(mine, rows.filter(pa.compute.is_in(rows["_cdc_key"], wanted)), batch_id="b1", **ARGS)
    whole = pa.concat_tables([earlier, batch])
    reference = fold_part(
        whole.filter(pa.compute.is_in(whole["_key"], wanted)),
        None,
        batch_id="b1",
        truncate_seq=truncate_seq,
        markers=True,
        **ARGS,
    )
    assert rows_of(onto) == rows_of(reference)


def _event(key: int, seq: int, op: str = "UPDATE", batch: str = "b1", offset: int = 0, old_key: int | None = None):
    key_text = to_json([key])
    return {
        "_key": key_text,
        "_old_key": None if old_key is None else to_json([old_key]),
        "_cdc_bucket": 0,
        "_role": "main",
        "op": op,
        "seq": f"{seq:04d}",
        "before": [("id", to_json(old_key if old_key is not None else key))],
        "after": [("id", to_json(key)), ("name", '"x"')],
        "source_file": "f",
        "source_offset": offset,
        "_cdc_batch": batch,
    }


def test_late_missing_moved_and_duplicated_keys_go_to_the_log():
    batch = pa.Table.from_pylist(
        [
            _event(1, 5, offset=0),  # in order: its row is at seq 3
            _event(2, 3, offset=1),  # a tie with its row's seq: the log orders it by file and offset
            _event(3, 9, offset=2),  # no row: a new key, or a deleted one (the tombstone is in the log)
            _event(4, 9, offset=3, old_key=5),  # a key change: both keys
            _event(6, 9, offset=4),
            _event(6, 9, offset=4),  # the same event twice in the batch
            _event(7, 2, offset=5),  # its row is older than the truncate watermark
        ],
        schema=LOG_SCHEMA,
    )
    candidates = candidate_keys(batch)
    assert candidates == {to_json([k]) for k in (1, 2, 3, 7)}
    seqs = {to_json([1]): "0003", to_json([2]): "0003", to_json([7]): "0001"}
    assert in_order_keys(batch, candidates, seqs, truncate_seq="0002") == {to_json([1])}
    assert in_order_keys(batch, candidates, seqs, truncate_seq=None) == {to_json([1]), to_json([7])}
