"""Alerts through Airflow: the cdc_health DAG fails a breaching source's task and its notifiers are called;
ingest DAGs carry a deadline; a failed ingest task and a missed deadline are recorded for the page."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from monitoring_fixture import NOW, add_late_source, build_index, build_staging, page_settings

from cdclake.airflow import alerts
from cdclake.airflow.env import airflow_env, migrate
from cdclake.monitoring import index as monitor_index
from cdclake.monitoring import views as monitoring_views
from cdclake.monitoring.index_store import open_store
from cdclake.runtime.settings import Settings
from cdclake.runtime.sources import HealthThresholds, load_sources


@pytest.fixture
def deployment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Settings, dict[str, str]]:
    now = dt.datetime.now(dt.UTC)
    build_staging(tmp_path / "staging", now)
    add_late_source(tmp_path / "staging", now)
    env = page_settings(tmp_path)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("CDCLAKE_MONITOR_INDEX", raising=False)
    settings = Settings.from_env(env)
    build_index(settings, now)
    return settings, env


def test_check_source_raises_for_each_breach(deployment: tuple[Settings, dict[str, str]]) -> None:
    settings, _ = deployment
    sources = load_sources(settings.sources_file)
    with pytest.raises(alerts.HealthBreach) as failing:
        alerts.check_source(sources["billing"], settings)
    assert str(failing.value).splitlines() == [
        "source billing is failing: last run scheduled__2024-05-01T11:59:30+00:00 failed in decode_normalize; "
        "1 table(s) failing",
        "  BILL.INVOICES: failing (last run scheduled__2024-05-01T11:59:30+00:00 failed in decode_normalize)",
    ]
    with pytest.raises(alerts.HealthBreach, match=r"LEG.ACCOUNTS: late \(lag 3.0 d > 60.0 min\)"):
        alerts.check_source(sources["legacy"], settings)
    with pytest.raises(alerts.HealthBreach, match=r"SHOP\.ORDERS: quarantining"):
        alerts.check_source(sources["orders"], settings)


def test_failed_task_and_missed_deadline_are_recorded(deployment: tuple[Settings, dict[str, str]]) -> None:
    settings, _ = deployment
    store = open_store(settings.monitor_index)
    # the deadline callback, called the way the triggerer calls it (context from the scheduler)
    context = {"dag_run": {"dag_id": "cdc_orders", "run_id": "scheduled__x"}, "deadline": {"deadline_time": "t"}}
    asyncio.run(alerts.ingest_run_late(context=context, source="orders"))
    assert monitor_index.summary(store, "orders")["last_run"]["state"] == "late"
    states = {t["table"]: t["state"] for t in monitoring_views.overview_model(settings)["tables"]}
    assert states["SHOP.ITEMS"] == "late"  # healthy before: its source's run missed the deadline
    # the ingest tasks' failure notifier, with the context Airflow gives it
    ti = SimpleNamespace(dag_id="cdc_legacy", task_id="compact", run_id="manual__2")
    alerts.RecordRunFailure("legacy")({"ti": ti, "run_id": "manual__2", "exception": ValueError("boom at 17")})
    last_run = monitor_index.summary(store, "legacy")["last_run"]
    assert (last_run["state"], last_run["task_id"], last_run["error"]) == ("failed", "compact", "ValueError: boom at #")
    states = {t["table"]: t["state"] for t in monitoring_views.overview_model(settings)["tables"]}
    assert states["LEG.ACCOUNTS"] == "failing"


@pytest.mark.airflow
def test_health_dag_fails_breaching_sources_and_notifies(
    deployment: tuple[Settings, dict[str, str]], tmp_path: Path
) -> None:
    """cdc_health through Airflow (``dag.test``): one task per source, notifiers called for the failed ones."""
    _, env = deployment
    env = airflow_env(tmp_path, env)
    env["PYTHONPATH"] = str(Path(__file__).parent)
    env["CDCLAKE_DEADLINE_ALERTS"] = "1"
    migrate(env, tmp_path / "airflow.log")
    notified = tmp_path / "notified.jsonl"
    code = f"""
