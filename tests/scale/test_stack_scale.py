"""``make stack-scale`` (issue 58, first step): the compose topology with two Spark workers, at scale.

The stack of ``make stack-test`` (``local_stack``), with the Spark worker started twice, each with one
core (``SPARK_WORKER_CORES=1``: two one-core workers on this two-core machine). A change stream of
the bench generator (:mod:`cdclake.bench.generate`) over many tables, in two vendor formats written in
their real encodings, lands in S3 in several files per batch; each batch runs through the scheduler
(triggered over the REST API, as ``make stack-test`` does). The sources are configured so the
cluster path runs, through settings only:

- ``CDCLAKE_DRIVER_DECODE_BYTES=0``: no batch is decoded in the driver; on a ``spark://`` master the
  decode is then a Spark job whose tasks the executors run (``cdclake.jobs.decode.run``; the local
  process pool is for ``local[*]`` masters only), and both formats cut their files into pieces
  (``piece_test``), neither is stateful (one task for the whole batch);
- ``CDCLAKE_DRIVER_FOLD_ROWS=0`` and ``CDCLAKE_DRIVER_BULK_ROWS=0``: no table batch is routed and
  folded in the driver (``compaction.batch_rows.route_batch``, ``driver_io.bulk_bound``): the fold
  runs on the workers (``compaction.spark_fold``), and the report says ``fold: workers``.

Spark's event logs (``spark.eventLog.enabled`` in a ``spark-defaults.conf`` of the test's home,
``SPARK_CONF_DIR`` of the Airflow services) say which executor ran each task and, through the
executor's log URLs, on which worker: the decode job and the fold's jobs must have run tasks on both.
Every lake table is then compared with the generator's own model, row by row, through the
PostgreSQL catalog and S3 (``cdclake.bench.compare`` in a local Spark session of the test).

Scale knobs (environment; the defaults are issue 58's figures):

- ``CDCLAKE_SCALE_CHANGES`` (2,000,000): changes in all, split evenly over the formats;
- ``CDCLAKE_SCALE_TABLES`` (50): lake tables in all, split evenly over the formats (copies of the
  bench model's four tables, each under its own name);
- ``CDCLAKE_SCALE_FORMATS`` (``goldengate-json,debezium-json``): the formats, one source each;
- ``CDCLAKE_SCALE_BATCHES`` (2) and ``CDCLAKE_SCALE_FILES`` (4): batches per source, files per batch.

Wall times and events/s per core (decode and compact) are printed and written to
``var/stack-scale/report.json`` (``CDCLAKE_SCALE_ARTIFACTS`` moves the folder).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import os
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from local_stack.airflow_api import AirflowApi
from local_stack.stack import LocalStack, compose_variables, environment, require_tools

from cdclake.runtime.settings import REPO_ROOT

pytestmark = pytest.mark.scale

ARTIFACTS = Path(os.environ.get("CDCLAKE_SCALE_ARTIFACTS", REPO_ROOT / "var" / "stack-scale"))
CHANGES = int(os.environ.get("CDCLAKE_SCALE_CHANGES", "2000000"))
TABLES = int(os.environ.get("CDCLAKE_SCALE_TABLES", "50"))
FORMATS = [f.strip() for f in os.environ.get("CDCLAKE_SCALE_FORMATS", "goldengate-json,debezium-json").split(",")]
BATCHES = int(os.environ.get("CDCLAKE_SCALE_BATCHES", "2"))
FILES_PER_BATCH = int(os.environ.get("CDCLAKE_SCALE_FILES", "4"))
WORKERS = 2
WORKER_CORES = 1
RUN_TIMEOUT = float(os.environ.get("CDCLAKE_SCALE_RUN_TIMEOUT", "5400"))

#: The settings that send decode to the executors and the fold to the workers (module docstring).
CLUSTER_PATH = {
    "CDCLAKE_DRIVER_DECODE_BYTES": "0",
    "CDCLAKE_LOCAL_DECODE": "0",
    "CDCLAKE_DRIVER_FOLD_ROWS": "0",
    "CDCLAKE_DRIVER_BULK_ROWS": "0",
}


@dataclasses.dataclass
class Source:
    """One source of the test: its format, tables, generated files and the model's final rows."""

    name: str
    format_id: str
    seed: int
    tables: tuple  # of cdclake.bench.model.Table
    changes: int
    files: list[Path] = dataclasses.field(default_factory=list)
    options: dict[str, str] = dataclasses.field(default_factory=dict)
    keys: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    rows: dict[str, dict[tuple, list]] = dataclasses.field(default_factory=dict)
    bytes: int = 0
    generate_s: float = 0.0

    @property
    def namespace(self) -> str:
        return self.name

    @property
    def prefix(self) -> str:
        return self.name.replace("_", "-")

    def batches(self) -> list[list[Path]]:
        """The files in stream order, cut into ``BATCHES`` contiguous runs."""
        per = math.ceil(len(self.files) / BATCHES)
        return [self.files[i * per : (i + 1) * per] for i in range(BATCHES)]


