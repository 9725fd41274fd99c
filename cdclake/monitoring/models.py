"""What the operators' pages show, as plain data: the health overview and one table's drill-down.

Built from the monitoring index (cdclake.monitoring.index) and the sources config's thresholds
(cdclake.monitoring.health); the drill-down adds the table's Iceberg snapshots and schema history
(cdclake.monitoring.lake_history). The JSON API returns these models as they are; cdclake.monitoring.html
draws them.
"""

from __future__ import annotations

import datetime as dt
import shlex
from pathlib import Path
from typing import Any

from cdclake.monitoring import health
from cdclake.monitoring.index import SEGMENT, TREND_FIELDS
from cdclake.runtime.sources import HealthThresholds, SourceConfig

_REPLAYABLE = {"decode", "normalize", "compact"}


def _series(points: list[list[Any]], names: tuple[str, ...]) -> dict[str, list[Any]]:
    """The named members of a trend's points, one list each (see :data:`TREND_FIELDS`)."""
    return {name: [p[TREND_FIELDS.index(name)] for p in points] for name in names}


def _limits(config: dict[str, SourceConfig], source: str) -> HealthThresholds:
    return config[source].health if source in config else HealthThresholds()


def overview(
    summaries: dict[str, dict[str, Any]], config: dict[str, SourceConfig], now: dt.datetime | None = None
) -> dict[str, Any]:
    """Every table and source with its state, worst first, and the counts per state."""
    now = now or dt.datetime.now(dt.UTC)
    tables, sources = [], []
    for source in sorted(set(summaries) | set(config)):
        summary = summaries.get(source) or {}
        limits = _limits(config, source)
        states = []
        for name, entry in (summary.get("tables") or {}).items():
            verdict = health.table_health(entry, summary.get("last_run"), limits, now)
            states.append(verdict.state)
            last = entry.get("last") or {}
            trend = entry.get("trend") or []
            tables.append(
                {
                    "source": source,
                    "table": name,
                    "lake_table": entry.get("lake_table"),
                    **verdict.to_json(),
                    "last_batch": last.get("batch_id"),
                    "finished_at": last.get("finished_at"),
                    **{k: last.get(k) for k in ("applied", "stale", "quarantined", "lag_seconds", "status")},
                    "batches": entry.get("batches"),
                    "schema_version": entry.get("schema_version"),
                    "trend": _series(trend, ("applied", "quarantined", "lag_seconds")),
                }
            )
        verdict = health.source_health(summary, states, limits, now)
        last = summary.get("last") or {}
        sources.append(
            {
                "source": source,
                **verdict.to_json(),
                "configured": source in config,
                "tables": len(states),
                "table_states": {s: states.count(s) for s in health.STATES},
                "last_batch": last.get("batch_id"),
                "finished_at": last.get("finished_at"),
                "batches": summary.get("batches", 0),
                "last_run": summary.get("last_run"),
                **{k: last.get(k) for k in ("read", "applied", "quarantined", "balanced")},
                "max_lag_seconds": limits.max_lag_seconds,
                "max_quarantined_share": limits.max_quarantined_share,
            }
        )
    tables.sort(key=lambda t: (health.rank(t["state"]), -(t["lag_now_seconds"] or 0), t["source"], t["table"]))
    sources.sort(key=lambda s: (health.rank(s["state"]), s["source"]))
    return {
        "generated_at": now.isoformat(),
        "table_counts": {s: sum(t["state"] == s for t in tables) for s in health.STATES},
        "source_counts": {s: sum(x["state"] == s for x in sources) for s in health.STATES},
        "sources": sources,
        "tables": tables,
    }


def replay_command(step: str, source: str, batches: list[str], staging: Path | str, warehouse: Path | str) -> str:
    """The command that re-processes these quarantined records after a fix (or why there is none)."""
    if step not in _REPLAYABLE:
        if step == "ddl":
            return "not replayed: apply the schema change by hand or rebuild the table from the archive"
        return "not replayed: fix or rename the landing object; the next run stages it"
    base = f"python -m cdclake replay --warehouse {shlex.quote(str(warehouse))}"
    if len(batches) == 1:
        return f"{base} --batch-dir {shlex.quote(f'{staging}/{source}/{batches[0]}')}"
    return f"{base} --source-dir {shlex.quote(f'{staging}/{source}')}"


def _reason_groups(kinds: dict[str, Any], source: str, staging: Any, warehouse: Any) -> list[dict[str, Any]]:
    groups = [
        {**k, "replay": replay_command(k["step"], source, k["batches"], staging, warehouse)} for k in kinds.values()
    ]
    return sorted(groups, key=lambda g: (-g["count"], g["step"], g["reason"]))


def table_detail(
    summary: dict[str, Any],
    table: str,
    history: list[dict[str, Any]],
    lake: dict[str, Any],
    config: dict[str, SourceConfig],
    *,
    staging: Path | str,
    warehouse: Path | str,
    page: int = 0,
    now: dt.datetime | None = None,
) -> dict[str, Any]:
    """One table: state, trends, batch history (``page`` of it), snapshots, schema history, quarantine."""
    now = now or dt.datetime.now(dt.UTC)
    source = summary["source"]
    entry = summary["tables"][table]
    limits = _limits(config, source)
    verdict = health.table_health(entry, summary.get("last_run"), limits, now)
    trend = entry.get("trend") or []
    return {
        "source": source,
        "table": table,
        "lake_table": entry.get("lake_table"),
        **verdict.to_json(),
        "max_lag_seconds": limits.max_lag_seconds,
        "max_quarantined_share": limits.max_quarantined_share,
        "last_run": summary.get("last_run"),
        "batches": entry.get("batches", 0),
        "total_applied": entry.get("total_applied"),
        "total_quarantined": entry.get("total_quarantined"),
        "schema_version": entry.get("schema_version"),
        "trend": _series(trend, tuple(name for name in TREND_FIELDS if name != "finished_at")),
        "page": page,
        "pages": max((entry.get("batches", 0) + SEGMENT - 1) // SEGMENT, 1),
        "history": history,
        "snapshots": lake.get("snapshots", []),
        "schema_history": lake.get("schema_history", []),
        "lake_error": lake.get("error"),
        "quarantine": _reason_groups(entry.get("reasons") or {}, source, staging, warehouse),
        "source_quarantine": _reason_groups(summary.get("reasons") or {}, source, staging, warehouse),
    }
