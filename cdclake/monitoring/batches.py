"""Batches and quarantined records read from the staging folders alone (no Spark, no catalog).

Each finished batch leaves ``reports/batch.json`` (cdclake.pipeline.build_report), so the
staging tree holds every table's last batch, lag, counts and schema version; the quarantined
records sit next to it as Parquet. The JSON routes ``api/tables``, ``api/sources`` and
``api/quarantine`` and the index rebuild (cdclake.monitoring.index.rebuild) read it here; the pages
read the monitoring index instead, which does not grow with the number of batches. Quarantined
records are listed by file, offset and reason only: the ``raw`` column is never read, so a
record's values cannot leak out.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdclake.runtime.settings import Settings

log = logging.getLogger(__name__)

#: Quarantined records listed per source (newest batches first); the total is always counted.
DEFAULT_LIMIT = 200

#: A reason longer than this is cut (parser messages can be long; file + offset locate the record).
MAX_REASON_CHARS = 2000

#: Columns read from quarantine Parquet files; ``raw`` is deliberately absent.
_REASON_COLUMNS = ("error", "source_file", "source_offset")

#: Order of the steps inside a batch, for listing.
_STEP_ORDER = {"stage": 0, "decode": 1, "ddl": 2, "normalize": 3, "compact": 4}

#: Per-table counters of a batch report shown as they are (None when the report lacks them).
_TABLE_COUNTS = ("applied", "stale", "quarantined", "deleted_keys", "truncates")

#: Per-source counters of a batch report.
_SOURCE_COUNTS = ("files", "read", "applied", "stale", "quarantined", "held", "skipped", "non_row")


@dataclass(frozen=True)
class Batch:
    """One batch folder; ``report`` is None while it runs (or after it failed before the report)."""

    source: str
    batch_id: str
    path: Path
    report: dict[str, Any] | None
    finished: dt.datetime  # finished_at of the report, else the report's (or folder's) mtime


def parse_time(text: Any) -> dt.datetime | None:
    """An ISO timestamp as an aware datetime (UTC when it has no zone); None if it is not one."""
    if not isinstance(text, str) or not text:
        return None
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def _mtime(path: Path) -> dt.datetime:
    return dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC)


def _visible(path: Path) -> bool:
    """Skips Spark's ``_SUCCESS``/``_temporary`` and hidden ``.crc`` files."""
    return not path.name.startswith(("_", "."))


def sources(settings: Settings) -> list[str]:
    """Source folders under staging (a name not in this list is never turned into a path)."""
    if not settings.staging.is_dir():
        return []
    return sorted(p.name for p in settings.staging.iterdir() if p.is_dir() and _visible(p))


def batches(settings: Settings, source: str | None = None) -> list[Batch]:
    """Every batch folder, oldest first by finish time (a broken report counts as unfinished)."""
    names = sources(settings)
    if source is not None:
        names = [s for s in names if s == source]
    found: list[Batch] = []
    for name in names:
        for path in (settings.staging / name).iterdir():
            if not path.is_dir() or not _visible(path):
                continue
            if not (path / "manifest.json").exists() and not (path / "reports").is_dir():
                continue
            report_file = path / "reports" / "batch.json"
            report = None
            if report_file.exists():
                try:
                    report = json.loads(report_file.read_text())
                except (OSError, ValueError) as exc:
                    log.warning("unreadable batch report %s: %s", report_file, exc)
            if report is not None and not isinstance(report, dict):
                report = None
            finished = parse_time(report.get("finished_at")) if report else None
            if finished is None:
                finished = _mtime(report_file if report is not None else path)
            found.append(Batch(name, path.name, path, report, finished))
    return sorted(found, key=lambda b: (b.finished, b.source, b.batch_id))


def _lake_table(batch: Batch, source_table: str, entry: dict[str, Any]) -> str | None:
    """The report's ``lake_table``, else the Iceberg identifier normalize recorded in tables.json."""
    if entry.get("lake_table"):
        return str(entry["lake_table"])
    try:
        layouts = json.loads((batch.path / "tables.json").read_text())
    except (OSError, ValueError):
        return None
    layout = layouts.get(source_table) if isinstance(layouts, dict) else None
    return layout.get("identifier") if isinstance(layout, dict) else None


