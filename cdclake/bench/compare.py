"""Does a lake table hold the stream's final state? Row by row, in Spark.

Formats type columns differently (a timestamp is text in GoldenGate JSON, a ``timestamp`` from
Debezium; a decimal may land as ``double``), so both sides are first brought to one canonical
text per column kind, then joined on the key: a row is wrong when it is missing, extra, or
differs in any compared column.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from cdclake.bench.model import Table, text_of

_CANON = {
    "long": "CAST(TRY_CAST({c} AS BIGINT) AS STRING)",
    "decimal": "CAST(TRY_CAST({c} AS DECIMAL(38,6)) AS STRING)",
    "double": "CAST(TRY_CAST({c} AS DECIMAL(38,6)) AS STRING)",
    "bool": "CAST(TRY_CAST({c} AS BOOLEAN) AS STRING)",
    "ts": "DATE_FORMAT(TRY_CAST({c} AS TIMESTAMP), 'yyyy-MM-dd HH:mm:ss.SSS')",
    "date": "CAST(TRY_CAST({c} AS DATE) AS STRING)",
    "string": "CAST({c} AS STRING)",
}


def expected_frame(spark, table: Table, rows: dict[tuple, list]):
    """The stream's final rows of ``table`` as a DataFrame of text columns."""
    texts = [text_of(c) for c in table.columns]
    columns: list[list[str | None]] = [[] for _ in table.columns]
    for row in rows.values():
        for i, (f, v) in enumerate(zip(texts, row, strict=True)):
            columns[i].append(None if v is None else f(v))
    arrow = pa.table({c.name: pa.array(col, pa.string()) for c, col in zip(table.columns, columns, strict=True)})
    return spark.createDataFrame(arrow)


def canonical(frame, table: Table, kinds: frozenset[str] | None = None):
    """``k`` (the key) and ``v`` (the compared columns) as canonical text."""
    from pyspark.sql import functions as F

    def canon(name: str, kind: str):
        return F.coalesce(F.expr(_CANON[kind].format(c=f"`{name}`")), F.lit("\u2205"))

    keys = [canon(c.name, c.kind) for c in table.columns if c.name in table.keys]
    values = [
        canon(c.name, c.kind) for c in table.columns if c.name not in table.keys and (kinds is None or c.kind in kinds)
    ]
    return frame.select(F.concat_ws("|", *keys).alias("k"), F.concat_ws("\u001f", *values).alias("v"))


def diff(left, right) -> dict[str, int]:
    """Rows of ``left`` (expected) missing from ``right``, extra in it, and different."""
    from pyspark.sql import functions as F

    joined = left.alias("a").join(right.alias("b"), F.col("a.k") == F.col("b.k"), "full_outer")
    row = joined.agg(
        F.count(F.col("a.k")).alias("expected"),
        F.count(F.col("b.k")).alias("actual"),
        F.sum(F.when(F.col("b.k").isNull(), 1).otherwise(0)).alias("missing"),
        F.sum(F.when(F.col("a.k").isNull(), 1).otherwise(0)).alias("extra"),
        F.sum(
            F.when(F.col("a.k").isNotNull() & F.col("b.k").isNotNull() & (F.col("a.v") != F.col("b.v")), 1).otherwise(0)
        ).alias("different"),
    ).first()
    out: dict[str, Any] = {k: int(row[k] or 0) for k in ("expected", "actual", "missing", "extra", "different")}
    out["wrong"] = out["missing"] + out["extra"] + out["different"]
    return out


def compare_tables(
    spark, tables: dict[str, Table], expected: dict[str, Any], names: dict[str, str], kinds=None
) -> dict[str, int]:
    """Sum of :func:`diff` over the tables; ``names``: lake table name by the model's table name."""
    total = {"expected": 0, "actual": 0, "missing": 0, "extra": 0, "different": 0, "wrong": 0}
    for table_name, table in tables.items():
        lake = names.get(table_name)
        left = canonical(expected[table_name], table, kinds)
        if lake is None or not spark.catalog.tableExists(lake):
            counts = {"expected": left.count(), "actual": 0, "extra": 0, "different": 0}
            counts["missing"] = counts["wrong"] = counts["expected"]
        else:
            counts = diff(left, canonical(spark.table(lake), table, kinds))
        for key in total:
            total[key] += counts[key]
    return total
