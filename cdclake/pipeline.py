"""The batch pipeline as plain function calls: decode -> normalize -> compact -> report.

The DAG runs each step as its own spark-submit task; the local ``apply``
command and tests call :func:`run_batch` in one Spark session. Both go through
the same job functions, so what is tested is what runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cdclake.batch import read_report, write_report
from cdclake.jobs import compact, decode, normalize


def run_batch(spark, batch_dir: str | Path, buckets: int = 16) -> dict[str, Any]:
    decode.run(spark, batch_dir)
    normalize.run(spark, batch_dir)
    compact.run(spark, batch_dir, buckets=buckets)
    return build_report(batch_dir)


def build_report(batch_dir: str | Path) -> dict[str, Any]:
    """One batch report: every record accounted for.

    read + carried in (held back by an earlier batch) = applied + stale + quarantined
    (decode, normalize, compact) + non-row events + held back (incomplete transactions)
    + skipped by design (e.g. Kafka tombstones).
    """
    batch_dir = Path(batch_dir)
    dec = read_report(batch_dir, "decode") or {}
    norm = read_report(batch_dir, "normalize") or {}
    comp: dict[str, Any] = {}
    for path in sorted((batch_dir / "reports").glob("compact*.json")):
        comp.update(read_report(batch_dir, path.stem) or {})
    tables = {}
    for table, counts in comp.items():
        tables[table] = {k: v for k, v in counts.items() if k != "committed_at"}
    applied = sum(t.get("applied", 0) + t.get("truncates", 0) for t in comp.values())
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
        "non_row": norm.get("non_row_events", 0) - sum(t.get("truncates", 0) for t in comp.values()),
        "held": norm.get("held", 0),
        "carried_in": norm.get("carried_in", 0),
        "tables": tables,
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
