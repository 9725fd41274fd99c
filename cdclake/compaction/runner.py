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
import math
import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

logger = logging.getLogger(__name__)


class CompactFailed(RuntimeError):
    """Some tables of the batch could not be compacted (the others were committed)."""

    def __init__(self, failures: dict[str, str]):
        self.failures = failures
        detail = "; ".join(f"{table}: {error}" for table, error in sorted(failures.items()))
        super().__init__(f"{len(failures)} table(s) failed to compact (a retry redoes only these): {detail}")


class _Budget:
    """The driver's bulk budget as ``total`` shares, handed out in the tables' order: a table takes its shares
    before it runs, once they are free and no table before it that would fit is still waiting (greedy in order,
    whatever order the pool's threads reach it in: a thread slow to make its session no longer lets a later,
    smaller table take the shares the largest one needs first)."""

    def __init__(self, total: int, needs: list[int]) -> None:
        self.free = total
        self._pending = dict(enumerate(needs))
        self._changed = threading.Condition()

    def _turn(self, rank: int) -> bool:
        need = self._pending[rank]
        return need <= self.free and all(n > self.free for r, n in self._pending.items() if r < rank)

    def take(self, rank: int) -> int:
        """Wait for table ``rank``'s turn and take its shares; returns them."""
        with self._changed:
            self._changed.wait_for(lambda: self._turn(rank))
            need = self._pending.pop(rank)
            self.free -= need
            self._changed.notify_all()  # a later table may fit now that this one left the queue
            return need

    def withdraw(self, rank: int) -> None:
        """Table ``rank`` will not run: the tables after it stop waiting for its turn."""
        with self._changed:
            self._pending.pop(rank, None)
            self._changed.notify_all()

    def give(self, shares: int) -> None:
        with self._changed:
            self.free += shares
            self._changed.notify_all()


def compact_tables(
    spark,
    tables: list[str],
    compact_one: Callable[[Any, str], dict[str, Any]],
    threads: int = 4,
    shares: Mapping[str, float] | None = None,
) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """``compact_one(session, table)`` for every table; returns (reports by table, errors by table).

    One table, or ``threads`` = 1: in the calling thread and session. Otherwise a pool of ``threads``
    workers, each with a session of its own made once. The driver's bulk budget is ``threads`` shares, one a
    table unless ``shares`` says more (a large table on the bulk path): a table runs once its shares are free,
    so the tables running never hold more than the budget, and a large table runs beside small ones instead of
    alone. The tables taking most shares start first (the longest, most often).
    """
    reports: dict[str, dict[str, Any]] = {}
    errors: dict[str, str] = {}
    shares = shares or {}

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

    if len(tables) <= 1 or threads <= 1:
        for table in tables:
            one(spark, table)
        return reports, errors
    order = sorted(tables, key=lambda t: -shares.get(t, 1))  # stable: the given order among equals
    # in thousandths of a share: whole numbers, so shares given back add up to the budget exactly
    needs = [math.ceil(round(1000 * max(1, min(threads, shares.get(t, 1))), 6)) for t in order]
    budget = _Budget(threads * 1000, needs)
    local = threading.local()

    def in_pool(rank: int) -> None:
        if not hasattr(local, "session"):
            try:
                local.session = spark.newSession()
            except BaseException:
                budget.withdraw(rank)  # else the tables after it would wait for its turn forever
                raise
        taken = budget.take(rank)
        try:
            one(local.session, order[rank])
        finally:
            budget.give(taken)

    with ThreadPoolExecutor(max_workers=min(threads, len(tables)), thread_name_prefix="compact") as pool:
        list(pool.map(in_pool, range(len(order))))
    return reports, errors
