"""Maintenance (``cdclake.jobs.maintain``): small files rewritten (the change log sorted by key), old
snapshots expired, rows unchanged; later batches and a retried old batch still apply exactly."""

from __future__ import annotations

import datetime as dt

import pytest
from test_merge_on_read import BUCKETS, apply, gg, lake_rows, name_of

from cdclake.jobs import maintain
from cdclake.pipeline import run_batch

pytestmark = pytest.mark.spark

TABLE = "MAINT.LOG"


def test_maintenance_compacts_files_and_expires_snapshots_without_changing_rows(spark, warehouse, tmp_path):
    expected: dict[int, dict] = {}
    pos = 0
    for batch in range(5):  # five batches over every bucket: five small log files per bucket
        messages = []
        for key in range(12):
            pos += 1
            row = {"id": key, "v": f"b{batch}", "a.b`c'd": pos}
            messages.append(gg(TABLE, "I" if batch == 0 else "U", pos, before={"id": key}, after=row))
            expected[key] = row
        apply(spark, tmp_path, f"maint-{batch}", messages)
    name = name_of(TABLE)
    log = name + "__changes"
    before = maintain.file_counts(spark, log)
    assert before["data_files"] >= 5 * BUCKETS - 1

    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=1)  # every snapshot is "old"; the newest 2 are kept
    report = maintain.maintain_table(spark, name, keep_days=0.5, keep_snapshots=2, now=later)

    assert report[log]["after"]["data_files"] <= BUCKETS < before["data_files"]
    assert report[log]["after"]["records"] == before["records"]
    assert report[name]["after"]["data_files"] <= report[name]["before"]["data_files"]
    snapshots = spark.sql(f"SELECT count(*) AS n FROM {log}.snapshots").first()["n"]
    assert snapshots <= 3  # the two kept, plus the rewrite's own commit
    # each of the log's files is sorted by key
    spark.catalog.refreshTable(log)
    by_file: dict[str, list[tuple[int, str]]] = {}
    for r in spark.sql(f"SELECT _file, _pos, _key FROM {log}").collect():
        by_file.setdefault(r["_file"], []).append((r["_pos"], r["_key"]))
    assert sum(len(v) for v in by_file.values()) == before["records"]
    for rows in by_file.values():
        keys = [k for _, k in sorted(rows)]
        assert keys == sorted(keys)
    assert lake_rows(warehouse, TABLE) == expected

    # a later batch applies onto the maintained tables; a retry of an expired batch changes nothing
    pos += 1
    apply(spark, tmp_path, "maint-after", [gg(TABLE, "D", pos, before={"id": 3})])
    del expected[3]
    assert lake_rows(warehouse, TABLE) == expected
    # its events are in the log twice now (same batch, file and offset): each counted once, so it balances
    rerun = run_batch(spark, tmp_path / "staging" / "maint-1", buckets=BUCKETS)
    assert lake_rows(warehouse, TABLE) == expected
    assert rerun["balanced"] and rerun["applied"] + rerun["stale"] == 12, rerun
