"""Tombstone retention: forget deleted keys whose delete is older than the retention.

The change log keeps a deleted key's events so that an older replayed event cannot bring
the row back (the tombstone). Kept forever they grow the log; after the retention period
(table property ``cdclake.tombstone-retention-days``, default 30) this job drops the log
events of keys whose newest event is a DELETE older than the cut-off. A key that took part
in a key change is kept: another key's row was built from its events.

The current-state table does not change (the keys have no row); only the log is rewritten,
bucket by bucket, in one commit.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from cdclake.compaction.lineage import table_properties
from cdclake.jobs.compact import LOG_SUFFIX
from cdclake.lake.tables import BATCH_PROPERTY

DEFAULT_RETENTION_DAYS = 30.0


def run(spark, table_name: str, days: float | None = None, now: dt.datetime | None = None) -> dict[str, Any]:
    """Expire tombstones of the lake table ``table_name`` (Spark name, e.g. ``lake.gg.t``)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    log_name = table_name + LOG_SUFFIX
    if days is None:
        props = table_properties(spark, table_name)
        days = float(props.get("cdclake.tombstone-retention-days", DEFAULT_RETENTION_DAYS))
    now = now or dt.datetime.now(dt.UTC)
    cutoff = now - dt.timedelta(days=days)
    log = spark.table(log_name)
    newest = Window.partitionBy("_key").orderBy(F.desc("seq"), F.desc("source_file"), F.desc("source_offset"))
    latest = log.where("_role = 'main'").withColumn("_n", F.row_number().over(newest)).where("_n = 1")
    tombstones = latest.where("op = 'DELETE'").select("_key", "event_ts", "_cdc_bucket")
    linked = (
        log.where("_old_key IS NOT NULL")
        .select(F.col("_old_key").alias("_key"))
        .union(log.where("_old_key IS NOT NULL").select("_key"))
    )
    expired = (
        tombstones.where(F.col("event_ts") < F.lit(cutoff))
        .join(linked, "_key", "left_anti")
        .select("_key", "_cdc_bucket")
        .distinct()
        .cache()
    )
    total, count = tombstones.count(), expired.count()
    report = {"tombstones": total, "expired": count, "retention_days": days, "cutoff": cutoff.isoformat()}
    if count:
        buckets = sorted(r["_cdc_bucket"] for r in expired.select("_cdc_bucket").distinct().collect())
        kept = log.where(F.col("_cdc_bucket").isin(buckets)).join(expired.select("_key"), "_key", "left_anti")
        kept = kept.select(*log.columns).localCheckpoint()
        (
            kept.writeTo(log_name)
            .option(f"snapshot-property.{BATCH_PROPERTY}", f"retention-{now:%Y%m%dT%H%M%S}")
            .option("snapshot-property.cdclake.expired-tombstones", str(count))
            .overwrite(F.col("_cdc_bucket").isin(buckets))
        )
    expired.unpersist()
    return report
