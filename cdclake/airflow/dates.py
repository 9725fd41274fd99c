"""Dates and run rules every cdclake DAG shares (the ingest, rebuild and maintenance DAGs of ``dags`` and ``cdc_health``
of ``alerts``)."""

from __future__ import annotations

import datetime as dt

#: The start date of every DAG (none catches up: the first run is the next scheduled one).
START_DATE = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
#: What every DAG is given: that start date, no catch-up, one run at a time.
DAG_DEFAULTS = {"start_date": START_DATE, "catchup": False, "max_active_runs": 1}
