"""Airflow DAGs built from the sources configuration (one DAG per source).

stage -> decode -> normalize -> compact -> report. Stage and report are small
Python tasks; decode, normalize and compact are spark-submit jobs (through the
``spark_default`` connection) that call the same library code as the local
``apply`` command. Every step writes only inside the run's batch folder or
commits atomically to Iceberg, so any task can be retried.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from pathlib import Path
from typing import Any

from cdclake.batch import Manifest, safe_batch_id
from cdclake.settings import REPO_ROOT, Settings
from cdclake.sources import SourceConfig, load_sources

SPARK_JOBS = REPO_ROOT / "spark_jobs"


def stage_task(source: SourceConfig, run_id: str) -> str:
    """Stage new landing files into this run's batch; skip the run if there are none."""
    from airflow.sdk.exceptions import AirflowSkipException

    from cdclake.staging import stage_local

    settings = Settings.from_env()
    batch_id = safe_batch_id(run_id)
    manifest = Manifest(
        source=source.name,
        batch_id=batch_id,
        format=source.format,
        options=dict(source.options),
        keys=dict(source.keys),
        namespace=source.namespace,
        scd2=list(source.scd2),
    )
    manifest = stage_local(source.landing_path(settings.home), settings.staging / source.name, manifest)
    batch_dir = settings.staging / source.name / batch_id
    print(f"staged {len(manifest.files)} file(s) into {batch_dir}")
    if not manifest.files:
        raise AirflowSkipException("no new landing files")
    return str(batch_dir)


def report_task(batch_dir: str) -> dict[str, Any]:
    from cdclake.pipeline import build_report

    report = build_report(batch_dir)
    print(json.dumps(report, indent=2))
    if not report["balanced"]:
        raise RuntimeError(f"batch {batch_dir} does not account for every record: {report}")
    return report


def _spark_env() -> dict[str, str]:
    """Environment of spark-submit in local/client mode: the venv's Python and our settings."""
    env = {"PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
    env.update({k: v for k, v in os.environ.items() if k.startswith("CDCLAKE_")})
    return env


def build_dag(source: SourceConfig, settings: Settings):
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
    from airflow.sdk import DAG, task

    dag_id = f"cdc_{source.name}"
    with DAG(
        dag_id=dag_id,
        schedule=source.schedule,
        start_date=dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
        catchup=False,
        max_active_runs=1,
        tags=["cdclake", source.format],
        doc_md=f"CDC ingest of source **{source.name}** (`{source.format}`) from `{source.landing}`.",
        default_args={"retries": 1, "retry_delay": dt.timedelta(seconds=30)},
    ) as dag:

        @task(task_id="stage")
        def stage(**context: Any) -> str:
            return stage_task(source, context["run_id"])

        batch_dir = stage()
        spark_args = {
            "conn_id": "spark_default",
            "jars": ",".join(settings.jars()) or None,
            "env_vars": _spark_env(),
            "conf": {"spark.ui.enabled": "false"},
            "verbose": False,
        }
        steps = []
        for step in ("decode", "normalize", "compact"):
            steps.append(
                SparkSubmitOperator(
                    task_id=step,
                    application=str(SPARK_JOBS / f"{step}.py"),
                    name=f"cdclake-{source.name}-{step}",
                    application_args=["--batch-dir", batch_dir, "--warehouse", str(settings.warehouse)]
                    + (["--buckets", str(settings.buckets)] if step == "compact" else []),
                    **spark_args,
                )
            )

        @task(task_id="report")
        def report(path: str) -> dict[str, Any]:
            return report_task(path)

        done = report(batch_dir)
        steps[0] << batch_dir
        steps[0] >> steps[1] >> steps[2] >> done
    return dag


def build_dags(sources_file: str | Path | None = None) -> dict[str, Any]:
    """``{dag_id: DAG}`` for every configured source (for a DAG file's globals)."""
    settings = Settings.from_env()
    sources = load_sources(sources_file or settings.sources_file)
    return {f"cdc_{name}": build_dag(source, settings) for name, source in sources.items()}
