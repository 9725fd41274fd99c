"""decode -> normalize -> compact on the shared Spark session, read back through pyiceberg."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cdclake.lake.tables import read_rows, snapshot_summaries
from cdclake.local_apply import apply_files
from cdclake.options import Options

pytestmark = pytest.mark.spark


def gg(table: str, op: str, pos: int, before=None, after=None) -> str:
    msg = {"table": table, "op_type": op, "op_ts": f"2024-01-01 00:00:{pos % 60:02d}.000000", "pos": f"{pos:020d}"}
    if before is not None:
        msg["before"] = before
    if after is not None:
        msg["after"] = after
    return json.dumps(msg)


def write(path: Path, lines: list[str]) -> str:
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def apply(spark, warehouse, files, **options):
    opts = Options({k: v for k, v in options.items()})
    return apply_files("goldengate-json", opts, files, warehouse, spark=spark)


def test_two_batches_insert_partial_update_delete_reinsert(spark, warehouse, tmp_path):
    t = "PIPE.ORDERS"
    f1 = write(
        tmp_path / "b1.json",
        [
            gg(t, "I", 1, after={"id": 1, "name": "a", "price": 1.5, "qty": 1}),
            gg(t, "I", 2, after={"id": 2, "name": "b", "price": 2.25, "qty": 2}),
            gg(t, "I", 3, after={"id": 3, "name": "c", "price": 3.0, "qty": 3}),
        ],
    )
    r1 = apply(spark, warehouse, [f1], keys="id")
    assert r1["applied"] == 3 and r1["balanced"], r1
    f2 = write(
        tmp_path / "b2.json",
        [
            gg(t, "U", 4, before={"id": 1}, after={"id": 1, "qty": 10}),  # partial: name/price keep values
            gg(t, "D", 5, before={"id": 2}),
            gg(t, "U", 6, before={"id": 3, "name": "c"}, after={"id": 3, "name": None}),  # NULL, not missing
            gg(t, "I", 7, after={"id": 2, "name": "b2", "price": 9.5, "qty": 20}),  # re-insert of a deleted key
            gg(t, "I", 0, after={"id": 1, "name": "stale", "price": 0.0, "qty": 0}),  # older than the row: stale
        ],
    )
    r2 = apply(spark, warehouse, [f2], keys="id")
    assert (r2["applied"], r2["stale"], r2["quarantined"]) == (4, 1, 0) and r2["balanced"], r2
    assert read_rows(warehouse, t) == [
        {"id": 1, "name": "a", "price": 1.5, "qty": 10},
        {"id": 2, "name": "b2", "price": 9.5, "qty": 20},
        {"id": 3, "name": None, "price": 3.0, "qty": 3},
    ]
    meta = {r["id"]: r for r in read_rows(warehouse, t, include_meta=True)}
    assert meta[1]["_cdc_op"] == "UPDATE" and meta[1]["_cdc_seq"].endswith("4")
    summaries = [s for s in snapshot_summaries(warehouse, t) if s.get("cdclake.batch-id")]
    assert len(summaries) == 2  # one commit per batch
    # the same batch again is a no-op: no new snapshot, same rows
    r3 = apply(spark, warehouse, [f2], keys="id")
    assert r3["tables"][t]["status"] == "already-committed"
    assert len(snapshot_summaries(warehouse, t)) == len(snapshot_summaries(warehouse, t))
    assert len([s for s in snapshot_summaries(warehouse, t) if s.get("cdclake.batch-id")]) == 2


def test_truncate_key_change_and_quarantine(spark, warehouse, tmp_path):
    t = "PIPE.ITEMS"
    f1 = write(tmp_path / "i1.json", [gg(t, "I", 10, after={"id": 1, "v": "x"}), gg(t, "I", 11, after={"id": 2})])
    apply(spark, warehouse, [f1], keys="id")
    f2 = write(
        tmp_path / "i2.json",
        [
            gg(t, "T", 12),
            gg(t, "I", 13, after={"id": 3, "v": "z"}),
            gg(t, "U", 14, before={"id": 3}, after={"id": 30}),  # key change: v comes from the old row
            gg(t, "I", 9, after={"id": 5, "v": "older than the truncate"}),
            gg(t, "I", 15, after={"id": "not-a-number", "v": "bad"}),  # the table's id is a bigint
            "{this is not json",
            gg("PIPE.NOKEY", "I", 16, after={"a": 1}),  # keys=id, but there is no id column
        ],
    )
    r = apply(spark, warehouse, [f2], keys="id")
    assert read_rows(warehouse, t) == [{"id": 30, "v": "z"}]
    assert (r["read"], r["applied"], r["stale"], r["quarantined"]) == (7, 3, 1, 3), r
    assert r["balanced"], r
    summaries = [s for s in snapshot_summaries(warehouse, t) if s.get("cdclake.batch-id") == r["batch_id"]]
    assert summaries[0]["cdclake.truncate-watermark"].endswith("12")


@pytest.mark.parametrize(
    ("driver_fold_rows", "bulk_rows"), [("5000", "0"), ("0", "150000"), ("0", "0")], ids=["driver", "bulk", "workers"]
)
def test_a_table_first_seen_in_a_truncate_only_batch(
    spark, warehouse, tmp_path, monkeypatch, driver_fold_rows, bulk_rows
):
    """A truncate is the first thing we hear of a table (found by the merge law test): the table is created
    with only its meta columns, the watermark holds, and a later batch adds the columns and its rows."""
    monkeypatch.setenv("CDCLAKE_DRIVER_FOLD_ROWS", driver_fold_rows)
    monkeypatch.setenv("CDCLAKE_DRIVER_BULK_ROWS", bulk_rows)
    t = f"PIPE.FIRST_TRUNCATE_{driver_fold_rows}_{bulk_rows}"
    r1 = apply(spark, warehouse, [write(tmp_path / "t1.json", [gg(t, "T", 20)])], keys="id")
    assert r1["balanced"] and read_rows(warehouse, t) == [], r1
    f2 = write(
        tmp_path / "t2.json",
        [gg(t, "I", 21, after={"id": 1, "v": "after"}), gg(t, "I", 19, after={"id": 2, "v": "before the truncate"})],
    )
    r2 = apply(spark, warehouse, [f2], keys="id")
    assert (r2["applied"], r2["stale"]) == (1, 1) and r2["balanced"], r2
    assert read_rows(warehouse, t) == [{"id": 1, "v": "after"}]


def test_two_source_tables_of_one_lake_identifier_are_refused(spark, warehouse, tmp_path):
    """``PIPE.DUP`` and ``pipe.dup`` both map to ``lake.pipe.dup``: the second never writes into the first's
    table, whether it comes in a later batch or in the same one (tables compact side by side)."""
    from cdclake.compaction.runner import CompactFailed

    apply(
        spark, warehouse, [write(tmp_path / "d1.json", [gg("PIPE.DUP", "I", 1, after={"id": 1, "v": "a"})])], keys="id"
    )
    with pytest.raises(CompactFailed, match="two source names map to one identifier"):
        apply(spark, warehouse, [write(tmp_path / "d2.json", [gg("pipe.dup", "I", 2, after={"id": 2})])], keys="id")
    both = [gg("PIPE.DUP2", "I", 3, after={"id": 3}), gg("pipe.dup2", "I", 4, after={"id": 4})]
    with pytest.raises(CompactFailed, match="two source names map to one identifier"):
        apply(spark, warehouse, [write(tmp_path / "d3.json", both)], keys="id")
    assert read_rows(warehouse, "PIPE.DUP") == [{"id": 1, "v": "a"}]
    assert len(read_rows(warehouse, "PIPE.DUP2")) == 1  # one of the two wins the table, the other is refused


@pytest.mark.parametrize("bucket_read_rows", [0, 200_000], ids=["semi-join", "bucket-read"])
def test_a_small_batch_on_a_larger_table_folds_onto_the_rows_it_reads(
    spark, warehouse, tmp_path, monkeypatch, bucket_read_rows
):
    """The table holds more rows than the driver reads whole (bound 4 here): the current rows of the batch's
    keys are read by key (semi-join, or whole buckets filtered in Arrow) and the partial updates land on them."""
    from cdclake.compaction import driver_io

    monkeypatch.setenv("CDCLAKE_DRIVER_FOLD_ROWS", "4")
    monkeypatch.setattr(driver_io, "BUCKET_READ_ROWS", bucket_read_rows)
    t = f"PIPE.LARGER_{bucket_read_rows}"
    seed = [gg(t, "I", i, after={"id": i, "name": f"n{i}", "qty": i}) for i in range(1, 11)]
    apply(spark, warehouse, [write(tmp_path / "l1.json", seed)], keys="id")  # 10 events: above the bound (bulk)
    updates = [
        gg(t, "U", 11, before={"id": 2}, after={"id": 2, "qty": 20}),
        gg(t, "U", 12, before={"id": 7}, after={"id": 7, "name": "seven"}),
        gg(t, "U", 13, before={"id": 2}, after={"id": 2, "name": "two"}),
    ]
    r = apply(spark, warehouse, [write(tmp_path / "l2.json", updates)], keys="id")
    # a small table's bucket overwrite: its other rows read by pyiceberg, committed from the driver
    assert r["tables"][t]["fold"] == "driver, 2 keys onto their rows, committed from the driver", r["tables"][t]
    rows = {row["id"]: row for row in read_rows(warehouse, t)}
    assert len(rows) == 10
    assert rows[2] == {"id": 2, "name": "two", "qty": 20} and rows[7] == {"id": 7, "name": "seven", "qty": 7}
    assert rows[5] == {"id": 5, "name": "n5", "qty": 5}


@pytest.mark.parametrize(
    ("bulk_bytes", "fold"), [("1", "workers"), (str(144 * 2**20), "driver, committed from the driver")]
)
def test_the_bulk_path_is_bounded_by_its_events_bytes(spark, warehouse, tmp_path, monkeypatch, bulk_bytes, fold):
    """Above the small driver bound, a batch folds in the driver only while its events' uncompressed bytes fit
    ``CDCLAKE_DRIVER_BULK_BYTES`` (wide rows do not slip under the event count); either way, the same rows."""
    monkeypatch.setenv("CDCLAKE_DRIVER_FOLD_ROWS", "0")
    monkeypatch.setenv("CDCLAKE_DRIVER_BULK_BYTES", bulk_bytes)
    t = f"PIPE.BULK_BYTES_{fold.upper()}"
    events = [gg(t, "I", i, after={"id": i, "v": f"v{i}"}) for i in range(1, 6)]
    events.append(gg(t, "U", 6, before={"id": 2}, after={"id": 2, "v": "two"}))
    r = apply(spark, warehouse, [write(tmp_path / "b.json", events)], keys="id")
    assert r["tables"][t]["fold"] == fold, r["tables"][t]
    assert sorted((row["id"], row["v"]) for row in read_rows(warehouse, t)) == [
        (1, "v1"),
        (2, "two"),
        (3, "v3"),
        (4, "v4"),
        (5, "v5"),
    ]


def test_a_bulk_batch_whose_key_changes_route_past_the_bound_still_folds_in_the_driver(
    spark, warehouse, tmp_path, monkeypatch
):
    """6 events at a bulk bound of 6, one a key change across buckets (logged under both keys' buckets): 7
    routed rows. They are the batch's own rows, already in hand, so the fold stays in the driver (it used
    to fall to the workers path after routing in the driver: a 150k-event table of the 1M bench, 50 s)."""
    monkeypatch.setenv("CDCLAKE_DRIVER_FOLD_ROWS", "0")
    monkeypatch.setenv("CDCLAKE_DRIVER_BULK_ROWS", "6")
    t = "PIPE.BULK_LINKS"
    events = [gg(t, "I", i, after={"id": i, "v": f"v{i}"}) for i in range(1, 6)]
    events.append(gg(t, "U", 6, before={"id": 1}, after={"id": 9, "v": "moved"}))  # bucket 8 -> bucket 0
    r = apply(spark, warehouse, [write(tmp_path / "links.json", events)], keys="id")
    assert r["tables"][t]["fold"] == "driver, committed from the driver", r["tables"][t]
    assert sorted((row["id"], row["v"]) for row in read_rows(warehouse, t)) == [
        (2, "v2"),
        (3, "v3"),
        (4, "v4"),
        (5, "v5"),
        (9, "moved"),
    ]


@pytest.mark.parametrize(("threads", "fold"), [("4", "driver, committed from the driver"), ("2", "workers")])
def test_a_table_over_its_share_takes_the_shares_of_the_bulk_budget_it_needs(
    spark, warehouse, tmp_path, monkeypatch, threads, fold
):
    """A bulk bound of 4 events per table, and a table of 10 events: it needs 2.5 tables' shares of the
    driver's budget. With 4 (``CDCLAKE_COMPACT_THREADS``) it takes 3 and folds in the driver, beside the
    batch's other table; with 2 on the workers. Either way, the same rows."""
    monkeypatch.setenv("CDCLAKE_DRIVER_FOLD_ROWS", "0")
    monkeypatch.setenv("CDCLAKE_DRIVER_BULK_ROWS", "4")
    monkeypatch.setenv("CDCLAKE_COMPACT_THREADS", threads)
    big, small = f"PIPE.WHOLE_BUDGET_{threads}", f"PIPE.ONE_SHARE_{threads}"
    events = [gg(big, "I", i, after={"id": i, "v": f"v{i}"}) for i in range(1, 10)]
    events.append(gg(big, "U", 10, before={"id": 2}, after={"id": 2, "v": "two"}))
    events += [gg(small, "I", 20 + i, after={"id": i, "v": "s"}) for i in range(1, 4)]
    r = apply(spark, warehouse, [write(tmp_path / "whole.json", events)], keys="id")
    assert r["tables"][big]["fold"] == fold, r["tables"][big]
    assert r["tables"][small]["fold"] == "driver, committed from the driver", r["tables"][small]
    assert sorted((row["id"], row["v"]) for row in read_rows(warehouse, big)) == [
        (i, "two" if i == 2 else f"v{i}") for i in range(1, 10)
    ]
    assert len(read_rows(warehouse, small)) == 3


