"""Incremental merge cost: a table of N rows, then change batches of 1 row and 1% of the rows.

``python -m cdclake.bench_merge --rows 1000000`` prints, per batch, wall time and the data
files the Iceberg commit removed/added out of the table's total (from the snapshot summary).
The cost must follow the batch (buckets touched), not the table size.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from cdclake.local_apply import apply_files
from cdclake.options import Options
from cdclake.settings import Settings
from cdclake.spark import build_session

TABLE = "BENCH.ORDERS"


def _line(op: str, pos: int, row: dict) -> str:
    key = "before" if op == "D" else "after"
    return json.dumps(
        {"table": TABLE, "op_type": op, "op_ts": "2024-01-01 00:00:00.000000", "pos": f"{pos:020d}", key: row}
    )


def write_inserts(path: Path, rows: int) -> None:
    with open(path, "w") as out:
        for i in range(rows):
            out.write(
                _line(
                    "I",
                    i + 1,
                    {
                        "id": i,
                        "customer": f"C{i % 9973}",
                        "amount": i * 0.5,
                        "qty": i % 17,
                        "status": "NEW",
                        "note": "x" * 20,
                    },
                )
                + "\n"
            )


def write_changes(path: Path, rows: int, count: int, start_pos: int, seed: int) -> None:
    rnd = random.Random(seed)
    with open(path, "w") as out:
        for n, key in enumerate(rnd.sample(range(rows), count)):
            out.write(_line("U", start_pos + n, {"id": key, "status": "CHANGED", "qty": 99}) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--out", default=None, help="write the results as JSON here too")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="cdclake-bench-"))
    warehouse = work / "warehouse"
    spark = build_session("cdclake-bench", warehouse, master="local[*]", jars=Settings.from_env().jars())
    results = []

    def run(label: str, path: Path) -> None:
        started = time.monotonic()
        report = apply_files("goldengate-json", Options({"keys": "id"}), [str(path)], warehouse, spark=spark)
        seconds = time.monotonic() - started
        table = report["tables"][TABLE]
        results.append(
            {
                "batch": label,
                "events": report["events"],
                "seconds": round(seconds, 1),
                "files_removed": table.get("files_removed"),
                "files_added": table.get("files_added"),
                "files_total": table.get("files_total"),
                "buckets_rewritten": table.get("buckets_rewritten"),
                "buckets": table.get("buckets"),
            }
        )
        print(json.dumps(results[-1]), flush=True)

    base = work / "base.json"
    write_inserts(base, args.rows)
    run(f"initial load ({args.rows} rows)", base)
    pos = args.rows + 1
    for label, count in (("1 row", 1), ("0.1%", max(1, args.rows // 1000)), ("1%", max(1, args.rows // 100))):
        path = work / f"change-{count}.json"
        write_changes(path, args.rows, count, pos, seed=count)
        pos += count
        run(label, path)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
