"""The Spark session every job uses: Iceberg runtime, JDBC (SQLite) catalog, UTC.

One function so that spark-submit jobs, the local ``apply`` command and the
tests configure Spark identically (DESIGN.md sections 5 and 7).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from cdclake.settings import CATALOG_NAME


def catalog_conf(warehouse: str | Path) -> dict[str, str]:
    """Spark conf of the Iceberg catalog kept inside ``warehouse``."""
    warehouse = Path(warehouse).resolve()
    warehouse.mkdir(parents=True, exist_ok=True)  # SQLite cannot create the folder of its file
    prefix = f"spark.sql.catalog.{CATALOG_NAME}"
    return {
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "jdbc",
        f"{prefix}.uri": f"jdbc:sqlite:{warehouse / 'catalog.db'}",
        f"{prefix}.jdbc.schema-version": "V1",
        f"{prefix}.warehouse": warehouse.as_uri(),
    }


def session_conf() -> dict[str, str]:
    """Settings that make output exact and start-up cheap."""
    return {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        "spark.sql.shuffle.partitions": os.environ.get("CDCLAKE_SHUFFLE_PARTITIONS", "8"),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    }


def build_session(app_name: str, warehouse: str | Path, master: str | None = None, jars: list[str] | None = None):
    """Get or create the Spark session for ``warehouse``.

    Under spark-submit the master and jars come from the command line; the
    local apply command and tests pass them here.
    """
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    for key, value in {**session_conf(), **catalog_conf(warehouse)}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("CDCLAKE_SPARK_LOG_LEVEL", "WARN"))
    return spark