import json
from monitoring_fixture import FileNotifier
from cdclake.airflow.dags import build_dags
dags = build_dags(notifiers=[FileNotifier({str(notified)!r})])
run = dags["cdc_health"].test()
deadline = dags["cdc_orders"].deadline
deadline = deadline[0] if isinstance(deadline, list) else deadline
print(json.dumps({{"states": {{ti.task_id: str(ti.state) for ti in run.get_task_instances()}},
    "deadline": [type(deadline.reference).__name__, deadline.interval.total_seconds(), deadline.callback.path],
    "ingest_callbacks": [type(c).__name__ for c in dags["cdc_orders"].get_task("stage").on_failure_callback]}}))
"""
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["states"] == {
        "check_billing": "failed",
        "check_legacy": "failed",
        "check_orders": "failed",
    }
    told = [json.loads(line) for line in notified.read_text().splitlines()]
    assert sorted(t["task_id"] for t in told) == ["check_billing", "check_legacy", "check_orders"]
    assert any("source legacy is late" in t["error"] for t in told)
    assert result["deadline"] == ["DagRunQueuedAtDeadline", 3600.0, "cdclake.airflow.alerts.ingest_run_late"]
    assert result["ingest_callbacks"] == ["RecordRunFailure", "FileNotifier"]


def test_a_healthy_source_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build_staging(tmp_path / "staging", NOW)
    env = page_settings(tmp_path)
    settings = Settings.from_env(env)
    monkeypatch.setenv("CDCLAKE_STAGING", env["CDCLAKE_STAGING"])
    monkeypatch.setenv("CDCLAKE_HOME", env["CDCLAKE_HOME"])
    monkeypatch.delenv("CDCLAKE_MONITOR_INDEX", raising=False)
    build_index(settings, NOW)
    source = load_sources(settings.sources_file)["orders"]
    quiet = dataclasses.replace(source, health=HealthThresholds(max_lag_seconds=86400, max_quarantined_share=0.5))
    assert alerts.check_source(quiet, settings, now=NOW).state == "healthy"


@pytest.mark.airflow
def test_ingest_deadlines_are_stored_by_airflow(deployment: tuple[Settings, dict[str, str]], tmp_path: Path) -> None:
    """The dag-processor's path (``airflow dags reserialize``) stores each ingest DAG's deadline alert."""
    import sqlite3

    from cdclake.airflow.env import airflow

    _, env = deployment
    env = {**airflow_env(tmp_path, env), "CDCLAKE_DEADLINE_ALERTS": "1"}
    migrate(env, tmp_path / "airflow.log")
    result = airflow(["dags", "reserialize"], env)
    assert result.returncode == 0, result.stderr[-3000:]
    with sqlite3.connect(tmp_path / "airflow" / "airflow.db") as db:
        rows = db.execute("SELECT name, reference, interval, callback_def FROM deadline_alert ORDER BY name").fetchall()
    assert [r[0] for r in rows] == [f"cdc_{s} finished within max_lag" for s in ("billing", "legacy", "orders")]
    _, reference, interval, callback = rows[2]
    assert json.loads(reference) == {"reference_type": "DagRunQueuedAtDeadline"}
    assert json.loads(interval)["__data__"] == 3600.0
    assert json.loads(callback)["__data__"] == {
        "path": "cdclake.airflow.alerts.ingest_run_late",
        "kwargs": {"source": "orders"},
    }
    # ``airflow dags test`` cannot finish a DAG with a deadline (Airflow 3.3.2): there, none is attached
    assert alerts._in_dags_test(["airflow", "dags", "test", "cdc_orders"])
    assert not alerts._in_dags_test(["airflow", "dag-processor"])
