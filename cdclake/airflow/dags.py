"""Airflow DAGs built from the sources configuration.

One ingest DAG per source, ``cdc_<source>``::

    stage -> decode_normalize -> [has_schema_changes -> apply_ddl]
          -> [has_truncates -> apply_truncates] -> affected_tables -> compact[group] -> report

Stage, the gates and the report are small Python tasks; decode_normalize (the
decode and normalize jobs in one Spark application), apply_ddl, apply_truncates
and compact are spark-submit jobs (through the ``spark_default`` connection) that
call the same library code as the local ``apply`` command. ``compact`` is mapped over groups of tables (up to
``CDCLAKE_COMPACT_GROUP_SIZE`` each, so usually one task): one Spark application
compacts a group's tables side by side and reports each. The DDL and truncate steps are skipped when the batch has no
such events. The report publishes one Airflow Asset per changed table (through
the ``cdclake_<source>`` asset alias) and fails the run when records are
unaccounted for or quarantined above the source's ``max_quarantined``.

A run with a data interval (scheduled, backfill, or a manual run given a
logical date or the ``interval_end`` param) works on the batch of that
interval: its retries, re-runs and backfills share the batch (files are never
staged twice, Iceberg commits of a committed batch are no-ops). A manual run
without a date stages whatever is new. Every step writes only inside the run's
batch folder or commits atomically to Iceberg, so any task can be retried.

``cdc_rebuild`` rebuilds chosen tables of a source from their change log or
from the raw archive (the staged files), with Params for the trigger form.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from pathlib import Path
from typing import Any

from cdclake.airflow.dates import DAG_DEFAULTS
from cdclake.runtime.settings import REPO_ROOT, Settings
from cdclake.runtime.sources import SourceConfig, load_sources
from cdclake.staging.batch import Manifest, safe_batch_id

SPARK_JOBS = REPO_ROOT / "spark_jobs"


def _iso(value: Any) -> str | None:
    return value.isoformat() if hasattr(value, "isoformat") else (str(value) if value else None)


def batch_for_run(
    run_id: str,
    run_type: Any,
    interval_start: dt.datetime | None,
    interval_end: dt.datetime | None,
    params: dict[str, Any] | None = None,
) -> tuple[str, dt.datetime | None]:
    """(batch id, stage only files older than) for a run.

    Scheduled and backfill runs, and manual runs given the ``interval_end``
    param, work on the interval's batch ``interval_<start>_<end>``: retries,
    re-runs and backfills of an interval share it. Other manual runs use their
    run id and stage whatever is new.
    """
    from cdclake.staging.stage import batch_id_for_run

    params = params or {}
    if params.get("interval_end"):
        end = _aware(dt.datetime.fromisoformat(params["interval_end"]))
        start = _aware(dt.datetime.fromisoformat(params["interval_start"])) if params.get("interval_start") else end
        return batch_id_for_run(run_id, start, end, "backfill"), end
    batch_id = batch_id_for_run(run_id, interval_start, interval_end, run_type)
    return batch_id, (interval_end if batch_id.startswith("interval_") else None)


def _aware(value: dt.datetime) -> dt.datetime:
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def new_manifest(source: SourceConfig, batch_id: str) -> Manifest:
    return Manifest(
        source=source.name,
        batch_id=batch_id,
        format=source.format,
        options=dict(source.options),
        keys=dict(source.keys),
        namespace=source.namespace,
        scd2=list(source.scd2),
        schema_policy=source.schema_policy,
        table_policies=dict(source.table_schema_policy),
    )


def stage_task(source: SourceConfig, context: dict[str, Any]) -> str:
    """Stage the run's landing files into its batch; skip the run if there are none."""
    from airflow.sdk.exceptions import AirflowSkipException

    from cdclake.staging.stage import s3_client_from_connection, stage_source

    settings = Settings.from_env()
    dag_run = context.get("dag_run")
    batch_id, older_than = batch_for_run(
        context["run_id"],
        getattr(dag_run, "run_type", "manual"),
        context.get("data_interval_start"),
        context.get("data_interval_end"),
        dict(context.get("params") or {}),
    )
    landing = source.landing if source.landing.startswith("s3://") else str(source.landing_path(settings.home))
    client = s3_client_from_connection(source.aws_conn_id) if landing.startswith("s3://") else None
    manifest = stage_source(
        landing,
        settings.staging / source.name,
        new_manifest(source, batch_id),
        interval_end=older_than,
        s3_client=client,
    )
    batch_dir = settings.staging / source.name / batch_id
    print(f"batch {batch_id}: {len(manifest.files)} file(s) staged in {batch_dir}")
    if not manifest.files:
        raise AirflowSkipException("no new landing files")
    ti = context.get("ti")
    if ti is not None:  # what the run's Spark steps start their driver JVM with (step_java_options)
        ti.xcom_push(key=DRIVER_OPTIONS_KEY, value=run_java_options(settings, manifest, context) or "")
    return str(batch_dir)


