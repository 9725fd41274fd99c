"""Dates every cdclake DAG shares (the ingest, rebuild and maintenance DAGs of ``dags`` and ``cdc_health``
of ``alerts``)."""

from __future__ import annotations

import datetime as dt

#: The start date of every DAG (none catches up: the first run is the next scheduled one).
START_DATE = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
