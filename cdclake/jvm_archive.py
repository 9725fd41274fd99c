"""A class-data-sharing archive for the spark-submit driver JVM (``make setup`` builds it).

Every batch step is its own spark-submit, and a cold driver JVM spends seconds loading and
verifying the same Spark classes each time. Java's dynamic CDS archive keeps them mapped, ready:
one step (decode + normalize of 400 changes) takes 14.1-14.4 s with it against 20.2-21.1 s
without (docs/decisions.md, "A class-data-sharing archive for the driver JVM").

``python -m cdclake.jvm_archive`` runs one small batch through the whole pipeline under
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

from cdclake.settings import Settings


def driver_java_options(settings: Settings) -> str | None:
    """``-XX:SharedArchiveFile=...`` when the archive exists (None: nothing to add)."""
    archive = settings.jvm_archive
    if archive is None or not archive.is_file():
        return None
    return f"-XX:SharedArchiveFile={archive}"


def _warm_up(work: Path) -> None:
    """Inside spark-submit: one small GoldenGate JSON batch through every step, in this driver JVM."""
    from cdclake import samples
    from cdclake.local_apply import apply_files
    from cdclake.options import Options
    from cdclake.spark import build_session

    warehouse = work / "warehouse"
    spark = build_session("cdclake-jvm-archive", warehouse)
    try:
        for batch in (1, 2):  # the second batch merges into existing tables
            path = samples.write_goldengate_json_batch(work / "landing", batch)
            apply_files("goldengate-json", Options({}), [str(path)], warehouse, spark=spark)
    finally:
        spark.stop()


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
