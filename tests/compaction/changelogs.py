"""Random change logs for the fold tests: several batches, partial updates, upserts, deletes, replays."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
from hypothesis import strategies as st

from cdclake.events import to_json
from cdclake.merge import bucket_of

COLUMNS = [("id", "bigint"), ("name", "string"), ("qty", "decimal(10,2)"), ("at", "timestamp")]
BUCKETS = 4
CURRENT = "b1"

value_st = {
    "name": st.sampled_from(["a", "b", 'q"uote', None]),
    "qty": st.sampled_from(["1.50", 2, "0", None]),
    "at": st.sampled_from(["2024-01-01 00:00:00", None]),
}
event_st = st.tuples(
    st.sampled_from(["INSERT", "UPSERT", "UPDATE", "UPDATE", "DELETE"]),
    st.integers(1, 3),  # key
    st.integers(1, 6),  # seq (ties happen)
    st.sampled_from(["b0", "b1", "b2"]),  # batch
    st.sets(st.sampled_from(["name", "qty", "at"])),  # columns in the after image (a partial update)
    st.sets(st.sampled_from(["name", "qty"])),  # columns in the before image besides the key
    st.fixed_dictionaries(value_st),
    st.booleans(),  # replayed: the same event logged again by another batch
)


def image(key: int, names: set[str], values: dict) -> list[tuple[str, str]]:
    return [("id", to_json(key))] + [(n, to_json(values[n])) for n in sorted(names)]


def log_rows(drawn) -> list[dict]:
    rows = []
    for offset, (op, key, seq, batch, after_cols, before_cols, values, replayed) in enumerate(drawn):
        key_text = to_json([key])
        row = {
            "_key": key_text,
            "_old_key": None,
            "_cdc_bucket": bucket_of(key_text, BUCKETS),
            "_role": "main",
            "op": op,
            "seq": f"{seq:04d}",
            "event_ts": dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=seq),
            "tx_id": None,
            "tx_pos": None,
            "before": image(key, before_cols, values) if op in ("UPDATE", "DELETE") else None,
            "after": None if op == "DELETE" else image(key, after_cols, values),
            "meta": None,
            "source_file": "f",
            "source_offset": offset,
            "_cdc_batch": batch,
        }
        rows.append(row)
        if replayed:
            rows.append({**row, "_cdc_batch": "b0" if batch != "b0" else "b2"})
    return rows


def rows_of(table: pa.Table) -> tuple[list, dict]:
    stats = {"applied": 0, "stale": 0, "deleted_keys": 0}
    rows = []
    for r in table.to_pylist():
        if r["_cdc_kind"] == "stats":
            for k, v in json.loads(r["_cdc_info"]).items():
                stats[k] += v
        else:
            rows.append(tuple(sorted((k, str(v)) for k, v in r.items() if k != "_cdc_info")))
    return sorted(rows), stats
