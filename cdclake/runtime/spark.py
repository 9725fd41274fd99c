"""The Spark session every job uses: Iceberg runtime, JDBC catalog, UTC.

One function so that spark-submit jobs, the local ``apply`` command and the
tests configure Spark identically (DESIGN.md sections 5 and 7). The catalog is
a SQLite file in a local warehouse by default, or ``CDCLAKE_CATALOG_URI``
(PostgreSQL) with the warehouse on S3 / MinIO (``cdclake.runtime.settings.CatalogSettings``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from cdclake.runtime.allocator import ALLOCATOR_ENV
from cdclake.runtime.settings import CATALOG_NAME, CatalogSettings, is_s3, warehouse_location


def catalog_conf(warehouse: str | Path, catalog: CatalogSettings | None = None) -> dict[str, str]:
    """Spark conf of the Iceberg catalog for ``warehouse`` (``catalog``: from the environment if None)."""
    catalog = CatalogSettings.from_env() if catalog is None else catalog
    warehouse = warehouse_location(warehouse)
    if isinstance(warehouse, Path):
        warehouse.mkdir(parents=True, exist_ok=True)  # SQLite cannot create the folder of its file
    prefix = f"spark.sql.catalog.{CATALOG_NAME}"
    conf = {
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "jdbc",
        f"{prefix}.uri": catalog.jdbc_uri(warehouse),
        f"{prefix}.jdbc.schema-version": "V1",
        f"{prefix}.warehouse": warehouse.as_uri() if isinstance(warehouse, Path) else warehouse,
    }
    # Credentials go to the JDBC driver only; Spark redacts "password" keys in its UI and logs.
    if catalog.user:
        conf[f"{prefix}.jdbc.user"] = catalog.user
    if catalog.password:
        conf[f"{prefix}.jdbc.password"] = catalog.password
    if is_s3(warehouse):
        conf.update(s3_conf(catalog))
    return conf


def s3_conf(catalog: CatalogSettings) -> dict[str, str]:
    """Iceberg S3FileIO for the tables and Hadoop s3a for raw files, on AWS or MinIO.

    Keys never enter the conf: S3FileIO and s3a both read ``AWS_ACCESS_KEY_ID`` /
    ``AWS_SECRET_ACCESS_KEY`` from the environment of the driver and of each executor.
    """
    prefix = f"spark.sql.catalog.{CATALOG_NAME}"
    path_style = "true" if catalog.s3_path_style else "false"
    conf = {
        f"{prefix}.io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        f"{prefix}.s3.path-style-access": path_style,
        "spark.hadoop.fs.s3a.path.style.access": path_style,
    }
    if catalog.s3_endpoint:
        conf[f"{prefix}.s3.endpoint"] = catalog.s3_endpoint
        conf["spark.hadoop.fs.s3a.endpoint"] = catalog.s3_endpoint
    if catalog.s3_region:
        conf[f"{prefix}.client.region"] = catalog.s3_region
        conf["spark.hadoop.fs.s3a.endpoint.region"] = catalog.s3_region
    return conf


def session_conf() -> dict[str, str]:
    """Settings that make output exact and start-up cheap; executors' Python workers get this process's
    allocator settings (``cdclake.runtime.allocator``: they may load pyarrow before cdclake)."""
    executor_env = {f"spark.executorEnv.{name}": os.environ.get(name, value) for name, value in ALLOCATOR_ENV.items()}
    return {
        **executor_env,
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        "spark.sql.shuffle.partitions": os.environ.get("CDCLAKE_SHUFFLE_PARTITIONS", "8"),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    }


def _submitted_name() -> str | None:
    """The application name spark-submit was given (``--name``, e.g. ``cdclake-<source>-compact``).

    The builder's ``appName`` would replace it, and a cluster's UI then could not tell sources apart.
    """
    if not os.environ.get("PYSPARK_GATEWAY_PORT"):  # not under spark-submit
        return None
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()
    return SparkConf().get("spark.app.name", None)


def build_session(app_name: str, warehouse: str | Path, master: str | None = None, jars: list[str] | None = None):
    """Get or create the Spark session for ``warehouse``.

    Under spark-submit the master, jars and driver heap come from the command line; the
    local apply command and tests pass them here (the heap: ``Settings.driver_memory``).
    """
    from pyspark.sql import SparkSession

    from cdclake.runtime.settings import Settings

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(_submitted_name() or app_name)
    memory = Settings.from_env().driver_memory
    if memory and not os.environ.get("PYSPARK_GATEWAY_PORT"):  # read when this call starts the JVM
        builder = builder.config("spark.driver.memory", memory)
    if master:
        builder = builder.master(master)
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    for key, value in {**session_conf(), **catalog_conf(warehouse)}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("CDCLAKE_SPARK_LOG_LEVEL", "WARN"))
    return spark


#: JVM classes by name, each bound to the gateway it was made for (see :func:`java_class`).
_CLASSES: dict[str, Any] = {}


def java_class(spark, name: str) -> Any:
    """The JVM class ``name`` (fully qualified) through the session's gateway; None without a JVM (Spark Connect).

    ``spark._jvm.org.apache.iceberg.X`` resolves its path one name at a time, and every name on the way that
    is not a class is a failed class lookup over each jar on the classpath: 1.3-1.7 ms of JVM CPU per path
    (``/tmp`` script of the issue 19 note), paid on every table fact read. A ``JavaClass`` made from the name
    costs no round trip; its static members are looked up by that name, which the JVM finds at once.
    """
    from py4j.java_gateway import JavaClass

    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        return None
    client = jvm._gateway_client
    found = _CLASSES.get(name)
    if found is None or found._gateway_client is not client:
        found = _CLASSES[name] = JavaClass(name, client)
    return found