def _change_text(change: Any) -> str:
    """A schema change as its description (the DDL statement itself is left out)."""
    if isinstance(change, dict):
        return str(change.get("change") or change.get("kind") or "?")
    return str(change)


def _lag_now(lag: Any, finished: dt.datetime, now: dt.datetime) -> float | None:
    """Lag at the end of the batch plus the time since: how far behind the table is now."""
    if not isinstance(lag, int | float):
        return None
    return round(lag + max((now - finished).total_seconds(), 0.0), 3)


def table_status(settings: Settings, now: dt.datetime | None = None) -> list[dict[str, Any]]:
    """One row per (source, source table): its last batch, lag, counts and schema version.

    Counts are those of the table's last batch; totals add up every batch. The schema version
    is carried forward from the last batch that reported one (a batch without DDL has none).
    """
    now = now or dt.datetime.now(dt.UTC)
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for batch in batches(settings):
        if batch.report is None:
            continue
        for table, entry in (batch.report.get("tables") or {}).items():
            if not isinstance(entry, dict):
                continue
            previous = rows.get((batch.source, table), {})
            changes = entry.get("schema_changes")
            row: dict[str, Any] = {
                "source": batch.source,
                "table": table,
                "lake_table": _lake_table(batch, table, entry) or previous.get("lake_table"),
                "last_batch": batch.batch_id,
                "finished_at": batch.finished.isoformat(),
                "status": entry.get("status"),
                "newest_event_ts": entry.get("newest_event_ts"),
                "lag_seconds": entry.get("lag_seconds"),
                "lag_now_seconds": _lag_now(entry.get("lag_seconds"), batch.finished, now),
                **{k: entry.get(k) for k in _TABLE_COUNTS},
                "schema_version": entry.get("schema_version", previous.get("schema_version")),
                "schema_changes": [_change_text(c) for c in changes] if isinstance(changes, list) else None,
                "batches": previous.get("batches", 0) + 1,
                "total_applied": previous.get("total_applied", 0) + (entry.get("applied") or 0),
                "total_quarantined": previous.get("total_quarantined", 0) + (entry.get("quarantined") or 0),
            }
            rows[(batch.source, table)] = row
    return [rows[k] for k in sorted(rows)]


def source_status(settings: Settings) -> list[dict[str, Any]]:
    """One row per source: its last finished batch's totals, and batches still without a report."""
    out: dict[str, dict[str, Any]] = {
        s: {"source": s, "batches": 0, "unfinished": 0, "last_batch": None, "finished_at": None, "balanced": None}
        for s in sources(settings)
    }
    for batch in batches(settings):
        row = out[batch.source]
        if batch.report is None:
            row["unfinished"] += 1
            continue
        row["batches"] += 1
        row["last_batch"] = batch.batch_id
        row["finished_at"] = batch.finished.isoformat()
        row["balanced"] = batch.report.get("balanced")
        row.update({k: batch.report.get(k) for k in _SOURCE_COUNTS})
    return list(out.values())


@dataclass(frozen=True)
class _QuarantineFile:
    step: str
    table: str | None  # the compact step quarantines per table (folder = Iceberg identifier)
    path: Path


def quarantine_files(batch_dir: Path) -> list[_QuarantineFile]:
    """A batch's quarantine Parquet files (decode rejects, then each step's), with step and lake table."""
    files: list[_QuarantineFile] = []
    rejected = batch_dir / "decoded" / "kind=rejected"
    if rejected.is_dir():
        files += [_QuarantineFile("decode", None, p) for p in sorted(rejected.rglob("*.parquet")) if _visible(p)]
    quarantine = batch_dir / "quarantine"
    if quarantine.is_dir():
        for path in sorted(quarantine.rglob("*.parquet")):
            parts = path.relative_to(quarantine).parts
            if not all(_visible(Path(p)) for p in parts):
                continue
            table = parts[1] if parts[0] == "compact" and len(parts) > 2 else None
            files.append(_QuarantineFile(parts[0], table, path))
    return sorted(files, key=lambda f: (_STEP_ORDER.get(f.step, 99), f.step, f.table or "", str(f.path)))


