"""Fixed costs of a batch (issue 19): per table in one application, and a whole DAG run through Airflow.

- :func:`many_tables`: one warm Spark session; a batch of ``per_table`` inserts into each of N new
  tables, then a batch of as many updates to the same tables (the steady state), for a few N. The
  cost of each extra table is the slope between the smallest and largest N.
- :func:`dag_run`: the demo's every-format stream (400 changes over 4 tables) in GoldenGate JSON,
  through ``airflow dags test`` of its ``cdc_<source>`` DAG (real spark-submit tasks), twice (a first
  batch that creates the tables, then a second batch onto them); wall time and each task's seconds,
  read from Airflow's own task start/end lines.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from pathlib import Path
from typing import Any

from cdclake.bench.merge_curve import apply

TABLE_PREFIX = "MANY.T"


def write_table_batch(path: Path, tables: int, per_table: int, pos: int, op: str) -> int:
    """GoldenGate JSON: ``per_table`` inserts (``I``) or full updates (``U``) in each of ``tables`` tables."""
    with open(path, "w") as out:
        for t in range(tables):
            for i in range(per_table):
                pos += 1
                row = {"id": i, "v": f"{op}{pos}", "n": pos}
                record = {"table": f"{TABLE_PREFIX}{t:04d}", "op_type": op, "op_ts": "2024-01-01 00:00:00.000000"}
                out.write(json.dumps({**record, "pos": f"{pos:020d}", "after": row}) + "\n")
    return pos


def many_tables(spark, work: Path, counts: list[int], per_table: int, buckets: int, log=print) -> dict[str, Any]:
    """Seconds of a new-tables batch and of a steady-state batch for each table count, and the slopes."""
    work.mkdir(parents=True, exist_ok=True)
    runs = []
    for n in counts:
        namespace = f"bench_many_{n}"
        entry: dict[str, Any] = {"tables": n, "events_per_table": per_table}
        pos = 0
        for phase, op in (("create", "I"), ("steady", "U")):
            path = work / f"many-{n}-{phase}.json"
            pos = write_table_batch(path, n, per_table, pos, op)
            started = time.perf_counter()
            report = apply(spark, work / "staging", [path], namespace, f"many-{n}-{phase}", buckets)
            entry[f"{phase}_s"] = round(time.perf_counter() - started, 2)
            entry[f"{phase}_balanced"] = report["balanced"] and report["applied"] == n * per_table
            path.unlink()
        runs.append(entry)
        log(f"many tables: {json.dumps(entry)}")
    low, high = runs[0], runs[-1]
    span = max(1, high["tables"] - low["tables"])
    return {
        "runs": runs,
        "per_extra_table_create_s": round((high["create_s"] - low["create_s"]) / span, 3),
        "per_extra_table_steady_s": round((high["steady_s"] - low["steady_s"]) / span, 3),
    }


_TASK_LINE = re.compile(r"^(\S+Z) .*\[DAG TEST\] (starting|end task) task_id=(\S+) map_index=(-?\d+)")


def task_seconds(log_text: str) -> tuple[dict[str, float], float]:
    """Seconds per task (mapped tasks summed) and the span from the first task start to the last end."""
    started: dict[tuple[str, str], dt.datetime] = {}
    seconds: dict[str, float] = {}
    first = last = None
    for line in log_text.splitlines():
        m = _TASK_LINE.match(line)
        if not m:
            continue
        when = dt.datetime.fromisoformat(m.group(1).replace("Z", "+00:00"))
        first = first or when
        last = when
        key = (m.group(3), m.group(4))
        if m.group(2) == "starting":
            started[key] = when
        elif key in started:
            seconds[m.group(3)] = seconds.get(m.group(3), 0.0) + (when - started.pop(key)).total_seconds()
    span = (last - first).total_seconds() if first and last else 0.0
    return {k: round(v, 2) for k, v in seconds.items()}, round(span, 2)


def dag_run(work: Path, events: int = 400, tables: int | None = None, log=print) -> dict[str, Any]:
    """Two DAG runs of a GoldenGate JSON source through ``airflow dags test``: ``events`` changes of the
    bench stream each, or (``tables``) ``events`` inserts then as many updates in each of that many tables."""
    import yaml

    from cdclake.airflow.env import airflow_env, dags_test, migrate
    from cdclake.bench.generate import generate

    work = work.resolve()  # the sources file names the landing folder; the DAG's tasks run elsewhere
    work.mkdir(parents=True, exist_ok=True)
    landing = work / "landing"
    sources = {"sources": {}}
    env = airflow_env(work, extra={"CDCLAKE_SOURCES": str(work / "sources.yaml")})
    out: dict[str, Any] = {"events_per_run": events * (tables or 1), "tables": tables or 4, "runs": []}
    started = time.perf_counter()
    migrate(env, work / "airflow.log")
    out["airflow_db_migrate_s"] = round(time.perf_counter() - started, 1)
    pos = 0
    for run, seed in enumerate((7, 8), start=1):
        landing.mkdir(parents=True, exist_ok=True)
        if tables:
            pos = write_table_batch(landing / f"run{run}.json", tables, events, pos, "I" if run == 1 else "U")
            options, keys = {}, {"*": ["id"]}
        else:
            gens, _ = generate(["goldengate-json"], work / f"gen{run}", events, seed=seed, file_events=events)
            gen = gens["goldengate-json"]
            for path in gen.files:  # one landing folder: the second run stages only its own new file
                path.rename(landing / f"run{run}-{path.name}")
            options, keys = gen.options, gen.keys
        sources["sources"]["bench_dag"] = {
            "format": "goldengate-json",
            "landing": str(landing),
            "options": options,
            "keys": keys,
            "namespace": "bench_dag",
        }
        (work / "sources.yaml").write_text(yaml.safe_dump(sources, sort_keys=False))
        log_path = work / f"dag-run-{run}.log"
        started = time.perf_counter()
        result = dags_test("cdc_bench_dag", dt.datetime.now(dt.UTC).isoformat(), env, log_path)
        wall = time.perf_counter() - started
        tasks, span = task_seconds(log_path.read_text())
        entry = {
            "run": run,
            "ok": result.returncode == 0,
            "wall_s": round(wall, 1),
            "tasks_span_s": span,
            "before_first_task_s": round(wall - span, 1),
            "task_s": tasks,
        }
        out["runs"].append(entry)
        log(f"DAG run {run}: {json.dumps(entry)}")
    return out
