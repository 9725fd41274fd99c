"""Health states: what makes a table or source failing, late, quarantining or healthy."""

from __future__ import annotations

import datetime as dt

import pytest

from cdclake.monitoring import health
from cdclake.runtime.sources import HealthThresholds

NOW = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)
LIMITS = HealthThresholds(max_lag_seconds=3600, max_quarantined_share=0.1)


def _table(minutes_ago: float = 5, lag: float | None = 30, applied: int = 9, quarantined: int = 0, status="committed"):
    finished = (NOW - dt.timedelta(minutes=minutes_ago)).isoformat()
    last = {"batch_id": "b", "finished_at": finished, "lag_seconds": lag, "applied": applied, "stale": 0}
    return {"last": {**last, "quarantined": quarantined, "status": status}}


@pytest.mark.parametrize(
    ("table", "last_run", "state"),
    [
        (_table(), None, "healthy"),
        (_table(quarantined=1), None, "healthy"),  # exactly 10 %: not above the threshold
        (_table(applied=8, quarantined=2), None, "quarantining"),  # 20 %
        (_table(minutes_ago=59.4), None, "healthy"),  # 59.4 min + 30 s of lag = 59.9 min
        (_table(minutes_ago=59.6), None, "late"),  # 59.6 min + 30 s = 60.1 min
        (_table(minutes_ago=61, lag=None), None, "late"),  # no lag recorded: the time since counts
        (_table(status="failed"), None, "failing"),
        (_table(), {"state": "failed", "run_id": "r", "task_id": "compact", "at": NOW.isoformat()}, "failing"),
        (_table(), {"state": "late", "run_id": "r", "at": NOW.isoformat()}, "late"),
        # a failed run before the table's last batch is over: a later run succeeded for it
        (_table(), {"state": "failed", "run_id": "r", "at": (NOW - dt.timedelta(hours=1)).isoformat()}, "healthy"),
        (_table(minutes_ago=120, applied=1, quarantined=9, status="failed"), None, "failing"),  # worst wins
    ],
)
def test_table_states(table: dict, last_run: dict | None, state: str) -> None:
    verdict = health.table_health(table, last_run, LIMITS, NOW)
    assert verdict.state == state, verdict
    assert bool(verdict.reasons) == (state != "healthy")


def test_worst_reason_comes_first_and_sources_take_their_worst_table() -> None:
    verdict = health.table_health(_table(minutes_ago=120, applied=1, quarantined=9, status="failed"), None, LIMITS, NOW)
    assert verdict.reasons[0].startswith("compaction failed") and "late" not in verdict.reasons[0]
    assert [r.split(" ")[0] for r in verdict.reasons[1:]] == ["lag", "90.0%"]
    summary = {"last": {"finished_at": NOW.isoformat(), "read": 10, "quarantined": 0}}
    source = health.source_health(summary, ["healthy", "late", "quarantining"], LIMITS, NOW)
    assert source.state == "late" and source.reasons == ("1 table(s) late", "1 table(s) quarantining")
    assert health.source_health(None, [], LIMITS, NOW).reasons == ("no finished batch yet",)
    decode_rejects = {"last": {"finished_at": NOW.isoformat(), "read": 10, "quarantined": 5}}
    assert health.source_health(decode_rejects, [], LIMITS, NOW).state == "quarantining"
    assert sorted(["healthy", "late", "failing", "quarantining"], key=health.rank) == list(health.STATES)
