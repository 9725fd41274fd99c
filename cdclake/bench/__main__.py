"""``python -m cdclake.bench`` (``make bench``): throughput, memory and correctness of every format.

Steps (each can be limited by a flag; ``--quick`` shrinks them all):

1. generate the same change stream in every format (two processes) and its expected final table;
2. per format, one core, no Spark: the bare-parse limit, the decoder alone, the decode task path;
3. start Spark (timed apart), warm up, then per format stage/decode/normalize/merge as one batch,
   each step timed with memory peaks, and the lake tables compared with the expected rows;
4. the naive Spark job on the JSON formats against ours: both warmed until their runs stop falling (equal
   warm-ups), then ``--repeats`` timed pairs in turn; every pair, best-of-N (the headline) and medians;
5. batches over 2 and 30 tables in one application (the cost of each extra table);
6. the incremental merge curve; 7. one large file decoded with bounded worker memory;
8. two DAG runs through ``airflow dags test`` (wall time and each task's seconds), optionally one
   over many tables (``--dag-tables``);
9. ``benchmarks/results/<date>-bench.md`` (and ``.json``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from cdclake.runtime.settings import REPO_ROOT, Settings

#: Generation cost per event and format (µs, measured), to balance the two writer processes.
_WRITE_COST = {
    "goldengate-avro-op": 135,
    "qlik-avro": 106,
    "goldengate-avro-row": 65,
    "debezium-json": 62,
    "cdl-json": 54,
    "datahub-blob": 52,
    "goldengate-xml": 44,
    "datahub-tuple": 44,
    "goldengate-json": 40,
    "goldengate-delimited": 29,
}


def log(message: str) -> None:
    print(f"[bench {dt.datetime.now():%H:%M:%S}] {message}", flush=True)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    from cdclake.registry import format_ids

    parser = argparse.ArgumentParser(prog="python -m cdclake.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=None, help="changes per format (default 1,000,000)")
    parser.add_argument("--quick", action="store_true", help="100k events, small merge curve and big file")
    parser.add_argument("--formats", default=",".join(format_ids()), help="comma-separated format ids")
    parser.add_argument("--merge-sizes", default=None, help="table sizes of the merge curve (default 1M,4M,16M)")
    parser.add_argument("--merge-max-batch", type=int, default=None, help="skip merge batches above this many events")
    parser.add_argument("--big-file-gb", type=float, default=None, help="size of the one large file (default 2)")
    parser.add_argument(
        "--big-file-formats",
        default="goldengate-json,debezium-json,goldengate-avro-op",
        help="formats of the large-file test",
    )
    parser.add_argument("--file-events", type=int, default=None, help="changes per landing file (default: 10 files)")
    parser.add_argument("--sample-events", type=int, default=30_000, help="sample of the single-core measurements")
    parser.add_argument("--buckets", type=int, default=Settings.from_env().buckets)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="timed runs of ours and of the naive job per format, in turn after the warm-ups; every pair, "
        "best-of-N (the headline ratio) and medians reported",
    )
    parser.add_argument(
        "--warm-up-cap",
        type=int,
        default=None,
        help="most untimed warm-up runs per side before the timed pairs (default 5, at least 2); both sides get "
        "the same number, stopping once each side's runs stop falling",
    )
    parser.add_argument(
        "--steady-tolerance",
        type=float,
        default=None,
        help="a warm-up run more than this fraction faster than the one before means still warming (default 0.05)",
    )
    parser.add_argument(
        "--skip", default="", help="steps to skip: pipeline,naive,tables,merge,history,bigfile,single,dag"
    )
    parser.add_argument(
        "--history",
        default="100k,100,1000",
        help="the long-history case: table rows, logged events per key, earlier batches (commits) of the log",
    )
    parser.add_argument(
        "--history-repeats", type=int, default=9, help="batches onto each table of the history case (taken in turn)"
    )
    parser.add_argument("--table-counts", default="2,30", help="table counts of the many-tables batches")
    parser.add_argument(
        "--dag-tables", type=int, default=None, help="also a DAG run over this many tables, 10 changes each"
    )
    parser.add_argument("--work", default=None, help="scratch folder (default: var/bench, removed afterwards)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument(
        "--out", default=None, help="markdown results file (default benchmarks/results/<date>-bench.md)"
    )
    args = parser.parse_args(argv)
    if args.events is None:
        args.events = 100_000 if args.quick else 1_000_000
    if args.file_events is None:
        args.file_events = max(1_000, args.events // 10)
    if args.merge_sizes is None:
        args.merge_sizes = "100k" if args.quick else "1M,4M,16M"
    if args.big_file_gb is None:
        args.big_file_gb = 0.25 if args.quick else 2.0
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    from cdclake.bench.pairs import STEADY_TOLERANCE, WARM_UP_CAP

    args.warm_up_cap = max(2, WARM_UP_CAP if args.warm_up_cap is None else args.warm_up_cap)
    if args.steady_tolerance is None:
        args.steady_tolerance = STEADY_TOLERANCE
    args.formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    unknown = sorted(set(args.formats) - set(format_ids()))
    if unknown:
        parser.error(f"unknown format(s) {', '.join(unknown)}")
    args.skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    return args


# --- generation (in worker processes, so the driver's memory is the pipeline's) -------------


def _generate_group(
    formats: list[str], out: str, events: int, seed: int, file_events: int, expected: bool
) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from cdclake.bench.generate import generate
    from cdclake.bench.model import text_of

    gens, stream = generate(formats, Path(out) / "files", events, seed=seed, file_events=file_events)
    if expected:  # also when ``formats`` is empty: the stream alone
        folder = Path(out) / "expected"
        folder.mkdir(parents=True, exist_ok=True)
        for table in stream.tables:
            texts = [text_of(c) for c in table.columns]
            rows = stream.rows[table.full_name].values()
            columns = {
                c.name: pa.array([None if r[i] is None else texts[i](r[i]) for r in rows], pa.string())
                for i, c in enumerate(table.columns)
            }
            pq.write_table(pa.table(columns), folder / f"{table.full_name}.parquet")
    return {"gens": gens, "mix": dict(stream.mix)}


def generate_all(args: argparse.Namespace, work: Path) -> tuple[dict[str, Any], dict[str, int], float]:
    started = time.perf_counter()
    groups: list[list[str]] = [[], []]
    loads = [0, 0]
    for fmt in sorted(args.formats, key=lambda f: -_WRITE_COST.get(f, 50)):
        i = loads.index(min(loads))
        groups[i].append(fmt)
        loads[i] += _WRITE_COST.get(fmt, 50)
    gens: dict[str, Any] = {}
    mix: dict[str, int] = {}
    with ProcessPoolExecutor(2) as pool:
        futures = [
            pool.submit(_generate_group, group, str(work), args.events, args.seed, args.file_events, i == 0)
            for i, group in enumerate(groups)
        ]
        for future in futures:
            result = future.result()
            gens.update(result["gens"])
            mix = mix or result["mix"]
    return gens, mix, time.perf_counter() - started


def _single_core(gen: Any, sample_events: int, profile: bool) -> dict[str, Any]:
    from cdclake.bench.stages import profile_task_path, single_core

    if profile:
        return {"profile": profile_task_path(gen, sample_events)}
    return single_core(gen, sample_events)


def in_subprocess(fn, *args: Any) -> Any:
    with ProcessPoolExecutor(1) as pool:
        return pool.submit(fn, *args).result()


# --- machine ------------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    import platform

    import psutil
    import pyspark

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    jars = [Path(j).name for j in Settings.from_env().jars()]
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 1024**3, 1),
        "os": platform.platform(),
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "iceberg": next((j.removesuffix(".jar") for j in jars if j.startswith("iceberg-spark-runtime")), None),
        "java": _java_version(),
        "load_before": os.getloadavg(),
    }


def _java_version() -> str | None:
    import subprocess

    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
        return (out.stderr or out.stdout).splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        return None


# --- main ---------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    from cdclake.bench import report as report_md

    today = dt.date.today().isoformat()
    out_md = Path(args.out) if args.out else REPO_ROOT / "benchmarks" / "results" / f"{today}-bench.md"
    work = Path(args.work) if args.work else REPO_ROOT / "var" / "bench"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    results: dict[str, Any] = {
        "date": today,
        "command": "python -m cdclake.bench " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": machine(),
        "settings": {
            "events": args.events,
            "formats": args.formats,
            "file_events": args.file_events,
            "sample_events": args.sample_events,
            "buckets": args.buckets,
            "shuffle_partitions": os.environ.get("CDCLAKE_SHUFFLE_PARTITIONS", "8"),
            "seed": args.seed,
        },
        "formats": {},
    }
    try:
        run(args, work, results)
    finally:
        results["machine"]["load_after"] = os.getloadavg()
        out_md.parent.mkdir(parents=True, exist_ok=True)
        out_md.with_suffix(".json").write_text(json.dumps(results, indent=2, default=str))
        out_md.write_text(report_md.render(results))
        log(f"results: {out_md}")
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


def run(args: argparse.Namespace, work: Path, results: dict[str, Any]) -> None:
    from cdclake.bench.model import TABLES

    log(f"generating {args.events} changes in {len(args.formats)} formats")
    gens, mix, seconds = generate_all(args, work)
    results["generation"] = {
        "seconds": seconds,
        "mix": mix,
        "formats": {f: {"bytes": g.bytes, "files": len(g.files), "records": g.records} for f, g in gens.items()},
    }
    log(f"generated in {seconds:.0f}s")

    if "single" not in args.skip:
        for fmt in args.formats:
            single = in_subprocess(_single_core, gens[fmt], args.sample_events, False)
            results["formats"].setdefault(fmt, {})["single_core"] = single
            log(f"{fmt}: one core: bare {single['bare_parse_eps']:.0f}, decoder {single['decoder_eps']:.0f} ev/s")

    if not {"pipeline", "naive", "tables", "merge", "history", "bigfile"} - args.skip:
        _dag_runs(args, work, results)
        return
    from cdclake.bench.compare import compare_tables
    from cdclake.bench.memory import Sampler
    from cdclake.bench.stages import run_pipeline
    from cdclake.runtime.spark import build_session

    started = time.perf_counter()
    spark = build_session("cdclake-bench", work / "warehouse", master="local[*]", jars=Settings.from_env().jars())
    results["jvm_start_s"] = time.perf_counter() - started
    results["settings"]["parallelism"] = spark.sparkContext.defaultParallelism
    log(f"Spark started in {results['jvm_start_s']:.1f}s")
    tables = {t.full_name: t for t in TABLES}
    try:
        with Sampler() as sampler:
            expected = {name: spark.read.parquet(str(work / "expected" / f"{name}.parquet")).cache() for name in tables}
            if "pipeline" not in args.skip:
                _warm_up(spark, work, sampler, args, results)
                for fmt in args.formats:
                    log(f"{fmt}: pipeline")
                    run = run_pipeline(spark, gens[fmt], work, sampler, args.buckets)
                    run["parallelism"] = spark.sparkContext.defaultParallelism
                    run["correct"] = compare_tables(spark, tables, expected, run["tables"])
                    results["formats"].setdefault(fmt, {})["pipeline"] = run
                    _save_partial(results, work)
                    log(f"{fmt}: {_summary(run)}")
            if "naive" not in args.skip:
                _naive(spark, gens, tables, expected, results, args, work, sampler)
            if "tables" not in args.skip:
                from cdclake.bench.cost import many_tables

                counts = [int(n) for n in args.table_counts.split(",")]
                results["many_tables"] = many_tables(spark, work / "many", counts, 5, args.buckets, log=log)
            if "merge" not in args.skip:
                from cdclake.bench.merge_curve import parse_size, run_curve

                sizes = [parse_size(s) for s in args.merge_sizes.split(",") if s.strip()]
                results["merge_curve"] = run_curve(
                    spark, work / "merge", sizes, args.buckets, args.merge_max_batch, log=log
                )
            if "history" not in args.skip:
                from cdclake.bench.merge_curve import history_case, parse_size

                rows, per_key, batches = args.history.split(",")
                results["history"] = history_case(
                    spark,
                    work / "history",
                    parse_size(rows),
                    int(per_key),
                    int(batches),
                    args.buckets,
                    repeats=args.history_repeats,
                    log=log,
                )
                _save_partial(results, work)
            if "bigfile" not in args.skip:
                from cdclake.bench.scale import run_big_file

                results["big_file"] = []
                for fmt in [f.strip() for f in args.big_file_formats.split(",") if f.strip()]:
                    log(f"{fmt}: one {args.big_file_gb} GB file")
                    big = run_big_file(spark, fmt, args.big_file_gb, work / "big", sampler)
                    results["big_file"].append(big)
                    log(f"{fmt}: big file {big}")
    finally:
        spark.stop()
    _profile_worst(gens, results, args)
    _dag_runs(args, work, results)  # after the bench's own Spark session is gone: the DAG's tasks start their own


def _dag_runs(args: argparse.Namespace, work: Path, results: dict[str, Any]) -> None:
    """The DAG runs through Airflow (400 changes; and over ``--dag-tables`` tables), unless skipped."""
    if "dag" in args.skip:
        return
    from cdclake.bench.cost import dag_run

    results["dag_run"] = dag_run(work / "dag", 400, log=log)
    if args.dag_tables:
        results["dag_run_tables"] = dag_run(work / "dag-tables", 10, tables=args.dag_tables, log=log)


def _warm_up(spark, work: Path, sampler, args: argparse.Namespace, results: dict[str, Any]) -> None:
    """A small batch first, so JIT and class loading are not charged to the first format."""
    from cdclake.bench.generate import generate
    from cdclake.bench.stages import run_pipeline

    gens, _ = generate(["goldengate-json"], work / "warmup", 500, seed=3, file_events=250)
    started = time.perf_counter()
    run_pipeline(spark, gens["goldengate-json"], work / "warmup", sampler, args.buckets, namespace="bench_warmup")
    results["warm_up_s"] = time.perf_counter() - started


def _naive(
    spark, gens, tables, expected, results: dict[str, Any], args: argparse.Namespace, work: Path, sampler
) -> None:
    """Ours against the naive job, per JSON format, in pairs (:mod:`cdclake.bench.pairs`).

    Warm-ups first, untimed for the comparison, on the format's whole input: a pair at a time (ours, then the
    naive job), the same number for each side, until each side's last run is no more than
    ``--steady-tolerance`` faster than the one before, at least two and at most ``--warm-up-cap`` each. Ours'
    first warm-up is the pipeline step's run (the throughput table's; a warm session already). Then
    ``--repeats`` timed pairs in turn: ours, the naive job, ours ... each run of ours into tables of its own,
    checked for wrong rows and dropped; the naive job overwrites its tables, compared after its last run.
    Before the naive job's warm-ups on the whole input, it had one small warm-up of 2,000 changes, and its
    timed runs kept falling (1M GoldenGate JSON: 20.7, 15.5, 13.5 s)."""
    from cdclake.bench.compare import canonical, compare_tables, diff
    from cdclake.bench.generate import PLAIN_KINDS
    from cdclake.bench.naive import NAIVE_FORMATS, run_naive
    from cdclake.bench.pairs import pair_summary, pairs_text, still_falling, warm_until_steady
    from cdclake.bench.stages import namespace_of, run_pipeline, settle_disk

    model_tables = list(tables.values())
    for fmt in [f for f in args.formats if f in NAIVE_FORMATS]:
        ours_first = results["formats"].get(fmt, {}).get("pipeline")
        naive_namespace = namespace_of(fmt, "naive")

        def naive_run(fmt=fmt, naive_namespace=naive_namespace) -> tuple[dict, float, float]:
            settled = settle_disk()
            names, seconds = run_naive(spark, fmt, gens[fmt].files, model_tables, naive_namespace)
            return names, seconds, settled

        def warm_pair(i: int, fmt=fmt, ours_first=ours_first, naive_run=naive_run) -> tuple[float | None, float]:
            ours_s = None
            if ours_first is not None and i == 0:
                ours_s = ours_first["seconds"]["end_to_end"]  # the pipeline step's run
            elif ours_first is not None:
                namespace = namespace_of(fmt, f"benchwarm{i}")
                run = run_pipeline(spark, gens[fmt], work / f"warm{i}", sampler, args.buckets, namespace=namespace)
                _drop(spark, run["tables"].values())
                ours_s = run["seconds"]["end_to_end"]
            _, naive_s, settled = naive_run()
            ours_text = "—" if ours_s is None else f"{ours_s:.1f}s" + (" (the pipeline step's run)" if i == 0 else "")
            log(f"{fmt}: warm-up {i + 1}: ours {ours_text}, naive {naive_s:.1f}s (after {settled:.1f} s of write-back)")
            return ours_s, naive_s

        log(f"{fmt}: naive job against ours: warm-ups until steady (at most {args.warm_up_cap} each)")
        warm = warm_until_steady(warm_pair, args.warm_up_cap, args.steady_tolerance)
        ours_runs: list[float] = []
        naive_runs: list[float] = []
        wrong: list[int] = []
        names: dict = {}
        for i in range(1, args.repeats + 1):
            if ours_first is not None:
                namespace = namespace_of(fmt, f"bench{i}")
                run = run_pipeline(spark, gens[fmt], work / f"repeat{i}", sampler, args.buckets, namespace=namespace)
                ours_runs.append(run["seconds"]["end_to_end"])
                wrong.append(compare_tables(spark, tables, expected, run["tables"])["wrong"])
                _drop(spark, run["tables"].values())
            names, seconds, settled = naive_run()
            naive_runs.append(seconds)
            ours_text = f"ours {ours_runs[-1]:.1f}s ({wrong[-1]} wrong rows), " if ours_runs else ""
            log(f"{fmt}: timed run {i}: {ours_text}naive {seconds:.1f}s (after {settled:.1f} s of write-back)")
        kinds = PLAIN_KINDS[fmt]
        summary = pair_summary(ours_runs, naive_runs)
        entry: dict[str, Any] = {
            "seconds": naive_runs[0],
            "compared_kinds": sorted(kinds),
            "warm_up_s": sum(warm["naive_s"]),
            "warm_ups": warm,
            "naive_runs_s": naive_runs,
            "naive_timed_still_falling": still_falling(naive_runs, args.steady_tolerance),
        }
        entry["naive_vs_expected"] = compare_tables(spark, tables, expected, names, kinds)  # its last run's tables
        entry["ours_timed_still_falling"] = still_falling(ours_runs, args.steady_tolerance)
        if ours_first is not None:
            ours_names = {src.upper(): name for src, name in ours_first["tables"].items()}
            entry["ours_vs_expected"] = compare_tables(spark, tables, expected, ours_names, kinds)
            entry |= {"ours_s": ours_runs[0], "ours_runs_s": ours_runs, "ours_runs_wrong": wrong}
            same = {"wrong": 0}
            for table_name, table in tables.items():
                if table_name in names and table_name in ours_names:
                    counts = diff(
                        canonical(spark.table(ours_names[table_name]), table, kinds),
                        canonical(spark.table(names[table_name]), table, kinds),
                    )
                    same["wrong"] += counts["wrong"]
            entry["rows_differing_ours_vs_naive"] = same["wrong"]
        entry |= summary
        results.setdefault("naive", {})[fmt] = entry
        _save_partial(results, work)
        for line in pairs_text(fmt, summary, warm):
            log(line)
        for side in ("naive", "ours"):
            if entry[f"{side}_timed_still_falling"]:
                log(f"{fmt}: the timed runs of {side} still fell run after run (each >{args.steady_tolerance:.0%})")
        log(f"{fmt}: naive wrong rows {entry['naive_vs_expected']['wrong']}")


def _drop(spark, names) -> None:
    """Each table of ``names`` and its change log, files and all (a repeat's tables are only checked, not kept)."""
    from cdclake.compaction.lake_tables import LOG_SUFFIX

    for name in names:
        for table in (name, f"{name}{LOG_SUFFIX}"):
            spark.sql(f"DROP TABLE IF EXISTS {table} PURGE")


def _profile_worst(gens, results: dict[str, Any], args: argparse.Namespace) -> None:
    """cProfile of the decode task path of the format furthest from its bare-parse limit."""
    from cdclake.bench.report import decode_ratio

    ratios = {f: decode_ratio(r) for f, r in results["formats"].items() if decode_ratio(r) is not None}
    if not ratios:
        return
    worst = min(ratios, key=ratios.get)
    profile = in_subprocess(_single_core, gens[worst], min(args.sample_events, 20_000), True)
    results["profile"] = {"format": worst, "ratio": ratios[worst], "text": profile["profile"]}


def _summary(run: dict[str, Any]) -> str:
    s = run["seconds"]
    return (
        f"e2e {s['end_to_end']:.1f}s (decode {s['decode']:.1f}, normalize {s['normalize']:.1f}, "
        f"merge {s['merge']:.1f}),"
        f" wrong rows {run['correct']['wrong']}, balanced {run['report'].get('balanced')}"
    )


def _save_partial(results: dict[str, Any], work: Path) -> None:
    (work / "partial-results.json").write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    raise SystemExit(main())