def scale_tables(count: int, first: int) -> tuple:
    """``count`` copies of the bench model's tables in turn, each renamed ``<NAME>_<nnn>``."""
    from cdclake.bench.model import TABLES as MODEL

    return tuple(
        dataclasses.replace(MODEL[i % len(MODEL)], name=f"{MODEL[i % len(MODEL)].name}_{i:03d}")
        for i in range(first, first + count)
    )


def plan_sources(scratch: Path) -> list[Source]:
    """The sources and their decoder options and keys (what the format's writer says, known before it writes)."""
    from cdclake.bench.generate import WRITERS

    per_tables = math.ceil(TABLES / len(FORMATS))
    per_changes = math.ceil(CHANGES / len(FORMATS))
    sources = []
    for i, fmt in enumerate(FORMATS):
        tables = scale_tables(per_tables, i * per_tables)
        writer = WRITERS[fmt](scratch, tables, 1, 1)
        source = Source(f"scale_{fmt.replace('-', '_')}", fmt, 58 + i, tables, per_changes)
        sources.append(dataclasses.replace(source, options=writer.options(), keys=writer.keys()))
    return sources


def generate_source(source: Source, out_dir: Path) -> Source:
    """The source's stream in its format (in a process of its own): files of ``changes / (batches x files)``
    changes each, and the stream's final rows."""
    from cdclake.bench.generate import WRITERS
    from cdclake.bench.model import Stream

    started = time.perf_counter()
    stream = Stream(source.changes, source.seed, tables=source.tables)
    file_events = math.ceil(source.changes / (BATCHES * FILES_PER_BATCH))
    writer = WRITERS[source.format_id](out_dir, stream.tables, file_events, source.changes)
    for change in stream:
        writer.write(change)
    gen = writer.close()
    assert gen.events == source.changes
    assert (gen.options, gen.keys) == (source.options, source.keys)  # as the sources file says
    return dataclasses.replace(
        source,
        files=sorted(gen.files),
        options=gen.options,
        keys=gen.keys,
        rows=stream.rows,
        bytes=gen.bytes,
        generate_s=time.perf_counter() - started,
    )


def sources_file(home: Path, sources: list[Source]) -> Path:
    config = {
        "sources": {
            s.name: {
                "format": s.format_id,
                "landing": f"s3://landing/{s.prefix}/",
                "options": s.options,
                "keys": s.keys,
                "namespace": s.namespace,
                "schedule": None,
            }
            for s in sources
        }
    }
    path = home / "sources.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def spark_conf_dir(home: Path) -> tuple[Path, Path]:
    """A ``SPARK_CONF_DIR`` whose ``spark-defaults.conf`` turns on Spark's event log (plain JSON lines)."""
    conf, events = home / "spark-conf", home / "spark-events"
    conf.mkdir(parents=True, exist_ok=True)
    events.mkdir(parents=True, exist_ok=True)
    (conf / "spark-defaults.conf").write_text(
        f"spark.eventLog.enabled true\nspark.eventLog.dir file://{events}\nspark.eventLog.compress false\n"
    )
    return conf, events


