"""Airflow plugin: registers cdclake with Airflow (monitoring views come with the orchestration work)."""

from airflow.plugins_manager import AirflowPlugin


class CdclakePlugin(AirflowPlugin):
    name = "cdclake"