def test_integers_beyond_bigint_make_a_decimal_column_and_land_exactly(spark, warehouse, tmp_path):
    """A new column whose integers go past bigint is ``decimal(38,0)``: every value lands exactly (it used
    to be ``bigint``, and the values past it were quarantined)."""
    from decimal import Decimal

    t = "PIPE.HUGE_INTS"
    events = [gg(t, "I", 1, after={"id": 1, "n": 2**64 + 1}), gg(t, "I", 2, after={"id": 2, "n": -5})]
    r = apply(spark, warehouse, [write(tmp_path / "huge.json", events)], keys="id")
    assert r["balanced"] and r["quarantined"] == 0, r
    from cdclake.lake.naming import spark_table_name

    assert spark.table(spark_table_name(t, None)).schema["n"].dataType.simpleString() == "decimal(38,0)"
    assert sorted((row["id"], row["n"]) for row in read_rows(warehouse, t)) == [
        (1, Decimal(2**64 + 1)),
        (2, Decimal(-5)),
    ]


def test_one_row_change_rewrites_a_small_fraction_of_the_files(spark, warehouse, tmp_path):
    t = "PIPE.BIG"
    rows = [gg(t, "I", i, after={"id": i, "v": f"row {i}"}) for i in range(1, 401)]
    apply(spark, warehouse, [write(tmp_path / "big1.json", rows)], keys="id")
    report = apply(
        spark, warehouse, [write(tmp_path / "big2.json", [gg(t, "U", 500, after={"id": 7, "v": "x"})])], keys="id"
    )
    summary = next(s for s in snapshot_summaries(warehouse, t) if s.get("cdclake.batch-id") == report["batch_id"])
    total = int(summary["total-data-files"])
    assert total >= 16  # one file per key bucket at least
    assert int(summary["deleted-data-files"]) == 1 and int(summary["added-data-files"]) == 1
    assert report["tables"][t]["buckets_rewritten"] == 1
    assert len(read_rows(warehouse, t)) == 400


