"""The monitoring index: what the page needs, written by each run's report task, read without a scan.

Rescanning staging (a report, manifest and quarantine Parquet per batch) costs seconds once there
are thousands of batches, and cannot be done when staging is elsewhere. So the report task adds
its batch here, and a failed task records its run (cdclake.airflow.alerts); the page reads a few small
JSON documents. Per source, in an index store (cdclake.monitoring.index_store: folder or s3://):

- ``<source>/summary.json``: the last run, the last batch's totals, and per table its last batch,
  totals, the last ``TREND_POINTS`` batches' numbers and its quarantine counted by reason kind;
- ``<source>/batches/<n>.json``: the source's batches, ``SEGMENT`` per document;
- ``<source>/tables/t=<table>/<n>.json``: one table's batches (counts, lag, wall time, run ids).

One writer per source at a time (ingest DAGs run with ``max_active_runs=1``). A batch reported
again (a retried or re-run report task) replaces its entry. Quarantine reasons are stored as
*kinds*: quoted text and numbers masked (a cast error quotes the value it could not cast), and
the ``raw`` column is never read, so no record value reaches the index or the page.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from cdclake.monitoring.batches import batches, parse_time, quarantine_files, sources, staging_rejects
from cdclake.monitoring.index_store import IndexStore

log = logging.getLogger(__name__)

INDEX_VERSION = 1
#: Batches kept per table (and source) in the summary for the trend charts.
TREND_POINTS = 30
#: What a trend point lists (a list, not an object: the summary stays small), in its order.
TREND_FIELDS = ("batch_id", "finished_at", "applied", "stale", "quarantined", "lag_seconds", "wall_seconds")
#: Batches per history document.
SEGMENT = 100
#: Reason kinds kept per table / source (the most frequent; the rest are counted as "other").
MAX_REASON_KINDS = 50
MAX_REASON_CHARS = 300
#: Batch ids a run's tasks are linked by, in pipeline order (compact is mapped: its list of instances).
PIPELINE_TASKS = ("stage", "decode_normalize", "apply_ddl", "apply_truncates", "compact", "report")

#: Kept once per table (in the summary), not in each history entry.
_SUMMARY_ONLY = ("lake_table", "newest_event_ts")
_TABLE_NUMBERS = ("applied", "stale", "quarantined", "deleted_keys", "truncates", "lag_seconds", "schema_version")
_SOURCE_NUMBERS = ("files", "read", "applied", "stale", "quarantined", "held", "skipped", "balanced")

_VALUE = re.compile(r"\bvalue\s+.+?\s+is not\b", re.S)
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_NUMBER = re.compile(r"(?<![A-Za-z_])[-+]?\d+(?:\.\d+)?")


def reason_kind(text: Any) -> str:
    """A quarantine reason with values masked: ``value "x" is not a valid int`` -> ``value … is not a valid int``.

    Records that failed the same way share a kind (so they are counted together), and values a
    parser quotes in its message are not shown.
    """
    text = "" if text is None else str(text)
    text = _VALUE.sub("value … is not", text)
    text = _QUOTED.sub("…", text)
    text = _NUMBER.sub("#", text)
    text = " ".join(text.split())
    return text if len(text) <= MAX_REASON_CHARS else text[:MAX_REASON_CHARS] + "…"


@dataclass(frozen=True)
class RunInfo:
    """The Airflow run a batch was made by (for links from the page to its DAG run and task logs)."""

    dag_id: str | None = None
    run_id: str | None = None
    started_at: str | None = None
    tasks: list[str] = field(default_factory=list)


def table_tasks(entry: dict[str, Any]) -> list[str]:
    """The tasks of a table's batch worth a link: the pipeline's, DDL and truncates only when it had them."""
    skip = {"apply_ddl": not entry.get("schema_changes"), "apply_truncates": not entry.get("truncates")}
    return [t for t in PIPELINE_TASKS if not skip.get(t)]


def _iso(value: Any) -> str | None:
    return value.isoformat() if hasattr(value, "isoformat") else (str(value) if value else None)


def run_info(context: dict[str, Any] | None, report: dict[str, Any]) -> RunInfo:
    """RunInfo from an Airflow task context (the report task's): DAG, run, when it started, its tasks."""
    if not context:
        return RunInfo()
    dag_run = context.get("dag_run")
    ti = context.get("ti") or context.get("task_instance")
    tasks = ["stage", "decode_normalize"]
    if report.get("schema_changes"):
        tasks.append("apply_ddl")
    if report.get("truncates"):
        tasks.append("apply_truncates")
    if report.get("tables"):
        tasks.append("compact")
    tasks.append("report")
    return RunInfo(
        dag_id=getattr(ti, "dag_id", None) or getattr(dag_run, "dag_id", None),
        run_id=context.get("run_id") or getattr(dag_run, "run_id", None),
        started_at=_iso(getattr(dag_run, "start_date", None)),
        tasks=tasks,
    )


# ---------------------------------------------------------------------------
# One batch's record (from the batch folder: its report, layouts and quarantine reasons)
# ---------------------------------------------------------------------------


def _quarantine_errors(path: Path) -> Iterable[str | None]:
    """The ``error`` column of one quarantine Parquet file (the only column read)."""
    import pyarrow.parquet as pq

    try:
        handle = pq.ParquetFile(path)
        if "error" not in handle.schema_arrow.names:
            yield from [None] * handle.metadata.num_rows
            return
        for chunk in handle.iter_batches(columns=["error"], batch_size=65536):
            yield from chunk.column(0).to_pylist()
    except (OSError, ValueError) as exc:  # damaged or half-written: logged, not counted
        log.warning("unreadable quarantine file %s: %s", path, exc)


def quarantine_kinds(batch_dir: Path) -> list[dict[str, Any]]:
    """A batch's quarantined records counted by (step, lake table, reason kind); never their values."""
    counts: dict[tuple[str, str | None, str], int] = {}
    for reject in staging_rejects(batch_dir):
        key = ("stage", None, reason_kind(reject.get("reason")))
        counts[key] = counts.get(key, 0) + 1
    for qfile in quarantine_files(batch_dir):
        for error in _quarantine_errors(qfile.path):
            key = (qfile.step, qfile.table, reason_kind(error))
            counts[key] = counts.get(key, 0) + 1
    return [{"step": s, "table": t, "reason": r, "count": n} for (s, t, r), n in sorted(counts.items(), key=str)]


def _lake_tables(batch_dir: Path, tables: dict[str, Any]) -> dict[str, str]:
    """Source table -> lake table (the report's ``lake_table``, else the identifier normalize chose)."""
    try:
        layouts = json.loads((batch_dir / "tables.json").read_text())
    except (OSError, ValueError):
        layouts = {}
    out = {}
    for table, entry in tables.items():
        layout = layouts.get(table) if isinstance(layouts, dict) else None
        lake = (entry or {}).get("lake_table") or (layout.get("identifier") if isinstance(layout, dict) else None)
        if lake:
            out[table] = str(lake)
    return out


def batch_record(
    batch_dir: str | Path, report: dict[str, Any], run: RunInfo | None = None, reasons: list | None = None
) -> dict[str, Any]:
    """What the index keeps of one finished batch (``reasons``: quarantine_kinds, read here if None)."""
    batch_dir = Path(batch_dir)
    run = run or RunInfo()
    finished = report.get("finished_at")
    started = run.started_at
    if started is None and (batch_dir / "manifest.json").exists():
        started = dt.datetime.fromtimestamp((batch_dir / "manifest.json").stat().st_mtime, dt.UTC).isoformat()
    begin, end = parse_time(started), parse_time(finished)
    wall = round((end - begin).total_seconds(), 3) if begin and end and end >= begin else None
    tables_in = {t: e for t, e in (report.get("tables") or {}).items() if isinstance(e, dict)}
    lake = _lake_tables(batch_dir, tables_in)
    tables = {}
    for table, entry in tables_in.items():
        row = {k: entry.get(k) for k in _TABLE_NUMBERS}
        row["status"] = entry.get("status")
        row["newest_event_ts"] = entry.get("newest_event_ts")
        row["lake_table"] = lake.get(table)
        changes = entry.get("schema_changes")
        row["schema_changes"] = len(changes) if isinstance(changes, list) else 0
        if entry.get("error"):
            row["error"] = reason_kind(entry["error"])
        tables[table] = row
    return {
        "batch_id": report.get("batch_id") or batch_dir.name,
        "finished_at": finished,
        "started_at": started,
        "wall_seconds": wall,
        "dag_id": run.dag_id,
        "run_id": run.run_id,
        "tasks": list(run.tasks),
        **{k: report.get(k) for k in _SOURCE_NUMBERS},
        "tables": tables,
        "reasons": quarantine_kinds(batch_dir) if reasons is None else reasons,
    }


# ---------------------------------------------------------------------------
# A source's index documents
# ---------------------------------------------------------------------------


def _table_folder(table: str) -> str:
    return "t=" + quote(table, safe="")


def _add_reasons(kinds: dict[str, dict[str, Any]], step: str, reason: str, count: int, batch_id: str) -> None:
    key = f"{step}\x1f{reason}"
    item = kinds.get(key)
    if item is None:
        if len(kinds) >= MAX_REASON_KINDS:
            key, reason = f"{step}\x1fother", "other reasons"
            item = kinds.get(key)
        if item is None:
            item = kinds[key] = {"step": step, "reason": reason, "count": 0, "batches": []}
    item["count"] += count
    if batch_id not in item["batches"]:
        item["batches"] = [*item["batches"], batch_id][-5:]


class SourceIndex:
    """One source's index in memory: add batches and runs, then ``save`` (only changed documents)."""

    def __init__(self, store: IndexStore, source: str, summary: dict[str, Any] | None = None) -> None:
        self.store, self.source = store, source
        self.summary = summary or {
            "version": INDEX_VERSION,
            "source": source,
            "batches": 0,
            "last": None,
            "last_run": None,
            "trend": [],
            "reasons": {},
            "tables": {},
        }
        self._segments: dict[str, list[dict[str, Any]]] = {}
        self._dirty: set[str] = set()

    @classmethod
    def load(cls, store: IndexStore, source: str) -> SourceIndex:
        data = store.read(f"{source}/summary.json")
        summary = json.loads(data) if data else None
        if summary is not None and summary.get("version") != INDEX_VERSION:
            log.warning("monitoring index of %s has version %s: starting a new one", source, summary.get("version"))
            summary = None
        return cls(store, source, summary)

    def _segment(self, name: str) -> list[dict[str, Any]]:
        if name not in self._segments:
            data = self.store.read(name)
            self._segments[name] = json.loads(data) if data else []
        return self._segments[name]

    def _append(self, folder: str, count_holder: dict[str, Any], entry: dict[str, Any]) -> bool:
        """Append ``entry`` to a history (or replace the same batch's entry); True if it was new."""
        batch_id = entry["batch_id"]
        last = count_holder.get("last")
        if last and last.get("batch_id") == batch_id and count_holder["batches"]:
            name = f"{folder}/{(count_holder['batches'] - 1) // SEGMENT:06d}.json"
            segment = self._segment(name)
            segment[:] = [e for e in segment if e.get("batch_id") != batch_id] + [entry]
            self._dirty.add(name)
            return False
        name = f"{folder}/{count_holder['batches'] // SEGMENT:06d}.json"
        self._segment(name).append(entry)
        self._dirty.add(name)
        count_holder["batches"] += 1
        return True

    @staticmethod
    def _trend(holder: dict[str, Any], record: dict[str, Any], counts: dict[str, Any]) -> None:
        """The batch's point (:data:`TREND_FIELDS`: the counts from ``counts``) replaces or ends ``holder``'s trend."""
        numbers = [counts.get(name) for name in TREND_FIELDS[2:-1]]
        point = [record["batch_id"], record.get("finished_at"), *numbers, record.get("wall_seconds")]
        trend = [p for p in holder.get("trend", []) if p[0] != point[0]]
        holder["trend"] = [*trend, point][-TREND_POINTS:]

    def add(self, record: dict[str, Any]) -> None:
        """Add one batch_record (the same batch again replaces it)."""
        s = self.summary
        batch_id = record["batch_id"]
        links = {k: record.get(k) for k in ("finished_at", "started_at", "wall_seconds", "dag_id", "run_id", "tasks")}
        source_entry = {"batch_id": batch_id, **links, **{k: record.get(k) for k in _SOURCE_NUMBERS}}
        source_entry["tables"] = len(record.get("tables") or {})
        source_entry["reasons"] = [r for r in record.get("reasons") or [] if r.get("table") is None]
        new = self._append(f"{self.source}/batches", s, source_entry)
        s["last"] = source_entry
        self._trend(s, record, {k: record.get(k) for k in ("applied", "stale", "quarantined")})  # a source has no lag
        if new:
            for r in source_entry["reasons"]:
                _add_reasons(s["reasons"], r["step"], r["reason"], r["count"], batch_id)
        by_lake: dict[str, list[dict[str, Any]]] = {}
        for r in record.get("reasons") or []:
            if r.get("table") is not None:
                by_lake.setdefault(r["table"], []).append(r)
        for table, row in (record.get("tables") or {}).items():
            holder = s["tables"].setdefault(
                table,
                {"batches": 0, "last": None, "trend": [], "reasons": {}, "total_applied": 0, "total_quarantined": 0},
            )
            reasons = by_lake.get(row.get("lake_table") or "", [])
            entry = {
                "batch_id": batch_id,
                **{k: links[k] for k in ("finished_at", "wall_seconds", "dag_id", "run_id")},
                **{k: v for k, v in row.items() if k not in _SUMMARY_ONLY},
            }
            if reasons:
                entry["reasons"] = [[r["step"], r["reason"], r["count"]] for r in reasons]
            if holder["last"] and holder["last"].get("batch_id") == batch_id:  # replaced: undo its totals
                holder["total_applied"] -= holder["last"].get("applied") or 0
                holder["total_quarantined"] -= holder["last"].get("quarantined") or 0
            table_new = self._append(f"{self.source}/tables/{_table_folder(table)}", holder, entry)
            holder["last"] = entry
            holder["lake_table"] = row.get("lake_table") or holder.get("lake_table")
            if row.get("schema_version") is not None:
                holder["schema_version"] = row["schema_version"]
            holder["total_applied"] += row.get("applied") or 0
            holder["total_quarantined"] += row.get("quarantined") or 0
            self._trend(holder, record, row)
            if table_new:
                for r in reasons:
                    _add_reasons(holder["reasons"], r["step"], r["reason"], r["count"], batch_id)

    def record_run(self, run: dict[str, Any]) -> None:
        """The source's last Airflow run outcome: ``{dag_id, run_id, state, at, task_id, error}``."""
        self.summary["last_run"] = {**run, "error": reason_kind(run.get("error")) if run.get("error") else None}

    def save(self) -> None:
        self.summary["updated_at"] = dt.datetime.now(dt.UTC).isoformat()
        documents = {name: _dump(self._segments[name]) for name in sorted(self._dirty)}
        documents[f"{self.source}/summary.json"] = _dump(self.summary)  # last: it points at the segments
        self.store.write_many({k: v for k, v in documents.items() if not k.endswith("summary.json")})
        self.store.write_many({f"{self.source}/summary.json": documents[f"{self.source}/summary.json"]})
        self._dirty.clear()


def _dump(payload: Any) -> bytes:
    return json.dumps(payload, separators=(",", ":"), default=str).encode()


# ---------------------------------------------------------------------------
# What the report task and the failure callback call; what the page reads
# ---------------------------------------------------------------------------


def record_batch(
    store: IndexStore, source: str, batch_dir: str | Path, report: dict[str, Any], run: RunInfo | None = None
) -> dict[str, Any]:
    """Add a finished batch to its source's index (the report task calls this); returns its record."""
    index = SourceIndex.load(store, source)
    record = batch_record(batch_dir, report, run)
    index.add(record)
    if run is not None and run.run_id:
        index.record_run(
            {
                "dag_id": run.dag_id,
                "run_id": run.run_id,
                "state": "success",
                "at": record["finished_at"],
                "batch_id": record["batch_id"],
            }
        )
    index.save()
    return record


def record_run(store: IndexStore, source: str, run: dict[str, Any]) -> None:
    """Record a run's outcome (a failed task: cdclake.airflow.alerts.record_failure)."""
    index = SourceIndex.load(store, source)
    index.record_run(run)
    index.save()


def summaries(store: IndexStore) -> dict[str, dict[str, Any]]:
    """Every source's summary document (one read per source)."""
    out = {}
    for source in store.folders():
        data = store.read(f"{source}/summary.json")
        if data:
            try:
                out[source] = json.loads(data)
            except ValueError as exc:
                log.warning("unreadable monitoring summary of %s: %s", source, exc)
    return out


def summary(store: IndexStore, source: str) -> dict[str, Any] | None:
    data = store.read(f"{source}/summary.json")
    return json.loads(data) if data else None


def history(store: IndexStore, source: str, table: str | None, count: int, page: int = 0) -> list[dict[str, Any]]:
    """Up to ``SEGMENT`` history entries, newest first: ``page`` 0 is the newest document.

    ``table`` None: the source's batches. ``count``: how many batches the history holds.
    """
    if count <= 0:
        return []
    segment = (count - 1) // SEGMENT - page
    if segment < 0:
        return []
    folder = f"{source}/batches" if table is None else f"{source}/tables/{_table_folder(table)}"
    data = store.read(f"{folder}/{segment:06d}.json")
    entries = json.loads(data) if data else []
    return list(reversed(entries))


def rebuild(store: IndexStore, staging: Path) -> dict[str, int]:
    """Write the index anew from every batch report under ``staging`` (a deployment that predates it)."""
    from cdclake.runtime.settings import Settings

    settings = Settings.from_env({"CDCLAKE_STAGING": str(staging), "CDCLAKE_HOME": str(staging.parent)})
    counts = {}
    for source in sources(settings):
        index = SourceIndex(store, source)
        for batch in batches(settings, source):
            if batch.report is not None:
                index.add(batch_record(batch.path, batch.report))
        index.save()
        counts[source] = index.summary["batches"]
    return counts
