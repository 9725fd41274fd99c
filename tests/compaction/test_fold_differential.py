"""Every fold implementation against the reference (``merge.refold``, through ``fold_part``) on random change
logs: the same rows and the same counts (issue 56).

A fast fold is the reference's rule run faster; where it disagrees, a report stops balancing or a row is wrong.
The logs hold what a table's log holds: every column type (values in the raw forms decoders give), partial
updates (a column missing vs NULL), deletes, key changes (with their ``link`` rows), replays (an event logged
again by another batch), events logged twice by their own batch (a re-run after snapshot expiry), ties in seq,
events of the current batch and of others, a truncate watermark over rows older than it; read in any order.

The folds: ``fold_driver`` (the driver's Arrow fold, key-change chains and the reference for other components),
the driver's composition with row state (in-order keys onto their rows, ``merge.apply_events``), and the Spark SQL
fold on workers (``fold_native``, key-change components by the reference, as ``spark_fold._fold_native`` splits
them). Budgets: ``tests/fuzzing.py`` (small in CI; ``make fuzz`` runs 1,000+ examples each).
"""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from changelogs import BUCKETS, CURRENT, TYPED_COLUMNS, rows_of, typed_event_st, typed_log
from fuzzing import examples
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from cdclake.compaction.arrow_fold import fold_driver
from cdclake.compaction.folding import fold_part
from cdclake.compaction.lake_tables import LOG_DDL, LOG_SCHEMA, table_schema
from cdclake.compaction.native_fold import fold_native
from cdclake.compaction.routing import linked_in_driver
from cdclake.compaction.row_state import candidate_keys, fold_onto_rows, in_order_keys
from cdclake.events.change import to_json
from cdclake.merge import bucket_of

pytestmark = [pytest.mark.fuzz]

ARGS = {"keys": ["id"], "columns": TYPED_COLUMNS, "batch_id": CURRENT, "buckets": BUCKETS}
NAMES = [n for n, _ in TYPED_COLUMNS]
SETTINGS = {"deadline": None, "suppress_health_check": list(HealthCheck)}
truncate_st = st.sampled_from([None, None, "0002", "0004"])
logs_st = st.lists(typed_event_st, max_size=12)
order_st = st.randoms(use_true_random=False)  # the order the log is read in (Spark's, any)

#: A batch's events and, in the log before it, the same rows from its first run (kept: issue 56's divergence,
#: the fast folds counted both copies).
RERUN = [
    ("INSERT", 1, 1, 1, CURRENT, "f", {"s": "a", "q": "1.50"}, {}, int, None, "rerun"),
    ("UPDATE", 1, 1, 2, CURRENT, "f", {"n": 3}, {}, int, None, "rerun"),
    ("DELETE", 2, 2, 3, CURRENT, "g", {}, {}, int, None, "rerun"),
    ("UPDATE", 3, 3, 1, "b0", "f", {"s": None}, {}, str, None, None),
]

#: An event of b2 replayed by b0, read in that order (``random.Random(0)`` keeps it): the two copies tie in
#: position, and the reference broke the tie by the order it read the log in (the row's ``_cdc_batch`` was b0),
#: the fast folds by batch (b2). Every fold now breaks it by batch (``merge.position``).
REPLAY = [("INSERT", 1, 1, 1, "b2", "f", {"s": "a"}, {}, int, "b0", None)]


def _table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=LOG_SCHEMA)


def _read(rows: list[dict], rnd: random.Random) -> pa.Table:
    """``rows`` as a log read in ``rnd``'s order (the reference must not depend on it, nor the fast folds)."""
    rows = list(rows)
    rnd.shuffle(rows)
    return _table(rows)


def _keys_in(log: pa.Table, keys: set[str]) -> pa.Table:
    """The logged rows naming one of ``keys``, as key or as old key."""
    wanted = pa.array(sorted(keys), pa.string())
    return log.filter(pc.or_(pc.is_in(log["_key"], wanted), pc.fill_null(pc.is_in(log["_old_key"], wanted), False)))


def _table_rows(history: pa.Table, truncate_seq: str | None, extra: set[int] = frozenset()) -> pa.Table:
    """The lake rows the earlier batches left (the refold of their log), and rows of keys in ``extra`` whose
    events are not in the log (a table older than its log), some older than the watermark."""
    folded = fold_part(history, None, **{**ARGS, "batch_id": "b0"}, truncate_seq=truncate_seq, markers=True)
    rows = folded.filter(pc.equal(folded["_cdc_kind"], "row")).select([*NAMES, *table_schema(TYPED_COLUMNS).names[-6:]])
    older = [_old_row(i) for i in sorted(extra)]
    return pa.concat_tables([rows.cast(table_schema(TYPED_COLUMNS)), pa.Table.from_pylist(older, rows.schema)])


def _old_row(i: int) -> dict:
    key = to_json([i])
    seq = f"{i % 4:04d}"  # some older than the watermark: a bucket overwrite drops them
    return {
        "id": i,
        "s": "old",
        "_cdc_op": "INSERT",
        "_cdc_seq": seq,
        "_cdc_batch": "b-1",
        "_cdc_key": key,
        "_cdc_bucket": bucket_of(key, BUCKETS),
    }