def test_scd2_history_table(spark, warehouse, tmp_path):
    from cdclake.local_apply import apply_files

    t = "PIPE.HIST"
    b1 = write(
        tmp_path / "h1.json", [gg(t, "I", 1, after={"id": 1, "v": "a"}), gg(t, "I", 2, after={"id": 2, "v": "b"})]
    )
    b2 = write(
        tmp_path / "h2.json",
        [gg(t, "U", 3, before={"id": 1}, after={"id": 1, "v": "a2"}), gg(t, "D", 4, before={"id": 2})],
    )
    for path in (b2, b1):  # the later batch first: history must not care
        apply_files("goldengate-json", Options({"keys": "id"}), [path], warehouse, spark=spark, scd2=[t])
    versions = read_rows(warehouse, t + "__history", include_meta=True)
    got = sorted((r["id"], r["v"], r["is_current"], r["_cdc_op"], r["valid_to"] is None) for r in versions)
    assert got == [(1, "a", False, "INSERT", False), (1, "a2", True, "UPDATE", True), (2, "b", False, "INSERT", False)]
    assert read_rows(warehouse, t) == [{"id": 1, "v": "a2"}]


def test_scd2_history_table_left_behind_by_a_dropped_table_gets_the_new_columns(spark, warehouse, tmp_path):
    """A new main table creates its history table without a look first; one that is there already (its main
    table dropped by hand) is checked as before, so a column it lacks is added, not lost."""
    from cdclake.compaction.lake_tables import HISTORY_SUFFIX, LOG_SUFFIX

    t = "PIPE.HIST_LEFT"
    opts = Options({"keys": "id"})
    b1 = write(tmp_path / "l1.json", [gg(t, "I", 1, after={"id": 1, "v": "a"})])
    apply_files("goldengate-json", opts, [b1], warehouse, spark=spark, scd2=[t])
    spark.sql("DROP TABLE lake.pipe.hist_left")
    spark.sql(f"DROP TABLE lake.pipe.hist_left{LOG_SUFFIX}")
    b2 = write(tmp_path / "l2.json", [gg(t, "I", 2, after={"id": 2, "v": "b", "w": 7})])
    report = apply_files("goldengate-json", opts, [b2], warehouse, spark=spark, scd2=[t])
    assert report["balanced"], report
    history = read_rows(warehouse, t + HISTORY_SUFFIX)
    assert sorted((r["id"], r["v"], r["w"]) for r in history) == [(1, "a", None), (2, "b", 7)]


