"""Airflow DAGs: one CDC ingest DAG per configured source (config/sources.yaml or CDCLAKE_SOURCES).

Thin on purpose: the tasks and their logic live in ``cdclake.airflow.dags``.
(The words "airflow" and "dag" in this file let Airflow's safe-mode parser pick it up.)
"""

from cdclake.airflow.dags import build_dags

globals().update(build_dags())
