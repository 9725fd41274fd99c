"""The decode step's per-table layout (cdclake.events.decoded): Spark's folder names, the change log's files,
and the links normalize makes instead of writing the change log again."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.events.arrow import DECODED_FILE_SCHEMA
from cdclake.events.batch import decoded_files, read_events
from cdclake.events.decoded import (
    CHANGELOG_SCHEMA,
    NULL_FOLDER_VALUE,
    TableFilesWriter,
    escape_table,
    is_per_table,
    publish_changelog,
    unescape_table,
)

NAMES = ["plain", "S.T", 'q"uo#te%s', "a/b:c=d?e", "x\\y{z}[w]^v*'", "tab\tnew\nline\x7f", "ünï©ødé", "\x01\x1f"]


@pytest.mark.spark
def test_table_folders_are_named_as_sparks_partition_writer_names_them(spark):
    utils = spark._jvm.org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils
    every_ascii = "".join(chr(c) for c in range(1, 128))
    for name in [*NAMES, every_ascii]:
        assert escape_table(name) == str(utils.escapePathName(name))
        assert unescape_table(escape_table(name)) == name == str(utils.unescapePathName(escape_table(name)))
    assert escape_table(None) == escape_table("") == NULL_FOLDER_VALUE and unescape_table(NULL_FOLDER_VALUE) is None


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=30))
def test_a_folder_name_gives_its_table_back(name):
    assert unescape_table(escape_table(name)) == name
    assert "/" not in escape_table(name)


def _events(rows: list[dict]) -> pa.RecordBatch:
    full = [{**{f.name: None for f in DECODED_FILE_SCHEMA}, "source_file": "f", **r} for r in rows]
    return pa.RecordBatch.from_pylist(full, schema=DECODED_FILE_SCHEMA)


def test_a_task_writes_each_tables_logged_and_other_events_apart_and_normalize_links_the_logged(tmp_path: Path):
    events = tmp_path / "decoded" / "kind=event"
    rows = [
        {"table": "a/b", "op": "INSERT", "source_offset": 0, "after": [("id", "1")]},
        {"table": "c", "op": "HEARTBEAT", "source_offset": 1},
        {"table": "c", "op": "UPDATE", "source_offset": 2, "after": [("id", "2")]},
        {"table": None, "op": "INSERT", "source_offset": 3},
        {"table": "a/b", "op": "TRUNCATE", "source_offset": 4},
    ]
    writer = TableFilesWriter(events, "000001", "batch-1")
    writer.write(_events(rows[:3]))
    writer.write(_events(rows[3:]))
    writer.close()
    assert is_per_table(events)
    layout = sorted(str(p.relative_to(events)) for p in events.rglob("*") if p.is_file())
    assert layout == [
        "table=__HIVE_DEFAULT_PARTITION__/part-000001.parquet",
        "table=a%2Fb/part-000001.parquet",
        "table=c/other-000001.parquet",
        "table=c/part-000001.parquet",
    ]
    logged = pq.read_table(events / "table=a%2Fb" / "part-000001.parquet")
    assert logged.schema == CHANGELOG_SCHEMA  # the change log's own columns
    assert logged.column("op").to_pylist() == ["INSERT", "TRUNCATE"]
    assert set(logged.column("_batch").to_pylist()) == {"batch-1"}
    # every event read back once, with its table, in the events' own columns
    back = read_events(decoded_files(events)).to_pylist()
    assert sorted((r["source_offset"], r["table"], r["op"]) for r in back) == [
        (r["source_offset"], r["table"], r["op"]) for r in rows
    ]

    changelog = tmp_path / "changelog"
    assert publish_changelog(events, changelog) == 3
    linked = sorted(str(p.relative_to(changelog)) for p in changelog.rglob("*") if p.is_file())
    assert linked == [n for n in layout if "/part-" in n]  # the heartbeat stays out of the log
    for name in linked:  # the same file, not a copy
        assert os.path.samefile(changelog / name, events / name)


def test_a_batch_without_logged_events_gets_an_empty_change_log_with_its_schema(tmp_path: Path):
    events = tmp_path / "decoded" / "kind=event"
    writer = TableFilesWriter(events, "000000", "b")
    writer.write(_events([{"table": "t", "op": "HEARTBEAT", "source_offset": 0}]))
    writer.close()
    assert publish_changelog(events, tmp_path / "changelog") == 0
    (empty,) = (tmp_path / "changelog").glob("*.parquet")
    assert pq.read_table(empty).schema == CHANGELOG_SCHEMA


def test_a_failed_task_leaves_no_file(tmp_path: Path):
    events = tmp_path / "kind=event"
    writer = TableFilesWriter(events, "000000", "b")
    writer.write(_events([{"table": "t", "op": "INSERT", "source_offset": 0}]))
    writer._flush(("t", True))  # a file begun
    writer.abort()
    assert not [p for p in events.rglob("*") if p.is_file()]


@pytest.mark.spark
def test_spark_reads_the_per_table_layout_with_its_table_column(spark, tmp_path: Path):
    from cdclake.jobs.decode import DECODED_SPARK_DDL

    events = tmp_path / "kind=event"
    writer = TableFilesWriter(events, "000000", "b")
    writer.write(
        _events(
            [
                {"table": 'we"ird/name', "op": "INSERT", "source_offset": 0},
                {"table": None, "op": "DELETE", "source_offset": 1},
                {"table": "123", "op": "INSERT", "source_offset": 2},
            ]
        )
    )
    writer.close()
    ddl = DECODED_SPARK_DDL.replace("kind string, ", "")
    rows = spark.read.schema(ddl).parquet(str(events)).select("table", "op", "source_offset", "error").collect()
    assert sorted((r["source_offset"], r["table"], r["op"], r["error"]) for r in rows) == [
        (0, 'we"ird/name', "INSERT", None),
        (1, None, "DELETE", None),
        (2, "123", "INSERT", None),
    ]
