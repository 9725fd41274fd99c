"""Incomplete trailing transactions are held back and handed to the next batch."""

from __future__ import annotations

import json

import pytest

from cdclake.jobs.decode import DECODED_SPARK_DDL
from cdclake.transactions import MAX_HELD_BATCHES, held_inputs, held_output, split_incomplete

pytestmark = pytest.mark.spark
DDL = DECODED_SPARK_DDL.replace("kind string, ", "").replace(", error string, raw binary", "")


def frame(spark, rows):
    full = [
        (t, op, seq, None, tx, None, last, None, None, None, None, None, "f", i)
        for i, (t, op, seq, tx, last) in enumerate(rows)
    ]
    return spark.createDataFrame(full, DDL)


def test_trailing_transaction_is_held_then_completed(spark, tmp_path):
    batch1, batch2 = tmp_path / "b1", tmp_path / "b2"
    batch1.mkdir()
    batch2.mkdir()
    first = frame(
        spark,
        [
            ("T.A", "INSERT", "1", "tx1", False),
            ("T.A", "INSERT", "2", "tx1", True),
            ("T.A", "INSERT", "3", "tx2", False),
        ],
    )
    assert held_inputs(batch1) == []
    keep, hold = split_incomplete(spark, first, None)
    assert sorted(r["seq"] for r in keep.collect()) == ["1", "2"]
    hold.write.parquet(str(held_output(batch1)))
    assert json.loads((batch1 / "held_in.json").read_text()) == []

    inputs = held_inputs(batch2)
    assert inputs == [held_output(batch1)]
    carried = spark.read.parquet(*map(str, inputs))
    second = frame(spark, [("T.A", "INSERT", "4", "tx2", True)])
    keep, hold = split_incomplete(spark, second, carried)
    assert sorted(r["seq"] for r in keep.collect()) == ["3", "4"] and hold.count() == 0
    # a retry of batch 2 takes over the same held events; no other batch takes them again
    assert held_inputs(batch2) == inputs
    batch3 = tmp_path / "b3"
    batch3.mkdir()
    assert held_inputs(batch3) == []


def test_a_transaction_whose_end_never_comes_is_released(spark):
    events = frame(spark, [("T.A", "INSERT", "1", "tx9", False), ("T.A", "INSERT", "2", "tx8", True)])
    from pyspark.sql import functions as F

    carried = events.where("tx_id = 'tx9'").withColumn("_held_age", F.lit(MAX_HELD_BATCHES - 1))
    keep, hold = split_incomplete(spark, events.where("tx_id = 'tx8'"), carried)
    assert sorted(r["seq"] for r in keep.collect()) == ["1", "2"] and hold.count() == 0


def test_formats_without_transaction_marks_hold_nothing(spark):
    events = frame(spark, [("T.A", "INSERT", "1", None, None)])
    keep, hold = split_incomplete(spark, events, None)
    assert keep.count() == 1 and hold is None
