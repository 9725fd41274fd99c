"""Spark jobs and seconds per pipeline step of small batches in one warm session (issue 19's count).

Batches of the bench stream (GoldenGate JSON, 4 tables) into the same tables; per step the wall
time and the number of Spark jobs it ran (``statusTracker``). A table's compaction should cost a
few jobs, not dozens.

    CDCLAKE_JARS=.jars .venv/bin/python benchmarks/scripts/compact_jobs.py [EVENTS] [BATCHES]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from cdclake.bench.generate import generate
from cdclake.jobs import compact, ddl, decode, normalize, truncate
from cdclake.runtime.settings import Settings
from cdclake.runtime.spark import build_session
from cdclake.staging.batch import Manifest
from cdclake.staging.stage import stage_files


def main() -> None:
    events = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    batches = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    work = Path(tempfile.mkdtemp())
    spark = build_session("compact-jobs", work / "warehouse", master="local[*]", jars=Settings.from_env().jars())
    tracker = spark.sparkContext.statusTracker()

    def run(gen, namespace: str, batch_id: str) -> dict[str, tuple[float, int]]:
        manifest = Manifest(
            source="jobs",
            batch_id=batch_id,
            format=gen.format_id,
            options=gen.options,
            keys=gen.keys,
            namespace=namespace,
        )
        stage_files(gen.files, work / "staging", manifest)
        batch_dir = work / "staging" / batch_id
        out = {}
        for name, step in (
            ("decode", decode.run),
            ("normalize", normalize.run),
            ("ddl", ddl.run),
            ("truncate", truncate.run),
            ("compact", compact.run),
        ):
            jobs, started = len(tracker.getJobIdsForGroup(None)), time.perf_counter()
            step(spark, batch_dir)
            out[name] = (round(time.perf_counter() - started, 2), len(tracker.getJobIdsForGroup(None)) - jobs)
        return out

    warm, _ = generate(["goldengate-json"], work / "warm", 200, seed=3, file_events=100)
    print("warm-up (s, jobs):", run(warm["goldengate-json"], "warm", "w1"), flush=True)
    for i in range(batches):
        gens, _ = generate(["goldengate-json"], work / f"gen{i}", events, seed=7 + i, file_events=events)
        print(f"batch {i} (s, jobs):", run(gens["goldengate-json"], "jobs", f"b{i}"), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
