"""Fault injection for the crash tests (``tests/reliability``); inert in production.

Jobs call :func:`fault_point` at the places where a crash matters. Nothing happens unless the
environment names the point:

- ``CDCLAKE_FAULT=<point>[,<point>...]``: the process dies there by ``SIGKILL`` -- a real crash:
  no ``finally``, no ``atexit``, no Spark shutdown hook, no Iceberg abort/cleanup. The Spark driver
  JVM is killed first (the gateway child PySpark started, or the parent JVM under spark-submit),
  because a JVM left running could still finish a write the test means to interrupt. The point's
  name is appended to ``CDCLAKE_FAULT_LOG`` if set: under spark-submit the driver's stderr passes
  through the JVM, which may die before it forwards the last line.
- ``CDCLAKE_FAULT_FILE=<path>``: the same, for the points named in that file (comma or line separated)
  while it exists. Long-running services keep the environment they started with (an Airflow
  scheduler passes it to every task); the file lets a test arm a point and disarm it later.
- ``CDCLAKE_PAUSE=<point>`` with ``CDCLAKE_PAUSE_FILE=<path>``: the process creates ``<path>`` and
  waits (once) until the test deletes it, to force an interleaving of two processes.

:func:`inside_commit` arms the two points that sit inside a single Spark call (Iceberg writes the
data files, then commits, in one ``DataFrameWriterV2`` action): it holds the SQLite catalog's write
lock so the commit cannot be published, and a watcher thread kills the process when the write has
reached the named stage. With no variable set each function returns after two environment lookups.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

FAULT_ENV = "CDCLAKE_FAULT"
FAULT_FILE_ENV = "CDCLAKE_FAULT_FILE"
FAULT_LOG_ENV = "CDCLAKE_FAULT_LOG"
PAUSE_ENV = "CDCLAKE_PAUSE"
PAUSE_FILE_ENV = "CDCLAKE_PAUSE_FILE"
#: Iceberg data files of the write are complete (its Spark job ended); the commit is not published.
AFTER_FILES_WRITTEN = "compact:after-files-written"
#: The commit wrote its manifests and new ``vN.metadata.json``; the catalog still points at the old one.
DURING_COMMIT = "compact:during-commit"
#: The longest a paused process waits for the test (then it goes on: a test bug must not hang a job).
PAUSE_TIMEOUT_S = 300.0
_paused: set[str] = set()


def _armed(env: str, name: str) -> bool:
    value = os.environ.get(env) or ""
    if env == FAULT_ENV and os.environ.get(FAULT_FILE_ENV):
        with contextlib.suppress(OSError):
            value += "," + Path(os.environ[FAULT_FILE_ENV]).read_text().replace("\n", ",")
    return name in (v.strip() for v in value.split(",") if v.strip())


def fault_point(name: str) -> None:
    """Crash (``CDCLAKE_FAULT``) or pause (``CDCLAKE_PAUSE``) here if the environment names ``name``."""
    if FAULT_ENV not in os.environ and PAUSE_ENV not in os.environ and FAULT_FILE_ENV not in os.environ:
        return
    if _armed(FAULT_ENV, name):
        crash(name)
    if _armed(PAUSE_ENV, name) and name not in _paused:
        _paused.add(name)
        _pause(name)


def crash(name: str) -> None:
    """Die now by SIGKILL, Spark driver JVM first; never returns."""
    print(f"cdclake fault injection: killing the process at {name}", file=sys.stderr)
    if os.environ.get(FAULT_LOG_ENV):
        with open(os.environ[FAULT_LOG_ENV], "a") as log:
            log.write(f"{os.getpid()} killed at {name}\n")
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    jvm = _driver_jvm_pid()
    if jvm is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(jvm, signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def _driver_jvm_pid() -> int | None:
    """The JVM running this process's Spark driver, if any."""
    if "pyspark" not in sys.modules:
        return None
    from pyspark import SparkContext

    proc = getattr(SparkContext._gateway, "proc", None)
    if proc is not None:  # plain ``python job.py``: PySpark launched the JVM as a child
        return proc.pid
    if os.environ.get("PYSPARK_GATEWAY_PORT"):  # under spark-submit the driver JVM is the parent
        parent = os.getppid()
        with contextlib.suppress(OSError):
            if Path(f"/proc/{parent}/comm").read_text().strip() == "java":
                return parent
    return None


def _pause(name: str) -> None:
    path = Path(os.environ[PAUSE_FILE_ENV])
    path.write_text(f"{os.getpid()} paused at {name}\n")
    print(f"cdclake fault injection: paused at {name} until {path} is removed", file=sys.stderr, flush=True)
    deadline = time.monotonic() + PAUSE_TIMEOUT_S
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


@contextlib.contextmanager
def inside_commit(spark: Any, table: str) -> Iterator[None]:
    """Arm :data:`AFTER_FILES_WRITTEN` / :data:`DURING_COMMIT` around one Spark write of ``table``.

    Only for a local warehouse with the default SQLite catalog. The catalog's write lock is taken
    (``BEGIN IMMEDIATE``: readers go on, Iceberg's pointer swap waits in SQLite's busy handler), so
    the commit cannot complete between what the watcher sees and the kill; the test then finds the
    files the write left behind, unreferenced.
    """
    point = next((p for p in (AFTER_FILES_WRITTEN, DURING_COMMIT) if _armed(FAULT_ENV, p)), None)
    if point is None:
        yield
        return
    import sqlite3

    from cdclake.runtime.settings import CATALOG_NAME

    uri = spark.conf.get(f"spark.sql.catalog.{CATALOG_NAME}.uri")
    location = next(
        r["data_type"] for r in spark.sql(f"DESCRIBE TABLE EXTENDED {table}").collect() if r["col_name"] == "Location"
    )
    if not uri.startswith("jdbc:sqlite:") or not location.startswith("file:"):
        raise RuntimeError(f"{point} needs a local warehouse with a SQLite catalog, not {uri} / {location}")
    root = Path(urlsplit(location).path)
    before = set(_files(root / "data")) | set(_files(root / "metadata"))
    group = f"cdclake-fault-{os.getpid()}"
    spark.sparkContext.setJobGroup(group, point)
    lock = sqlite3.connect(uri.removeprefix("jdbc:sqlite:"), isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")  # held until the process dies

    def watch() -> None:
        tracker = spark.sparkContext.statusTracker()
        while True:
            if point == DURING_COMMIT:
                if any(p.name.endswith(".metadata.json") for p in _files(root / "metadata") if p not in before):
                    crash(point)
            else:
                jobs = [tracker.getJobInfo(j) for j in tracker.getJobIdsForGroup(group)]
                new_data = [p for p in _files(root / "data") if p not in before]
                if new_data and jobs and all(j is not None and j.status == "SUCCEEDED" for j in jobs):
                    crash(point)
            time.sleep(0.01)

    threading.Thread(target=watch, name="cdclake-fault", daemon=True).start()
    yield


def _files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return [p for p in folder.rglob("*") if p.is_file()]
