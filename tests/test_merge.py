"""The merge semantics of DESIGN.md section 4 on the pure fold (no Spark)."""

from __future__ import annotations

import datetime as dt
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.merge import apply_events, bucket_of, prepare

KEYS = ["id"]
TYPES = {"id": "bigint", "name": "string", "qty": "bigint"}
COLS = list(TYPES)
TS = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def ev(op, seq, before=None, after=None, offset=0):
    return prepare(op, f"{seq:04d}", TS, before, after, ("f", offset), keys=KEYS, types=TYPES)


def values(state):
    return {k: {c: r[c] for c in COLS} for k, r in state.items()}


def test_insert_update_with_missing_columns_delete():
    state = {}
    stats = apply_events(
        state,
        [
            ev("INSERT", 1, after={"id": 1, "name": "a", "qty": 1}),
            ev("UPDATE", 2, before={"id": 1}, after={"id": 1, "qty": 5}),  # name missing: keeps "a"
            ev("INSERT", 3, after={"id": 2, "name": "b", "qty": None}),
            ev("DELETE", 4, before={"id": 2}),
        ],
        COLS,
        "b1",
    )
    assert values(state) == {"[1]": {"id": 1, "name": "a", "qty": 5}}
    assert state["[1]"]["_cdc_seq"] == "0002" and state["[1]"]["_cdc_op"] == "UPDATE"
    assert stats.applied == 4 and stats.stale == 0


def test_null_is_not_missing():
    state = {}
    apply_events(
        state,
        [ev("INSERT", 1, after={"id": 1, "name": "a", "qty": 1}), ev("UPDATE", 2, after={"id": 1, "name": None})],
        COLS,
        "b",
    )
    assert values(state)["[1]"] == {"id": 1, "name": None, "qty": 1}


def test_key_change_moves_row_and_fills_missing_columns():
    state = {}
    apply_events(
        state,
        [
            ev("INSERT", 1, after={"id": 1, "name": "a", "qty": 1}),
            ev("UPDATE", 2, before={"id": 1}, after={"id": 9, "qty": 2}),
        ],
        COLS,
        "b",
    )
    assert values(state) == {"[9]": {"id": 9, "name": "a", "qty": 2}}


def test_key_change_from_an_absent_row_onto_an_existing_key_starts_from_the_before_image():
    """The moved row is the old key's: its missing columns come from the before image, never from the
    row the new key held before (found by the merge law test: I(2, name a), then key change 1 -> 2)."""
    state = {}
    apply_events(
        state,
        [
            ev("INSERT", 1, after={"id": 2, "name": "a", "qty": 1}),
            ev("UPDATE", 2, before={"id": 1}, after={"id": 2, "qty": 3}),
        ],
        COLS,
        "b",
    )
    assert values(state) == {"[2]": {"id": 2, "name": None, "qty": 3}}


def test_a_key_change_delivered_twice_is_applied_once():
    """A replayed batch brings the same change again (another batch id): the second copy finds the
    old key already moved and must leave the moved row as it is."""
    state = {}
    change = {"before": {"id": 1}, "after": {"id": 2, "qty": 3}}
    apply_events(
        state,
        [
            ev("INSERT", 1, after={"id": 1, "name": "a", "qty": 1}),
            ev("UPDATE", 2, offset=1, **change),
            ev("UPDATE", 2, offset=2, **change),
        ],
        COLS,
        "b",
    )
    assert values(state) == {"[2]": {"id": 2, "name": "a", "qty": 3}}


def test_stale_event_is_counted_not_applied():
    state = {}
    apply_events(state, [ev("INSERT", 5, after={"id": 1, "name": "new", "qty": 1})], COLS, "b1")
    stats = apply_events(state, [ev("UPDATE", 3, after={"id": 1, "name": "old"})], COLS, "b2")
    assert stats.stale == 1 and stats.applied == 0
    assert values(state)["[1]"]["name"] == "new"


