"""The workers fold timed on one synthetic log (docs/decisions/0074): a fold of ``compaction.fold.FOLDS`` by name.

    PYTHONPATH=. CDCLAKE_JARS=.jars .venv/bin/python benchmarks/scripts/workers_fold_ab.py workers 50000

(50,000 keys, 4 events each, 16 buckets, local[2]; best of 5 after a warm-up.) For an A/B, run it in a worktree of
the other commit with the other fold's name (before 0074: ``spark-sql``).
"""

from __future__ import annotations

import datetime as dt
import json
import random
import sys
import time

import pyarrow as pa

from cdclake.compaction.fold import FOLDS, FoldSpec
from cdclake.compaction.lake_tables import LOG_SCHEMA
from cdclake.merge import bucket_of
from cdclake.runtime.settings import Settings
from cdclake.runtime.spark import build_session

BUCKETS = 16
COLUMNS = [("id", "bigint"), ("name", "string"), ("qty", "bigint"), ("price", "decimal(10,2)"), ("note", "string")]
T0 = dt.datetime(2026, 1, 1)


def log_of(n_keys: int, seed: int = 7) -> pa.Table:
    """Per key an insert, two updates and an update or a delete, every value as JSON text."""
    rng, rows = random.Random(seed), []
    for k in range(n_keys):
        key = json.dumps([k])
        image = {"id": str(k), "name": json.dumps(f"n{k}"), "qty": str(k % 97), "price": f"{k % 1000}.25"}
        image["note"] = json.dumps("x" * 20)
        for i, op in enumerate(["INSERT", "UPDATE", "UPDATE", rng.choice(["UPDATE", "DELETE"])]):
            rows.append(
                {
                    **dict.fromkeys(("_old_key", "tx_id", "tx_pos", "meta")),
                    "_key": key,
                    "_cdc_bucket": bucket_of(key, BUCKETS),
                    "_role": "main",
                    "op": op,
                    "seq": f"{k:09d}{i:03d}",
                    "event_ts": T0,
                    "before": list(image.items()) if op != "INSERT" else None,
                    "after": None if op == "DELETE" else list({**image, "qty": str(i)}.items()),
                    "source_file": "f",
                    "source_offset": k * 4 + i,
                    "_cdc_batch": "b1",
                }
            )
    return pa.Table.from_pylist(rows, schema=LOG_SCHEMA)


def main(name: str, n_keys: int) -> None:
    spark = build_session("workers-fold-ab", "/tmp/workers-fold-ab", master="local[2]", jars=Settings.from_env().jars())
    log = log_of(n_keys)
    spec = FoldSpec(keys=["id"], columns=COLUMNS, batch_id="b1", buckets=BUCKETS)
    fold = {f.name: f for f in FOLDS}[name]
    times = []
    for _ in range(6):
        start = time.perf_counter()
        fold.fold(log, spec)
        times.append(time.perf_counter() - start)
    print(f"{name}: {log.num_rows} events, runs {[round(t, 2) for t in times]} s, best of 5 after a warm-up")
    print(f"{name}: best {min(times[1:]):.2f} s")
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
