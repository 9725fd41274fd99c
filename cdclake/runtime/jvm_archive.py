"""A class-data-sharing archive for the spark-submit driver JVM (``make setup`` builds it).

Every batch step is its own spark-submit, and a cold driver JVM spends seconds loading and
verifying the same Spark classes each time. Java's dynamic CDS archive keeps them mapped, ready:
one step (decode + normalize of 400 changes) takes 14.1-14.4 s with it against 20.2-21.1 s
without (docs/decisions.md, "A class-data-sharing archive for the driver JVM").

``python -m cdclake.runtime.jvm_archive`` runs one small batch through the whole pipeline under
spark-submit with ``-XX:ArchiveClassesAtExit``, so the archive holds what the steps load. A
missing, stale or foreign archive is harmless: the JVM says so (at most a warning) and starts
without it, so the option is safe on any master; a cluster-mode driver simply does not find the file.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from cdclake.runtime.settings import Settings

#: HotSpot's quick JIT only (C1, no C2): a short step's JVM stops compiling hot code a second time, which
#: on 2 cores competes with the step's own work (docs/decisions.md, "The quick JIT for small batches").
QUICK_JIT = "-XX:TieredStopAtLevel=1"


def driver_java_options(settings: Settings, staged_bytes: int | None = None) -> str | None:
    """The driver JVM's default options: ``-XX:SharedArchiveFile=...`` when the archive exists, and the
    quick JIT when the run's staged files (``staged_bytes``) are small enough. None: nothing to add."""
    options = []
    archive = settings.jvm_archive
    if archive is not None and archive.is_file():
        options.append(f"-XX:SharedArchiveFile={archive}")
    if staged_bytes is not None and staged_bytes <= settings.quick_jit_max_bytes:
        options.append(QUICK_JIT)
    return " ".join(options) or None


def warm_up_batches(spark, work: Path) -> list[dict]:
    """Two small GoldenGate JSON batches through every step: the first creates the tables, the second
    merges into them. The batches must commit (the demo table's keys given), or the archive misses
    the Iceberg write path that every compact step runs."""
    from cdclake import samples
    from cdclake.local_apply import apply_files
    from cdclake.options import Options

    warehouse = work / "warehouse"
    options = Options({"keys": ",".join(samples.KEYS)})
    reports = []
    for batch in (1, 2):
        path = samples.write_goldengate_json_batch(work / "landing", batch)
        reports.append(apply_files("goldengate-json", options, [str(path)], warehouse, spark=spark))
    return reports


def _warm_up(work: Path) -> None:
    """Inside spark-submit: the warm-up batches in this driver JVM; a batch that commits nothing fails
    the build (an archive without the write path would look fine and save little)."""
    from cdclake.runtime.spark import build_session

    spark = build_session("cdclake-jvm-archive", work / "warehouse")
    try:
        reports = warm_up_batches(spark, work)
    finally:
        spark.stop()
    if not all(r["applied"] for r in reports):
        raise SystemExit(f"the warm-up batches applied nothing: {reports}")


def build(settings: Settings) -> Path:
    """Write the archive (replacing an older one only once the new one is complete)."""
    target = settings.jvm_archive
    if target is None:
        raise SystemExit("CDCLAKE_JVM_ARCHIVE is off: nothing to build")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="cdclake-jvm-archive-") as work:
        env = {
            **os.environ,
            "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
            "CDCLAKE_HOME": work,
            "CDCLAKE_WAREHOUSE": str(Path(work) / "warehouse"),
        }
        env.pop("CDCLAKE_CATALOG_URI", None)  # the embedded SQLite catalog, inside the temporary folder
        command = [
            str(Path(sys.executable).with_name("spark-submit")),
            "--master",
            "local[*]",
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            f"spark.driver.defaultJavaOptions=-XX:ArchiveClassesAtExit={partial}",
            *(["--driver-memory", settings.driver_memory] if settings.driver_memory else []),
            *(["--jars", ",".join(settings.jars())] if settings.jars() else []),
            __file__,
            "--warm-up",
            work,
        ]
        done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"the warm-up batch failed (exit {done.returncode}):\n{done.stdout[-4000:]}")
    partial.replace(target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm-up", metavar="WORK", help="(inside spark-submit) run the warm-up batch in WORK")
    args = parser.parse_args(argv)
    if args.warm_up:
        _warm_up(Path(args.warm_up))
        return 0
    try:
        path = build(Settings.from_env())
    except (RuntimeError, OSError) as exc:  # an optimisation: setup goes on without it
        print(f"warning: no JVM class archive, spark-submit steps start slower: {exc}", file=sys.stderr)
        return 0
    print(f"JVM class archive: {path} ({path.stat().st_size // 2**20} MiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
