"""The driver fold's own commits (``cdclake.compaction.row_delta``) and reads (``driver_read``): the data
and position delete files it writes from the driver read back, through Spark and pyiceberg, as the rows a
``MERGE`` would leave, for every column type we write; a commit racing another one on its buckets fails as
a conflict; pyiceberg's read of whole buckets finds the rows and places Spark finds; a table whose schema
the fold does not cover is left to Spark.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.compaction.driver_read import read_buckets
from cdclake.compaction.lake_tables import LOG_DDL, LOG_SCHEMA, META_DDL, table_ddl, table_schema
from cdclake.compaction.lineage import fresh_snapshot_id, java_table
from cdclake.compaction.publish import is_conflict
from cdclake.compaction.row_delta import (
    LOCATED_COLUMNS,
    POSITION_COLUMNS,
    Located,
    _by_bucket,
    append_rows,
    commit_overwrite,
    commit_row_delta,
)
from cdclake.lake.naming import spark_table_name
from cdclake.lake.tables import read_rows
from cdclake.merge import bucket_of, key_of
from cdclake.runtime.spark import java_class
from cdclake.schema.coltypes import quote_ident

pytestmark = pytest.mark.spark

NS = "rowdelta"
BUCKETS = 4
NASTY = "a.b`c'd"
COLUMNS = [
    ("id", "bigint"),
    ("s", "string"),
    ("d", "double"),
    ("b", "boolean"),
    ("small", "decimal(10,2)"),
    ("wide", "decimal(38,10)"),
    ("ts", "timestamp"),
    ("day", "date"),
    ("bin", "binary"),
    (NASTY, "string"),
]
UTC = dt.UTC


def row(i: int, tag: str = "v") -> dict:
    return {
        "id": i,
        "s": f"{tag}{i} é☃",
        "d": i / 3,
        "b": i % 2 == 0,
        "small": Decimal(f"{i}.25"),
        "wide": Decimal(f"123456789012345678901234567.{i:010d}"),
        "ts": dt.datetime(2024, 1, 1, 0, 0, i % 60, 123456, tzinfo=UTC),
        "day": dt.date(2024, 2, 1 + i % 28),
        "bin": bytes([i % 256, 0, 255]),
        NASTY: None if i % 3 == 0 else f"{tag}-{i}",
    }


def with_meta(r: dict, seq: int) -> dict:
    key = key_of(r, ["id"])
    return {
        **r,
        "_cdc_op": "INSERT",
        "_cdc_seq": f"{seq:020d}",
        "_cdc_ts": dt.datetime(2024, 1, 1, tzinfo=UTC),
        "_cdc_batch": "b",
        "_cdc_bucket": bucket_of(key, BUCKETS),
        "_cdc_key": key,
    }


def make_table(spark, table: str, rows: list[dict]) -> str:
    name = spark_table_name(table, NS)
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {name.rsplit('.', 1)[0]}")
    spark.sql(
        f"CREATE TABLE {name} ({table_ddl(COLUMNS, META_DDL)}) USING iceberg PARTITIONED BY (_cdc_bucket) "
        "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read', 'cdclake.keys'='id')"
    )
    spark.createDataFrame([with_meta(r, 1) for r in rows], table_ddl(COLUMNS, META_DDL)).writeTo(name).append()
    return name


def arrow_rows(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=table_schema(COLUMNS))


def located(spark, name: str) -> Located:
    spark.catalog.refreshTable(name)
    read = spark.table(name).select("*", *POSITION_COLUMNS).toArrow()
    return Located.of(read, buckets=range(BUCKETS))


def spark_rows(spark, name: str) -> dict[int, dict]:
    spark.catalog.refreshTable(name)
    cols = [quote_ident(n) for n, _ in COLUMNS]
    return {r["id"]: r.asDict() for r in spark.table(name).select(*cols).collect()}


def normalized(r: dict) -> dict:
    """Spark's and pyiceberg's values compared alike (timestamps in UTC, bytes as bytes)."""
    out = {}
    for k, v in r.items():
        if isinstance(v, dt.datetime):
            v = v.astimezone(UTC) if v.tzinfo else v.replace(tzinfo=UTC)
        if isinstance(v, bytearray):
            v = bytes(v)
        out[k] = v
    return out


def test_a_row_delta_leaves_the_rows_a_merge_would_for_every_column_type(spark, warehouse):
    table = "RD.TYPES"
    before = {i: row(i) for i in range(40)}
    name = make_table(spark, table, list(before.values()))
    snapshot = fresh_snapshot_id(spark, name)
    where = located(spark, name)
    updated = {i: row(i, "u") for i in (1, 2, 5, 17)}
    updated[2] = {**updated[2], "s": None, "small": None, "ts": None, "bin": None}  # values set to NULL
    inserted = {100: row(100, "n"), 101: row(101, "n")}
    deleted = {3, 30}
    new_rows = arrow_rows([with_meta(r, 2) for r in (*updated.values(), *inserted.values())])
    keys = {key_of({"id": i}, ["id"]) for i in (*updated, *deleted, *inserted)}
    deletes = where.of_keys(keys)
    assert deletes.num_rows == len(updated) + len(deleted)  # the inserted keys had no row
    buckets = sorted({bucket_of(k, BUCKETS) for k in keys})
    table_obj = java_table(spark, name)
    assert commit_row_delta(spark, table_obj, snapshot, new_rows, deletes, buckets, {"cdclake.batch-id": "rd"})

    expected = {**before, **updated, **inserted}
    for i in deleted:
        del expected[i]
    expected = {i: normalized(r) for i, r in expected.items()}
    assert {i: normalized(r) for i, r in spark_rows(spark, name).items()} == expected
    lake = {r["id"]: normalized(r) for r in read_rows(warehouse, table, namespace=NS)}
    assert lake == expected  # pyiceberg applies the position deletes itself
    summary = spark.sql(f"SELECT summary FROM {name}.snapshots ORDER BY committed_at DESC LIMIT 1").first()[0]
    assert summary["cdclake.batch-id"] == "rd"
    assert int(summary["added-position-deletes"]) == len(updated) + len(deleted)
    assert int(summary["added-data-files"]) == len({bucket_of(r["_cdc_key"], BUCKETS) for r in new_rows.to_pylist()})
    # each delete file names the one data file it deletes from; every file counts its records
    files = spark.sql(f"SELECT content, file_path, record_count, referenced_data_file FROM {name}.files").collect()
    deletes_by_file = {f["referenced_data_file"]: f["record_count"] for f in files if f["content"] == 1}
    assert deletes_by_file == {p: n for p, n in Counter(deletes["_file"].to_pylist()).items()}
    added = [f for f in files if f["content"] == 0 and "cdclake-" in f["file_path"]]
    assert sum(f["record_count"] for f in added) == new_rows.num_rows


def test_a_row_delta_racing_a_commit_on_its_buckets_fails_as_a_conflict(spark, warehouse):
    name = make_table(spark, "RD.RACE", [row(i) for i in range(20)])
    snapshot = fresh_snapshot_id(spark, name)
    where = located(spark, name)
    key = key_of({"id": 4}, ["id"])
    spark.createDataFrame([with_meta(row(4, "other"), 3)], table_ddl(COLUMNS, META_DDL)).writeTo(name).append()
    with pytest.raises(Exception) as raised:
        commit_row_delta(
            spark,
            java_table(spark, name),
            snapshot,
            arrow_rows([with_meta(row(4, "mine"), 2)]),
            where.of_keys({key}),
            [bucket_of(key, BUCKETS)],
            {},
        )
    assert is_conflict(raised.value), raised.value
    spark.catalog.refreshTable(name)
    assert sorted(r["s"] for r in spark.table(name).where("id = 4").collect()) == ["other4 é☃", "v4 é☃"]  # untouched


def test_a_table_with_a_column_the_fold_does_not_write_is_left_to_the_merge(spark, warehouse):
    name = make_table(spark, "RD.EXTRA", [row(i) for i in range(5)])
    spark.sql(f"ALTER TABLE {name} ADD COLUMN extra string")
    before = spark.sql(f"SELECT count(*) AS n FROM {name}.snapshots").first()["n"]
    snapshot = fresh_snapshot_id(spark, name)
    where = located(spark, name)
    key = key_of({"id": 1}, ["id"])
    done = commit_row_delta(
        spark,
        java_table(spark, name),
        snapshot,
        arrow_rows([with_meta(row(1, "u"), 2)]),
        where.of_keys({key}),
        [bucket_of(key, BUCKETS)],
        {},
    )
    assert done is False
    assert spark.sql(f"SELECT count(*) AS n FROM {name}.snapshots").first()["n"] == before


def test_located_covers_whole_buckets_and_keys_read_by_key():
    one, two = "[1]", next(f"[{i}]" for i in range(2, 99) if bucket_of(f"[{i}]", 8) != bucket_of("[1]", 8))
    other = next(
        f"[{i}]" for i in range(100, 999) if bucket_of(f"[{i}]", 8) not in {bucket_of(k, 8) for k in (one, two)}
    )
    read = pa.table(
        {
            "_cdc_key": [one, two],
            "_cdc_bucket": pa.array([bucket_of(one, 8), bucket_of(two, 8)], pa.int32()),
            "_file": ["f1", "f2"],
            "_pos": pa.array([0, 5], pa.int64()),
            "id": [1, 2],
        }
    )
    by_bucket = Located.of(read, buckets=[bucket_of(one, 8)])
    assert by_bucket.positions.column_names == LOCATED_COLUMNS
    assert by_bucket.covers(one, 8) and not by_bucket.covers(two, 8) and not by_bucket.covers(other, 8)
    both = by_bucket.plus(Located.of(read.slice(1), keys={two, other}))
    assert both.covers(two, 8) and both.covers(other, 8)
    # the row of ``two`` was seen by both reads: its position is deleted once
    assert both.of_keys({two, other}).to_pylist() == [
        {"_cdc_key": two, "_cdc_bucket": bucket_of(two, 8), "_file": "f2", "_pos": 5}
    ]


def test_the_driver_read_sees_the_rows_and_places_spark_sees(spark, warehouse):
    """pyiceberg's read of whole buckets (``driver_read``): the same live rows, ``_file`` and ``_pos`` as
    Spark's, after position deletes written by a row delta and by Spark's own merge-on-read ``DELETE``."""
    name = make_table(spark, "RD.READ", [row(i) for i in range(60)])
    more = [with_meta(row(i), 1) for i in range(60, 90)]
    spark.createDataFrame(more, table_ddl(COLUMNS, META_DDL)).writeTo(name).append()  # 2 files a bucket
    where = located(spark, name)
    keys = {key_of({"id": i}, ["id"]) for i in (1, 2, 61)}
    commit_row_delta(
        spark,
        java_table(spark, name),
        fresh_snapshot_id(spark, name),
        arrow_rows([with_meta(row(2, "u"), 2)]),
        where.of_keys(keys),
        sorted({bucket_of(k, BUCKETS) for k in keys}),
        {},
    )
    spark.catalog.refreshTable(name)  # as the pipeline does after its own commits
    spark.sql(f"DELETE FROM {name} WHERE id IN (7, 70)")
    snapshot = fresh_snapshot_id(spark, name)
    touched = [0, 2, 3]
    got = read_buckets(spark, name, snapshot, touched, COLUMNS)
    spark.catalog.refreshTable(name)
    expected = spark.table(name).where(f"_cdc_bucket IN {tuple(touched)}").select("*", *POSITION_COLUMNS).toArrow()
    order = [("_file", "ascending"), ("_pos", "ascending")]
    as_rows = [normalized(r) for r in got.sort_by(order).to_pylist()]
    assert as_rows == [normalized(r) for r in expected.sort_by(order).to_pylist()]
    assert {r["id"] for r in as_rows}.isdisjoint({1, 7, 61, 70}) and len(as_rows) > 10
    assert got.schema == table_schema(COLUMNS).append(pa.field("_file", pa.string())).append(
        pa.field("_pos", pa.int64())
    )


def test_the_driver_read_names_a_column_renamed_since_the_last_commit(spark, warehouse):
    """A rename makes no snapshot: the bucket read at the current snapshot is in the current schema, so the
    renamed column's values come under its new name (a scan at the snapshot id took that snapshot's schema)."""
    name = make_table(spark, "RD.READ_RENAMED", [row(i) for i in range(12)])
    snapshot = fresh_snapshot_id(spark, name)
    spark.sql(f"ALTER TABLE {name} RENAME COLUMN s TO s2")
    renamed = [("s2", t) if n == "s" else (n, t) for n, t in COLUMNS]
    assert fresh_snapshot_id(spark, name) == snapshot
    got = read_buckets(spark, name, snapshot, list(range(BUCKETS)), renamed)
    assert got is not None and got.num_rows == 12
    assert sorted(zip(got["id"].to_pylist(), got["s2"].to_pylist(), strict=True)) == [
        (i, row(i)["s"]) for i in range(12)
    ]


def test_the_driver_read_leaves_a_table_of_other_columns_to_spark(spark, warehouse):
    name = make_table(spark, "RD.READ_EXTRA", [row(i) for i in range(5)])
    spark.sql(f"ALTER TABLE {name} ADD COLUMN extra string")
    assert read_buckets(spark, name, fresh_snapshot_id(spark, name), [0, 1, 2, 3], COLUMNS) is None


def _java_counts(jmap) -> dict[int, int]:
    return {int(k): int(v) for k, v in dict(jmap).items()} if jmap is not None else {}


def test_the_driver_files_carry_the_counts_iceberg_reads_from_their_footers(spark, warehouse):
    """The counts the driver hands Iceberg (from the footer it wrote) are Iceberg's own reading of the file's
    footer, column by column, for every type we write, nulls, a nasty name and the log's map columns; and a
    log file whose ``_old_key`` is all null is skipped by a scan for key changes."""
    rows = [row(i) for i in range(30)]
    name = make_table(spark, "RD.COUNTS", rows[:1])
    table = java_table(spark, name)
    buckets = list(range(BUCKETS))
    fresh = arrow_rows([with_meta(r, 2) for r in rows])
    assert commit_overwrite(spark, table, fresh_snapshot_id(spark, name), fresh, buckets, {})

    log_name = spark_table_name("RD.COUNTS_LOG", NS)
    spark.sql(f"CREATE TABLE {log_name} ({LOG_DDL}) USING iceberg PARTITIONED BY (_cdc_bucket)")
    logged = [
        {
            "_key": f"[{i}]",
            "_old_key": f"[{i + 100}]" if i == 7 else None,
            "_cdc_bucket": i % 2,
            "_role": "row",
            "op": "UPDATE",
            "seq": f"{i:05d}",
            "before": None if i % 3 else {"a": "1", "b": None},
            "after": {"a": str(i)},
            "source_file": "f",
            "source_offset": i,
            "_cdc_batch": "b",
        }
        for i in range(20)
    ]
    log_table = java_table(spark, log_name)
    assert append_rows(spark, log_table, pa.Table.from_pylist(logged, schema=LOG_SCHEMA), {})

    iceberg = spark._jvm.org.apache.iceberg
    for lake_name in (name, log_name):
        lake = java_table(spark, lake_name)
        lake.refresh()
        config = iceberg.MetricsConfig.forTable(lake)
        top_level = {f.fieldId() for f in lake.schema().columns() if not f.type().isNestedType()}
        added = list(lake.currentSnapshot().addedDataFiles(lake.io()))
        assert added
        for data_file in added:
            footer = iceberg.parquet.ParquetUtil.fileMetrics(lake.io().newInputFile(data_file.location()), config)
            for ours, theirs in (
                (data_file.columnSizes(), footer.columnSizes()),
                (data_file.valueCounts(), footer.valueCounts()),
                (data_file.nullValueCounts(), footer.nullValueCounts()),
            ):
                ours, theirs = _java_counts(ours), _java_counts(theirs)
                assert set(ours) == top_level
                assert ours == {k: v for k, v in theirs.items() if k in top_level}
            assert data_file.recordCount() == footer.recordCount()

    # the log's key-change scan opens only the file holding the key change
    expression = iceberg.expressions.Expressions.notNull("_old_key")
    tasks = log_table.newScan().filter(expression).planFiles()
    try:
        found = tasks.iterator()
        planned = []
        while found.hasNext():
            planned.append(found.next().file().location())
    finally:
        tasks.close()
    assert len(planned) == 1 and len(list(log_table.currentSnapshot().addedDataFiles(log_table.io()))) == 2


@pytest.mark.parametrize("object_storage", [False, True])
def test_driver_files_are_placed_where_the_tables_location_provider_places_them(spark, warehouse, object_storage):
    """Named here under the default provider's one prefix, by the provider itself when it hashes each name."""
    from cdclake.compaction.row_delta import _file_locations

    name = make_table(spark, f"S.PLACED{int(object_storage)}", [row(1)])
    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('write.object-storage.enabled'='{str(object_storage).lower()}')")
    table = java_table(spark, name)
    location_of = _file_locations(spark, table)
    partition_data = java_class(spark, "org.apache.iceberg.DataFiles").data
    for bucket in (0, 3, 12):
        file = f"cdclake-x{bucket}-data.parquet"
        expected = table.locationProvider().newDataLocation(
            table.spec(), partition_data(table.spec(), f"_cdc_bucket={bucket}"), file
        )
        assert location_of(bucket, file) == expected
    assert (location_of.__name__ == "asked") is object_storage
    fresh = arrow_rows([with_meta(row(i), 2) for i in range(2, 12)])
    assert commit_overwrite(spark, table, fresh_snapshot_id(spark, name), fresh, list(range(BUCKETS)), {})
    assert sorted(spark_rows(spark, name)) == list(range(2, 12))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(0, 5)), max_size=40), st.integers(0, 40))
def test_a_buckets_rows_are_its_rows_in_order(buckets, cut):
    rows = pa.table({"_cdc_bucket": pa.array(buckets, pa.int32()), "at": pa.array(range(len(buckets)), pa.int64())})
    chunked = pa.concat_tables([rows.slice(0, cut), rows.slice(cut)])  # as the fold's rows come: in chunks
    part = _by_bucket(chunked)
    for bucket in range(6):
        assert part(bucket).to_pylist() == rows.filter(pc.equal(rows["_cdc_bucket"], bucket)).to_pylist()
