"""``make demo``: sample landing files in every format -> the ingest DAGs through Airflow -> the tables.

1. The GoldenGate JSON story (``cdc_gg_json_demo``): two batches (inserts, an update, then a
   delete, a partial update, a new row and a re-insert), two DAG runs, the exact rows printed.
2. Every format: one seeded change stream (mixed ops, partial updates, key changes, deletes over
   several tables) written in each vendor format by ``cdclake.bench.generate``; one source and one
   DAG run per format; each lake table is compared with the stream's own final state.

Everything runs on the embedded defaults (local folders, SQLite, Spark ``local[*]``) under
``var/demo``; Airflow and Spark output goes to ``var/demo/demo.log`` (part 1) and
``var/demo/logs/<format>.log`` (part 2).

Part 2 runs two format DAGs at a time (``--parallel``), as a scheduler would: one DAG run's steps
leave a core idle for much of the run (a JVM starting, Airflow between tasks). Each lane has its own
Airflow home (``airflow dags test`` writes its SQLite database); the lake and its catalog are shared.
"""

from __future__ import annotations

import argparse
import json
import queue
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from cdclake import samples
from cdclake.airflow.env import airflow_env, dags_test, migrate
from cdclake.lake.tables import read_rows
from cdclake.registry import format_ids
from cdclake.runtime.settings import REPO_ROOT
from cdclake.staging.batch import read_report

DAG_ID = "cdc_gg_json_demo"


def source_name(format_id: str) -> str:
    return "demo_" + format_id.replace("-", "_")


def write_sources(home: Path, generated: dict) -> Path:
    """The demo's sources file: the shipped gg_json_demo source plus one source per format."""
    config = yaml.safe_load((REPO_ROOT / "config" / "sources.yaml").read_text())
    for format_id, gen in generated.items():
        config["sources"][source_name(format_id)] = {
            "format": format_id,
            "landing": str(gen.files[0].parent),
            "options": gen.options,
            "keys": gen.keys,
            "namespace": source_name(format_id),
        }
    path = home / "sources.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _last_report(home: Path, source: str) -> dict | None:
    reports = sorted((home / "staging" / source).glob("*/reports/batch.json"), key=lambda p: p.stat().st_mtime)
    return read_report(reports[-1].parent.parent, "batch") if reports else None


def _matches(table, stream_rows: dict, lake_rows: list[dict]) -> bool:
    """The lake table has the stream's keys and, for its text and integer columns, the same values
    (compared as text: CSV-based formats such as DataHub TUPLE carry no types; the other types are
    spelled differently by each vendor and checked exactly by the format tests)."""
    exact = [i for i, c in enumerate(table.columns) if c.kind in ("string", "long")]

    def text(value) -> str | None:
        return None if value is None else str(value)

    lake = {tuple(text(r[k]) for k in table.keys): r for r in lake_rows}
    stream = {tuple(text(v) for v in key): row for key, row in stream_rows.items()}
    if set(lake) != set(stream):
        return False
    return all(text(lake[key][table.names[i]]) == text(row[i]) for key, row in stream.items() for i in exact)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", default=str(REPO_ROOT / "var" / "demo"), help="demo folder (wiped first)")
    parser.add_argument("--events", type=int, default=400, help="changes in the every-format sample stream")
    parser.add_argument("--formats", default="all", help="comma-separated format ids (default: all)")
    parser.add_argument("--parallel", type=int, default=2, help="format DAG runs at a time (default 2)")
    args = parser.parse_args(argv)
    from cdclake.bench.generate import generate

    home = Path(args.home).resolve()
    shutil.rmtree(home, ignore_errors=True)
    started = time.monotonic()
    chosen = format_ids() if args.formats == "all" else args.formats.split(",")
    generated, stream = generate(chosen, home / "landing" / "formats", args.events, file_events=args.events // 2)
    env = airflow_env(home, extra={"CDCLAKE_SOURCES": str(write_sources(home, generated))})
    log = home / "demo.log"
    print(f"cdclake demo: home {home}, Airflow + Spark logs in {log}")
    migrate(env, log)

    landing = home / "landing" / "goldengate-json"
    for batch in (1, 2):
        path = samples.write_goldengate_json_batch(landing, batch)
        print(f"batch {batch}: wrote {path.name}; running DAG {DAG_ID} ...", flush=True)
        if dags_test(DAG_ID, _now(), env, log).returncode != 0:
            print(f"error: the DAG run failed; see {log}", file=sys.stderr)
            return 1
        print("  report:", json.dumps(_last_report(home, "gg_json_demo")))
    print(f"\nrows of {samples.TABLE}:")
    for row in read_rows(home / "warehouse", samples.TABLE):
        print("  " + json.dumps(row, default=str))

    print(f"\nevery format: {args.events} changes over {len(stream.tables)} tables, written in {len(chosen)} formats")
    lanes: queue.Queue = queue.Queue()
    for lane in range(max(1, args.parallel)):
        lanes.put(env if lane == 0 else _lane_env(home, env, lane))

    def run_format(format_id: str) -> bool:
        source = source_name(format_id)
        lane_env = lanes.get()
        try:
            t0 = time.monotonic()
            ok = dags_test(f"cdc_{source}", _now(), lane_env, home / "logs" / f"{format_id}.log").returncode == 0
        finally:
            lanes.put(lane_env)
        report = _last_report(home, source) or {}
        same = ok and all(
            _matches(t, stream.rows[t.full_name], read_rows(home / "warehouse", t.full_name, namespace=source))
            for t in stream.tables
        )
        status = "ok" if ok and same and report.get("balanced") else "FAILED"
        counts = {k: report.get(k) for k in ("read", "applied", "stale", "quarantined", "non_row", "balanced")}
        print(f"  {format_id:22s} {status:6s} {time.monotonic() - t0:5.0f} s  {json.dumps(counts)}", flush=True)
        return status == "ok"

    with ThreadPoolExecutor(max_workers=max(1, args.parallel)) as pool:
        results = dict(zip(chosen, pool.map(run_format, chosen), strict=True))
    failed = [f for f, ok in results.items() if not ok]
    print(f"\ndemo finished in {time.monotonic() - started:.0f} s; monitoring: see docs/monitoring.md")
    if failed:
        print(f"error: formats that did not reproduce the stream's tables: {', '.join(failed)}; see {home / 'logs'}")
        return 1
    return 0


def _lane_env(home: Path, env: dict[str, str], lane: int) -> dict[str, str]:
    """Another Airflow home for a concurrent ``airflow dags test`` (SQLite takes one writer): a copy of the
    migrated database, so the lane needs no migration of its own."""
    airflow_home = home / f"airflow-lane{lane}"
    airflow_home.mkdir(parents=True, exist_ok=True)
    shutil.copy2(Path(env["AIRFLOW_HOME"]) / "airflow.db", airflow_home / "airflow.db")
    return {
        **env,
        "AIRFLOW_HOME": str(airflow_home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{airflow_home / 'airflow.db'}",
    }


def _now() -> str:
    import datetime as dt

    return dt.datetime.now(dt.UTC).isoformat()


if __name__ == "__main__":
    raise SystemExit(main())