def staging_rejects(batch_dir: Path) -> list[dict[str, Any]]:
    """Landing files staging refused (``manifest.rejected``: key and reason)."""
    try:
        manifest = json.loads((batch_dir / "manifest.json").read_text())
    except (OSError, ValueError):
        return []
    rejected = manifest.get("rejected") if isinstance(manifest, dict) else None
    return [r for r in rejected or [] if isinstance(r, dict)]


def _parquet_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path).metadata.num_rows
    except (OSError, ValueError) as exc:  # a file being written, or damaged: counted as 0, logged
        log.warning("unreadable quarantine file %s: %s", path, exc)
        return 0


def _parquet_reasons(path: Path, limit: int) -> Iterator[dict[str, Any]]:
    """Up to ``limit`` rows of file, offset and reason; the raw value is never read."""
    import pyarrow.parquet as pq

    try:
        handle = pq.ParquetFile(path)
        columns = [c for c in _REASON_COLUMNS if c in handle.schema_arrow.names]
        seen = 0
        for chunk in handle.iter_batches(batch_size=max(min(limit, 1024), 1), columns=columns):
            for row in chunk.to_pylist():
                if seen >= limit:
                    return
                seen += 1
                yield row
    except (OSError, ValueError) as exc:
        log.warning("unreadable quarantine file %s: %s", path, exc)


def _reason(text: Any) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= MAX_REASON_CHARS else text[:MAX_REASON_CHARS] + "…"


def quarantine_count(settings: Settings, source: str | None = None) -> dict[str, int]:
    """Quarantined records per source over all its batches (from Parquet metadata: no data read)."""
    counts = {s: 0 for s in sources(settings) if source is None or s == source}
    for batch in batches(settings, source):
        counts[batch.source] += len(staging_rejects(batch.path))
        counts[batch.source] += sum(_parquet_rows(f.path) for f in quarantine_files(batch.path))
    return counts


def quarantine_reasons(
    settings: Settings, source: str | None = None, limit: int = DEFAULT_LIMIT
) -> list[dict[str, Any]]:
    """The latest ``limit`` quarantined records of each source (newest batch first): where and why.

    Each record: source, batch_id, step (stage, decode, ddl, normalize, compact), table (compact
    only), source_file, source_offset and error. Never the raw value.
    """
    limit = max(int(limit), 0)
    by_source: dict[str, list[Batch]] = {}
    for batch in batches(settings, source):
        by_source.setdefault(batch.source, []).append(batch)
    out: list[dict[str, Any]] = []
    for name in sorted(by_source):
        left = limit
        for batch in reversed(by_source[name]):
            if left <= 0:
                break
            base = {"source": name, "batch_id": batch.batch_id}
            for reject in staging_rejects(batch.path)[:left]:
                out.append(
                    {
                        **base,
                        "step": "stage",
                        "table": None,
                        "source_file": reject.get("key"),
                        "source_offset": None,
                        "error": _reason(reject.get("reason")),
                    }
                )
                left -= 1
            for qfile in quarantine_files(batch.path):
                if left <= 0:
                    break
                for row in _parquet_reasons(qfile.path, left):
                    out.append(
                        {
                            **base,
                            "step": qfile.step,
                            "table": qfile.table,
                            "source_file": row.get("source_file"),
                            "source_offset": row.get("source_offset"),
                            "error": _reason(row.get("error")),
                        }
                    )
                    left -= 1
    return out


# ---------------------------------------------------------------------------
# Formatting shared by the pages (cdclake.monitoring.html)
# ---------------------------------------------------------------------------


def format_seconds(value: Any) -> str | None:
    """Seconds as a short human duration (``42 s``, ``3.5 min``, ``2.1 h``, ``4.0 d``)."""
    if not isinstance(value, int | float):
        return None
    sign, value = ("-" if value < 0 else ""), abs(value)
    if value < 120:
        return f"{sign}{value:.0f} s"
    if value < 7200:
        return f"{sign}{value / 60:.1f} min"
    if value < 172800:
        return f"{sign}{value / 3600:.1f} h"
    return f"{sign}{value / 86400:.1f} d"


def format_time(value: Any) -> str | None:
    """An ISO timestamp as ``YYYY-MM-DD HH:MM:SS`` in UTC (unparseable text is shown as it is)."""
    parsed = parse_time(value)
    if parsed is None:
        return None if value in (None, "") else str(value)
    return parsed.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
