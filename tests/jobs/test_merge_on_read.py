"""Merge-on-read compaction (docs/decisions.md, "Merge-on-read").

A batch of a few keys on a table of thousands of rows is applied by a ``MERGE INTO`` on
(``_cdc_bucket``, ``_cdc_key``) that writes position deletes and the new rows only: no data file
is removed, and Spark and pyiceberg read the same rows. The merge goes to a private branch made at
the snapshot read before the change log and is published by fast-forwarding ``main``: a commit to
``main`` in between makes the publication fail and the batch is folded again; a merge left
unpublished (a crash) is not counted as committed and is redone. Too many delete files and small
data files send a batch back to the bucket overwrite, which removes them. The merge law holds on
this path too.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import random
import sys
import threading
from pathlib import Path

import pytest

from cdclake.compaction import publish as compact_publish
from cdclake.compaction import table as compact_table_module
from cdclake.compaction.runner import CompactFailed
from cdclake.jobs import compact
from cdclake.lake.naming import spark_table_name
from cdclake.lake.tables import BATCH_PROPERTY, load_table, read_rows, snapshot_summaries
from cdclake.merge import bucket_of, key_of
from cdclake.pipeline import build_report, run_batch
from cdclake.staging.batch import Manifest
from cdclake.staging.stage import stage_files

pytestmark = pytest.mark.spark

NS = "mor"
BUCKETS = 4
SEED_ROWS = 6000  # 1500 rows a bucket: above compact.MOR_MIN_BUCKET_ROWS
NASTY = "a.b`c'd"  # a data column name with a dot, a backtick and a quote
COLUMNS = ("id", "v", NASTY)


def gg(table: str, op: str, pos: int, before: dict | None = None, after: dict | None = None) -> dict:
    msg = {"table": table, "op_type": op, "op_ts": "2024-01-01 00:00:00.000000", "pos": f"{pos:020d}"}
    if before is not None:
        msg["before"] = before
    if after is not None:
        msg["after"] = after
    return msg


def apply(spark, root: Path, batch_id: str, messages: list[dict], scd2: tuple[str, ...] = ()) -> dict:
    """Stage one GoldenGate JSON batch under ``root`` and run the whole pipeline on it (4 buckets)."""
    path = root / f"{batch_id}.json"
    path.write_text("\n".join(json.dumps(m) for m in messages) + "\n")
    stage_files([str(path)], root / "staging", manifest(batch_id, scd2))
    report = run_batch(spark, root / "staging" / batch_id, buckets=BUCKETS)
    assert report["balanced"], report
    return report


def manifest(batch_id: str, scd2: tuple[str, ...] = ()) -> Manifest:
    return Manifest("mor", batch_id, "goldengate-json", {}, keys={"*": ["id"]}, namespace=NS, scd2=list(scd2))


def seed(spark, root: Path, table: str) -> dict[int, dict]:
    """The table with SEED_ROWS rows (one batch: the table's first commit, a bucket overwrite)."""
    rows = {i: {"id": i, "v": f"v{i}", NASTY: i} for i in range(SEED_ROWS)}
    report = apply(spark, root, f"{table.lower()}-seed", [gg(table, "I", i + 1, after=r) for i, r in rows.items()])
    assert report["tables"][table]["merge_mode"] == "overwrite"
    return rows


def name_of(table: str) -> str:
    return spark_table_name(table, NS)


def lake_rows(warehouse: Path, table: str) -> dict[int, dict]:
    """Rows read by pyiceberg (which applies the position deletes itself)."""
    return {r["id"]: r for r in read_rows(warehouse, table, namespace=NS)}


def spark_rows(spark, table: str) -> dict[int, dict]:
    name = name_of(table)
    spark.catalog.refreshTable(name)
    return {
        r["id"]: r.asDict() for r in spark.table(name).select(*[f"`{c.replace('`', '``')}`" for c in COLUMNS]).collect()
    }


def assert_rows(spark, warehouse: Path, table: str, expected: dict[int, dict]) -> None:
    assert lake_rows(warehouse, table) == expected
    assert spark_rows(spark, table) == expected
    keys = {r["id"]: r["_cdc_key"] for r in read_rows(warehouse, table, include_meta=True, namespace=NS)}
    assert keys == {i: key_of({"id": i}, ["id"]) for i in expected}  # every row carries its key


def refs(spark, table: str) -> list[str]:
    return sorted(r["name"] for r in spark.sql(f"SELECT name FROM {name_of(table)}.refs").collect())


def batch_commits(warehouse: Path, table: str, batch_id: str) -> int:
    """Commits of ``batch_id`` in the table's history (``main``'s lineage)."""
    return sum(1 for s in snapshot_summaries(warehouse, table, namespace=NS) if s.get(BATCH_PROPERTY) == batch_id)


def all_snapshots_of(warehouse: Path, table: str, batch_id: str) -> int:
    """Snapshots of ``batch_id`` anywhere in the table's metadata (unpublished branch commits too)."""
    snapshots = load_table(warehouse, table, NS).snapshots()
    return sum(1 for s in snapshots if s.summary and s.summary.additional_properties.get(BATCH_PROPERTY) == batch_id)


def in_bucket(bucket: int, start: int, count: int = 1) -> list[int]:
    """``count`` seeded ids from ``start`` on whose key lies in ``bucket``."""
    ids = (i for i in range(start, SEED_ROWS) if bucket_of(key_of({"id": i}, ["id"]), BUCKETS) == bucket)
    return [next(ids) for _ in range(count)]


def test_a_small_batch_is_merged_on_read(spark, warehouse, tmp_path):
    table = "MOR.SMALL"
    expected = seed(spark, tmp_path, table)
    messages = [
        gg(table, "U", 10_001, before={"id": 1}, after={"id": 1, "v": "u1"}),  # partial: NASTY keeps its value
        gg(table, "D", 10_002, before={"id": 2}),
        gg(table, "U", 10_003, before={"id": 3}, after={"id": 60_003}),  # key change: the row moves
        gg(table, "I", 10_004, after={"id": 70_000, "v": "new", NASTY: -1}),
        gg(table, "D", 10_005, before={"id": 80_000}),  # a key that never existed
        gg(table, "I", 3, after={"id": 4, "v": "stale"}),  # older than the row (seeded at 5): stale
    ]
    report = apply(spark, tmp_path, "small-b2", messages)
    entry = report["tables"][table]
    assert (entry["applied"], entry["stale"], entry["quarantined"]) == (5, 1, 0), entry
    assert entry["merge_mode"] == "merge-on-read", entry
    assert entry["files_removed"] == 0 and entry["files_added"] >= 1, entry
    assert entry["delete_files_added"] >= 1 and entry["delete_files_total"] == entry["delete_files_added"], entry
    assert entry["rows_rewritten"] <= 4, entry  # keys 1, 60003, 70000 and the stale event's key 4
    expected[1]["v"] = "u1"
    del expected[2]
    expected[60_003] = {**expected.pop(3), "id": 60_003}
    expected[70_000] = {"id": 70_000, "v": "new", NASTY: -1}
    assert_rows(spark, warehouse, table, expected)
    assert refs(spark, table) == ["main"]  # the batch's branch is gone
    summary = next(s for s in snapshot_summaries(warehouse, table, namespace=NS) if s.get(BATCH_PROPERTY) == "small-b2")
    assert json.loads(summary["cdclake.counts"])["applied"] == 5 and int(summary["added-delete-files"]) >= 1
    # the same batch again is a no-op
    again = compact.run(spark, tmp_path / "staging" / "small-b2", buckets=BUCKETS)
    assert again[table]["status"] == "already-committed" and again[table]["applied"] == 5
    assert batch_commits(warehouse, table, "small-b2") == 1


@pytest.mark.parametrize("row_delta", [True, False], ids=["row-delta", "merge"])
def test_a_commit_to_main_before_publishing_makes_the_batch_fold_again(
    spark, warehouse, tmp_path, monkeypatch, caplog, row_delta
):
    """Another batch commits to the table's buckets after this one read it: this one's commit fails its
    validation (the row delta's, or the fast-forward of the MERGE's branch) and the batch is folded again."""
    monkeypatch.setenv("CDCLAKE_DRIVER_COMMITS", "1" if row_delta else "0")
    table = f"MOR.RACE_{int(row_delta)}"
    expected = seed(spark, tmp_path, table)
    real_fault_point = compact_table_module.fault_point
    other: dict = {}

    def interleave(point: str) -> None:
        """Another batch commits to main after this one read the table, before it publishes."""
        if point == "compact:before-commit" and not other:
            other["report"] = {}  # not re-entered by the nested run
            other["report"] = apply(
                spark,
                tmp_path,
                "race-other",
                [
                    gg(table, "U", 20_002, before={"id": 1}, after={"id": 1, "v": "other"}),
                    gg(table, "D", 20_003, before={"id": 5}),
                ],
            )
        real_fault_point(point)

    monkeypatch.setattr(compact_table_module, "fault_point", interleave)
    with caplog.at_level(logging.WARNING, logger="cdclake.compaction"):
        mine = apply(
            spark,
            tmp_path,
            "race-mine",
            [
                gg(table, "U", 20_001, before={"id": 1}, after={"id": 1, "v": "mine"}),  # older than the other's
                gg(table, "U", 20_004, before={"id": 6}, after={"id": 6, "v": "mine"}),
            ],
        )
    assert other["report"]["tables"][table]["merge_mode"] == "merge-on-read"
    assert "another commit changed its buckets" in caplog.text
    entry = mine["tables"][table]
    assert entry["merge_mode"] == "merge-on-read" and (entry["applied"], entry["stale"]) == (1, 1), entry
    expected[1]["v"] = "other"
    del expected[5]
    expected[6]["v"] = "mine"
    assert_rows(spark, warehouse, table, expected)
    for batch_id in ("race-mine", "race-other"):
        assert batch_commits(warehouse, table, batch_id) == 1
    # the beaten MERGE stays in the metadata, on no branch; a beaten row delta commits nothing
    assert all_snapshots_of(warehouse, table, "race-mine") == (1 if row_delta else 2)
    assert refs(spark, table) == ["main"]
    assert ("committed as a row delta" in mine["tables"][table]["fold"]) == row_delta


def test_a_merge_left_unpublished_by_a_crash_is_redone(spark, warehouse, tmp_path, monkeypatch):
    monkeypatch.setenv("CDCLAKE_DRIVER_COMMITS", "0")  # the MERGE path (a row delta has no branch)
    table = "MOR.CRASH"
    expected = seed(spark, tmp_path, table)
    real = compact_publish._snapshot_properties

    @contextlib.contextmanager
    def crash_after_the_merge(session, properties):
        with real(session, properties):
            yield
        raise RuntimeError("simulated crash between the branch merge and its publication")

    monkeypatch.setattr(compact_publish, "_snapshot_properties", crash_after_the_merge)
    messages = [
        gg(table, "U", 30_001, before={"id": 7}, after={"id": 7, "v": "x"}),
        gg(table, "D", 30_002, before={"id": 8}),
    ]
    with pytest.raises(Exception, match="simulated crash"):
        apply(spark, tmp_path, "crash-b2", messages)
    monkeypatch.undo()
    assert_rows(spark, warehouse, table, expected)  # main did not move
    assert refs(spark, table) == sorted(["main", compact.branch_name("crash-b2")])
    assert all_snapshots_of(warehouse, table, "crash-b2") == 1 and batch_commits(warehouse, table, "crash-b2") == 0
    assert not any(k.startswith(compact.SNAPSHOT_PROPERTY_CONF) for k in spark.conf.getAll)

    batch_dir = tmp_path / "staging" / "crash-b2"
    retried = compact.run(spark, batch_dir, buckets=BUCKETS)  # the compact task's retry
    assert retried[table]["status"] == "committed" and retried[table]["merge_mode"] == "merge-on-read", retried
    report = build_report(batch_dir)
    assert report["balanced"] and report["tables"][table]["applied"] == 2, report
    expected[7]["v"] = "x"
    del expected[8]
    assert_rows(spark, warehouse, table, expected)
    assert batch_commits(warehouse, table, "crash-b2") == 1
    assert refs(spark, table) == ["main"]


def test_too_many_extra_files_send_the_batch_back_to_the_bucket_overwrite(spark, warehouse, tmp_path):
    table = "MOR.MAINT"
    expected = seed(spark, tmp_path, table)
    name = name_of(table)
    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('{compact.MAX_EXTRA_FILES_PROPERTY}'='1')")
    (a0,), (a1,), (b2,) = in_bucket(0, 100), in_bucket(1, 100), in_bucket(2, 100)
    first = apply(
        spark,
        tmp_path,
        "maint-1",
        [
            gg(table, "U", 40_001, before={"id": a0}, after={"id": a0, "v": "m1"}),
            gg(table, "D", 40_002, before={"id": a1}),
        ],
    )["tables"][table]
    assert first["merge_mode"] == "merge-on-read" and first["delete_files_total"] == 2, first
    second = apply(spark, tmp_path, "maint-2", [gg(table, "U", 40_003, before={"id": b2}, after={"id": b2, "v": "m2"})])
    entry = second["tables"][table]
    # 2 delete files + 1 small data file > 1: this batch's bucket and both buckets with extra files are rewritten
    assert entry["merge_mode"] == "overwrite" and entry["buckets_rewritten"] == 3, entry
    assert entry["delete_files_total"] == 0 and entry["files_removed"] >= 3, entry
    third = apply(spark, tmp_path, "maint-3", [gg(table, "D", 40_004, before={"id": b2})])["tables"][table]
    assert third["merge_mode"] == "merge-on-read" and third["delete_files_total"] == 1, third
    expected[a0]["v"] = "m1"
    del expected[a1], expected[b2]
    assert_rows(spark, warehouse, table, expected)


def _law_module():
    spec = importlib.util.spec_from_file_location("merge_law_reference", Path(__file__).with_name("test_merge_law.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("seed_value", [3, 11])
def test_the_merge_law_holds_on_the_merge_on_read_path(spark, warehouse, tmp_path, seed_value):
    """Random histories (inserts, partial updates, key changes, deletes, truncates) in shuffled batches,
    one replayed, with merge-on-read for every batch without a truncate: the reference table."""
    law = _law_module()
    rnd = random.Random(seed_value)
    table = f"MOR.LAW{seed_value}"
    ops = ["I", "I", "U", "U", "P", "K", "K", "D", "T"]
    history = [(rnd.choice(ops), rnd.randint(1, 5), rnd.randint(1, 5), rnd.choice(["a", "b", None])) for _ in range(14)]
    setup = law.to_message(table, 0, "I", 999, 999, "setup")  # makes the table, whose merges are then forced
    messages = [law.to_message(table, pos, *item) for pos, item in enumerate(history, start=1)]
    expected = law.reference([{**m, "pos": int(m["pos"])} for m in [setup, *messages]])
    apply(spark, tmp_path, f"law{seed_value}-setup", [setup])
    spark.sql(f"ALTER TABLE {name_of(table)} SET TBLPROPERTIES ('{compact.MIN_ROWS_PROPERTY}'='0')")
    rnd.shuffle(messages)
    batches = [messages[i::3] for i in range(3)]
    modes = []
    replayed = rnd.randrange(3)
    for n, (batch_id, index) in enumerate([("0", 0), ("1", 1), ("2", 2), ("replay", replayed)]):
        root = tmp_path / str(n)
        root.mkdir()
        report = apply(spark, root, f"law{seed_value}-{batch_id}", batches[index])
        modes.append(report["tables"].get(table, {}).get("merge_mode"))
    assert "merge-on-read" in modes, modes
    rows = read_rows(warehouse, table, namespace=NS)
    got = {r["id"]: {k: r.get(k) for k in ("id", "name", "qty")} for r in rows}
    assert got == {k: {c: v.get(c) for c in ("id", "name", "qty")} for k, v in expected.items()}
    spark.catalog.refreshTable(name_of(table))
    assert spark.table(name_of(table)).count() == len(expected)


def test_a_table_whose_rows_lack_their_key_is_rewritten_once(spark, warehouse, tmp_path):
    """A table made before ``_cdc_key``: the column is added, the next batch rewrites every bucket
    (the rows get their keys), and the batches after it merge on read."""
    table = "MOR.OLD"
    rows = {i: {"id": i, "v": f"v{i}", NASTY: i} for i in range(40)}
    apply(spark, tmp_path, "old-seed", [gg(table, "I", i + 1, after=r) for i, r in rows.items()])
    name = name_of(table)
    spark.sql(f"ALTER TABLE {name} DROP COLUMN _cdc_key")  # the layout before this change
    spark.sql(f"ALTER TABLE {name} UNSET TBLPROPERTIES ('{compact.ROW_KEYS_PROPERTY}', 'write.merge.mode')")
    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('{compact.MIN_ROWS_PROPERTY}'='0')")
    first = apply(spark, tmp_path, "old-b2", [gg(table, "U", 101, before={"id": 1}, after={"id": 1, "v": "b2"})])
    entry = first["tables"][table]
    assert entry["merge_mode"] == "overwrite" and entry["buckets_rewritten"] == BUCKETS, entry
    props = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {name}").collect()}
    assert props[compact.ROW_KEYS_PROPERTY] == "1" and props["write.merge.mode"] == "merge-on-read"
    second = apply(spark, tmp_path, "old-b3", [gg(table, "D", 102, before={"id": 2})])["tables"][table]
    assert second["merge_mode"] == "merge-on-read" and second["files_removed"] == 0, second
    rows[1]["v"] = "b2"
    del rows[2]
    assert_rows(spark, warehouse, table, rows)


def test_scd2_history_follows_a_merge_on_read_batch(spark, warehouse, tmp_path):
    table = "MOR.HIST"
    rows = {i: {"id": i, "v": f"v{i}", NASTY: i} for i in range(20)}
    apply(spark, tmp_path, "hist-seed", [gg(table, "I", i + 1, after=r) for i, r in rows.items()], scd2=(table,))
    spark.sql(f"ALTER TABLE {name_of(table)} SET TBLPROPERTIES ('{compact.MIN_ROWS_PROPERTY}'='0')")
    report = apply(
        spark,
        tmp_path,
        "hist-b2",
        [gg(table, "U", 101, before={"id": 1}, after={"id": 1, "v": "b2"}), gg(table, "D", 102, before={"id": 2})],
        scd2=(table,),
    )
    assert report["tables"][table]["merge_mode"] == "merge-on-read", report["tables"][table]
    rows[1]["v"] = "b2"
    del rows[2]
    assert_rows(spark, warehouse, table, rows)
    versions = read_rows(warehouse, table + "__history", include_meta=True, namespace=NS)
    current = {r["id"]: r["v"] for r in versions if r["is_current"]}
    assert current == {i: r["v"] for i, r in rows.items()}
    assert sorted((r["v"], r["is_current"]) for r in versions if r["id"] in (1, 2)) == [
        ("b2", True),
        ("v1", False),
        ("v2", False),
    ]


def test_a_table_s_first_batch_appends_its_log_beside_the_fold_and_commits_the_table_after_it(
    spark, warehouse, tmp_path, monkeypatch
):
    table = "MOR.BESIDE"
    steps: list[tuple[str, str]] = []
    append, commit = compact_table_module.append_to_log, compact_table_module.commit_fold

    def appending(*args, **kwargs):
        append(*args, **kwargs)
        steps.append(("log", threading.current_thread().name))

    def committing(*args, **kwargs):
        steps.append(("table", threading.current_thread().name))
        return commit(*args, **kwargs)

    monkeypatch.setattr(compact_table_module, "append_to_log", appending)
    monkeypatch.setattr(compact_table_module, "commit_fold", committing)
    apply(spark, tmp_path, "beside-b1", [gg(table, "I", i + 1, after={"id": i, "v": "a", NASTY: i}) for i in range(50)])
    (log_step, log_thread), (table_step, table_thread) = steps
    assert (log_step, table_step) == ("log", "table")  # the log's commit first
    assert log_thread.startswith("log-append") and not table_thread.startswith("log-append")
    steps.clear()  # the next batch finds a log: appended first, on the table's own thread
    apply(spark, tmp_path, "beside-b2", [gg(table, "U", 100, before={"id": 1}, after={"id": 1, "v": "b"})])
    assert [s for s, _ in steps] == ["log", "table"] and steps[0][1] == steps[1][1]
    assert spark_rows(spark, table)[1]["v"] == "b" and len(spark_rows(spark, table)) == 50


def test_a_failed_log_append_beside_the_fold_leaves_the_table_uncommitted(spark, warehouse, tmp_path, monkeypatch):
    table = "MOR.BESIDE_FAILS"

    def failing(*args, **kwargs):
        raise OSError("the log's storage went away")

    monkeypatch.setattr(compact_table_module, "append_to_log", failing)
    with pytest.raises(CompactFailed, match="storage went away"):
        apply(spark, tmp_path, "fails-b1", [gg(table, "I", 1, after={"id": 1, "v": "a", NASTY: 1})])
    assert batch_commits(warehouse, table, "fails-b1") == 0
