"""Truncate job: a batch's TRUNCATE events (GoldenGate ``T``, Debezium ``t``,
DataHub TRUNCATE, ``TRUNCATE TABLE`` statements) applied as their own step.

Per table: (1) the truncates are appended to the change log (bucket -1) with
their ``seq`` — from there every later fold knows the watermark; (2) the
current rows last changed before the watermark are removed in one commit.
The compact step then refolds the table against the same watermark, so events
of the batch after the truncate land correctly. Both commits are marked with
``<batch>:truncate`` so a retry skips what is done.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from cdclake.jobs.layout import LAYOUTS_FILE, TableLayout, read_layouts
from cdclake.lake.tables import BATCH_PROPERTY
from cdclake.staging.batch import read_manifest, write_report

#: Suffix of the batch id on the truncate step's commits (compact's own marker stays the batch id).
MARK = ":truncate"


class TruncateTableReport(TypedDict, total=False):
    """One table's line in the truncate step's report (``reports/truncate.json``)."""

    #: TRUNCATE events of the batch (a skipped table: all of them)
    truncates: int
    #: ``TRUNCATE TABLE`` statements of the batch
    ddl_truncates: int
    #: the newest truncate's ``seq``: rows last changed before it are gone
    watermark: str | None
    rows_deleted: int
    #: ``skipped`` (normalize's ``error``), else absent
    status: str
    error: str | None


def _truncate_rows(spark, batch_dir: Path):
    from pyspark.sql import functions as F

    changelog = batch_dir / "changelog"
    if not changelog.exists():
        return None
    return spark.read.parquet(str(changelog)).where(F.col("op") == "TRUNCATE")


def has_truncates(batch_dir: str | Path) -> bool:
    """True when normalize found a TRUNCATE for a table of this batch (the DAG skips the step otherwise)."""
    if not (Path(batch_dir) / LAYOUTS_FILE).exists():
        return False
    return any(layout.has_truncates for layout in read_layouts(batch_dir).values())


def truncate_table(
    spark, batch_id: str, source_table: str, layout: TableLayout, rows, buckets: int
) -> TruncateTableReport:
    from pyspark.sql import functions as F

    from cdclake.compaction.lineage import snapshot_info
    from cdclake.jobs.compact import LOG_SUFFIX, TRUNCATE_BUCKET, ensure_tables
    from cdclake.jobs.normalize import DDL_TRUNCATE_META

    name = layout.spark_name
    log_name = name + LOG_SUFFIX
    ensure_tables(spark, source_table, layout, buckets)
    marker = batch_id + MARK
    events = rows.where(F.col("table") == source_table)
    counted = events.groupBy((F.coalesce(F.col("meta"), F.lit("")) == DDL_TRUNCATE_META).alias("ddl")).count()
    counts = {r["ddl"]: r["count"] for r in counted.collect()}
    if marker not in snapshot_info(spark, log_name):
        log_rows = events.select(
            F.lit(None).cast("string").alias("_key"),
            F.lit(None).cast("string").alias("_old_key"),
            F.lit(TRUNCATE_BUCKET).alias("_cdc_bucket"),
            F.lit("truncate").alias("_role"),
            "op",
            "seq",
            "event_ts",
            "tx_id",
            "tx_pos",
            F.lit(None).cast("map<string,string>").alias("before"),
            F.lit(None).cast("map<string,string>").alias("after"),
            "meta",
            "source_file",
            "source_offset",
            F.lit(batch_id).alias("_cdc_batch"),
        )
        log_rows.writeTo(log_name).option(f"snapshot-property.{BATCH_PROPERTY}", marker).append()
    log = spark.table(log_name)
    watermark = log.where(F.col("_cdc_bucket") == TRUNCATE_BUCKET).agg(F.max("seq").alias("wm")).first()["wm"]
    deleted = 0
    if watermark is not None and marker not in snapshot_info(spark, name):
        table = spark.table(name)
        gone = table.where(F.coalesce(F.col("_cdc_seq"), F.lit("")) < watermark)
        deleted = gone.count()
        if deleted:
            kept = table.where(F.coalesce(F.col("_cdc_seq"), F.lit("")) >= watermark).localCheckpoint()
            (
                kept.writeTo(name)
                .option(f"snapshot-property.{BATCH_PROPERTY}", marker)
                .option("snapshot-property.cdclake.truncate-watermark", watermark)
                .overwrite(F.lit(True))
            )
    return {
        "truncates": counts.get(False, 0),
        "ddl_truncates": counts.get(True, 0),
        "watermark": watermark,
        "rows_deleted": deleted,
    }


def run(
    spark, batch_dir: str | Path, buckets: int = 16, tables: list[str] | None = None
) -> dict[str, TruncateTableReport]:
    batch_dir = Path(batch_dir)
    manifest = read_manifest(batch_dir)
    layouts = read_layouts(batch_dir)
    rows = _truncate_rows(spark, batch_dir) if has_truncates(batch_dir) else None  # none: no Spark job
    report: dict[str, TruncateTableReport] = {}
    if rows is not None:
        found = sorted({r["table"] for r in rows.select("table").distinct().collect()})
        for source_table in [t for t in found if not tables or t in tables]:
            layout = layouts.get(source_table)
            if layout is None or layout.error:
                n = rows.where(rows["table"] == source_table).count()
                report[source_table] = {"status": "skipped", "truncates": n, "error": layout.error if layout else None}
                continue
            report[source_table] = truncate_table(spark, manifest.batch_id, source_table, layout, rows, buckets)
    write_report(batch_dir, "truncate", report)
    return report
