"""A table's ``main`` lineage reads the same, walked snapshot by snapshot or from its metadata JSON."""

from __future__ import annotations

import pytest

from cdclake.compaction import lineage
from cdclake.lake.tables import BATCH_PROPERTY

pytestmark = pytest.mark.spark


def test_a_long_lineage_from_metadata_equals_the_walk(spark, monkeypatch):
    name = "lake.lineage_test.t"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.lineage_test")
    spark.sql(f"CREATE TABLE {name} (a int) USING iceberg")
    for i in range(6):
        spark.createDataFrame([(i,)], "a int").writeTo(name).option(
            f"snapshot-property.{BATCH_PROPERTY}", f"b{i}"
        ).append()
    spark.sql(f"ALTER TABLE {name} CREATE BRANCH side")  # a commit off main is not in its lineage
    spark.createDataFrame([(9,)], "a int").writeTo(f"{name}.branch_side").option(
        f"snapshot-property.{BATCH_PROPERTY}", "off-main"
    ).append()
    spark.catalog.refreshTable(name)
    monkeypatch.setattr(lineage, "WALK_SNAPSHOTS", 10_000)
    walked = lineage.snapshot_lineage(spark, name)
    monkeypatch.setattr(lineage, "WALK_SNAPSHOTS", 2)
    from_json = lineage.snapshot_lineage(spark, name)
    assert [r["batch"] for r in walked] == [f"b{i}" for i in reversed(range(6))]
    assert from_json == walked
    assert lineage.snapshot_info(spark, name) == {f"b{i}" for i in range(6)}


def test_the_head_summary_from_json_equals_the_java_map(spark):
    name = "lake.lineage_test.summary"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.lineage_test")
    spark.sql(f"CREATE TABLE {name} (a int) USING iceberg")
    assert lineage.head_summary(spark, name) == {}
    spark.createDataFrame([(1,), (2,)], "a int").writeTo(name).option(
        f"snapshot-property.{BATCH_PROPERTY}", "b1"
    ).append()
    spark.catalog.refreshTable(name)
    summary = lineage.head_summary(spark, name)
    java = lineage.java_table(spark, name).currentSnapshot().summary()
    assert {k: v for k, v in summary.items() if k != "operation"} == {str(k): str(v) for k, v in java.items()}
    assert summary[BATCH_PROPERTY] == "b1" and summary["total-records"] == "2"
