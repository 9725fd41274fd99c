"""Every fold of the semantics (``compaction.fold.FOLDS``) against the reference (``merge.refold``, through
``fold_part``) on random change logs: the same rows and the same counts (issues 56, 57).

A fast fold is the reference's rule run faster; where it disagrees, a report stops balancing or a row is wrong.
The logs hold what a table's log holds: every column type (values in the raw forms decoders give), partial
updates (a column missing vs NULL), deletes, key changes (with their ``link`` rows), replays (an event logged
again by another batch), events logged twice by their own batch (a re-run after snapshot expiry), ties in seq,
events of the current batch and of others, a truncate watermark over rows older than it; read in any order, in
one chunk or several; and, half the time, the current batch delivered in order after the others (the case row
state folds onto the table's rows, rare in random logs).

One parametrized suite over the registry: a fold added to ``FOLDS`` is held to the reference here with no test
of its own. Budgets: ``tests/fuzzing.py`` (small in CI; ``make fuzz`` runs 1,000+ examples each); a Spark fold
folds several logs per job (each with keys and files of its own), so that CI stays short.
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
from cdclake.compaction.fold import FOLDS, Fold, FoldSpec
from cdclake.compaction.folding import fold_part
from cdclake.compaction.lake_tables import LOG_SCHEMA, table_schema
from cdclake.events.change import to_json
from cdclake.merge import bucket_of

pytestmark = [pytest.mark.fuzz]

ARGS = {"keys": ["id"], "columns": TYPED_COLUMNS, "batch_id": CURRENT, "buckets": BUCKETS}
NAMES = [n for n, _ in TYPED_COLUMNS]
SETTINGS = {"deadline": None, "suppress_health_check": list(HealthCheck)}
truncate_st = st.sampled_from([None, None, "0002", "0004"])
logs_st = st.lists(typed_event_st, max_size=12)
order_st = st.randoms(use_true_random=False)  # the order the log is read in (Spark's, any)
chunk_st = st.sampled_from([0, 1, 3])

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

#: Keys whose batch events all follow their row (row state folds them onto it), one of them deleted, beside a
#: key the batch inserts.
IN_ORDER = [
    ("INSERT", 1, 1, 1, "b0", "f", {"s": "a", "n": 1}, {}, int, None, None),
    ("INSERT", 2, 2, 1, "b2", "g", {"s": "b"}, {}, int, None, None),
    ("UPDATE", 1, 1, 2, CURRENT, "f", {"n": 2}, {}, int, None, None),
    ("UPDATE", 1, 1, 3, CURRENT, "g", {"s": None}, {}, str, None, None),
    ("DELETE", 2, 2, 4, CURRENT, "f", {}, {}, int, None, None),
    ("INSERT", 3, 3, 4, CURRENT, "g", {"x": 1.5}, {}, int, None, None),
]


def _table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=LOG_SCHEMA)


def _read(rows: list[dict], rnd: random.Random) -> pa.Table:
    """``rows`` as a log read in ``rnd``'s order (the reference must not depend on it, nor the fast folds)."""
    rows = list(rows)
    rnd.shuffle(rows)
    return _table(rows)


def _chunked(log: pa.Table, size: int) -> pa.Table:
    """``log`` in chunks of ``size`` rows (0: one), as a large batch's log arrives: the Arrow fold reads each
    chunk's images where they are."""
    return pa.Table.from_batches(log.to_batches(max_chunksize=size), schema=log.schema) if size else log


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


def _label(history: list[dict], batch: list[dict], truncate_seq: str | None) -> None:
    """What a drawn log holds, for ``make fuzz``'s statistics (``--hypothesis-show-statistics``)."""
    rows = history + batch
    identities = [(r["_cdc_batch"], r["source_file"], r["source_offset"], r["_role"]) for r in rows]
    event(f"key changes: {any(r['_old_key'] for r in rows)}")
    event(f"a row logged twice: {len(set(identities)) < len(identities)}")
    event(f"events of this batch: {bool(batch)}, of others: {bool(history)}; watermark: {truncate_seq}")


def _delivered_in_order(drawn: list) -> list:
    """``drawn`` with the current batch's own events after every other's (seq + 6), neither replayed nor in the
    log before it: replication delivering in order, the case row state folds onto rows (rare in random logs)."""
    return [
        (*e[:3], e[3] + 6, *e[4:9], None, e[10] if e[10] == "within" else None) if e[4] == CURRENT else e for e in drawn
    ]


