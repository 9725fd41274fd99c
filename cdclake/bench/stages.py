"""One format through the pipeline, each step timed (and its memory peaks taken) on its own.

The steps are the job functions :func:`cdclake.pipeline.run_batch` calls, in its order, so the
benchmark measures what runs; "merge" is the DDL, truncate and compact jobs together. The same format's files are also
decoded without Spark in this process (the decoder alone, and the decode task's whole Python
path: decoder, Arrow columns, Parquet files) on a sample, to tell decoder cost from Spark's.
"""

from __future__ import annotations

import cProfile
import gc
import io
import os
import pstats
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from cdclake.bench.bareparse import parse_files
from cdclake.bench.generate import Generated
from cdclake.bench.memory import Sampler
from cdclake.jobs import compact, ddl, decode, normalize, truncate
from cdclake.jobs.layout import read_layouts
from cdclake.options import Options
from cdclake.pipeline import build_report
from cdclake.registry import get_decoder
from cdclake.staging.batch import Manifest
from cdclake.staging.stage import stage_files


def settle_disk() -> float:
    """Write back the page cache's dirty pages before a timed run, untimed; returns the seconds it took.

    Why: the bench writes its landing files just before it runs (5 GB for 1M Debezium changes); their
    write-back must not fall on whichever step writes next (staging's copy), nor the pipeline's own writes on
    the naive job after it. A production landing was written long before its batch runs. On this machine the
    generation's write-back was already done when the pipeline started (the 1M Debezium run settled in 0.01 s):
    staging's 5 GB copy is bound by its own writes, more than the kernel lets wait in memory."""
    started = time.perf_counter()
    os.sync()
    return time.perf_counter() - started


def namespace_of(format_id: str, prefix: str = "bench") -> str:
    return f"{prefix}_{format_id.replace('-', '_')}"


def run_pipeline(
    spark, gen: Generated, work: Path, sampler: Sampler, buckets: int, keep: bool = False, namespace: str | None = None
) -> dict[str, Any]:
    """Stage, decode, normalize and compact one format's files as one batch; time each step."""
    fmt = gen.format_id
    staging = work / "staging"
    manifest = Manifest(
        source=f"bench-{fmt}",
        batch_id=f"bench-{fmt}",
        format=fmt,
        options=gen.options,
        keys=gen.keys,
        namespace=namespace or namespace_of(fmt),
    )
    batch_dir = staging / manifest.batch_id
    seconds: dict[str, float] = {}
    memory: dict[str, dict[str, int]] = {}
    sampler.window()
    steps = (  # cdclake.pipeline.run_batch's order, after staging
        ("stage", lambda: stage_files(gen.files, staging, manifest)),
        ("decode", lambda: decode.run(spark, batch_dir)),
        ("normalize", lambda: normalize.run(spark, batch_dir)),
        ("ddl", lambda: ddl.run(spark, batch_dir, buckets=buckets)),
        ("truncate", lambda: truncate.run(spark, batch_dir, buckets=buckets)),
        ("compact", lambda: compact.run(spark, batch_dir, buckets=buckets)),
    )
    results: dict[str, Any] = {}
    settled = settle_disk()
    for name, step in steps:
        started = time.perf_counter()
        results[name] = step()
        seconds[name] = time.perf_counter() - started
        memory[name] = sampler.window().as_mib()
    seconds["end_to_end"] = sum(seconds.values())
    seconds["merge"] = seconds["ddl"] + seconds["truncate"] + seconds["compact"]
    report = build_report(batch_dir)
    layouts = read_layouts(batch_dir)
    out = {
        "format": fmt,
        "events": gen.events,
        "records": gen.records,
        "bytes": gen.bytes,
        "files": len(gen.files),
        "seconds": seconds,
        "settle_s": settled,
        "memory": memory,
        "decode_tasks": results["decode"].get("tasks"),
        "decode_pieces": results["decode"].get("pieces"),
        "report": {k: v for k, v in report.items() if k != "tables"},
        "tables": {src: layout.spark_name for src, layout in layouts.items()},
    }
    if not keep:
        shutil.rmtree(batch_dir, ignore_errors=True)
    return out


def sample_files(gen: Generated, events: int) -> tuple[list[Path], int]:
    """The first files holding about ``events`` changes (at least one file), and their bytes."""
    want = gen.bytes * min(1.0, events / max(1, gen.events))
    chosen, total = [], 0
    for path in gen.files:
        if chosen and total >= want:
            break
        chosen.append(path)
        total += path.stat().st_size
    return chosen, total


def _decoder_alone(gen: Generated, files: list[Path]) -> None:
    decoder = get_decoder(gen.format_id, Options(gen.options))
    for path in files:
        for _ in decoder.decode(path.read_bytes(), path.name):
            pass


def _task_path(gen: Generated, files: list[Path]) -> None:
    """What a decode task runs in its Python worker: decoder, Arrow columns, Parquet files."""
    with tempfile.TemporaryDirectory(prefix="cdclake-task-") as out:
        pieces = [(p.name, str(p), 0, None) for p in files]
        decode.decode_to_files(gen.format_id, gen.options, pieces, None, out, "bench")


