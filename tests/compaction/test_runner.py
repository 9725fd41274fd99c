"""The compact runner's scheduling: tables side by side, within the shares of the driver's bulk budget."""

from __future__ import annotations

import threading
import time

from cdclake.compaction.runner import compact_tables


class Sessions:
    """Stands in for the SparkSession the runner only asks for new sessions (the tables' own)."""

    def newSession(self) -> Sessions:  # PySpark's name
        return Sessions()


def test_the_tables_running_never_hold_more_than_the_budget_and_large_ones_run_beside_small_ones():
    spark = Sessions()
    shares = {"big1": 2, "big2": 3}
    running: dict[str, int] = {}
    held: list[int] = []
    beside: set[str] = set()
    starts: list[str] = []
    threads_seen: set[str] = set()
    lock = threading.Lock()

    def compact_one(session, table: str) -> dict:
        with lock:
            starts.append(table)
            running[table] = shares.get(table, 1)
            held.append(sum(running.values()))
            threads_seen.add(threading.current_thread().name)
        time.sleep(0.05)
        with lock:
            if len(running) > 1:
                beside.update(running)
            del running[table]
        return {"status": "committed"}

    tables = ["a", "big1", "b", "c", "big2"]
    reports, errors = compact_tables(spark, tables, compact_one, threads=4, shares=shares)
    assert not errors and set(reports) == set(tables) and sorted(starts) == sorted(tables)
    assert max(held) <= 4  # the driver's budget: four shares
    assert starts[0] == "big2"  # most shares first
    assert {"big1"} & beside and "big2" in beside  # each large table ran beside a small one
    assert threading.current_thread().name not in threads_seen  # in the pool's sessions


class FirstSessionDiffers(Sessions):
    """Counts the sessions made (threads make them at once); the first one goes through :meth:`first`."""

    def __init__(self) -> None:
        self.made = 0
        self.lock = threading.Lock()

    def first(self) -> None: ...

    def newSession(self) -> Sessions:
        with self.lock:
            self.made += 1
            is_first = self.made == 1
        if is_first:
            self.first()
        return Sessions()


class SlowFirstSessions(FirstSessionDiffers):
    """The first session made is the slowest: its thread reaches the budget last."""

    def first(self) -> None:
        time.sleep(0.3)


def test_the_budget_goes_in_the_tables_order_whatever_thread_gets_there_first():
    shares = {"orders": 2, "lines": 3}
    starts: list[str] = []
    lock = threading.Lock()

    def compact_one(session, table: str) -> dict:
        with lock:
            starts.append(table)
        time.sleep(0.05)
        return {"status": "committed"}

    tables = ["customers", "orders", "products", "lines"]
    compact_tables(SlowFirstSessions(), tables, compact_one, threads=4, shares=shares)
    # the largest first, a small one beside it; the 2-share table waits for the 3-share one's shares
    assert starts[0] == "lines" and starts.index("orders") > starts.index("customers")


def test_one_table_or_one_thread_runs_in_the_calling_thread():
    names: list[str] = []

    def compact_one(session, table: str) -> dict:
        names.append(threading.current_thread().name)
        return {"status": "committed"}

    compact_tables(Sessions(), ["a", "b"], compact_one, threads=1, shares={"a": 2})
    compact_tables(Sessions(), ["a"], compact_one, threads=4)
    assert set(names) == {threading.current_thread().name}


def test_a_failing_large_table_is_reported_and_gives_back_its_shares():
    def compact_one(session, table: str) -> dict:
        if table == "big":
            raise RuntimeError("out of luck")
        return {"status": "committed"}

    reports, errors = compact_tables(Sessions(), ["a", "big", "b"], compact_one, threads=2, shares={"big": 2})
    assert errors == {"big": "RuntimeError: out of luck"}
    assert reports["a"]["status"] == reports["b"]["status"] == "committed" and reports["big"]["status"] == "failed"


def test_a_table_holds_the_fraction_of_the_budget_it_needs():
    running: set[str] = set()
    together: list[set[str]] = []
    lock = threading.Lock()

    def compact_one(session, table: str) -> dict:
        with lock:
            running.add(table)
            together.append(set(running))
        time.sleep(0.1)
        with lock:
            running.discard(table)
        return {"status": "committed"}

    # 2.5 + 1.5 shares fit a budget of 4 (rounded up to 3 + 2 they would not); 2.5 + 2.5 do not
    compact_tables(Sessions(), ["a", "b"], compact_one, threads=4, shares={"a": 2.5, "b": 1.5})
    assert {"a", "b"} in together
    together.clear()
    compact_tables(Sessions(), ["a", "b"], compact_one, threads=4, shares={"a": 2.5, "b": 2.5})
    assert all(len(seen) == 1 for seen in together)


class FailingSessions(FirstSessionDiffers):
    """The first session made fails to start."""

    def first(self) -> None:
        raise RuntimeError("no session")


def test_a_session_that_fails_to_start_does_not_hold_up_the_other_tables():
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            compact_tables(FailingSessions(), ["a", "b", "c"], lambda _, table: {"status": "committed"}, threads=2)
            outcome.append(None)
        except BaseException as exc:  # the session's error reaches the caller
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive()  # no table waits forever on the failed one's place in the queue
    assert isinstance(outcome[0], RuntimeError)