def _balanced(log: pa.Table, stats: dict) -> bool:
    """applied + stale = the current batch's events, each counted once (the report's balance, less the
    quarantined records, which routing counts before any fold)."""
    rows = log.filter(pc.equal(log["_cdc_batch"], CURRENT)).to_pylist()
    events = {(r["source_file"], r["source_offset"], r["seq"], r["op"]) for r in rows}
    return stats["applied"] + stats["stale"] == len(events)


def reference(log: pa.Table, rows: pa.Table | None, truncate_seq: str | None, markers: bool = True):
    """Rows and counts of ``merge.refold`` (``fold_part``), checked to balance."""
    got = rows_of(fold_part(log, rows, **ARGS, truncate_seq=truncate_seq, markers=markers))
    assert _balanced(log, got[1]), got[1]
    return got


# --- the driver's fold ---------------------------------------------------------------------------------------


def _chunked(log: pa.Table, size: int) -> pa.Table:
    """``log`` in chunks of ``size`` rows (0: one), as a large batch's log arrives: the Arrow fold reads each
    chunk's images where they are."""
    return pa.Table.from_batches(log.to_batches(max_chunksize=size), schema=log.schema) if size else log


def _label(history: list[dict], batch: list[dict], truncate_seq: str | None) -> None:
    """What a drawn log holds, for ``make fuzz``'s statistics (``--hypothesis-show-statistics``)."""
    rows = history + batch
    identities = [(r["_cdc_batch"], r["source_file"], r["source_offset"], r["_role"]) for r in rows]
    event(f"key changes: {any(r['_old_key'] for r in rows)}")
    event(f"a row logged twice: {len(set(identities)) < len(identities)}")
    event(f"events of this batch: {bool(batch)}, of others: {bool(history)}; watermark: {truncate_seq}")


@settings(max_examples=examples(120), **SETTINGS)
@given(logs_st, truncate_st, st.sets(st.integers(5, 7)), st.booleans(), order_st, st.sampled_from([0, 1, 3]))
@example(RERUN, None, set(), True, random.Random(0), 0)
@example(REPLAY, None, set(), True, random.Random(0), 0)
def test_the_driver_fold_gives_the_reference_rows_and_counts(drawn, truncate_seq, extra, markers, rnd, chunk):
    history, batch = typed_log(drawn)
    _label(history, batch, truncate_seq)
    log = _chunked(_read(history + batch, rnd), chunk)
    # merge-on-read reads no rows (markers); a bucket overwrite passes the others through, the truncated dropped
    rows = None if markers else _table_rows(_table(history), None, extra)
    args = {**ARGS, "truncate_seq": truncate_seq, "markers": markers}
    assert rows_of(fold_driver(log, rows, **args)) == reference(log, rows, truncate_seq, markers)


def driver_with_row_state(history: pa.Table, batch: pa.Table, truncate_seq: str | None):
    """The driver's fold as ``driver_merge`` and ``affected`` put it together: the batch's in-order keys onto their
    rows (``row_state``), every other key of the batch and each key linked to one by a key change from its log.
    Returns (the fold, the in-order keys, every key folded)."""
    state = _table_rows(history, truncate_seq)
    seqs = dict(zip(state["_cdc_key"].to_pylist(), state["_cdc_seq"].to_pylist(), strict=True))
    in_order = in_order_keys(batch, candidate_keys(batch), seqs, truncate_seq)
    log = pa.concat_tables([history, batch])
    linked = _linked(log, _batch_keys(batch) - in_order)
    in_order -= linked
    from_log = (_batch_keys(batch) - in_order) | linked
    parts = [fold_driver(_keys_in(log, from_log), None, **ARGS, truncate_seq=truncate_seq, markers=True)]
    if in_order:
        wanted = pa.array(sorted(in_order), pa.string())
        mine = batch.filter(pc.is_in(batch["_key"], wanted))
        parts.append(fold_onto_rows(mine, state.filter(pc.is_in(state["_cdc_key"], wanted)), **ARGS))
    return pa.concat_tables(parts), in_order, from_log | in_order


def _batch_keys(batch: pa.Table) -> set[str]:
    return set(batch["_key"].to_pylist()) | {k for k in batch["_old_key"].to_pylist() if k is not None}


def _linked(log: pa.Table, keys: set[str]) -> set[str]:
    """The keys linked to ``keys`` by the log's key changes (``routing.linked_in_driver``)."""
    moved = log.filter(pc.is_valid(log["_old_key"])).select(["_key", "_old_key"])
    return set(linked_in_driver(moved, keys)[0])


def _delivered_in_order(drawn: list) -> list:
    """``drawn`` with the current batch's own events after every other's (seq + 6), neither replayed nor in the
    log before it: replication delivering in order, the case row state folds onto rows (rare in random logs)."""
    return [
        (*e[:3], e[3] + 6, *e[4:9], None, e[10] if e[10] == "within" else None) if e[4] == CURRENT else e for e in drawn
    ]