def test_truncate_watermark_removes_older_rows_and_ignores_older_events():
    state = {}
    apply_events(state, [ev("INSERT", 1, after={"id": 1}), ev("INSERT", 8, after={"id": 2})], COLS, "b1")
    stats = apply_events(state, [ev("INSERT", 4, after={"id": 3})], COLS, "b2", truncate_seq="0005")
    assert set(state) == {"[2]"}
    assert stats.stale == 1


def test_ties_broken_by_file_and_offset():
    state = {}
    a = prepare("INSERT", "7", TS, None, {"id": 1, "name": "first"}, ("f", 10), keys=KEYS, types=TYPES)
    b = prepare("UPDATE", "7", TS, None, {"id": 1, "name": "second"}, ("f", 20), keys=KEYS, types=TYPES)
    apply_events(state, [b, a], COLS, "b")
    assert state["[1]"]["name"] == "second"


def test_bucket_is_stable():
    assert bucket_of("[1]", 16) == bucket_of("[1]", 16)
    assert {bucket_of(f"[{i}]", 16) for i in range(200)} == set(range(16))


histories = st.lists(
    st.tuples(
        st.sampled_from(["INSERT", "UPDATE", "DELETE", "UPSERT"]),
        st.integers(1, 4),
        st.one_of(st.none(), st.text(max_size=3)),
        st.booleans(),
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(histories, st.randoms())
def test_order_of_arrival_within_a_batch_and_reapplying_do_not_matter(history, rnd: random.Random):
    events = []
    for seq, (op, key, name, partial) in enumerate(history, start=1):
        after = {"id": key} if partial else {"id": key, "name": name, "qty": seq}
        if name is not None or not partial:
            after["name"] = name
        events.append(ev(op, seq, before={"id": key}, after=None if op == "DELETE" else after))
    first = {}
    apply_events(first, list(events), COLS, "b")
    shuffled = list(events)
    rnd.shuffle(shuffled)
    second = {}
    apply_events(second, shuffled, COLS, "b")
    assert second == first
    apply_events(second, shuffled, COLS, "b")  # the same batch again changes nothing
    assert second == first


# --- refold: the state is a function of the set of events ---------------------------------

from cdclake.merge import LoggedEvent, refold  # noqa: E402


def logged(batch, *events):
    return [LoggedEvent(e, batch) for e in events]


def test_late_partial_update_fills_only_columns_no_newer_event_wrote():
    history = logged(
        "b1", ev("INSERT", 1, after={"id": 1, "name": "a", "qty": 1}), ev("UPDATE", 3, after={"id": 1, "qty": 3})
    )
    late = logged("b2", ev("UPDATE", 2, after={"id": 1, "name": "late", "qty": 2}))
    state, stats, _ = refold(history + late, COLS, "b2")
    assert values(state) == {"[1]": {"id": 1, "name": "late", "qty": 3}}
    assert (stats.applied, stats.stale) == (0, 1)


def test_tombstone_keeps_an_older_event_from_resurrecting_a_deleted_row():
    history = logged("b1", ev("INSERT", 1, after={"id": 1, "name": "a"}), ev("DELETE", 5, before={"id": 1}))
    replay = logged("b2", ev("INSERT", 3, after={"id": 1, "name": "old replay"}))
    state, stats, keys = refold(history + replay, COLS, "b2")
    assert state == {} and keys == {"[1]"} and stats.stale == 1


def test_key_change_chain_folds_across_keys():
    events = logged(
        "b1",
        ev("INSERT", 1, after={"id": 1, "name": "a", "qty": 1}),
        ev("UPDATE", 2, before={"id": 1}, after={"id": 2}),
        ev("UPDATE", 3, before={"id": 2}, after={"id": 3, "qty": 9}),
    )
    state, _, keys = refold(events, COLS, "b1")
    assert values(state) == {"[3]": {"id": 3, "name": "a", "qty": 9}} and keys == {"[1]", "[2]", "[3]"}


@settings(max_examples=60, deadline=None)
@given(histories, st.randoms(), st.integers(1, 4))
def test_refold_is_independent_of_batching_and_arrival_order(history, rnd: random.Random, nbatches):
    events = []
    for seq, (op, key, name, partial) in enumerate(history, start=1):
        after = {"id": key, "qty": seq} if partial else {"id": key, "name": name, "qty": seq}
        events.append(ev(op, seq, before={"id": key}, after=None if op == "DELETE" else after))
    reference, _, _ = refold(logged("all", *events), COLS, "all")
    shuffled = list(events)
    rnd.shuffle(shuffled)
    log: list[LoggedEvent] = []
    state: dict = {}
    for b in range(nbatches):
        batch = logged(f"b{b}", *shuffled[b::nbatches])
        log += batch
        state, _, _ = refold(log, COLS, f"b{b}")
    assert values(state) == values(reference)


def test_history_versions_close_and_open():
    from cdclake.merge import history

    t = [TS.replace(hour=h) for h in range(6)]
    events = [
        prepare("INSERT", "1", t[1], None, {"id": 1, "name": "a", "qty": 1}, ("f", 1), keys=KEYS, types=TYPES),
        prepare("UPDATE", "2", t[2], None, {"id": 1, "qty": 2}, ("f", 2), keys=KEYS, types=TYPES),
        prepare("DELETE", "3", t[3], {"id": 1}, None, ("f", 3), keys=KEYS, types=TYPES),
        prepare("INSERT", "4", t[4], None, {"id": 1, "name": "b", "qty": 4}, ("f", 4), keys=KEYS, types=TYPES),
    ]
    shuffled = [events[2], events[0], events[3], events[1]]
    versions = history([LoggedEvent(e, "b") for e in shuffled], COLS)["[1]"]
    got = [(v["name"], v["qty"], v["valid_from"], v["valid_to"], v["is_current"], v["_cdc_op"]) for v in versions]
    assert got == [
        ("a", 1, t[1], t[2], False, "INSERT"),
        ("a", 2, t[2], t[3], False, "UPDATE"),
        ("b", 4, t[4], None, True, "INSERT"),
    ]
    # a truncate closes the open version at its time and later events start from nothing
    versions = history([LoggedEvent(e, "b") for e in events[:2]], COLS, truncates=[("3", t[3])])["[1]"]
    assert [(v["valid_to"], v["is_current"]) for v in versions] == [(t[2], False), (t[3], False)]


@settings(max_examples=50, deadline=None)
@given(histories, st.randoms(), st.integers(1, 4))
def test_history_is_independent_of_batching_and_arrival_order(history_, rnd: random.Random, nbatches):
    from cdclake.merge import history

    events = []
    for seq, (op, key, name, partial) in enumerate(history_, start=1):
        after = {"id": key, "qty": seq} if partial else {"id": key, "name": name, "qty": seq}
        ts = TS + dt.timedelta(seconds=seq)
        events.append(
            prepare(
                op, f"{seq:04d}", ts, {"id": key}, None if op == "DELETE" else after, ("f", seq), keys=KEYS, types=TYPES
            )
        )
    reference = history([LoggedEvent(e, "all") for e in events], COLS)
    shuffled = list(events)
    rnd.shuffle(shuffled)
    got = history([LoggedEvent(e, f"b{i % nbatches}") for i, e in enumerate(shuffled)], COLS)
    strip = {
        k: [{c: v[c] for c in (*COLS, "valid_from", "valid_to", "is_current", "_cdc_op")} for v in vs]
        for k, vs in got.items()
    }
    assert strip == {
        k: [{c: v[c] for c in (*COLS, "valid_from", "valid_to", "is_current", "_cdc_op")} for v in vs]
        for k, vs in reference.items()
    }


_KEY_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.text(),
    st.decimals(),
    st.floats(),
    st.datetimes(),
    st.binary(max_size=4),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(_KEY_VALUES, _KEY_VALUES, st.booleans())
def test_key_text_is_the_generic_json_of_the_key_values(value, other, present):
    """The key writer writes the text the generic writer writes for the list of key values, for every kind
    of value, in any position of a one- or two-column key; a key column absent from the image means no key."""
    from cdclake.events.change import to_json
    from cdclake.merge import key_of

    image = {"id": value, "other": other} if present else {"other": other}
    assert key_of(image, ["id"]) == (to_json([value]) if present else None)
    assert key_of(image, ["other", "id"]) == (to_json([other, value]) if present else None)
