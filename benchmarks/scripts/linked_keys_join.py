"""Micro-benchmark behind compact's linked-key search (``jobs/compact.py`` ``_linked_keys``).

One join on ``_key = k OR _old_key = k`` against two equi-joins (left semi, union): the same
pairs, but Spark runs the OR condition as a nested loop over every link and every key.

    CDCLAKE_JARS=.jars .venv/bin/python benchmarks/scripts/linked_keys_join.py
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from pyspark.sql import functions as F

from cdclake.runtime.settings import Settings
from cdclake.runtime.spark import build_session

SIZES = [(750, 25_000), (20_000, 100_000)]  # (key-change links in the log, keys in the batch)


def main() -> None:
    spark = build_session("linked-keys", Path(tempfile.mkdtemp()), master="local[*]", jars=Settings.from_env().jars())
    for n_links, n_keys in SIZES:
        ids = spark.range(n_links)
        links = ids.select(F.concat(F.lit("k"), "id").alias("_key"), F.concat(F.lit("o"), "id").alias("_old_key"))
        links = links.cache()
        links.count()
        frontier = spark.range(n_keys).select(F.concat(F.lit("k"), (F.col("id") * 7).cast("string")).alias("k"))
        frontier = frontier.cache()
        frontier.count()
        either = (links["_key"] == frontier["k"]) | (links["_old_key"] == frontier["k"])
        ways = {  # DataFrames are lazy: nothing runs before collect
            "or-join": links.join(frontier, either).select("_key", "_old_key"),
            "two equi-joins": links.join(frontier, links["_key"] == frontier["k"], "left_semi").union(
                links.join(frontier, links["_old_key"] == frontier["k"], "left_semi")
            ),
        }
        for label, pairs in ways.items():
            started = time.perf_counter()
            found = len(pairs.distinct().collect())
            print(f"{n_links} links x {n_keys} keys, {label}: {found} pairs in {time.perf_counter() - started:.2f} s")


if __name__ == "__main__":
    main()