def test_full_refresh_rebuilds_the_table_from_its_change_log(spark, warehouse, tmp_path):
    from cdclake.jobs import compact

    t = "PIPE.REBUILD"
    apply(
        spark,
        warehouse,
        [
            write(
                tmp_path / "r1.json",
                [gg(t, "I", 1, after={"id": 1, "v": "a"}), gg(t, "I", 2, after={"id": 2, "v": "b"})],
            )
        ],
        keys="id",
    )
    report = apply(
        spark, warehouse, [write(tmp_path / "r2.json", [gg(t, "U", 3, after={"id": 2, "v": "b2"})])], keys="id"
    )
    before = read_rows(warehouse, t, include_meta=True)
    spark.sql("DELETE FROM lake.pipe.rebuild WHERE id = 1")  # damage the current-state table
    spark.sql("UPDATE lake.pipe.rebuild SET v = 'wrong' WHERE id = 2")
    compact.run(spark, warehouse / "_staging" / report["batch_id"], full_refresh=True)
    assert read_rows(warehouse, t, include_meta=True) == before


def test_tombstones_hold_until_retention_expires_them(spark, warehouse, tmp_path):
    import datetime as dt

    from cdclake.jobs import retention

    t = "PIPE.TOMB"
    apply(
        spark,
        warehouse,
        [
            write(
                tmp_path / "t1.json",
                [
                    gg(t, "I", 1, after={"id": 1, "v": "a"}),
                    gg(t, "D", 5, before={"id": 1}),
                    gg(t, "I", 6, after={"id": 2, "v": "b"}),
                ],
            )
        ],
        keys="id",
    )
    replay = write(tmp_path / "t2.json", [gg(t, "I", 3, after={"id": 1, "v": "old replay"})])
    assert apply(spark, warehouse, [replay], keys="id")["stale"] == 1
    assert read_rows(warehouse, t) == [{"id": 2, "v": "b"}]  # the tombstone held
    kept = retention.run(spark, "lake.pipe.tomb", days=30, now=dt.datetime(2024, 1, 2, tzinfo=dt.UTC))
    assert (kept["tombstones"], kept["expired"]) == (1, 0)
    gone = retention.run(spark, "lake.pipe.tomb", days=30, now=dt.datetime(2024, 3, 1, tzinfo=dt.UTC))
    assert (gone["tombstones"], gone["expired"]) == (1, 1)
    assert read_rows(warehouse, t) == [{"id": 2, "v": "b"}]  # the lake table does not change
    assert retention.run(spark, "lake.pipe.tomb", days=30)["tombstones"] == 0


