"""The batch pipeline as plain function calls: decode -> normalize -> DDL -> truncates -> compact -> report.

The DAG runs each step as its own spark-submit task; the local ``apply``
command and tests call :func:`run_batch` in one Spark session. Both go through
the same job functions, so what is tested is what runs.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from cdclake.jobs import compact, ddl, decode, normalize, truncate
from cdclake.staging.batch import read_report, write_report


def run_batch(spark, batch_dir: str | Path, buckets: int = 16) -> dict[str, Any]:
    """decode -> normalize -> DDL -> truncates -> compact, then the report (the DAG's order)."""
    decode.run(spark, batch_dir)
    normalize.run(spark, batch_dir)
    ddl.run(spark, batch_dir, buckets=buckets)
    truncate.run(spark, batch_dir, buckets=buckets)
    compact.run(spark, batch_dir, buckets=buckets)
    return build_report(batch_dir)


def _parse_ts(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    value = dt.datetime.fromisoformat(text)
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def build_report(batch_dir: str | Path, now: dt.datetime | None = None) -> dict[str, Any]:
    """One batch report: every record accounted for, and per table what happened.

    read + carried in (held back by an earlier batch) = applied (rows and
    truncates) + stale + quarantined (decode, normalize incl. DDL text, compact)
    + non-row events (heartbeats, markers, schema and DDL events) + held back
    (incomplete transactions) + skipped by design (e.g. Kafka tombstones).
    Lag is now - newest event time of the table, or of the newest heartbeat of
    the source when that is newer (an idle table is not late).
    """
    batch_dir = Path(batch_dir)
    now = now or dt.datetime.now(dt.UTC)
    dec = read_report(batch_dir, "decode") or {}
    norm = read_report(batch_dir, "normalize") or {}
    ddl_report = read_report(batch_dir, "ddl") or {}
    trunc = read_report(batch_dir, "truncate") or {}
    comp: dict[str, Any] = {}
    for path in sorted((batch_dir / "reports").glob("compact*.json")):
        comp.update(read_report(batch_dir, path.stem) or {})
    truncates = {t: r.get("truncates", 0) for t, r in trunc.items() if r.get("status") != "skipped"}
    heartbeat = _parse_ts(norm.get("newest_heartbeat_ts"))
    tables: dict[str, Any] = {}
    for table in sorted(set(comp) | set(trunc) | set(ddl_report)):
        entry = {k: v for k, v in comp.get(table, {}).items() if k != "committed_at"}
        norm_table = norm.get("tables", {}).get(table, {})
        newest = _parse_ts(norm_table.get("newest_event_ts"))
        freshest = max([t for t in (newest, heartbeat) if t is not None], default=None)
        entry["newest_event_ts"] = newest.isoformat() if newest else None
        entry["lag_seconds"] = round((now - freshest).total_seconds(), 3) if freshest else None
        entry["truncates"] = trunc.get(table, {}).get("truncates", 0) + trunc.get(table, {}).get("ddl_truncates", 0)
        if table in trunc:
            entry["truncate_watermark"] = trunc[table].get("watermark")
            entry["rows_truncated"] = trunc[table].get("rows_deleted", 0)
        if table in ddl_report:
            entry["schema_changes"] = ddl_report[table].get("applied", [])
            entry["schema_policy"] = ddl_report[table].get("policy")
            entry["schema_changes_ignored"] = ddl_report[table].get("ignored", 0)
            entry["schema_version"] = ddl_report[table].get("schema_version")
        tables[table] = entry
    applied = sum(t.get("applied", 0) for t in comp.values()) + sum(truncates.values())
    stale = sum(t.get("stale", 0) for t in comp.values())
    quarantined = (
        dec.get("rejected", 0) + norm.get("quarantined", 0) + sum(t.get("quarantined", 0) for t in comp.values())
    )
    report = {
        "batch_id": batch_dir.name,
        "files": dec.get("files", 0),
        "read": dec.get("events", 0) + dec.get("rejected", 0) + dec.get("skipped", 0),
        "skipped": dec.get("skipped", 0),
        "events": dec.get("events", 0),
        "applied": applied,
        "stale": stale,
        "quarantined": quarantined,
        "non_row": norm.get("non_row_events", 0) - sum(truncates.values()),
        "held": norm.get("held", 0),
        "carried_in": norm.get("carried_in", 0),
        "schema_changes": sum(len(t.get("applied", [])) for t in ddl_report.values()),
        "truncates": sum(truncates.values()),
        "tables": tables,
        "finished_at": now.isoformat(),
    }
    report["balanced"] = report["read"] + report["carried_in"] == (
        report["applied"]
        + report["stale"]
        + report["quarantined"]
        + report["non_row"]
        + report["held"]
        + report["skipped"]
    )
    write_report(batch_dir, "batch", report)
    return report