def _spec(truncate_seq: str | None) -> FoldSpec:
    return FoldSpec(keys=["id"], columns=TYPED_COLUMNS, batch_id=CURRENT, buckets=BUCKETS, truncate_seq=truncate_seq)


def _every_fold():
    """``FOLDS`` as pytest parameters, named; a Spark fold marked ``spark``."""
    return [pytest.param(f, id=f.name, marks=[pytest.mark.spark] if f.on_spark else []) for f in FOLDS]


def _started(fold: Fold, request) -> Fold:
    """``fold``, with the test run's Spark session started when it runs on Spark (it finds it active)."""
    if fold.on_spark:
        request.getfixturevalue("spark")
    return fold


# --- every fold against the reference ----------------------------------------------------------------------------


@pytest.mark.parametrize("fold", _every_fold())
def test_every_fold_gives_the_reference_rows_and_counts(fold, request):
    """Each fold is handed the log and the table's rows the earlier batches left (a fold may start from them,
    none needs them) and gives the rows and counts ``merge.refold`` gives over the whole log."""
    fold = _started(fold, request)

    @settings(max_examples=examples(4 if fold.on_spark else 120), **SETTINGS)
    @given(
        st.lists(logs_st, min_size=1, max_size=8 if fold.on_spark else 1),
        truncate_st,
        order_st,
        st.booleans(),
        chunk_st,
    )
    @example([RERUN], None, random.Random(0), False, 0)
    @example([REPLAY], None, random.Random(0), False, 0)
    @example([IN_ORDER], None, random.Random(0), False, 1)
    @example([IN_ORDER], "0002", random.Random(1), False, 0)
    def check(logs, truncate_seq, rnd, in_order, chunk):
        parts = [typed_log(_delivered_in_order(d) if in_order else d, namespace=i) for i, d in enumerate(logs)]
        history = [row for h, _ in parts for row in h]
        batch = [row for _, b in parts for row in b]
        _label(history, batch, truncate_seq)
        log = _chunked(_read(history + batch, rnd), chunk)
        rows = _table_rows(_table(history), truncate_seq)
        assert rows_of(fold.fold(log, _spec(truncate_seq), rows)) == reference(log, None, truncate_seq)

    check()


@settings(max_examples=examples(60), **SETTINGS)
@given(logs_st, truncate_st, st.sets(st.integers(5, 7)), order_st, chunk_st)
@example(RERUN, None, set(), random.Random(0), 0)
def test_the_driver_passes_a_bucket_overwrites_other_rows_through_as_the_reference(
    drawn, truncate_seq, extra, rnd, chunk
):
    """Not a fold's semantics but the bucket overwrite's (``fold_driver`` with the buckets' rows, no markers): the
    untouched rows pass through, those older than the watermark are dropped, as ``fold_part`` does."""
    history, batch = typed_log(drawn)
    log = _chunked(_read(history + batch, rnd), chunk)
    rows = _table_rows(_table(history), None, extra)
    args = {**ARGS, "truncate_seq": truncate_seq, "markers": False}
    assert rows_of(fold_driver(log, rows, **args)) == reference(log, rows, truncate_seq, markers=False)


# --- a re-run after snapshot expiry ------------------------------------------------------------------------------


@pytest.mark.parametrize("fold", _every_fold())
def test_a_rerun_after_snapshot_expiry_counts_what_the_first_run_counted_in_every_fold(fold, request):
    """``jobs/maintain.py``: after expiry, a re-run of a batch appends its rows to the log again (same batch,
    file and offset). Every fold counts its events once: the same rows and counts as the first run, balanced."""
    fold = _started(fold, request)
    once = [(*e[:-1], None) for e in RERUN]
    history, batch = typed_log(once)
    first_log = _table(history + batch)
    again_history, _ = typed_log(RERUN)
    rerun_log = _table(again_history + batch)
    assert rerun_log.num_rows > first_log.num_rows
    first = reference(first_log, None, None)
    assert first[1] == {"applied": 3, "stale": 0, "deleted_keys": 1}
    # with row state: the table holds the first run's rows, so no key of the batch is in order; all from the log
    for log, earlier in ((first_log, history), (rerun_log, again_history)):
        assert rows_of(fold.fold(log, _spec(None), _table_rows(_table(earlier), None))) == first