#: XCom (of the stage task) with the driver JVM options of the run's Spark steps.
DRIVER_OPTIONS_KEY = "driver_java_options"


def step_java_options(static: str) -> str:
    """The ingest steps' ``spark.driver.defaultJavaOptions``, rendered per run (the options need the batch's
    size): the stage task's XCom, or ``static`` (the options without the quick JIT) for a run staged by a
    version that pushed none, so its re-run steps still start from the JVM archive."""
    pull = f"ti.xcom_pull(task_ids='stage', key='{DRIVER_OPTIONS_KEY}')"
    return f"{{% set pushed = {pull} %}}{{{{ pushed if pushed is not none else {json.dumps(static)} }}}}"


def run_java_options(settings: Settings, manifest: Manifest, context: dict[str, Any]) -> str | None:
    """The driver JVM options of a run's steps: the quick JIT only for a small batch, and never for a full
    refresh (which rewrites whole tables from their change log, whatever the batch's size)."""
    from cdclake.runtime.jvm_archive import driver_java_options

    full_refresh = bool((context.get("params") or {}).get("full_refresh"))
    staged = None if full_refresh else sum(f.size for f in manifest.files)
    return driver_java_options(settings, staged)


def affected_tables(batch_dir: str, dry_run: bool = False) -> list[str]:
    """Source tables the compact step must write."""
    if dry_run:
        return []
    layouts = json.loads((Path(batch_dir) / "tables.json").read_text())
    return sorted(t for t, layout in layouts.items() if not layout.get("error"))


def table_groups(tables: list[str], size: int) -> list[list[str]]:
    """``tables`` in groups of at most ``size``: one compact task (one Spark application) each."""
    return [tables[i : i + size] for i in range(0, len(tables), max(1, size))]


def group_label(group: list[str]) -> str:
    """What the UI shows for a compact task (its map index): the group's tables, shortened."""
    if len(group) == 1:
        return group[0]
    return f"{group[0]} .. {group[-1]} ({len(group)} tables)"


def compact_args(batch_dir: str, common: list[str], groups: list[list[str]], full_refresh: bool) -> list[list[str]]:
    """application_args of each mapped compact task; the last one is its label (for the UI)."""
    extra = ["--full-refresh"] if full_refresh else []
    return [
        [
            "--batch-dir",
            batch_dir,
            *common,
            *extra,
            *(a for t in group for a in ("--table", t)),
            "--label",
            group_label(group),
        ]
        for group in groups
    ]


