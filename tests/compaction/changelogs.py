"""Random change logs for the fold tests: several batches, partial updates, upserts, deletes, replays."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
from hypothesis import strategies as st

from cdclake.events.change import to_json
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


# Change logs of every column type, with key changes, truncates, replays and events logged twice: what the
# differential fold test (test_fold_differential.py) holds every fold implementation to ``merge.refold`` on.

#: One column of every type the lake supports (``coltypes``), one of them named as Spark SQL must quote it.
TYPED_COLUMNS = [
    ("id", "bigint"),
    ("s", "string"),
    ("n", "bigint"),
    ("x", "double"),
    ("ok", "boolean"),
    ("q", "decimal(10,2)"),
    ("big", "decimal(38,0)"),
    ("t", "timestamp"),
    ("day", "date"),
    ("raw", "binary"),
    ("we'ird.na`me", "string"),
]

#: Raw values as decoders put them in the log, in forms ``coltypes.cast`` accepts (routing quarantines the
#: rest), edges included: the fast folds cast only the values they keep, with Arrow's casts where they can.
RAW_VALUES = {
    "string": ["a", "", 'q"uo\\te', "ünï ☃", "null", "1"],
    "bigint": [0, -1, 2**63 - 1, -(2**63), "42", " 7 ", 7.0, "1e3"],
    "double": [1.5, -0.0, 1e300, 5e-324, "2.25", 3, "-1E-5", "NaN", "-Infinity"],
    "boolean": [True, False, "true", "FALSE", 0, 1],
    "decimal(10,2)": ["1.50", 2, "0", "-99999999.99", 0.5, "1e1", "0.10"],
    "decimal(38,0)": [2**64 + 1, "-99999999999999999999999999999999999999", 0, "12"],
    "timestamp": [
        "2024-01-01 00:00:00",
        "2024-02-29T12:34:56.123456Z",
        "2024-01-01T01:00:00+01:00",
        "2024-01-01:10:11:12.5",
        "1999-12-31 23:59:59.999999",
        "2024-06-01",
    ],
    "date": ["2024-01-01", "1970-01-01", "2024-03-05T10:00:00", "0001-01-01", "9999-12-31"],
    "binary": ["", "AAEC", "/w==", "aGVsbG8="],
}
#: A key value's raw forms (all the same bigint: ``_key`` is the canonical text of the typed value).
KEY_FORMS = (int, str, float)
OTHER_BATCHES = ("b0", "b2")

_image_st = st.fixed_dictionaries(
    {},  # every column optional: absent (missing), NULL, or a value
    optional={name: st.one_of(st.none(), st.sampled_from(RAW_VALUES[t])) for name, t in TYPED_COLUMNS[1:]},
)
#: One source record's event: (op, key, old key, seq, batch, file, after, before, key form, replayed under,
#: logged twice). ``MOVE`` is an UPDATE changing the key from the old key; seqs tie often (then file and
#: offset order them), seq 0 is none (a snapshot row's: it sorts first); ``replayed under``: the same event
#: logged by another batch too; ``logged twice``: its rows logged again under their own batch, ``rerun``: a
#: current batch's copy in the log before it (its first run, before snapshot expiry), ``within``: twice among
#: the batch's own rows.
typed_event_st = st.tuples(
    st.sampled_from(["INSERT", "UPSERT", "UPDATE", "UPDATE", "DELETE", "MOVE"]),
    st.integers(1, 4),
    st.integers(1, 4),
    st.integers(0, 6),
    st.sampled_from(["b0", CURRENT, "b2"]),
    st.sampled_from(["f", "g"]),
    _image_st,
    _image_st,
    st.sampled_from(KEY_FORMS),
    st.sampled_from([None, None, "b0", CURRENT, "b2"]),
    st.sampled_from([None, None, "rerun", "within"]),
)


def typed_log(drawn: list, namespace: int = 0) -> tuple[list[dict], list[dict]]:
    """(the log before this batch, this batch's routed rows) of ``drawn`` (:data:`typed_event_st`).

    Every source record has its own file and offset (one event each), so two logged rows share the
    identity ``merge.refold`` counts by (batch, file, offset, seq, op) only when they are copies of one
    event. ``namespace``
    gives keys and files of their own, so that several logs fold as one."""
    history, batch = [], []
    for offset, event in enumerate(drawn):
        op, key, old, seq, logged_by, file, after, before, form, replayed, twice = event
        rows = _routed_rows(op, key, old, seq, file, offset, after, before, form, namespace)
        copies = [logged_by] + ([replayed] if replayed not in (None, logged_by) else [])
        for batch_id in copies:
            mine = [{**r, "_cdc_batch": batch_id} for r in rows]
            (batch if batch_id == CURRENT else history).extend(mine)
            if twice:
                (batch if batch_id == CURRENT and twice == "within" else history).extend(mine)
    return history, batch


def _routed_rows(op, key, old, seq, file, offset, after, before, form, namespace) -> list[dict]:
    """The change-log rows routing writes for one event: its ``main`` row, and a ``link`` row under its old
    key's bucket for a key change crossing buckets."""
    key, old = key + 10 * namespace, old + 10 * namespace
    moved = op == "MOVE" and old != key
    op = "UPDATE" if op == "MOVE" else op
    key_text = to_json([key])
    before_key = old if moved else key
    row = {
        "_key": key_text,
        "_old_key": to_json([old]) if moved else None,
        "_cdc_bucket": bucket_of(key_text, BUCKETS),
        "_role": "main",
        "op": op,
        "seq": f"{seq:04d}" if seq else None,
        "event_ts": dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=seq, microseconds=offset),
        "tx_id": None,
        "tx_pos": None,
        "before": _typed_image(before_key, before, form) if op in ("UPDATE", "DELETE") else None,
        "after": None if op == "DELETE" else _typed_image(key, after, form),
        "meta": None,
        "source_file": f"{namespace}{file}",
        "source_offset": offset,
    }
    rows = [row]
    if moved and bucket_of(row["_old_key"], BUCKETS) != row["_cdc_bucket"]:
        rows.append({**row, "_cdc_bucket": bucket_of(row["_old_key"], BUCKETS), "_role": "link"})
    return rows


def _typed_image(key: int, values: dict, form) -> list[tuple[str, str]]:
    return [("id", to_json(form(key)))] + [(n, to_json(v)) for n, v in values.items()]
