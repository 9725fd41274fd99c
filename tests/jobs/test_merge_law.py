"""The merge law on the real Spark merge: any batching, any batch order, replays -> one table.

A small reference model (written independently of cdclake.merge) folds all events of a
random history in seq order; the lake table after applying the history's batches in a
shuffled order, with one batch applied twice, must equal it.
"""

from __future__ import annotations

import itertools
import json
import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdclake.lake.tables import TableNotFound, read_rows
from cdclake.local_apply import apply_files
from cdclake.options import Options

pytestmark = pytest.mark.spark
_tables = itertools.count()
DRIVER_FOLD_ENV = "CDCLAKE_DRIVER_FOLD_ROWS"
NATIVE_ENV = "CDCLAKE_NATIVE_FOLD"
ROW_STATE_ENV = "CDCLAKE_ROW_STATE"
BULK_ENV = "CDCLAKE_DRIVER_BULK_ROWS"

event_st = st.tuples(
    st.sampled_from(["I", "I", "U", "U", "P", "K", "D", "T"]),  # P: partial update, K: key change
    st.integers(1, 4),
    st.integers(1, 4),
    st.sampled_from(["a", "b", None]),
)


def reference(events: list[dict]) -> dict[int, dict]:
    """Sorted fold: the meaning of a history, independent of how it arrived."""
    events = sorted(events, key=lambda e: e["pos"])
    wm = max((e["pos"] for e in events if e["op_type"] == "T"), default=-1)
    rows: dict[int, dict] = {}
    for e in events:
        if e["pos"] < wm or e["op_type"] == "T":
            continue
        before, after = e.get("before") or {}, e.get("after") or {}
        if e["op_type"] == "I":
            rows[after["id"]] = {"id": None, "name": None, "qty": None, **after}
        elif e["op_type"] == "D":
            rows.pop(before["id"], None)
        else:
            base = rows.pop(before["id"], None) if before["id"] != after["id"] else rows.get(after["id"])
            if base is None:
                base = {"id": None, "name": None, "qty": None, **before}
            rows[after["id"]] = {**base, **after}
    return rows


def to_message(table: str, pos: int, op: str, key: int, other: int, name) -> dict:
    msg = {"table": table, "op_ts": "2024-01-01 00:00:00.000000", "pos": f"{pos:020d}"}
    if op == "I":
        msg.update(op_type="I", after={"id": key, "name": name, "qty": pos})
    elif op == "U":
        msg.update(op_type="U", before={"id": key}, after={"id": key, "name": name, "qty": pos})
    elif op == "P":
        msg.update(op_type="U", before={"id": key}, after={"id": key, "qty": pos})
    elif op == "K":
        msg.update(op_type="U", before={"id": key}, after={"id": other, "qty": pos})
    elif op == "D":
        msg.update(op_type="D", before={"id": key})
    else:
        msg.update(op_type="T")
    return msg


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(event_st, min_size=3, max_size=12),
    st.integers(1, 3),
    st.randoms(use_true_random=False),
    st.lists(st.sampled_from(["driver", "driver-log", "bulk", "workers", "workers-python"]), min_size=4, max_size=4),
)
def test_any_batching_order_and_replay_gives_the_reference_table(
    spark, warehouse, tmp_path_factory, history, nbatches, rnd: random.Random, paths
):
    """Each applied batch folds in the driver (in-order keys onto their rows, or every key from its log), on
    the driver's bulk path (its log reads and link search by pyiceberg), on the workers (keys without key
    changes in Spark SQL) or on the workers all in Python (``paths``, drawn per batch): every path, and any
    mix of them over a table's batches, must give the reference table."""
    table = f"LAW.T{next(_tables)}"
    messages = [to_message(table, pos, *item) for pos, item in enumerate(history, start=1)]
    expected = reference([{**m, "pos": int(m["pos"])} for m in messages])
    shuffled = list(messages)
    rnd.shuffle(shuffled)
    batches = [shuffled[i::nbatches] for i in range(nbatches)]
    order = [*range(nbatches), rnd.randrange(nbatches)]  # one batch is replayed at the end
    folder = tmp_path_factory.mktemp("law")
    for n, index in enumerate(order):
        path = folder / f"batch{index}.json"
        path.write_text("\n".join(json.dumps(m) for m in batches[index]) + "\n")
        env = {
            DRIVER_FOLD_ENV: "5000" if paths[n].startswith("driver") else "0",
            NATIVE_ENV: "0" if "python" in paths[n] else "1",
            ROW_STATE_ENV: "0" if paths[n] == "driver-log" else "1",
            BULK_ENV: "0" if paths[n].startswith("workers") else "150000",
        }
        previous = {name: os.environ.get(name) for name in env}
        os.environ.update(env)
        try:
            apply_files("goldengate-json", Options({"keys": "id"}), [str(path)], warehouse, spark=spark)
        finally:
            for name, value in previous.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
    try:
        rows = read_rows(warehouse, table)
    except TableNotFound:
        rows = []
    got = {r["id"]: {k: r.get(k) for k in ("id", "name", "qty")} for r in rows}
    assert got == {k: {c: v.get(c) for c in ("id", "name", "qty")} for k, v in expected.items()}
