"""Health states of sources and tables, from the monitoring index and the source's thresholds.

One place decides what *failing*, *late*, *quarantining* and *healthy* mean, so the page, its JSON
and the ``cdc_health`` checks that alert through Airflow agree. Worst first:

- **failing**: the table's last compaction failed, or the source's last run failed after the
  table's last batch (its data stopped advancing);
- **late**: lag now (lag at the end of the last batch + the time since it finished) is above
  ``health.max_lag`` of the source, or its last run missed its deadline (cdclake.airflow.alerts); a
  source with no finished batch is late too;
- **quarantining**: the share of the last batch's records that were quarantined (for a table:
  quarantined / (applied + stale + quarantined); for a source: quarantined / read) is above
  ``health.max_quarantined_share``;
- **healthy**: none of these.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from cdclake.monitoring.batches import format_seconds, parse_time
from cdclake.runtime.sources import HealthThresholds

STATES = ("failing", "late", "quarantining", "healthy")
_RANK = {state: i for i, state in enumerate(STATES)}


@dataclass(frozen=True)
class Health:
    state: str
    reasons: tuple[str, ...]
    lag_now_seconds: float | None
    quarantined_share: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "reasons": list(self.reasons),
            "lag_now_seconds": self.lag_now_seconds,
            "quarantined_share": self.quarantined_share,
        }


def rank(state: str) -> int:
    """Sort key: failing first, healthy last."""
    return _RANK.get(state, len(STATES))


def worst(states: list[str]) -> str:
    return min(states, key=rank) if states else "healthy"


def _duration(seconds: float) -> str:
    return format_seconds(seconds) or f"{seconds} s"


def lag_now(entry: dict[str, Any], now: dt.datetime) -> float | None:
    """Lag at the end of the batch + time since it finished (the time since, without a lag)."""
    finished = parse_time(entry.get("finished_at"))
    if finished is None:
        return None
    since = max((now - finished).total_seconds(), 0.0)
    lag = entry.get("lag_seconds")
    return round((lag if isinstance(lag, int | float) else 0.0) + since, 3)


def _run_problem(last_run: dict[str, Any] | None, after: str | None) -> tuple[str, str] | None:
    """(state, why) when the source's last run failed or missed its deadline after data last advanced
    at ``after`` (a run recorded before that batch is over)."""
    if not last_run or last_run.get("state") not in ("failed", "late"):
        return None
    at, since = parse_time(last_run.get("at")), parse_time(after)
    if since is not None and at is not None and at < since:
        return None
    if last_run["state"] == "late":
        return "late", f"run {last_run.get('run_id')} missed its deadline"
    return "failing", f"last run {last_run.get('run_id')} failed in {last_run.get('task_id') or 'a task'}"


def _share(part: Any, whole: Any) -> float | None:
    if not isinstance(part, int | float) or not isinstance(whole, int | float) or whole <= 0:
        return None
    return round(part / whole, 6)


def table_health(
    table: dict[str, Any], last_run: dict[str, Any] | None, limits: HealthThresholds, now: dt.datetime
) -> Health:
    """State of one table from its summary entry (cdclake.monitoring.index) and its source's last run."""
    last = table.get("last") or {}
    reasons: list[tuple[str, str]] = []
    if last.get("status") == "failed":
        reasons.append(("failing", f"compaction failed in batch {last.get('batch_id')}"))
    problem = _run_problem(last_run, last.get("finished_at"))
    if problem:
        reasons.append(problem)
    lag = lag_now(last, now)
    if lag is not None and lag > limits.max_lag_seconds:
        reasons.append(("late", f"lag {_duration(lag)} > {_duration(limits.max_lag_seconds)}"))
    counted = sum(last.get(k) or 0 for k in ("applied", "stale", "quarantined"))
    share = _share(last.get("quarantined") or 0, counted)
    if share is not None and share > limits.max_quarantined_share:
        reasons.append(
            ("quarantining", f"{share:.1%} of the last batch quarantined > {limits.max_quarantined_share:.1%}")
        )
    state = worst([s for s, _ in reasons]) if reasons else "healthy"
    return Health(state, tuple(text for _, text in sorted(reasons, key=lambda r: rank(r[0]))), lag, share)


def source_health(
    summary: dict[str, Any] | None, table_states: list[str], limits: HealthThresholds, now: dt.datetime
) -> Health:
    """State of a source: the worst of its tables, its own last run, lateness and decode-level quarantine."""
    summary = summary or {}
    last = summary.get("last") or {}
    reasons: list[tuple[str, str]] = []
    problem = _run_problem(summary.get("last_run"), last.get("finished_at"))
    if problem:
        reasons.append(problem)
    lag = None
    if not last:
        reasons.append(("late", "no finished batch yet"))
    else:
        finished = parse_time(last.get("finished_at"))
        lag = round(max((now - finished).total_seconds(), 0.0), 3) if finished else None
        if lag is not None and lag > limits.max_lag_seconds and not table_states:
            reasons.append(("late", f"no batch for {_duration(lag)} > {_duration(limits.max_lag_seconds)}"))
    share = _share(last.get("quarantined") or 0, last.get("read"))
    if share is not None and share > limits.max_quarantined_share:
        reasons.append(("quarantining", f"{share:.1%} of the last batch's records quarantined"))
    for state in STATES[:-1]:
        n = table_states.count(state)
        if n:
            reasons.append((state, f"{n} table(s) {state}"))
    state = worst([s for s, _ in reasons]) if reasons else "healthy"
    return Health(state, tuple(text for _, text in sorted(reasons, key=lambda r: rank(r[0]))), lag, share)
