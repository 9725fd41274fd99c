"""The batch pipeline as plain function calls: decode -> normalize -> DDL -> truncates -> compact -> report.

The DAG runs each step as its own spark-submit task; the local ``apply``
command and tests call :func:`run_batch` in one Spark session. Both go through
the same job functions, so what is tested is what runs.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TypedDict, cast

from cdclake.jobs import compact, ddl, decode, normalize, truncate
from cdclake.jobs.compact import CompactTableReport
from cdclake.jobs.ddl import AppliedChange, DdlTableReport
from cdclake.jobs.normalize import NormalizeReport
from cdclake.jobs.truncate import TruncateTableReport
from cdclake.staging.batch import read_report, write_report

__all__ = ["BatchReport", "BatchTableReport", "build_report", "run_batch"]


class BatchTableReport(CompactTableReport, total=False):
    """One table's line in the batch report: its compact line (without ``committed_at``; none when the batch
    only truncated it or changed its schema), its lag, and what the truncate and DDL steps did to it."""

    #: ISO time of the table's newest row event in the batch (None: none)
    newest_event_ts: str | None
    #: now - the newer of that and the source's newest heartbeat (None: neither)
    lag_seconds: float | None
    #: TRUNCATE events and ``TRUNCATE TABLE`` statements
    truncates: int
    #: the truncate step's watermark and the rows it deleted (only when it reported the table)
    truncate_watermark: str | None
    rows_truncated: int
    #: the DDL step's line (only when it reported the table)
    schema_changes: list[AppliedChange]
    schema_policy: str | None
    schema_changes_ignored: int
    schema_version: int | None


class BatchReport(TypedDict):
    """The batch report (``reports/batch.json``; the monitoring pages, the DAG's alerts and ``cdclake apply``
    read it): every record accounted for, and per table what happened (see :func:`build_report`)."""

    batch_id: str
    files: int
    #: records read: events + rejected at decode + skipped by design
    read: int
    skipped: int
    events: int
    #: row events and truncates applied
    applied: int
    stale: int
    #: at decode, normalize (incl. DDL text) and compact
    quarantined: int
    #: heartbeats, markers, schema and DDL events (truncates are counted as applied)
    non_row: int
    held: int
    carried_in: int
    schema_changes: int
    truncates: int
    tables: dict[str, BatchTableReport]
    finished_at: str
    #: read + carried in = applied + stale + quarantined + non-row + held + skipped
    balanced: bool


def run_batch(spark, batch_dir: str | Path, buckets: int = 16) -> BatchReport:
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


def build_report(batch_dir: str | Path, now: dt.datetime | None = None) -> BatchReport:
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
    norm = cast(NormalizeReport, read_report(batch_dir, "normalize") or {})
    ddl_report = cast(dict[str, DdlTableReport], read_report(batch_dir, "ddl") or {})
    trunc = cast(dict[str, TruncateTableReport], read_report(batch_dir, "truncate") or {})
    comp: dict[str, CompactTableReport] = {}
    for path in sorted((batch_dir / "reports").glob("compact*.json")):
        comp.update(cast(dict[str, CompactTableReport], read_report(batch_dir, path.stem) or {}))
    truncates = {t: r.get("truncates", 0) for t, r in trunc.items() if r.get("status") != "skipped"}
    heartbeat = _parse_ts(norm.get("newest_heartbeat_ts"))
    tables: dict[str, BatchTableReport] = {}
    for table in sorted(set(comp) | set(trunc) | set(ddl_report)):
        entry = cast(BatchTableReport, {k: v for k, v in comp.get(table, {}).items() if k != "committed_at"})
        counts = norm.get("tables", {}).get(table)
        newest = _parse_ts(counts.get("newest_event_ts") if counts else None)
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
    read = dec.get("events", 0) + dec.get("rejected", 0) + dec.get("skipped", 0)
    non_row = norm.get("non_row_events", 0) - sum(truncates.values())
    held, carried_in, skipped = norm.get("held", 0), norm.get("carried_in", 0), dec.get("skipped", 0)
    report: BatchReport = {
        "batch_id": batch_dir.name,
        "files": dec.get("files", 0),
        "read": read,
        "skipped": skipped,
        "events": dec.get("events", 0),
        "applied": applied,
        "stale": stale,
        "quarantined": quarantined,
        "non_row": non_row,
        "held": held,
        "carried_in": carried_in,
        "schema_changes": sum(len(t.get("applied", [])) for t in ddl_report.values()),
        "truncates": sum(truncates.values()),
        "tables": tables,
        "finished_at": now.isoformat(),
        "balanced": read + carried_in == applied + stale + quarantined + non_row + held + skipped,
    }
    write_report(batch_dir, "batch", report)
    return report
