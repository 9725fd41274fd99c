"""Airflow: the only package that imports it.

Owns the DAGs built from the sources configuration and their tasks (`dags`), freshness and failure alerts
(`alerts`), and running DAGs on the embedded defaults (`env`).
"""