def report_task(
    batch_dir: str,
    source: SourceConfig | None = None,
    dry_run: bool = False,
    outlet_events: Any = None,
    context: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Build, print and check the run report; add it to the monitoring index; publish an asset event per
    changed table."""
    from cdclake.pipeline import build_report

    report = build_report(batch_dir)
    report["dry_run"] = dry_run
    print(json.dumps(report, indent=2, default=str))
    if dry_run:
        print("dry run: decoded and normalized only; nothing was committed to the lake")
        return report
    if source is not None:
        _index_batch(source, batch_dir, report, context)
    if not report["balanced"]:
        raise RuntimeError(f"batch {batch_dir} does not account for every record: {report}")
    limit = source.max_quarantined if source else None
    if limit is not None and report["quarantined"] > limit:
        raise RuntimeError(
            f"batch {report['batch_id']}: {report['quarantined']} records quarantined, more than max_quarantined="
            f"{limit} for source {source.name}; the reasons are in {batch_dir}/quarantine and decoded/kind=rejected "
            "(and on the cdclake monitoring page)"
        )
    if outlet_events is not None and source is not None:
        _publish_assets(source, report, outlet_events)
    return report


def _index_batch(source: SourceConfig, batch_dir: str, report: dict[str, Any], context: dict[str, Any] | None) -> None:
    """The batch into the monitoring index (before the checks, so a failing batch is shown too)."""
    from cdclake.monitoring import index as monitor_index
    from cdclake.monitoring.index_store import open_store

    try:
        store = open_store(Settings.from_env().monitor_index, aws_conn_id=source.aws_conn_id)
        monitor_index.record_batch(store, source.name, batch_dir, report, monitor_index.run_info(context, report))
    except Exception:  # the data is committed; the page catches up with the next batch (or an index rebuild)
        import logging

        logging.getLogger(__name__).exception("could not add batch %s to the monitoring index", batch_dir)


def table_asset(source: SourceConfig, lake_table: str):
    from airflow.sdk import Asset

    return Asset(name=f"cdclake.{lake_table}", uri=f"iceberg://lake/{lake_table.replace('.', '/')}")


def asset_alias(source: SourceConfig):
    from airflow.sdk import AssetAlias

    return AssetAlias(f"cdclake_{source.name}")


def _publish_assets(source: SourceConfig, report: dict[str, Any], outlet_events: Any) -> None:
    from cdclake.lake.naming import iceberg_identifier

    for table, entry in report["tables"].items():
        changed = entry.get("status") == "committed" or entry.get("truncates") or entry.get("schema_changes")
        if not changed:
            continue
        ns, short = iceberg_identifier(table, source.namespace)
        extra = {
            "source_table": table,
            "batch_id": report["batch_id"],
            "applied": entry.get("applied", 0),
            "deleted_keys": entry.get("deleted_keys", 0),
            "schema_version": entry.get("schema_version"),
        }
        outlet_events[asset_alias(source)].add(table_asset(source, f"{ns}.{short}"), extra=extra)


def _spark_env() -> dict[str, str]:
    """Environment of spark-submit in local/client mode: the venv's Python and our settings."""
    env = {"PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
    env.update({k: v for k, v in os.environ.items() if k.startswith("CDCLAKE_")})
    return env


def _spark_args(settings: Settings, per_run_options: bool = False) -> dict[str, Any]:
    """The SparkSubmitOperator arguments of every step; ``per_run_options``: the driver JVM options come
    from the run's stage task (step_java_options), else they are the same for every run."""
    from cdclake.runtime.jvm_archive import driver_java_options

    conf = {"spark.ui.enabled": "false"}
    static = driver_java_options(settings) or ""
    options = step_java_options(static) if per_run_options else static
    if options:  # the default options, so a user's spark.driver.extraJavaOptions still apply
        conf["spark.driver.defaultJavaOptions"] = options
    return {
        "conn_id": "spark_default",
        "jars": ",".join(settings.jars()) or None,
        "env_vars": _spark_env(),
        "conf": conf,
        "driver_memory": settings.driver_memory,
        "verbose": False,
    }


INGEST_PARAMS_DOC = {
    "interval_end": "Re-process the batch of the interval ending at this time (ISO 8601); empty: the run's own",
    "interval_start": "Start of that interval (ISO 8601, optional)",
    "full_refresh": "Recompute every row of the batch's tables from their change log",
    "dry_run": "Stage, decode and normalize only: report what would change, commit nothing",
}


def ingest_params():
    from airflow.sdk import Param

    return {
        "interval_start": Param(
            None, type=["null", "string"], format="date-time", description=INGEST_PARAMS_DOC["interval_start"]
        ),
        "interval_end": Param(
            None, type=["null", "string"], format="date-time", description=INGEST_PARAMS_DOC["interval_end"]
        ),
        "full_refresh": Param(False, type="boolean", description=INGEST_PARAMS_DOC["full_refresh"]),
        "dry_run": Param(False, type="boolean", description=INGEST_PARAMS_DOC["dry_run"]),
    }


def build_dag(source: SourceConfig, settings: Settings, notifiers: list[Any] | None = None):
    """``cdc_<source>``: the source's ingest DAG (the module's docstring draws it)."""
    from airflow.sdk import DAG

    spark_args = _spark_args(settings, per_run_options=True)
    with DAG(**_ingest_dag_args(source, notifiers)) as dag:
        _ingest_tasks(dag, source, settings, spark_args)
    return dag


def _ingest_dag_args(source: SourceConfig, notifiers: list[Any] | None) -> dict[str, Any]:
    """The ingest DAG's arguments: schedule, params, failure callbacks and (if any) its deadline."""
    from cdclake.airflow.alerts import RecordRunFailure, deadline_alert

    return {
        "dag_id": f"cdc_{source.name}",
        "schedule": source.schedule,
        **DAG_DEFAULTS,
        "tags": ["cdclake", source.format],
        "params": ingest_params(),
        "doc_md": (
            f"CDC ingest of source **{source.name}** (`{source.format}`) from `{source.landing}`: "
            "stage → decode + normalize → apply DDL → apply truncates → compact (one Spark application per "
            "group of tables) → report."
        ),
        "default_args": {
            "retries": 1,
            "retry_delay": dt.timedelta(seconds=30),
            "on_failure_callback": [RecordRunFailure(source.name), *(notifiers or [])],
        },
        **({"deadline": deadline} if (deadline := deadline_alert(source)) is not None else {}),
    }


def _ingest_tasks(dag: Any, source: SourceConfig, settings: Settings, spark_args: dict[str, Any]) -> None:
    """The ingest DAG's tasks and their order, inside its ``with DAG`` block."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
    from airflow.sdk import task

    common = ["--warehouse", str(settings.warehouse), "--buckets", str(settings.buckets)]

    @task(task_id="stage")
    def stage(**context: Any) -> str:
        return stage_task(source, context)

    batch_dir = stage()
    normalize = _spark_step(SparkSubmitOperator, source, spark_args, common, "decode_normalize", batch_dir)
    has_schema_changes, has_truncates = _gate_tasks(task)
    tables = _tables_task(task, settings, common)
    apply_ddl = _spark_step(SparkSubmitOperator, source, spark_args, common, "ddl", batch_dir)
    apply_truncates = _spark_step(SparkSubmitOperator, source, spark_args, common, "truncate", batch_dir)
    compact = SparkSubmitOperator.partial(
        task_id="compact",
        application=str(SPARK_JOBS / "compact.py"),
        name=f"cdclake-{source.name}-compact",
        map_index_template="{{ task.application_args[-1] }}",
        **spark_args,
    ).expand(application_args=tables(batch_dir))
    report = _report_task(task, source)

    gate_ddl = has_schema_changes(batch_dir)
    gate_truncates = has_truncates(batch_dir)
    done = report(batch_dir)
    normalize << batch_dir
    normalize >> gate_ddl >> apply_ddl
    [normalize, apply_ddl] >> gate_truncates >> apply_truncates
    upstream_of_tables = [normalize, apply_ddl, apply_truncates]
    tables_task = dag.get_task("affected_tables")
    for upstream in upstream_of_tables:
        upstream >> tables_task
    [compact, tables_task] >> done


def _spark_step(
    operator: Any, source: SourceConfig, spark_args: dict[str, Any], common: list[str], step: str, batch_dir: Any
) -> Any:
    """The spark-submit task of one ingest step (``spark_jobs/<step>.py`` on the run's batch)."""
    return operator(
        task_id={"ddl": "apply_ddl", "truncate": "apply_truncates"}.get(step, step),
        application=str(SPARK_JOBS / f"{step}.py"),
        name=f"cdclake-{source.name}-{step}",
        application_args=["--batch-dir", batch_dir, *(common if step in ("ddl", "truncate") else common[:2])],
        **spark_args,
    )


def _gate_tasks(task: Any) -> tuple[Any, Any]:
    """The short-circuit gates of the DDL and truncate steps (skipped in a dry run or without such events)."""

    @task.short_circuit(task_id="has_schema_changes", ignore_downstream_trigger_rules=False)
    def has_schema_changes(path: str, **context: Any) -> bool:
        from cdclake.jobs.ddl import has_changes

        return not context["params"].get("dry_run") and has_changes(path)

    @task.short_circuit(
        task_id="has_truncates", ignore_downstream_trigger_rules=False, trigger_rule="none_failed_min_one_success"
    )
    def has_truncates(path: str, **context: Any) -> bool:
        from cdclake.jobs.truncate import has_truncates as found

        return not context["params"].get("dry_run") and found(path)

    return has_schema_changes, has_truncates


def _tables_task(task: Any, settings: Settings, common: list[str]) -> Any:
    """``affected_tables``: the application_args of each mapped compact task."""

    @task(task_id="affected_tables", trigger_rule="none_failed_min_one_success")
    def tables(path: str, **context: Any) -> list[list[str]]:
        found = affected_tables(path, bool(context["params"].get("dry_run")))
        groups = table_groups(found, settings.compact_group_size)
        print(f"{len(found)} table(s) to compact in {len(groups)} task(s): {found}")
        return compact_args(path, common, groups, bool(context["params"].get("full_refresh")))

    return tables


def _report_task(task: Any, source: SourceConfig) -> Any:
    """``report``: the run report, its checks and the assets of the changed tables (report_task)."""

    @task(task_id="report", trigger_rule="none_failed_min_one_success", outlets=[asset_alias(source)])
    def report(path: str, **context: Any) -> dict[str, Any]:
        return report_task(
            path,
            source,
            bool(context["params"].get("dry_run")),
            outlet_events=context.get("outlet_events"),
            context=context,
        )

    return report


def build_rebuild_dag(sources: dict[str, SourceConfig], settings: Settings):
    """``cdc_rebuild``: rebuild chosen tables of a source from the change log or the raw archive."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
    from airflow.sdk import DAG, Param, task

    names = sorted(sources)
    with DAG(
        dag_id="cdc_rebuild",
        schedule=None,
        **DAG_DEFAULTS,
        tags=["cdclake", "rebuild"],
        params={
            "source": Param(names[0], type="string", enum=names, description="Source whose tables are rebuilt"),
            "tables": Param(
                [],
                type="array",
                items={"type": "string"},
                description="Source table names (e.g. GG.TCUSTORD); empty: every table of the source",
            ),
            "from": Param(
                "changelog",
                type="string",
                enum=["changelog", "archive"],
                description="changelog: refold from the Iceberg change log (fast); archive: drop the tables and "
                "re-decode every staged batch in order (after a decoder fix or an incompatible schema change)",
            ),
            "dry_run": Param(False, type="boolean", description="Only list what would be rebuilt"),
        },
        doc_md="Rebuild lake tables of one source from their change log or from the raw landing archive.",
        default_args={"retries": 0},
    ) as dag:

        @task(task_id="plan")
        def plan(**context: Any) -> list[str]:
            params = context["params"]
            source = sources[params["source"]]
            args = [
                "--source-dir",
                str(settings.staging / source.name),
                "--warehouse",
                str(settings.warehouse),
                "--buckets",
                str(settings.buckets),
                "--from",
                params["from"],
                "--run-id",
                safe_batch_id(context["run_id"]),
            ]
            for table in params.get("tables") or []:
                args += ["--table", table]
            if params.get("dry_run"):
                args.append("--dry-run")
            print("rebuild:", " ".join(args))
            return args

        SparkSubmitOperator(
            task_id="rebuild",
            application=str(SPARK_JOBS / "rebuild.py"),
            name="cdclake-rebuild",
            application_args=plan(),
            **_spark_args(settings),
        )
    return dag


def build_maintenance_dag(sources: dict[str, SourceConfig], settings: Settings):
    """``cdc_maintenance``: daily file compaction, snapshot expiry and orphan removal of a source's tables."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
    from airflow.sdk import DAG, Param, task

    names = sorted(sources)
    with DAG(
        dag_id="cdc_maintenance",
        schedule="@daily",
        **DAG_DEFAULTS,
        tags=["cdclake", "maintenance"],
        params={
            "sources": Param(names, type="array", items={"type": "string", "enum": names}, description="Sources"),
            "keep_days": Param(7.0, type="number", description="Expire snapshots older than this (days)"),
            "keep_snapshots": Param(100, type="integer", description="Always keep this many newest snapshots"),
        },
        doc_md="Rewrite small files (change logs sorted by key), expire old snapshots and remove orphan files of "
        "the lake tables of each chosen source; file counts before/after in the task log.",
        default_args={"retries": 1, "retry_delay": dt.timedelta(minutes=5)},
    ) as dag:

        @task(task_id="plan")
        def plan(**context: Any) -> list[list[str]]:
            params = context["params"]
            return [
                [
                    "--warehouse",
                    str(settings.warehouse),
                    "--source-dir",
                    str(settings.staging / name),
                    "--keep-days",
                    str(params["keep_days"]),
                    "--keep-snapshots",
                    str(params["keep_snapshots"]),
                    "--source",
                    name,
                ]
                for name in params.get("sources") or names
                if name in sources
            ]

        SparkSubmitOperator.partial(
            task_id="maintain",
            application=str(SPARK_JOBS / "maintain.py"),
            name="cdclake-maintain",
            map_index_template="{{ task.application_args[-1] }}",
            **_spark_args(settings),
        ).expand(application_args=plan())
    return dag


def sources_file(settings: Settings) -> Path:
    """The sources config: CDCLAKE_SOURCES, else the Airflow Variable ``cdclake_sources_file``, else the default."""
    if os.environ.get("CDCLAKE_SOURCES"):
        return settings.sources_file
    try:
        from airflow.sdk import Variable

        value = Variable.get("cdclake_sources_file", default=None)
    except Exception:  # no Airflow metadata DB reachable while parsing: the default applies
        value = None
    return Path(value) if value else settings.sources_file


def build_dags(sources_path: str | Path | None = None, notifiers: list[Any] | None = None) -> dict[str, Any]:
    """``{dag_id: DAG}`` for every configured source plus ``cdc_rebuild``, ``cdc_maintenance`` and ``cdc_health``.

    ``notifiers``: Airflow notifiers (e.g. ``SmtpNotifier``) called when an ingest task fails for good
    or a source breaches its health thresholds (docs/monitoring.md).
    """
    from cdclake.airflow.alerts import build_health_dag

    settings = Settings.from_env()
    sources = load_sources(sources_path or sources_file(settings))
    dags = {f"cdc_{name}": build_dag(source, settings, notifiers) for name, source in sources.items()}
    dags["cdc_rebuild"] = build_rebuild_dag(sources, settings)
    dags["cdc_maintenance"] = build_maintenance_dag(sources, settings)
    dags["cdc_health"] = build_health_dag(sources, notifiers or [])
    return dags
