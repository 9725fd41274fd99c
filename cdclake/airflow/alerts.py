"""Freshness and failure alerts through Airflow's own mechanisms.

- Every ingest task has ``RecordRunFailure`` as an ``on_failure_callback`` (a notifier): a task
  that fails for good marks its run failed in the monitoring index, so the page shows the source
  and its tables *failing* at once, next to any notifiers the deployment adds.
- The ``cdc_health`` DAG checks every source on a schedule (one task per source): a source that
  is failing, late or quarantining beyond its ``health`` thresholds fails its task, and Airflow's
  failure handling (``on_failure_callback`` notifiers: e-mail, Slack, ...) tells someone. A late
  source cannot be noticed by its own ingest run: no run means no task to fail.
- Each ingest DAG has a deadline alert: a run not finished ``health.max_lag`` after it was queued
  calls ``ingest_run_late`` in the triggerer (or the notifier given instead).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import sys
from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseNotifier

from cdclake.airflow.dates import DAG_DEFAULTS
from cdclake.monitoring.health import Health
from cdclake.runtime.settings import Settings
from cdclake.runtime.sources import SourceConfig

log = logging.getLogger(__name__)

#: How often ``cdc_health`` checks the sources.
HEALTH_SCHEDULE = "*/15 * * * *"


class HealthBreach(RuntimeError):
    """A source or one of its tables is not healthy (the message says which and why)."""


def _store(settings: Settings | None = None):
    from cdclake.monitoring.index_store import open_store

    settings = settings or Settings.from_env()
    return open_store(settings.monitor_index)


class RecordRunFailure(BaseNotifier):
    """``on_failure_callback`` of the ingest tasks: the failed run goes into the monitoring index."""

    template_fields = ()

    def __init__(self, source: str) -> None:
        super().__init__()
        self.source = source

    def notify(self, context: dict[str, Any]) -> None:
        from cdclake.monitoring.index import record_run

        ti = context.get("ti") or context.get("task_instance")
        error = context.get("exception")
        run = {
            "dag_id": getattr(ti, "dag_id", None),
            "run_id": context.get("run_id") or getattr(ti, "run_id", None),
            "state": "failed",
            "at": dt.datetime.now(dt.UTC).isoformat(),
            "task_id": getattr(ti, "task_id", None),
            "error": f"{type(error).__name__}: {error}" if error else None,
        }
        try:
            record_run(_store(), self.source, run)
        except Exception:  # the failure itself is what matters; the index catches up with the next run
            log.exception("could not record the failed run of %s in the monitoring index", self.source)


def check_source(source: SourceConfig, settings: Settings | None = None, now: dt.datetime | None = None) -> Health:
    """The source's health from the index; raises HealthBreach (listing the tables) if it is not healthy."""
    from cdclake.monitoring import index as monitor_index
    from cdclake.monitoring import models as monitoring_models

    summary = monitor_index.summary(_store(settings), source.name)
    model = monitoring_models.overview({source.name: summary} if summary else {}, {source.name: source}, now)
    verdict = model["sources"][0]
    tables = [t for t in model["tables"] if t["state"] != "healthy"]
    health = Health(verdict["state"], tuple(verdict["reasons"]), verdict["lag_now_seconds"], None)
    if health.state != "healthy":
        lines = [f"source {source.name} is {health.state}: {'; '.join(health.reasons)}"]
        lines += [f"  {t['table']}: {t['state']} ({'; '.join(t['reasons'])})" for t in tables[:50]]
        if len(tables) > 50:
            lines.append(f"  ... and {len(tables) - 50} more table(s)")
        raise HealthBreach("\n".join(lines))
    print(f"source {source.name} is healthy ({len(model['tables'])} table(s))")
    return health


def _in_dags_test(argv: Sequence[str] | None = None) -> bool:
    """True inside ``airflow dags test``: Airflow 3.3's ``DAG.test`` fails a *successful* run of a DAG with a
    deadline (it looks the alerts up by id, but its DAG was never written to the database, so it holds
    their definitions: ``AttributeError: 'dict' object has no attribute 'hex'``)."""
    args = list(sys.argv if argv is None else argv)[1:3]
    return args == ["dags", "test"]


def deadline_alert(source: SourceConfig) -> Any:
    """The ingest DAG's deadline: finished within ``health.max_lag`` of being queued (None without deadlines,
    and under ``airflow dags test``, which cannot run a DAG that has one).

    Opt-in (``CDCLAKE_DEADLINE_ALERTS=1``): in Airflow 3.3.2 clearing a task of a DAG with a deadline fails
    (``clearTaskInstances`` answers 500: ``timedelta(seconds=<the stored interval, a dict>)``), which the
    stack test found when an operator's clear was refused; ``cdc_health`` checks freshness either way."""
    from cdclake.runtime.settings import Settings

    if _in_dags_test() or not Settings.from_env().deadline_alerts:
        return None
    try:
        from airflow.sdk.definitions.callback import AsyncCallback
        from airflow.sdk.definitions.deadline import DeadlineAlert, DeadlineReference
    except ImportError:  # an Airflow before 3.1: no deadline alerts, cdc_health still checks
        return None
    return DeadlineAlert(
        reference=DeadlineReference.DAGRUN_QUEUED_AT,
        interval=dt.timedelta(seconds=source.health.max_lag_seconds),
        callback=AsyncCallback(ingest_run_late, kwargs={"source": source.name}),
        name=f"cdc_{source.name} finished within max_lag",
    )


async def ingest_run_late(context: dict[str, Any] | None = None, source: str = "", **kwargs: Any) -> None:
    """Deadline callback (runs in the triggerer): the late run is logged and recorded in the index."""
    dag_run = (context or {}).get("dag_run") or {}
    deadline = (context or {}).get("deadline") or {}
    message = f"cdc_{source} run {dag_run.get('run_id')} missed its deadline {deadline.get('deadline_time')}"
    log.error(message)
    from cdclake.monitoring.index import record_run

    run = {
        "dag_id": dag_run.get("dag_id"),
        "run_id": dag_run.get("run_id"),
        "state": "late",
        "at": dt.datetime.now(dt.UTC).isoformat(),
        "task_id": None,
        "error": "missed its deadline (health.max_lag after it was queued)",
    }
    await asyncio.to_thread(record_run, _store(), source, run)


def build_health_dag(sources: dict[str, SourceConfig], notifiers: Sequence[Any] = ()):
    """``cdc_health``: one task per source that fails when the source breaches its thresholds."""
    from airflow.sdk import DAG, task
    from airflow.sdk.exceptions import AirflowFailException

    with DAG(
        dag_id="cdc_health",
        schedule=HEALTH_SCHEDULE,
        **DAG_DEFAULTS,
        tags=["cdclake", "health"],
        doc_md="Fails a source's task when it is failing, late or quarantining beyond the `health` thresholds "
        "of the sources config; the task's failure callbacks (notifiers) alert. See docs/monitoring.md.",
        default_args={"retries": 0, "on_failure_callback": list(notifiers) or None},
    ) as dag:
        for name in sorted(sources):
            _check_task(task, AirflowFailException, sources[name])()
    return dag


def _check_task(task: Any, fail: type[Exception], source: SourceConfig) -> Any:
    @task(task_id=f"check_{source.name}")
    def check() -> str:
        try:
            return check_source(source).state
        except HealthBreach as exc:  # no retry: the next scheduled check looks again
            raise fail(str(exc)) from None

    return check
