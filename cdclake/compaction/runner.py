"""Every table of a batch in one Spark application: fixed costs paid once, tables side by side.

A Spark application costs a JVM start and catalog loads; a table's compaction is a chain of small
Spark jobs that mostly wait on the driver (planning, catalog commits, Python workers). So one
application compacts all of a batch's tables, ``threads`` at a time, each table in its own
:meth:`SparkSession.newSession` (its own SQL conf, temporary views and catalog instance: the
MERGE's snapshot properties are session conf, so two tables must not share a session). Each table
is still committed in its own Iceberg transactions carrying the batch id; a table that fails is
reported with its error and the others go on, and a retry of the task skips what was committed.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from typing import Any

logger = logging.getLogger(__name__)


class CompactFailed(RuntimeError):
    """Some tables of the batch could not be compacted (the others were committed)."""

    def __init__(self, failures: dict[str, str]):
        self.failures = failures
        detail = "; ".join(f"{table}: {error}" for table, error in sorted(failures.items()))
        super().__init__(f"{len(failures)} table(s) failed to compact (a retry redoes only these): {detail}")


def compact_tables(
    spark,
    tables: list[str],
    compact_one: Callable[[Any, str], dict[str, Any]],
    threads: int = 4,
    alone: Collection[str] = (),
) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """``compact_one(session, table)`` for every table; returns (reports by table, errors by table).

    One table, or ``threads`` = 1: in the calling thread and session. Otherwise a pool of
    ``threads`` workers, each with a session of its own made once. The tables of ``alone`` (each
    takes the driver's whole bulk budget) run after the pool, one at a time, in the calling thread.
    """
    reports: dict[str, dict[str, Any]] = {}
    errors: dict[str, str] = {}

    def one(session, table: str) -> None:
        started = time.perf_counter()
        try:
            report = compact_one(session, table)
        except Exception as exc:  # reported per table; the task fails after the others are done
            logger.exception("compact %s failed", table)
            errors[table] = f"{type(exc).__name__}: {exc}"
            reports[table] = {"status": "failed", "error": errors[table][:2000]}
            return
        report["seconds"] = round(time.perf_counter() - started, 3)
        reports[table] = report
        counts = " ".join(f"{k}={report.get(k, 0)}" for k in ("applied", "stale", "quarantined", "deleted_keys"))
        print(  # stderr: the task log shows it, and stdout stays the report's (``cdclake apply`` prints JSON there)
            f"compact {table}: {report.get('status')} {counts} mode={report.get('merge_mode', '-')} "
            f"in {report['seconds']} s",
            file=sys.stderr,
            flush=True,
        )

    shared = [t for t in tables if t not in alone]
    if len(shared) <= 1 or threads <= 1:
        for table in shared:
            one(spark, table)
    else:
        local = threading.local()

        def in_pool(table: str) -> None:
            if not hasattr(local, "session"):
                local.session = spark.newSession()
            one(local.session, table)

        with ThreadPoolExecutor(max_workers=min(threads, len(shared)), thread_name_prefix="compact") as pool:
            list(pool.map(in_pool, shared))
    for table in tables:
        if table in alone:
            one(spark, table)
    return reports, errors