def test_debezium_batch_counts_skipped_tombstones_and_applies_typed_rows(spark, warehouse, tmp_path):
    def env(op, before, after, lsn):
        schema = {
            "type": "struct",
            "fields": [
                {
                    "field": "before",
                    "type": "struct",
                    "optional": True,
                    "fields": [
                        {"field": "id", "type": "int32"},
                        {
                            "field": "price",
                            "type": "bytes",
                            "optional": True,
                            "name": "org.apache.kafka.connect.data.Decimal",
                            "parameters": {"scale": "2"},
                        },
                    ],
                },
                {
                    "field": "after",
                    "type": "struct",
                    "optional": True,
                    "fields": [
                        {"field": "id", "type": "int32"},
                        {
                            "field": "price",
                            "type": "bytes",
                            "optional": True,
                            "name": "org.apache.kafka.connect.data.Decimal",
                            "parameters": {"scale": "2"},
                        },
                    ],
                },
            ],
        }
        payload = {
            "op": op,
            "before": before,
            "after": after,
            "ts_ms": 1700000000000,
            "source": {"db": "shop", "schema": "public", "table": "items", "lsn": lsn},
        }
        return json.dumps({"schema": schema, "payload": payload})

    lines = [
        env("c", None, {"id": 1, "price": "AdTA"}, 10),
        "null",
        env("c", None, {"id": 2, "price": "W5s="}, 11),
        env("u", {"id": 2, "price": "W5s="}, {"id": 2, "price": "AdTA"}, 12),
        "null",
    ]
    report = apply_files(
        "debezium-json", Options({"keys": "id"}), [write(tmp_path / "dbz.json", lines)], warehouse, spark=spark
    )
    assert report["skipped"] == 2 and report["balanced"], report
    from decimal import Decimal

    assert read_rows(warehouse, "public.items") == [
        {"id": 1, "price": Decimal("1200.00")},
        {"id": 2, "price": Decimal("1200.00")},
    ]