@settings(max_examples=examples(120), **SETTINGS)
@given(logs_st, truncate_st, order_st, st.booleans())
@example(RERUN, None, random.Random(0), False)
def test_row_state_and_the_driver_fold_give_the_reference_rows_and_counts(drawn, truncate_seq, rnd, in_order):
    """The same rows and applied / stale counts as the reference over every key linked to the batch's. Row state
    reads no log of an in-order key (its batch events follow its row: no link can change it), so the keys only
    such a log names are not folded (no row change, no ``gone`` marker, no ``deleted_keys`` count): rows are
    compared over the keys the fold covers."""
    history, batch = typed_log(_delivered_in_order(drawn) if in_order else drawn)
    history, batch = _read(history, rnd), _read(batch, rnd)
    log = pa.concat_tables([history, batch])
    got, onto_rows, covered = driver_with_row_state(history, batch, truncate_seq)
    event(f"keys folded onto their rows: {min(len(onto_rows), 2)}")
    whole = reference(_keys_in(log, _batch_keys(batch) | _linked(log, _batch_keys(batch))), None, truncate_seq)
    assert {dict(r)["_cdc_key"] for r in rows_of(got)[0]} <= covered
    assert _within(rows_of(got), covered) == _within(whole, covered)


def _within(folded: tuple[list, dict], keys: set[str]) -> tuple[list, dict]:
    """``rows_of``'s rows and gone markers of ``keys``, and its applied and stale counts."""
    rows = [r for r in folded[0] if dict(r)["_cdc_key"] in keys]
    return rows, {k: folded[1][k] for k in ("applied", "stale")}


# --- the Spark SQL fold on workers -----------------------------------------------------------------------------


def spark_fold(spark, log: pa.Table, truncate_seq: str | None) -> pa.Table:
    """The workers' fold as ``spark_fold._fold_native`` splits it: keys outside key-change components in Spark
    SQL, each component by the reference."""
    from pyspark.sql import functions as F

    moved = log.filter(pc.is_valid(log["_old_key"]))
    linked = sorted(set(moved["_key"].to_pylist()) | set(moved["_old_key"].to_pylist()))
    components = fold_part(
        log.filter(pc.is_in(log["_key"], pa.array(linked, pa.string()))),
        None,
        **ARGS,
        truncate_seq=truncate_seq,
        markers=True,
    )
    if not log.num_rows:  # (PySpark makes no frame of an empty Arrow table with timestamps)
        return components
    plain = spark.createDataFrame(log, schema=LOG_DDL).where(~F.col("_key").isin(linked))
    native = fold_native(plain, TYPED_COLUMNS, CURRENT, truncate_seq).toArrow()
    native = native.rename_columns([*NAMES, *native.column_names[len(NAMES) :]])
    return pa.concat_tables([native.cast(components.schema), components])


@pytest.mark.spark
@settings(max_examples=examples(4), **SETTINGS)
@given(st.lists(logs_st, min_size=1, max_size=8), truncate_st, order_st)
@example([RERUN], None, random.Random(0))
@example([REPLAY], None, random.Random(0))
def test_the_spark_sql_fold_gives_the_reference_rows_and_counts(spark, logs, truncate_seq, rnd):
    """Several logs per Spark job (each with keys and files of its own), so that CI stays short."""
    rows = [row for i, drawn in enumerate(logs) for part in typed_log(drawn, namespace=i) for row in part]
    log = _read(rows, rnd)
    assert rows_of(spark_fold(spark, log, truncate_seq)) == reference(log, None, truncate_seq)


# --- a re-run after snapshot expiry ------------------------------------------------------------------------------


@pytest.mark.spark
def test_a_rerun_after_snapshot_expiry_counts_what_the_first_run_counted_in_every_fold(spark):
    """``jobs/maintain.py``: after expiry, a re-run of a batch appends its rows to the log again (same batch,
    file and offset). Every fold counts its events once: the same rows and counts as the first run, balanced."""
    once = [(*e[:-1], None) for e in RERUN]
    history, batch = typed_log(once)
    first_log = _table(history + batch)
    again_history, _ = typed_log(RERUN)
    rerun_log = _table(again_history + batch)
    assert rerun_log.num_rows > first_log.num_rows
    first = reference(first_log, None, None)
    assert first[1] == {"applied": 3, "stale": 0, "deleted_keys": 1}
    for log in (first_log, rerun_log):
        folds = {
            "reference": reference(log, None, None),
            "driver": rows_of(fold_driver(log, None, **ARGS, truncate_seq=None, markers=True)),
            "spark": rows_of(spark_fold(spark, log, None)),
        }
        assert {name: got == first for name, got in folds.items()} == dict.fromkeys(folds, True), folds
    # with row state: the table holds the first run's rows, so no key of the batch is in order; all from the log
    row_state = rows_of(driver_with_row_state(_table(again_history), _table(batch), None)[0])
    assert row_state[1] == first[1]