@pytest.fixture(scope="module")
def scale(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    require_tools()
    home = tmp_path_factory.mktemp("scale")
    sources = plan_sources(home / "plan")
    conf, events = spark_conf_dir(home)
    overrides = {"CDCLAKE_SOURCES": str(sources_file(home, sources)), "SPARK_CONF_DIR": str(conf), **CLUSTER_PATH}
    variables = {**compose_variables(), "SPARK_WORKER_CORES": str(WORKER_CORES)}
    started = time.monotonic()
    # the files are written while the stack starts (one process per format)
    with ProcessPoolExecutor(len(sources)) as pool:
        pending = [pool.submit(generate_source, s, home / "generated" / s.name) for s in sources]
        with LocalStack(home, overrides=overrides, variables=variables, workers=WORKERS) as local:
            up = time.monotonic() - started
            sources = [p.result() for p in pending]
            print(f"stack up in {up:.0f} s, files written in {time.monotonic() - started:.0f} s; logs in {local.logs}")
            for s in sources:
                print(f"{s.name}: {s.changes} changes over {len(s.tables)} tables, {len(s.files)} files, {s.bytes} B")
            api = AirflowApi(local.api_url, "admin", local.admin_password)
            lake_env = {k: v for k, v in local.lake_env().items() if k not in CLUSTER_PATH}
            try:
                with environment(lake_env):
                    yield {
                        "local": local,
                        "api": api,
                        "s3": local.s3_client(),
                        "sources": sources,
                        "events": events,
                        "runs": [],
                        "stack_up_s": up,
                    }
            finally:
                api.close()
                local.keep_logs(ARTIFACTS / "logs")


# -- Spark's event logs -------------------------------------------------------------------------------


def read_event_logs(folder: Path) -> list[dict[str, Any]]:
    """Each finished application: name, executors (id -> worker UI port) and stages (name, the plan nodes of
    their RDDs, submitted / completed times, tasks with executor and seconds)."""
    apps = []
    for path in sorted(folder.iterdir()):
        lines = event_lines(path)
        if lines is None:
            continue
        app: dict[str, Any] = {"file": path.name, "executors": {}, "stages": {}}
        for line in lines:
            event = json.loads(line)
            kind = event.get("Event")
            if kind == "SparkListenerApplicationStart":
                app["name"], app["id"] = event["App Name"], event.get("App ID")
            elif kind == "SparkListenerExecutorAdded":
                urls = event["Executor Info"].get("Log Urls") or {}
                port = urlsplit(next(iter(urls.values()))).port if urls else None
                cores = event["Executor Info"]["Total Cores"]
                app["executors"][event["Executor ID"]] = {"worker_port": port, "cores": cores}
            elif kind in ("SparkListenerStageSubmitted", "SparkListenerStageCompleted"):
                info = event["Stage Info"]
                stage = app["stages"].setdefault((info["Stage ID"], info["Stage Attempt ID"]), {"tasks": []})
                scopes = {json.loads(r["Scope"])["name"] for r in info.get("RDD Info", []) if r.get("Scope")}
                stage.update(name=info["Stage Name"], scopes=sorted(scopes))
                for key in ("Submission Time", "Completion Time"):
                    if info.get(key) is not None:
                        stage[key] = info[key]
            elif kind == "SparkListenerTaskEnd":
                key = (event["Stage ID"], event["Stage Attempt ID"])
                info = event["Task Info"]
                task = {"executor": info["Executor ID"], "ms": info["Finish Time"] - info["Launch Time"]}
                app["stages"].setdefault(key, {"tasks": []})["tasks"].append(task)
        apps.append(app)
    return apps


def event_lines(path: Path) -> list[str] | None:
    """The lines of a finished application's event log: one file, or (rolling logs, Spark 4's default) the
    ``events_<n>_*`` files of its ``eventlog_v2_*`` folder in order; None while it runs."""
    if path.is_file():
        return None if path.name.endswith(".inprogress") else path.read_text(errors="replace").splitlines()
    if any(p.name.startswith("appstatus_") and p.name.endswith(".inprogress") for p in path.iterdir()):
        return None
    parts = sorted(path.glob("events_*"), key=lambda p: int(p.name.split("_")[1]))
    return [line for part in parts for line in part.read_text(errors="replace").splitlines()]


def stage_summary(app: dict[str, Any], stages: list[dict[str, Any]]) -> dict[str, Any]:
    """Tasks per worker (by UI port), task seconds and wall seconds (first submitted to last completed)."""
    by_worker: dict[str, int] = {}
    for stage in stages:
        for task in stage["tasks"]:
            executor = app["executors"].get(task["executor"])
            worker = f"worker:{executor['worker_port']}" if executor else f"executor:{task['executor']}"
            by_worker[worker] = by_worker.get(worker, 0) + 1
    starts = [s["Submission Time"] for s in stages if s.get("Submission Time")]
    ends = [s["Completion Time"] for s in stages if s.get("Completion Time")]
    return {
        "stages": len(stages),
        "tasks_by_worker": by_worker,
        "task_s": round(sum(t["ms"] for s in stages for t in s["tasks"]) / 1000, 2),
        "wall_s": round((max(ends) - min(starts)) / 1000, 2) if starts and ends else None,
        "names": sorted({s.get("name", "") for s in stages})[:5],
    }


def is_decode_stage(stage: dict[str, Any]) -> bool:
    """The decode job's stage: its collect in ``cdclake/jobs/decode.py`` (the decode application runs no
    other job concurrently, so its call site is its own)."""
    return "jobs/decode.py" in stage.get("name", "")


#: Plan nodes of the fold on the workers: ``groupBy(...).applyInArrow`` and its cogroup twin run only in
#: ``compaction/spark_fold.py`` (call sites do not tell: compact_threads tables share the application's jobs).
FOLD_NODES = {"FlatMapGroupsInArrow", "FlatMapCoGroupsInArrow"}


def is_fold_stage(stage: dict[str, Any]) -> bool:
    return bool(FOLD_NODES & set(stage.get("scopes", [])))


# -- the runs ------------------------------------------------------------------------------------------


def land(s3, source: Source, files: list[Path]) -> int:
    for path in files:
        s3.upload_file(str(path), "landing", f"{source.prefix}/{path.name}")
    return sum(p.stat().st_size for p in files)


def seconds(ti: dict[str, Any]) -> float | None:
    if ti.get("duration") is not None:
        return float(ti["duration"])
    if ti.get("start_date") and ti.get("end_date"):
        start, end = (dt.datetime.fromisoformat(ti[k]) for k in ("start_date", "end_date"))
        return (end - start).total_seconds()
    return None


def step_times(api: AirflowApi, dag_id: str, run_id: str) -> dict[str, Any]:
    """Wall seconds of the run's steps (mapped compact tasks: first start to last end, and their sum)."""
    tis = api.task_instances(dag_id, run_id)
    out: dict[str, Any] = {}
    for ti in tis:
        if ti["task_id"] != "compact" and seconds(ti) is not None:
            out[ti["task_id"]] = round(seconds(ti), 1)
    compacts = [ti for ti in tis if ti["task_id"] == "compact" and ti.get("start_date") and ti.get("end_date")]
    if compacts:
        first = min(dt.datetime.fromisoformat(ti["start_date"]) for ti in compacts)
        last = max(dt.datetime.fromisoformat(ti["end_date"]) for ti in compacts)
        out["compact"] = round((last - first).total_seconds(), 1)
        out["compact_tasks"] = len(compacts)
    return out


def per_core(events: int, wall: float | None, cores: int) -> float | None:
    return round(events / (wall * cores), 1) if wall else None


def test_batches_through_the_scheduler_decode_on_executors_fold_on_workers(scale: dict[str, Any]) -> None:
    """Each source's batches, one run each through the scheduler: every run balanced, nothing quarantined,
    decode a Spark job on executors (report ``runner: spark``), every table folded on the workers."""
    api, s3, local = scale["api"], scale["s3"], scale["local"]
    staging = Path(local.env("airflow-scheduler")["CDCLAKE_HOME"]) / "staging"
    for source in scale["sources"]:
        api.wait_for_dag(f"cdc_{source.name}")
    # the daily maintenance DAG runs once at start; paused so that it does not share the cores with the
    # measured runs if midnight passes (its run beside an ingest run is one of issue 58's fault scenarios)
    api.set_paused("cdc_maintenance", True)
    for batch in range(BATCHES):
        for source in scale["sources"]:
            dag_id = f"cdc_{source.name}"
            files = source.batches()[batch]
            landed = land(s3, source, files)
            time.sleep(1.1)  # staging takes files older than the interval's end (S3 times are in seconds)
            end = dt.datetime.now(dt.UTC).replace(microsecond=0)
            params = {"interval_start": (end - dt.timedelta(hours=1)).isoformat(), "interval_end": end.isoformat()}
            started = time.monotonic()
            run_id = api.trigger(dag_id, params)
            run = api.wait_for_run(dag_id, run_id, timeout=RUN_TIMEOUT)
            wall = time.monotonic() - started
            assert run["state"] == "success", api.task_states(dag_id, run_id)
            report = api.xcom(dag_id, run_id, "report")
            assert report["balanced"] and report["quarantined"] == 0 and report["files"] == len(files), report
            batch_dir = staging / source.name / report["batch_id"]
            decode = json.loads((batch_dir / "reports" / "decode.json").read_text())
            assert decode["runner"] == "spark" and decode["tasks"] >= WORKERS, decode
            folds = {table: entry.get("fold") for table, entry in report["tables"].items()}
            assert folds and all(str(f).startswith("workers") for f in folds.values()), folds
            entry = {
                "source": source.name,
                "format": source.format_id,
                "batch": batch + 1,
                "run_id": run_id,
                "files": len(files),
                "bytes": landed,
                "events": report["events"],
                "tables": len(folds),
                "run_s": round(wall, 1),
                "steps_s": step_times(api, dag_id, run_id),
                "decode": {k: decode[k] for k in ("tasks", "pieces", "runner")},
            }
            print(f"run: {json.dumps(entry)}")
            scale["runs"].append(entry)
            write_report(scale, None, None)  # so far (a run cut short keeps its figures)


def test_decode_and_fold_ran_on_both_workers(scale: dict[str, Any]) -> None:
    """From Spark's event logs: each decode application's decode job, and each compact application's fold
    stages, ran tasks on the executors of both workers."""
    assert scale["runs"], "the runs of the test above are what this checks"
    apps = read_event_logs(scale["events"])
    workers = {f"worker:{port}" for port in scale["local"].worker_ports}
    found: dict[str, list[dict[str, Any]]] = {}
    for source in scale["sources"]:
        for step, wanted in (("decode_normalize", is_decode_stage), ("compact", is_fold_stage)):
            name = f"cdclake-{source.name}-{step}"
            mine = [a for a in apps if a.get("name") == name]
            assert len(mine) >= BATCHES, (name, [a.get("name") for a in apps])
            for app in mine:
                ports = {e["worker_port"] for e in app["executors"].values()}
                assert ports == set(scale["local"].worker_ports), app["executors"]
                stages = [s for s in app["stages"].values() if wanted(s)]
                assert stages, (name, sorted({s.get("name", "") for s in app["stages"].values()}))
                summary = stage_summary(app, stages)
                assert set(summary["tasks_by_worker"]) == workers, (name, summary)
                found.setdefault(f"{source.name}:{step}", []).append(summary)
    scale["spark"] = found
    for key, summaries in found.items():
        print(f"{key}: " + "; ".join(f"{s['tasks_by_worker']} {s['wall_s']} s" for s in summaries))


def test_every_lake_table_equals_the_model(scale: dict[str, Any]) -> None:
    """Every table of every source, read through the PostgreSQL catalog and S3, row by row against the
    generator's final state (``cdclake.bench.compare``); then the figures are written."""
    from cdclake.bench.compare import compare_tables, expected_frame
    from cdclake.lake.naming import spark_table_name
    from cdclake.runtime.settings import Settings
    from cdclake.runtime.spark import build_session

    assert scale["runs"], "the runs of the first test are what this checks"
    write_report(scale, None, None)  # the figures, whatever the comparison finds
    settings = Settings.from_env()
    started = time.monotonic()
    spark = build_session("cdclake-scale-check", settings.warehouse, master="local[2]", jars=settings.jars())
    results = {}
    try:
        for source in scale["sources"]:
            tables = {t.full_name: t for t in source.tables}
            expected = {n: expected_frame(spark, t, source.rows.get(n, {})) for n, t in tables.items()}
            names = {n: spark_table_name(n, source.namespace) for n in tables}
            results[source.name] = compare_tables(spark, tables, expected, names)
    finally:
        spark.stop()
    check_s = time.monotonic() - started
    print(f"compared in {check_s:.0f} s: {json.dumps(results)}")
    write_report(scale, results, check_s)
    for name, counts in results.items():
        assert counts["wrong"] == 0 and counts["expected"] == counts["actual"] > 0, (name, counts)


def write_report(scale: dict[str, Any], compared: dict[str, Any] | None, check_s: float | None) -> None:
    """Wall times and events/s per core of decode and compact, printed and written to report.json."""
    cores = WORKERS * WORKER_CORES
    spark = scale.get("spark", {})
    runs = []
    for run in scale["runs"]:
        steps = run["steps_s"]
        decode_jobs = spark.get(f"{run['source']}:decode_normalize", [])
        decode_job = decode_jobs[run["batch"] - 1] if len(decode_jobs) >= run["batch"] else {}
        figures = {
            "decode_normalize_task_eps_per_core": per_core(run["events"], steps.get("decode_normalize"), cores),
            "decode_job_eps_per_core": per_core(run["events"], decode_job.get("wall_s"), cores),
            "compact_eps_per_core": per_core(run["events"], steps.get("compact"), cores),
        }
        runs.append({**run, "decode_job": decode_job, "per_core": figures})
        print(f"{run['source']} batch {run['batch']}: {run['events']} events, run {run['run_s']} s, {steps}, {figures}")
    totals = {}
    for step, key in (("decode_normalize", "decode_normalize"), ("compact", "compact")):
        wall = sum(r["steps_s"].get(key) or 0 for r in runs)
        events = sum(r["events"] for r in runs)
        totals[step] = {"events": events, "wall_s": round(wall, 1), "eps_per_core": per_core(events, wall, cores)}
    job_wall = sum((r["decode_job"] or {}).get("wall_s") or 0 for r in runs)
    events = sum(r["events"] for r in runs)
    totals["decode_job"] = {
        "events": events,
        "wall_s": round(job_wall, 1),
        "eps_per_core": per_core(events, job_wall, cores),
    }
    report = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": "make stack-scale",
        "settings": {
            "changes": CHANGES,
            "tables": TABLES,
            "formats": FORMATS,
            "batches": BATCHES,
            "files_per_batch": FILES_PER_BATCH,
            "workers": WORKERS,
            "worker_cores": WORKER_CORES,
            "cluster_path": CLUSTER_PATH,
        },
        "machine": {"cores": os.cpu_count(), "load": os.getloadavg()},
        "stack_up_s": round(scale["stack_up_s"], 1),
        "generated": {
            s.name: {
                "changes": s.changes,
                "tables": len(s.tables),
                "files": len(s.files),
                "bytes": s.bytes,
                "seconds": round(s.generate_s, 1),
            }
            for s in scale["sources"]
        },
        "runs": runs,
        "totals": totals,
        "spark": spark,
        "compared": compared,
        "compare_s": None if check_s is None else round(check_s, 1),
    }
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "report.json").write_text(json.dumps(report, indent=2, default=str))
    print(f"totals: {json.dumps(totals)}; report: {ARTIFACTS / 'report.json'}")
