"""The compact runner's scheduling: tables side by side, the ones that take the whole bulk budget alone."""

from __future__ import annotations

import threading
import time

from cdclake.compaction.runner import compact_tables


class Sessions:
    """Stands in for the SparkSession the runner only asks for new sessions (the tables' own)."""

    def newSession(self) -> Sessions:  # PySpark's name
        return Sessions()


def test_tables_of_the_whole_budget_run_after_the_others_one_at_a_time_in_the_calling_thread():
    spark = Sessions()
    running: set[str] = set()
    log: list[tuple[str, str, frozenset[str], str]] = []
    lock = threading.Lock()

    def compact_one(session, table: str) -> dict:
        with lock:
            running.add(table)
            log.append(("start", table, frozenset(running), threading.current_thread().name))
        time.sleep(0.05)
        with lock:
            running.discard(table)
        return {"status": "committed"}

    tables = ["a", "big1", "b", "c", "big2"]
    reports, errors = compact_tables(spark, tables, compact_one, threads=3, alone={"big1", "big2"})
    assert not errors and set(reports) == set(tables)
    starts = [table for _, table, _, _ in log]
    assert set(starts[:3]) == {"a", "b", "c"} and starts[3:] == ["big1", "big2"]
    for _, table, others, thread in log:
        if table.startswith("big"):  # nothing else holds the driver's budget meanwhile
            assert others == {table} and thread == threading.current_thread().name
    assert any(len(others) > 1 for _, table, others, _ in log if not table.startswith("big"))  # side by side


def test_a_failing_table_of_the_whole_budget_is_reported_and_the_others_go_on():
    def compact_one(session, table: str) -> dict:
        if table == "big":
            raise RuntimeError("out of luck")
        return {"status": "committed"}

    reports, errors = compact_tables(Sessions(), ["a", "big", "b"], compact_one, threads=2, alone={"big"})
    assert errors == {"big": "RuntimeError: out of luck"}
    assert reports["a"]["status"] == reports["b"]["status"] == "committed" and reports["big"]["status"] == "failed"
