"""Committing a fold to the table: one atomic commit carrying the batch id, validated from the snapshot read.

- merge-on-read: a ``RowDelta`` written by the driver (its rows and position deletes), else Spark's
  ``MERGE INTO`` on a private branch, fast-forwarded onto ``main`` (``publish.py``);
- overwrite: the driver's own overwrite of the rewritten buckets, else Spark's overwrite of them;
- then, for an SCD2 table, its history.

A lost race raises the conflict to ``compact_table``, which re-reads and folds again.
"""

from __future__ import annotations

from pathlib import Path

from cdclake.compaction.affected import Affected
from cdclake.compaction.batch_rows import Target
from cdclake.compaction.driver_io import commit_delta_in_driver, overwrite_in_driver, to_frame
from cdclake.compaction.driver_merge import Folded
from cdclake.compaction.lake_tables import HISTORY_SUFFIX, META_DDL, ROW_KEYS_PROPERTY, sql_string, table_ddl
from cdclake.compaction.publish import branch_name, drop_branch, merge_and_publish, unshuffled, validated_writer
from cdclake.compaction.spark_fold import write_history
from cdclake.compaction.strategy import MERGE_ON_READ
from cdclake.runtime.faults import fault_point, inside_commit


def commit_fold(
    spark,
    target: Target,
    batch_id: str,
    affected: Affected,
    folded: Folded,
    mode: str,
    rewrite_buckets: list[int],
    properties: dict[str, str],
    main_done: bool,
    history_dir: Path,
) -> str:
    """Commit ``folded`` (and the SCD2 history); returns how, for the report's ``fold`` ("" when Spark did)."""
    from pyspark.sql import functions as F

    name, columns = target.name, target.columns
    how = ""
    delta = False  # committed as a row delta (else the MERGE, or the overwrite)
    if not main_done and mode == MERGE_ON_READ and affected.direct and folded.in_driver:
        delta = commit_delta_in_driver(
            spark,
            name,
            affected.read_snapshot,
            folded.picked,
            affected.located,
            columns,
            target.buckets,
            folded.merge_buckets,
            properties,
        )
        if delta:
            how = ", committed as a row delta"
    if main_done or delta:
        pass
    elif mode == MERGE_ON_READ:
        source = folded.source
        if source is None:
            source = to_frame(spark, folded.picked, table_ddl(columns, META_DDL, "_cdc_kind string"))
        merge_and_publish(
            spark,
            name,
            batch_id,
            affected.read_snapshot,
            source,
            columns,
            folded.merge_buckets,
            properties,
            local_source=folded.in_driver,
        )
    else:
        local = folded.in_driver and not folded.kept_in_spark  # the driver's rows alone: as the MERGE's
        committed = local and affected.direct
        committed = committed and overwrite_in_driver(
            spark, name, affected.read_snapshot, folded.rows_out, rewrite_buckets, properties
        )
        if committed:
            how = ", committed from the driver"
        else:
            source = folded.source
            if source is None:
                source = to_frame(spark, folded.rows_out, table_ddl(columns, META_DDL))
            writer = (source.coalesce(1) if local else source).writeTo(name)
            for key, value in properties.items():
                writer = writer.option(f"snapshot-property.{key}", value)
            with inside_commit(spark, name), unshuffled(spark, local):
                validated_writer(writer, affected.read_snapshot).overwrite(F.col("_cdc_bucket").isin(rewrite_buckets))
        if not affected.keyed:  # every row was rewritten with its key
            spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ({sql_string(ROW_KEYS_PROPERTY)}='1')")
    fault_point("compact:after-commit")
    if mode == MERGE_ON_READ and not delta:
        drop_branch(spark, name, branch_name(batch_id))
    if target.scd2:
        write_history(
            spark,
            name + HISTORY_SUFFIX,
            folded.ev_parted,
            folded.part_of,
            affected.buckets,
            target.keys,
            columns,
            target.buckets,
            batch_id,
            affected.log,
            history_dir,
            target.cmap,
        )
    return how