def test_qlik_trailing_transaction_is_held_until_its_end_arrives(spark, warehouse, tmp_path):
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(
        "qlik_writers", Path(__file__).resolve().parent.parent / "formats" / "test_qlik_avro.py"
    )
    q = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = q
    spec.loader.exec_module(q)
    table = q.customers()
    first = table.metadata() + b"".join(
        [
            table.data(
                "INSERT",
                {"ID": 1, "NAME": "a", "CITY": "x", "BALANCE": "1.00"},
                q.seq(1),
                tx="T1",
                counter=1,
                last=False,
            ),
            table.data(
                "INSERT",
                {"ID": 2, "NAME": "b", "CITY": "y", "BALANCE": "2.00"},
                q.seq(2),
                tx="T1",
                counter=2,
                last=True,
            ),
            table.data(
                "INSERT",
                {"ID": 3, "NAME": "c", "CITY": "z", "BALANCE": "3.00"},
                q.seq(3),
                tx="T2",
                counter=1,
                last=False,
            ),
        ]
    )
    second = table.data(  # no metadata message: it came in the earlier batch
        "UPDATE",
        {"ID": 1, "NAME": "a2", "CITY": "x", "BALANCE": "1.50"},
        q.seq(4),
        before={"ID": 1, "NAME": "a", "CITY": "x", "BALANCE": "1.00"},
        tx="T2",
        counter=2,
        last=True,
    )
    (tmp_path / "q1.avro").write_bytes(first)
    (tmp_path / "q2.avro").write_bytes(second)
    r1 = apply_files("qlik-avro", Options({}), [str(tmp_path / "q1.avro")], warehouse, spark=spark)
    assert r1["held"] == 1 and r1["balanced"], r1
    assert [r["ID"] for r in read_rows(warehouse, "SALES.CUSTOMERS")] == [1, 2]  # never half of T2
    r2 = apply_files("qlik-avro", Options({}), [str(tmp_path / "q2.avro")], warehouse, spark=spark)
    assert r2["carried_in"] == 1 and r2["held"] == 0 and r2["balanced"], r2
    rows = read_rows(warehouse, "SALES.CUSTOMERS")
    assert [(r["ID"], r["NAME"], str(r["BALANCE"])) for r in rows] == [
        (1, "a2", "1.50"),
        (2, "b", "2.00"),
        (3, "c", "3.00"),
    ]


