"""Holding back incomplete transactions between batches.

A landing file can end in the middle of a source transaction. Where the format marks
transaction ends (``tx_last`` on the last event, or a ``TX_END`` event), events of a
transaction whose end is not in the batch are held back and handed to the next batch
of the same source, so a lake table never shows half a transaction. A transaction that
stays incomplete for :data:`MAX_HELD_BATCHES` batches is released (its end was lost
upstream): holding it forever would lose it.

Held events of batch B are written to ``<staging>/_held/B/``; the batch that takes them
over records that in its ``held_in.json``, which a retry of that batch re-reads so that
it sees the same input.
"""

from __future__ import annotations

import json
from pathlib import Path

MAX_HELD_BATCHES = 3
HELD_DIR = "_held"


def held_inputs(batch_dir: Path) -> list[Path]:
    """Held-event folders this batch takes over (decided once, then fixed for retries)."""
    record = batch_dir / "held_in.json"
    root = batch_dir.parent / HELD_DIR
    if record.exists():
        names = json.loads(record.read_text())
    else:
        taken: set[str] = set()
        for other in batch_dir.parent.glob("*/held_in.json"):
            if other.parent != batch_dir:
                taken.update(json.loads(other.read_text()))
        names = sorted(
            d.name
            for d in root.glob("*")
            if d.is_dir() and d.name != batch_dir.name and d.name not in taken and (d / "_SUCCESS").exists()
        )
        record.write_text(json.dumps(names))
    return [root / name for name in names]


def held_output(batch_dir: Path) -> Path:
    return batch_dir.parent / HELD_DIR / batch_dir.name


def tx_mark():
    """True on an event that marks a transaction's bounds: only then can a transaction be incomplete."""
    from pyspark.sql import functions as F

    return F.col("tx_last").isNotNull() | F.col("op").isin("TX_END", "TX_BEGIN")


def split_incomplete(spark, events, carried, marked: bool | None = None):
    """(events to apply now, events to hold) from this batch's events plus carried ones.

    ``carried`` rows have ``_held_age`` >= 1; this batch's rows get 0. ``marked``: whether any event
    is a :func:`tx_mark`, when the caller has counted them (else one job finds out).
    """
    from pyspark.sql import functions as F

    events = events.withColumn("_held_age", F.lit(0))
    if carried is not None:
        events = events.unionByName(carried.withColumn("_held_age", F.col("_held_age") + 1))
    if marked is None:
        marked = bool(events.where(tx_mark()).limit(1).count())
    if not marked:
        return events.drop("_held_age"), None
    done = (
        events.where(F.col("tx_id").isNotNull() & ((F.col("tx_last") == True) | (F.col("op") == "TX_END")))  # noqa: E712
        .select("tx_id")
        .distinct()
        .withColumn("_done", F.lit(True))
    )
    flagged = events.join(done, "tx_id", "left").withColumn(
        "_hold", F.col("tx_id").isNotNull() & F.col("_done").isNull() & (F.col("_held_age") < MAX_HELD_BATCHES)
    )
    keep = flagged.where(~F.col("_hold")).drop("_done", "_hold", "_held_age")
    hold = flagged.where(F.col("_hold")).drop("_done", "_hold")
    return keep, hold
