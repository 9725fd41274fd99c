"""A staging tree, monitoring index and lake table written the way the pipeline leaves them.

Shared by the monitoring tests (tests/test_monitor*.py, test_health.py, test_alerts.py and the
browser test in test_monitoring_plugin.py). A raw canary value sits in every quarantined record's
``raw`` column and in the lake table's rows: none of it may reach a page.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from airflow.sdk import BaseNotifier

from cdclake.monitoring import index as monitor_index
from cdclake.monitoring.index_store import open_store
from cdclake.runtime.settings import Settings

CANARY = "RAW-CANARY-4111111111111111"  # a raw value that must never reach the page
NOW = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)
REJECT_SCHEMA = pa.schema(
    [("error", pa.string()), ("source_file", pa.string()), ("source_offset", pa.int64()), ("raw", pa.binary())]
)


def _write_rejects(folder: Path, rows: list[tuple[str, str, int]]) -> None:
    """Quarantined records the way Spark leaves them: part files, _SUCCESS and a .crc beside them."""
    folder.mkdir(parents=True, exist_ok=True)
    table = pa.table(
        {
            "error": [r[0] for r in rows],
            "source_file": [r[1] for r in rows],
            "source_offset": [r[2] for r in rows],
            "raw": [f"{CANARY}-{i}".encode() for i in range(len(rows))],
        },
        schema=REJECT_SCHEMA,
    )
    pq.write_table(table, folder / "part-00000-abc.snappy.parquet")
    (folder / "_SUCCESS").write_text("")
    (folder / ".part-00000-abc.snappy.parquet.crc").write_bytes(b"\x00crc")


def _write_batch(
    staging: Path,
    source: str,
    batch_id: str,
    finished_at: dt.datetime | None,
    tables: dict[str, dict[str, Any]] | None,
    **totals: Any,
) -> Path:
    """A batch folder; ``tables=None`` leaves it without a report (still running or failed)."""
    batch = staging / source / batch_id
    batch.mkdir(parents=True)
    (batch / "manifest.json").write_text(json.dumps({"source": source, "batch_id": batch_id, "rejected": []}))
    if tables is not None:
        report = {"batch_id": batch_id, "tables": tables, "balanced": True, **totals}
        if finished_at is not None:
            report["finished_at"] = finished_at.isoformat()
        (batch / "reports").mkdir()
        (batch / "reports" / "batch.json").write_text(json.dumps(report))
    return batch


def build_staging(staging: Path, now: dt.datetime = NOW) -> None:
    """Two sources; orders has three batches whose folder mtimes disagree with finished_at."""
    b1 = _write_batch(
        staging,
        "orders",
        "run_1",
        now - dt.timedelta(hours=2),
        {"SHOP.ORDERS": {"applied": 10, "stale": 0, "quarantined": 0, "schema_version": 3, "schema_changes": []}},
        read=10,
        applied=10,
        quarantined=0,
    )
    _write_rejects(b1 / "decoded" / "kind=rejected", [("old batch: bad json", "orders_0001.json", 7)])
    b2 = _write_batch(
        staging,
        "orders",
        "run_2",
        now - dt.timedelta(minutes=10),
        {
            "SHOP.ORDERS": {
                "applied": 5,
                "stale": 1,
                "quarantined": 2,
                "deleted_keys": 1,
                "truncates": 0,
                "lake_table": "shop.orders",
                "newest_event_ts": (now - dt.timedelta(minutes=11)).isoformat(),
                "lag_seconds": 60.0,
                "schema_changes": [{"change": "SHOP.ORDERS: add column NOTE string", "source_event": "ALTER ..."}],
            },
            "SHOP.ITEMS": {"applied": 4, "stale": 0, "quarantined": 0},
        },
        read=14,
        applied=9,
        stale=1,
        quarantined=3,
    )
    (b2 / "tables.json").write_text(json.dumps({"SHOP.ITEMS": {"identifier": "shop.items"}}))
    _write_rejects(
        b2 / "decoded" / "kind=rejected", [("invalid JSON <script>alert(1)</script>", "orders_0002.json", 42)]
    )
    _write_rejects(
        b2 / "quarantine" / "compact" / "shop.orders",
        [("key column ID is null", "orders_0002.json", 100), ("key column ID is null", "orders_0002.json", 200)],
    )
    _write_batch(staging, "orders", "run_3", None, None)  # still running: no report
    # written last (newest mtime) but finished first: finished_at decides the order
    _write_batch(
        staging,
        "orders",
        "run_0",
        now - dt.timedelta(days=1),
        {"SHOP.ORDERS": {"applied": 1, "stale": 0, "quarantined": 0}},
        read=1,
    )
    b = _write_batch(staging, "billing", "b_1", now - dt.timedelta(minutes=1), {"BILL.INVOICES": {"applied": 7}})
    _write_rejects(b / "quarantine" / "normalize", [("table BILL.X has no primary key", "bill_1.csv", 3)])
    (staging / "orders" / "ledger.db").write_bytes(b"")  # files next to batches are ignored


#: The ingest run that made orders' last batch (links on the pages point at it).
ORDERS_RUN = "manual__2024-05-01T11:40:00+00:00"


def add_late_source(staging: Path, now: dt.datetime = NOW) -> None:
    """A source whose only batch finished three days ago (late with a one-hour max_lag)."""
    _write_batch(
        staging,
        "legacy",
        "old_1",
        now - dt.timedelta(days=3),
        {
            "LEG.ACCOUNTS": {
                "applied": 3,
                "stale": 0,
                "quarantined": 0,
                "lag_seconds": 5.0,
                "lake_table": "leg.accounts",
            }
        },
        read=3,
        applied=3,
        quarantined=0,
    )


def write_sources(path: Path) -> Path:
    """Sources config with thresholds: one hour of lag, 10 % quarantined (orders), defaults elsewhere."""
    health = {"max_lag": "1h", "max_quarantined_share": 0.1}
    body = {
        "orders": {"format": "goldengate-json", "landing": "landing/orders", "health": health},
        "billing": {"format": "goldengate-json", "landing": "landing/billing", "health": health},
        "legacy": {"format": "goldengate-json", "landing": "landing/legacy", "health": health},
    }
    path.write_text(json.dumps({"sources": body}))
    return path


def build_index(settings: Settings, now: dt.datetime = NOW) -> None:
    """The index from staging, orders' last batch re-reported by its Airflow run, billing's run failed."""
    store = open_store(settings.monitor_index)
    monitor_index.rebuild(store, settings.staging)
    batch_dir = settings.staging / "orders" / "run_2"
    report = json.loads((batch_dir / "reports" / "batch.json").read_text())
    run = monitor_index.RunInfo(
        dag_id="cdc_orders",
        run_id=ORDERS_RUN,
        started_at=(now - dt.timedelta(minutes=20)).isoformat(),
        tasks=["stage", "decode_normalize", "compact", "report"],
    )
    monitor_index.record_batch(store, "orders", batch_dir, report, run)
    monitor_index.record_run(
        store,
        "billing",
        {
            "dag_id": "cdc_billing",
            "run_id": "scheduled__2024-05-01T11:59:30+00:00",
            "state": "failed",
            "at": (now - dt.timedelta(seconds=30)).isoformat(),
            "task_id": "decode_normalize",
            "error": "RuntimeError: value 'RAW-CANARY-4111111111111111' broke it",
        },
    )


def write_lake_table(warehouse: Path, identifier: str = "shop.orders") -> None:
    """An Iceberg table with two batch commits, a delete file's worth of history and a schema change."""
    from pyiceberg.catalog.sql import SqlCatalog

    warehouse.mkdir(parents=True, exist_ok=True)
    catalog = SqlCatalog("lake", uri=f"sqlite:///{warehouse / 'catalog.db'}", warehouse=warehouse.as_uri())
    namespace = identifier.split(".")[0]
    catalog.create_namespace_if_not_exists(namespace)
    rows = pa.table({"ID": pa.array([1, 2], pa.int64()), "NOTE": [CANARY, "plain"]})
    table = catalog.create_table(identifier, schema=rows.schema)
    for batch_id, applied in (("run_1", 10), ("run_2", 5)):
        counts = json.dumps({"applied": applied, "stale": 0, "quarantined": 0})
        table.append(rows, snapshot_properties={"cdclake.batch-id": batch_id, "cdclake.counts": counts})
    history = [
        {
            "kind": "add_column",
            "column": "NOTE",
            "type": "string",
            "batch": "run_2",
            "schema_id": 1,
            "applied_at": "2024-05-01T11:45:00+00:00",
            "source_event": f"ALTER TABLE ... DEFAULT '{CANARY}'",
        },
    ]
    with table.transaction() as tx:
        tx.set_properties({"cdclake.schema-history": json.dumps(history)})


def page_settings(home: Path) -> dict[str, Any]:
    """Environment of a monitoring deployment under ``home`` (staging, index, warehouse, sources config)."""
    return {
        "CDCLAKE_HOME": str(home),
        "CDCLAKE_STAGING": str(home / "staging"),
        "CDCLAKE_SOURCES": str(write_sources(home / "sources.yaml")),
    }


class FileNotifier(BaseNotifier):
    """A notifier that appends what it was told to a file (stands in for e-mail or Slack in tests)."""

    template_fields = ()

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def notify(self, context: dict[str, Any]) -> None:
        ti = context.get("ti") or context.get("task_instance")
        with open(self.path, "a") as out:
            out.write(json.dumps({"task_id": getattr(ti, "task_id", None), "error": str(context.get("exception"))}))
            out.write("\n")