def test_in_order_keys_land_when_a_late_key_of_the_batch_sends_the_fold_to_the_workers(
    spark, warehouse, tmp_path, monkeypatch
):
    """Key 2's update follows its row (row state: folded onto it); key 1's late event has more logged events
    behind it than the driver fold's bound, so the batch is folded on the workers: key 2 must be folded there
    too, not left out."""
    monkeypatch.setenv("CDCLAKE_DRIVER_FOLD_ROWS", "4")
    t = "PIPE.LATE_BEHIND_BOUND"
    seed = [gg(t, "I", 10, after={"id": 1, "v": "v10"}), gg(t, "I", 11, after={"id": 2, "v": "a"})]
    seed += [gg(t, "U", 10 + i, before={"id": 1}, after={"id": 1, "v": f"v{10 + i}"}) for i in range(2, 12)]
    apply(spark, warehouse, [write(tmp_path / "s1.json", seed)], keys="id")
    batch = [
        gg(t, "U", 100, before={"id": 2}, after={"id": 2, "v": "b"}),  # after its row: onto the row
        gg(t, "U", 5, before={"id": 1}, after={"id": 1, "v": "late"}),  # older than every logged event of key 1
    ]
    r = apply(spark, warehouse, [write(tmp_path / "s2.json", batch)], keys="id")
    assert r["tables"][t]["fold"].startswith("workers"), r["tables"][t]
    assert read_rows(warehouse, t) == [{"id": 1, "v": "v21"}, {"id": 2, "v": "b"}]