def _output_alone(gen: Generated, files: list[Path]) -> float:
    """Seconds to produce the decode task's output for the sample's events, and nothing else.

    The events are decoded first (not timed); the timed part rebuilds each canonical event from
    its fields (fresh image dicts, as any decoder must build them), turns them into Arrow columns
    and writes the Parquet file. Any Python decoder pays at least the bare parse plus this, so
    ``1 / (1/bare + 1/output)`` is the ceiling of a decode task, whatever its decoder does.
    """
    import pyarrow.parquet as pq

    from cdclake.events.arrow import DECODED_FILE_SCHEMA, DecodedBuilder
    from cdclake.events.change import ChangeEvent, Source
    from cdclake.lake.parquet_stats import INTERMEDIATE_COMPRESSION

    decoder = get_decoder(gen.format_id, Options(gen.options))
    events = [e for p in files for e in decoder.decode(p.read_bytes(), p.name) if isinstance(e, ChangeEvent)]
    thresholds = gc.get_threshold()
    gc.set_threshold(decode.GC_THRESHOLD, *thresholds[1:])  # as the decode task runs
    with tempfile.TemporaryDirectory(prefix="cdclake-output-") as out:
        started = time.perf_counter()
        builder = DecodedBuilder(decode.MAX_RAW_BYTES)
        path, compression = f"{out}/part.parquet", INTERMEDIATE_COMPRESSION
        with pq.ParquetWriter(path, DECODED_FILE_SCHEMA, compression=compression) as writer:
            for e in events:
                copy = ChangeEvent(
                    e.table,
                    e.op,
                    e.seq,
                    e.event_ts,
                    Source(e.source.file, e.source.offset),
                    e.tx_id,
                    e.tx_pos,
                    e.tx_last,
                    None if e.keys is None else list(e.keys),
                    None if e.before is None else dict(e.before),
                    None if e.after is None else dict(e.after),
                    e.ddl,
                    dict(e.meta),
                )
                builder.add_event(copy)
                if builder.rows >= decode.CHUNK_ROWS:
                    writer.write_batch(builder.flush())
            if builder.rows:
                writer.write_batch(builder.flush())
        seconds = time.perf_counter() - started
    gc.set_threshold(*thresholds)
    return seconds


def _warm_up() -> None:
    """Load what the first Arrow batch of a process imports (pyarrow pulls in pandas to convert
    datetimes: about a second), so that no timed figure carries a one-time import."""
    import datetime as dt

    import pyarrow.parquet as pq

    from cdclake.events.arrow import DecodedBuilder
    from cdclake.events.change import ChangeEvent, Source

    builder = DecodedBuilder(decode.MAX_RAW_BYTES)
    builder.add_event(ChangeEvent("S.T", "INSERT", "1", dt.datetime(2024, 1, 1), Source("f", 0), after={"a": 1}))
    with tempfile.TemporaryDirectory(prefix="cdclake-warm-") as out:
        pq.write_table(pa.Table.from_batches([builder.flush()]), f"{out}/warm.parquet")


def single_core(gen: Generated, sample_events: int) -> dict[str, Any]:
    """Events/s on one core, without Spark, over a sample of the files: bare parse, the decoder
    alone, the decode task's Python path, the output alone and the ceiling (bare parse + output).
    Rates are scaled from bytes (events per byte of this format), so every figure counts the same
    changes."""
    _warm_up()
    files, size = sample_files(gen, sample_events)
    per_byte = gen.events / max(1, gen.bytes)
    records, bare = parse_files(gen.format_id, files)
    started = time.perf_counter()
    _decoder_alone(gen, files)
    alone = time.perf_counter() - started
    started = time.perf_counter()
    _task_path(gen, files)
    task = time.perf_counter() - started
    output = _output_alone(gen, files)
    return {
        "output_eps": size * per_byte / output,
        "ceiling_eps": size * per_byte / (bare + output),
        "sample_events": round(size * per_byte),
        "sample_records": records,
        "bare_parse_eps": size * per_byte / bare,
        "decoder_eps": size * per_byte / alone,
        "task_path_eps": size * per_byte / task,
    }


def profile_task_path(gen: Generated, sample_events: int, top: int = 15) -> str:
    """cProfile of the decode task's Python path on a sample: the ``top`` functions by cumulative
    time (where the time goes) and by own time (what to speed up)."""
    files, _ = sample_files(gen, sample_events)
    profiler = cProfile.Profile()
    profiler.runcall(_task_path, gen, files)
    blocks = []
    for order in ("cumulative", "tottime"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(top)
        lines = [line.replace(str(Path.cwd()) + "/", "") for line in out.getvalue().splitlines() if line.strip()]
        start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls")), 0)
        blocks.append(f"by {'own' if order == 'tottime' else order} time:\n" + "\n".join(lines[:1] + lines[start:]))
    return "\n\n".join(blocks)
