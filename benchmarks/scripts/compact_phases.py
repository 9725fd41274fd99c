"""Where compact's time goes: the 100k-change GoldenGate JSON pipeline, printing every Parquet
write and every ``collect`` over 0.3 s with the cdclake function that made it.

    CDCLAKE_JARS=.jars .venv/bin/python benchmarks/scripts/compact_phases.py
"""

from __future__ import annotations

import tempfile
import time
import traceback
from pathlib import Path

from pyspark.sql.classic import dataframe as classic
from pyspark.sql.readwriter import DataFrameWriter

from cdclake.bench import stages
from cdclake.bench.generate import generate
from cdclake.bench.memory import Sampler
from cdclake.runtime.settings import Settings
from cdclake.runtime.spark import build_session


def _caller() -> str:
    frame = [f for f in traceback.extract_stack() if "/cdclake/" in f.filename][-1]
    return f"{frame.name}:{frame.lineno}"


def _instrument() -> None:
    parquet, collect = DataFrameWriter.parquet, classic.DataFrame.collect

    def timed_parquet(self, path, *args, **kwargs):
        started = time.perf_counter()
        result = parquet(self, path, *args, **kwargs)
        print(f"  parquet {time.perf_counter() - started:6.2f} s  {Path(str(path)).parent.name}/{Path(str(path)).name}")
        return result

    def timed_collect(self):
        started = time.perf_counter()
        result = collect(self)
        if (seconds := time.perf_counter() - started) > 0.3:
            print(f"  collect {seconds:6.2f} s  {_caller()}")
        return result

    DataFrameWriter.parquet, classic.DataFrame.collect = timed_parquet, timed_collect


def main() -> None:
    work = Path(tempfile.mkdtemp())
    spark = build_session("compact-phases", work / "warehouse", master="local[*]", jars=Settings.from_env().jars())
    with Sampler() as sampler:
        warm, _ = generate(["goldengate-json"], work / "warm", 500, seed=3, file_events=250)
        stages.run_pipeline(spark, warm["goldengate-json"], work / "warm", sampler, 16, namespace="warm")
        gens, _ = generate(["goldengate-json"], work / "gen", 100_000, seed=7, file_events=10_000)
        _instrument()
        out = stages.run_pipeline(spark, gens["goldengate-json"], work, sampler, 16)
    print("seconds", {k: round(v, 1) for k, v in out["seconds"].items()})


if __name__ == "__main__":
    main()
