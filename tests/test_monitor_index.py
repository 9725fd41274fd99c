"""The monitoring index: written per batch (by the report task) or rebuilt from staging, read per page."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from monitoring_fixture import CANARY, NOW, ORDERS_RUN, build_index, build_staging

from cdclake.airflow.dags import report_task
from cdclake.monitoring import index as monitor_index
from cdclake.monitoring.index_store import LocalStore, open_store
from cdclake.runtime.settings import Settings
from cdclake.runtime.sources import SourceConfig


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    build_staging(tmp_path / "staging")
    settings = Settings.from_env({"CDCLAKE_HOME": str(tmp_path), "CDCLAKE_STAGING": str(tmp_path / "staging")})
    build_index(settings)
    return settings


def test_reason_kinds_mask_values() -> None:
    assert monitor_index.reason_kind('value "4111 1111" is not a valid bigint') == "value … is not a valid bigint"
    assert monitor_index.reason_kind("value {'card': 'x'} is not a valid int") == "value … is not a valid int"
    assert monitor_index.reason_kind("bad JSON at line 12 col 7: 'abc'") == "bad JSON at line # col #: …"
    assert monitor_index.reason_kind("table BILL.X2 has no primary key") == "table BILL.X2 has no primary key"
    assert len(monitor_index.reason_kind("x" * 5000)) == monitor_index.MAX_REASON_CHARS + 1


def test_summary_holds_last_batch_trend_totals_and_reasons(settings: Settings) -> None:
    store = open_store(settings.monitor_index)
    assert store.folders() == ["billing", "orders"]
    orders = monitor_index.summary(store, "orders")
    assert orders["batches"] == 3  # run_2 reported twice (rebuild, then its run): replaced, not added
    assert orders["last_run"] == {
        "dag_id": "cdc_orders",
        "run_id": ORDERS_RUN,
        "state": "success",
        "at": (NOW - dt.timedelta(minutes=10)).isoformat(),
        "batch_id": "run_2",
        "error": None,
    }
    table = orders["tables"]["SHOP.ORDERS"]
    assert (table["batches"], table["total_applied"], table["total_quarantined"]) == (3, 16, 2)
    assert [p[0] for p in table["trend"]] == ["run_0", "run_1", "run_2"]
    assert table["last"]["run_id"] == ORDERS_RUN and table["last"]["wall_seconds"] == 600.0
    assert table["lake_table"] == "shop.orders" and table["schema_version"] == 3
    assert [(k["step"], k["reason"], k["count"]) for k in table["reasons"].values()] == [
        ("compact", "key column ID is null", 2)
    ]
    assert sorted((k["step"], k["reason"], k["batches"]) for k in orders["reasons"].values()) == [
        ("decode", "invalid JSON <script>alert(#)</script>", ["run_2"]),
        ("decode", "old batch: bad json", ["run_1"]),
    ]
    billing = monitor_index.summary(store, "billing")
    assert billing["last_run"]["state"] == "failed" and billing["last_run"]["error"] == "RuntimeError: value … broke it"
    everything = b"".join((Path(settings.monitor_index) / p).read_bytes() for p in _files(settings))
    assert CANARY.encode() not in everything


def _files(settings: Settings) -> list[str]:
    root = Path(settings.monitor_index)
    return [str(p.relative_to(root)) for p in root.rglob("*.json")]


def test_history_is_paged_newest_first(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "index")
    index = monitor_index.SourceIndex(store, "src")
    for i in range(250):
        finished = (NOW + dt.timedelta(minutes=i)).isoformat()
        index.add(
            {"batch_id": f"b{i:03d}", "finished_at": finished, "read": 1, "applied": 1, "tables": {"T": {"applied": i}}}
        )
    index.save()
    assert {p.name for p in (tmp_path / "index" / "src" / "tables" / "t=T").iterdir()} == {
        "000000.json",
        "000001.json",
        "000002.json",
    }
    summary = monitor_index.summary(store, "src")
    count = summary["tables"]["T"]["batches"]
    assert count == 250 and len(summary["tables"]["T"]["trend"]) == monitor_index.TREND_POINTS
    pages = [monitor_index.history(store, "src", "T", count, page) for page in range(4)]
    assert [len(p) for p in pages] == [50, 100, 100, 0]
    assert pages[0][0]["batch_id"] == "b249" and pages[2][-1]["batch_id"] == "b000"
    assert monitor_index.history(store, "src", None, summary["batches"], 0)[0]["batch_id"] == "b249"
    # a later process appends to the half-full document rather than starting a new one
    again = monitor_index.SourceIndex.load(store, "src")
    again.add({"batch_id": "b250", "finished_at": NOW.isoformat(), "tables": {"T": {"applied": 1}}})
    again.save()
    assert len(monitor_index.history(store, "src", "T", 251, 0)) == 51


def _batch_folder(root: Path) -> Path:
    """A batch whose step reports say 3 rows applied and 1 record rejected by the decoder."""
    batch = root / "src" / "manual__1"
    (batch / "reports").mkdir(parents=True)
    (batch / "manifest.json").write_text(json.dumps({"source": "src", "batch_id": "manual__1", "rejected": []}))
    reports = {
        "decode": {"files": 1, "events": 3, "rejected": 1, "skipped": 0},
        "normalize": {"tables": {"A.T": {"newest_event_ts": NOW.isoformat()}}, "non_row_events": 0},
        "compact": {"A.T": {"status": "committed", "applied": 3, "stale": 0, "quarantined": 0}},
    }
    for step, report in reports.items():
        (batch / "reports" / f"{step}.json").write_text(json.dumps(report))
    (batch / "tables.json").write_text(json.dumps({"A.T": {"identifier": "a.t"}}))
    return batch


def test_report_task_indexes_its_batch_even_when_it_fails_the_run(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CDCLAKE_HOME", str(tmp_path))
    monkeypatch.setenv("CDCLAKE_STAGING", str(tmp_path / "staging"))
    monkeypatch.delenv("CDCLAKE_MONITOR_INDEX", raising=False)
    batch = _batch_folder(tmp_path / "staging")
    source = SourceConfig(name="src", format="goldengate-json", landing="landing", max_quarantined=0)
    started = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=42)
    context = {
        "run_id": "manual__1",
        "dag_run": SimpleNamespace(run_id="manual__1", dag_id="cdc_src", start_date=started),
        "ti": SimpleNamespace(dag_id="cdc_src", task_id="report"),
    }
    with pytest.raises(RuntimeError, match="more than max_quarantined=0"):
        report_task(str(batch), source, context=context)
    summary = monitor_index.summary(open_store(tmp_path / "staging" / "_monitor"), "src")
    assert summary["last"]["quarantined"] == 1 and summary["last"]["dag_id"] == "cdc_src"
    assert summary["last"]["tasks"] == ["stage", "decode_normalize", "compact", "report"]
    assert 42 <= summary["last"]["wall_seconds"] < 100
    assert summary["tables"]["A.T"]["last"]["applied"] == 3 and summary["tables"]["A.T"]["lake_table"] == "a.t"
    dry = _batch_folder(tmp_path / "other")
    report_task(str(dry), source, dry_run=True, context=context)  # a dry run commits nothing: not indexed
    assert monitor_index.summary(open_store(tmp_path / "staging" / "_monitor"), "src")["batches"] == 1
