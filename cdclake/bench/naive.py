"""The naive baseline: the Spark job one would write first for JSON change files.

Read the files with ``spark.read.json``, take per key the last event by source position
(``row_number()`` over the key ordered by seq), drop deletes, and overwrite the whole table
with the last after image. It decodes no vendor types (Kafka Connect decimals, epoch
timestamps) and treats every after image as the whole row, so partial updates null or
placeholder the columns they did not carry, and a key change leaves the old key's row.
The parsed events are persisted once, so each table does not parse the files again.
"""

from __future__ import annotations

import time
from pathlib import Path

from cdclake.bench.model import Table


def _events(spark, format_id: str, files: list[Path]):
    """(table, op, seq, before, after) of every record, and the op value of a delete."""
    from pyspark.sql import functions as F

    raw = spark.read.json([str(p) for p in files])
    if format_id == "goldengate-json":
        frame = raw.select(
            F.col("table").alias("t"), F.col("op_type").alias("op"), F.col("pos").alias("seq"), "before", "after"
        )
        return frame, "D"
    if format_id == "debezium-json":
        p = "payload."
        frame = raw.select(
            F.concat_ws(".", F.col(p + "source.schema"), F.col(p + "source.table")).alias("t"),
            F.col(p + "op").alias("op"),
            F.col(p + "source.scn").cast("decimal(38,0)").alias("seq"),
            F.col(p + "before").alias("before"),
            F.col(p + "after").alias("after"),
        )
        return frame, "d"
    if format_id == "cdl-json":
        p = "payload."
        frame = raw.select(
            F.concat_ws(".", F.col(p + "SEG_OWNER"), F.col(p + "TABLE_NAME")).alias("t"),
            F.col(p + "OPERATION").alias("op"),
            F.expr("filter(payload.transaction.properties, x -> x.name = 'lsn')[0].value").alias("seq"),
            F.col(p + "before").alias("before"),
            F.col(p + "data").alias("after"),
        )
        return frame, "DELETE"
    if format_id == "datahub-blob":
        frame = raw.where(F.col("payload.op") != "UPDATE_BEFOR").select(
            F.concat_ws(".", F.col("schema.source.dbName"), F.col("schema.source.tableName")).alias("t"),
            F.col("payload.op").alias("op"),
            F.col("payload.sequenceId").cast("decimal(38,0)").alias("seq"),
            F.col("payload.before.dataColumn").alias("before"),
            F.col("payload.after.dataColumn").alias("after"),
        )
        return frame, "DELETE"
    raise ValueError(f"no naive job for {format_id}")


NAIVE_FORMATS = ("goldengate-json", "debezium-json", "cdl-json", "datahub-blob")


def run_naive(spark, format_id: str, files: list[Path], tables: list[Table], namespace: str) -> tuple[dict, float]:
    """Run the naive job; returns (lake table name by the model's table name, seconds)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    started = time.perf_counter()
    events, delete_op = _events(spark, format_id, files)
    events = events.persist()
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS lake.{namespace}")
    names = {}
    for table in tables:
        rows = events.where(F.col("t") == table.full_name)
        key_cols = [F.coalesce(F.col(f"after.{k}"), F.col(f"before.{k}")).alias(k) for k in table.keys]
        latest = Window.partitionBy(*table.keys).orderBy(F.col("seq").desc())
        last = (
            rows.select(*key_cols, "op", "seq", "after")
            .withColumn("_rn", F.row_number().over(latest))
            .where((F.col("_rn") == 1) & (F.col("op") != delete_op))
        )
        values = [F.col(f"after.{c.name}").alias(c.name) for c in table.columns if c.name not in table.keys]
        name = f"lake.{namespace}.{table.name.lower()}"
        last.select(*table.keys, *values).writeTo(name).using("iceberg").createOrReplace()
        names[table.full_name] = name
    events.unpersist()
    return names, time.perf_counter() - started
