"""Server time of the monitoring pages on a large index: 500 tables x 1,000 batches of reports.

    make bench-monitoring            (or: .venv/bin/python benchmarks/scripts/monitoring_page.py)
    ... monitoring_page.py --sources 1 --tables 500 --batches 1000 --snapshots 1000 --repeat 20

Writes the index the way the report task does (cdclake.monitoring.index.SourceIndex, all batches of a
source, then one save), one lake table with ``--snapshots`` commits (pyiceberg), then times the
plugin's routes in-process through its FastAPI app (Starlette's TestClient: routing, the views
and the HTML; the login check is the only part replaced, by a fixed user). Prints the median, 95th
percentile and worst of ``--repeat`` requests per page, and the sizes; fails if a p95 is 1 s or more.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from cdclake.monitoring import index as monitor_index
from cdclake.monitoring.index_store import open_store
from cdclake.runtime.settings import REPO_ROOT, Settings


def build_index(settings: Settings, sources: int, tables: int, batches: int, seed: int = 7) -> float:
    """``tables`` tables over ``sources`` sources, each source with ``batches`` batches; returns seconds."""
    started = time.perf_counter()
    rng = random.Random(seed)
    store = open_store(settings.monitor_index)
    start = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=10 * batches)
    per_source = max(tables // sources, 1)
    for s in range(sources):
        name = f"src{s:02d}"
        index = monitor_index.SourceIndex(store, name)
        for b in range(batches):
            finished = start + dt.timedelta(minutes=10 * b + rng.random())
            rows = {}
            reasons = []
            for t in range(per_source):
                table = f"DB{s:02d}.TABLE_{t:03d}"
                quarantined = rng.choice([0] * 30 + [1, 3])
                rows[table] = {
                    "status": "failed" if (b == batches - 1 and t == 0 and s == 0) else "committed",
                    "applied": rng.randint(0, 5000),
                    "stale": rng.randint(0, 20),
                    "quarantined": quarantined,
                    "deleted_keys": rng.randint(0, 50),
                    "truncates": 0,
                    "lag_seconds": round(rng.uniform(5, 900), 3),
                    "schema_version": 1,
                    "lake_table": f"db{s:02d}.table_{t:03d}",
                    "newest_event_ts": finished.isoformat(),
                    "schema_changes": 0,
                }
                if quarantined:
                    reason = rng.choice(["value … is not a valid bigint", "key column ID is null"])
                    reasons.append(
                        {"step": "compact", "table": rows[table]["lake_table"], "reason": reason, "count": quarantined}
                    )
            index.add(
                {
                    "batch_id": f"interval_{finished:%Y%m%dT%H%M%S}",
                    "finished_at": finished.isoformat(),
                    "started_at": (finished - dt.timedelta(seconds=rng.uniform(60, 300))).isoformat(),
                    "wall_seconds": round(rng.uniform(60, 300), 3),
                    "dag_id": f"cdc_{name}",
                    "run_id": f"scheduled__{finished:%Y-%m-%dT%H:%M:%S}+00:00",
                    "tasks": list(monitor_index.PIPELINE_TASKS),
                    "files": 3,
                    "read": sum(r["applied"] + r["stale"] + r["quarantined"] for r in rows.values()),
                    "applied": sum(r["applied"] for r in rows.values()),
                    "stale": sum(r["stale"] for r in rows.values()),
                    "quarantined": sum(r["quarantined"] for r in rows.values()),
                    "balanced": True,
                    "tables": rows,
                    "reasons": reasons,
                }
            )
        index.save()
    return time.perf_counter() - started


def build_lake_table(warehouse: Path, identifier: str, snapshots: int) -> float:
    """A lake table whose ``main`` has ``snapshots`` batch commits (what the drill-down reads is its metadata).

    One real append, then ``snapshots - 1`` more snapshots reusing its manifest list, added in one
    metadata commit: appending 1,000 times through pyiceberg takes over ten minutes here, and the
    page reads only the snapshots' summaries, never their manifests.
    """
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.table.snapshots import Operation, Snapshot, Summary
    from pyiceberg.table.update import AddSnapshotUpdate, SetSnapshotRefUpdate

    started = time.perf_counter()
    warehouse.mkdir(parents=True, exist_ok=True)
    catalog = SqlCatalog("lake", uri=f"sqlite:///{warehouse / 'catalog.db'}", warehouse=warehouse.as_uri())
    catalog.create_namespace_if_not_exists(identifier.split(".")[0])
    rows = pa.table({"ID": pa.array([1], pa.int64())})
    table = catalog.create_table(identifier, schema=rows.schema)
    counts = json.dumps({"applied": 1, "stale": 0, "quarantined": 0})
    table.append(rows, snapshot_properties={"cdclake.batch-id": "b0", "cdclake.counts": counts})
    first = table.current_snapshot()
    updates: list = []
    parent = first
    for i in range(1, snapshots):
        summary = Summary(
            Operation.APPEND,
            **{**first.summary.additional_properties, "cdclake.batch-id": f"b{i}", "total-data-files": str(i + 1)},
        )
        snap = Snapshot(
            snapshot_id=first.snapshot_id + i,
            parent_snapshot_id=parent.snapshot_id,
            sequence_number=first.sequence_number + i,
            timestamp_ms=first.timestamp_ms + i * 600_000,
            manifest_list=first.manifest_list,
            summary=summary,
            schema_id=first.schema_id,
        )
        updates.append(AddSnapshotUpdate(snapshot=snap))
        parent = snap
    updates.append(SetSnapshotRefUpdate(ref_name="main", type="branch", snapshot_id=parent.snapshot_id))
    with table.transaction() as tx:
        tx._apply(tuple(updates))
    assert len(catalog.load_table(identifier).snapshots()) == snapshots
    return time.perf_counter() - started


def _client():
    sys.path.insert(0, str(REPO_ROOT / "plugins"))
    import cdclake_plugin
    from starlette.testclient import TestClient

    class User:
        def get_name(self) -> str:
            return "bench"

    cdclake_plugin.app.dependency_overrides[cdclake_plugin._page_user] = User
    cdclake_plugin.app.dependency_overrides[cdclake_plugin._authenticated_user] = User
    return TestClient(cdclake_plugin.app)


def _time(client, url: str, repeat: int) -> dict[str, float]:
    client.get(url)  # warm: imports, the sources config, the S3/local store
    seconds, size = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        response = client.get(url)
        seconds.append(time.perf_counter() - started)
        assert response.status_code == 200, (url, response.status_code, response.text[:300])
        size = len(response.content)
    p95 = statistics.quantiles(seconds, n=20)[-1] if len(seconds) > 1 else seconds[0]
    return {
        "median_s": round(statistics.median(seconds), 4),
        "p95_s": round(p95, 4),
        "max_s": round(max(seconds), 4),
        "bytes": size,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=int, default=10)
    parser.add_argument("--tables", type=int, default=500, help="tables in all (split evenly over the sources)")
    parser.add_argument("--batches", type=int, default=1000, help="batches per source")
    parser.add_argument("--snapshots", type=int, default=1000, help="commits of the drilled-down lake table")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--home", default=None, help="folder for the fixture (default: a temporary one)")
    args = parser.parse_args(argv)
    home = Path(args.home or tempfile.mkdtemp(prefix="cdclake-monitoring-bench-"))
    import os

    os.environ.update({"CDCLAKE_HOME": str(home), "CDCLAKE_STAGING": str(home / "staging")})
    os.environ.pop("CDCLAKE_MONITOR_INDEX", None)
    health = {"max_lag": "1d", "max_quarantined_share": 0.001}
    config = {
        f"src{s:02d}": {"format": "goldengate-json", "landing": f"landing/{s}", "health": health}
        for s in range(args.sources)
    }
    (home / "sources.yaml").write_text(json.dumps({"sources": config}))
    os.environ["CDCLAKE_SOURCES"] = str(home / "sources.yaml")
    settings = Settings.from_env()
    built = build_index(settings, args.sources, args.tables, args.batches)
    lake = build_lake_table(settings.warehouse, "db00.table_001", args.snapshots)
    files = list(Path(settings.monitor_index).rglob("*.json"))
    client = _client()
    table = "table?source=src00&table=DB00.TABLE_001"
    result = {
        "tables": args.tables,
        "sources": args.sources,
        "batches_per_source": args.batches,
        "index_files": len(files),
        "index_bytes": sum(f.stat().st_size for f in files),
        "index_build_s": round(built, 1),
        "lake_snapshots": args.snapshots,
        "lake_build_s": round(lake, 1),
        "overview": _time(client, "/", args.repeat),
        "overview_failing_only": _time(client, "/?state=failing", args.repeat),
        "api_health": _time(client, "/api/health", args.repeat),
        "table_drill_down": _time(client, "/" + table, args.repeat),
        "table_drill_down_oldest_page": _time(client, f"/{table}&page={args.batches // 100 - 1}", args.repeat),
    }
    print(json.dumps(result, indent=2))
    pages = [v for v in result.values() if isinstance(v, dict)]
    median, p95 = max(v["median_s"] for v in pages), max(v["p95_s"] for v in pages)
    print(f"slowest page: median {median:.3f} s, p95 {p95:.3f} s ({'under' if p95 < 1 else 'OVER'} the 1 s budget)")
    return 0 if p95 < 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
