"""The common path of the fold at native speed: keys without key changes, folded in Spark SQL.

:func:`cdclake.merge.refold` applies a key's logged events one by one in order. For a key that no
key change touches, that loop has a closed form, which Spark computes with one window and one
aggregation per key (no Python per event):

- the *reset* is the key's last INSERT / UPSERT / DELETE (every event below the truncate
  watermark left out);
- the row is gone when the last event is a DELETE (or no event is left);
- each column is the value of the last event at or after the reset (after it, for a DELETE) whose
  after image has the column (``max_by`` over the order, filtered on the column's presence: a
  partial update leaves the others alone); failing that, when the reset is a DELETE or there is
  none, the before image of the first event after it (an UPDATE onto no row starts from its before
  image); else NULL;
- ``_cdc_op`` / ``_cdc_seq`` / ``_cdc_ts`` / ``_cdc_batch`` are the last event's.

The values stay JSON text through the fold (choosing a value needs no type); only the chosen ones
are cast, in one Python pass over the output rows with the same ``cast`` as everywhere else, so a
value is typed exactly as the reference model types it. Applied / stale counts follow
:func:`refold`: an event of this batch is stale when it is below the watermark or older than an
event of another batch for its key; an event logged twice (same batch, file, offset, seq and op: a batch
re-run after snapshot expiry appends its rows again) counts once, as :func:`refold` counts it. Ties in
order fall to the batch, then the op, so that copies of one event sit together and every run orders a
key's events alike. ``tests/compaction/test_native_fold.py`` holds this path to
``fold_part`` on random histories; the merge law test runs it through the whole job.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import reduce

import pyarrow as pa
import pyarrow.compute as pc

from cdclake.compaction.folding import alias_names, out_schema
from cdclake.compaction.lake_tables import META_DDL, META_NAMES, sql_string, table_ddl
from cdclake.events.change import from_json
from cdclake.schema.coltypes import arrow_type, cast

RESET_OPS = ("INSERT", "UPSERT", "DELETE")


def _text_columns(n: int) -> list[str]:
    return [f"_cdc_txt{i}" for i in range(n)]


#: What ``merge.refold`` counts a logged event by (with the key: the fold is per key).
IDENTITY = ("_seq", "source_file", "source_offset", "_cdc_batch", "op")


def _copy_of_previous(window):
    """True where an event repeats the identity of the one before it in ``window`` (ordered by
    :data:`IDENTITY`, so every copy of an event follows its first): a copy the counts skip."""
    from pyspark.sql import functions as F

    same = [F.col(c).eqNullSafe(F.lag(c).over(window)) for c in IDENTITY]
    return F.coalesce(reduce(lambda a, b: a & b, same), F.lit(False))


def fold_text(events, columns: list[tuple[str, str]], batch_id: str, truncate_seq: str | None):
    """Per key of ``events`` (change-log rows, no key changes): its row as JSON text per column.

    Columns: the text columns, ``_cdc_op``, ``_cdc_seq``, ``_cdc_ts``, ``_cdc_batch``, ``_cdc_bucket``,
    ``_cdc_key``, ``_gone`` (no row), ``_applied``, ``_stale`` (this batch's events of the key).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    seq = F.coalesce(F.col("seq"), F.lit(""))
    live = seq >= F.lit(truncate_seq) if truncate_seq is not None else F.lit(True)
    seq_col = F.col("_seq")
    mine = F.col("_cdc_batch") == F.lit(batch_id)
    # one sort by key and order; every comparison after it is of longs: the event's rank in its key's
    # order (replays of one event tie on the order, and apply in batch id order), and that order's rank
    # without the batch (what "older than another batch's event" compares)
    in_order = Window.partitionBy("_key").orderBy(*IDENTITY)
    by_order3 = Window.partitionBy("_key").orderBy("_seq", "source_file", "source_offset")
    whole_key = Window.partitionBy("_key")
    ev = events.select(
        "_key",
        "_cdc_bucket",
        "op",
        "event_ts",
        "before",
        "after",
        "_cdc_batch",
        "source_file",
        "source_offset",
        seq.alias("_seq"),
        live.alias("_live"),
    )
    ev = ev.select(
        "*",
        F.row_number().over(in_order).alias("_ord"),
        F.dense_rank().over(by_order3).alias("_o3"),
        _copy_of_previous(in_order).alias("_copy"),
    )
    ev = ev.select(
        "*",
        F.max(F.when(F.col("_live") & F.col("op").isin(*RESET_OPS), F.col("_ord"))).over(whole_key).alias("_reset"),
        F.max(F.when(~mine, F.col("_o3"))).over(whole_key).alias("_newest_other"),
    )
    after_reset = F.col("_reset").isNull() | (F.col("_ord") > F.col("_reset"))
    in_window = F.col("_live") & (after_reset | ((F.col("_ord") == F.col("_reset")) & (F.col("op") != "DELETE")))
    current = F.col("_newest_other").isNull() | (F.col("_o3") >= F.col("_newest_other"))
    counted = mine & ~F.col("_copy")  # a second copy of a logged event is not counted again
    aggs = [
        F.max_by(
            F.struct("op", seq_col.alias("seq"), "event_ts", "_cdc_batch"), F.when(F.col("_live"), F.col("_ord"))
        ).alias("_last"),
        F.max_by(F.col("op"), F.when(F.col("_live") & F.col("op").isin(*RESET_OPS), F.col("_ord"))).alias("_reset_op"),
        F.min_by(F.col("before"), F.when(F.col("_live") & after_reset, F.col("_ord"))).alias("_base"),
        F.max("_cdc_bucket").alias("_cdc_bucket"),
        F.count(F.when(counted & F.col("_live") & current, 1)).alias("_applied"),
        F.count(F.when(counted & ~(F.col("_live") & current), 1)).alias("_stale"),
    ]
    texts = _text_columns(len(columns))
    # per column, SQL text: one Py4J call per column, where building the same expressions from Column
    # objects took ~10 (the whole plan: 0.88 -> 0.34 s a table of 10-20 columns, before any job ran)
    ev = ev.select("*", in_window.alias("_in_window"))
    for (name, _), text in zip(columns, texts, strict=True):
        key = sql_string(name)
        # a present value is JSON text, never SQL NULL ("null" is JSON null), so NULL here means "not written"
        aggs.append(
            F.expr(
                f"max_by(coalesce(after[{key}], 'null'), "
                f"CASE WHEN _in_window AND map_contains_key(after, {key}) THEN _ord END)"
            ).alias(text)
        )
    folded = ev.groupBy("_key").agg(*aggs)
    base_applies = F.col("_reset_op").isNull() | (F.col("_reset_op") == "DELETE")
    gone = F.col("_last").isNull() | (F.col("_last.op") == "DELETE")
    flagged = folded.select("*", gone.alias("_gone"), base_applies.alias("_base_applies"))

    def unless_gone(sql: str, alias: str) -> str:  # a gone marker names its key only
        return f"CASE WHEN NOT _gone THEN {sql} END AS {alias}"

    picked = [
        unless_gone(
            f"CASE WHEN {text} IS NOT NULL THEN {text} "
            f"WHEN _base_applies AND map_contains_key(_base, {sql_string(name)}) THEN _base[{sql_string(name)}] END",
            text,
        )
        for (name, _), text in zip(columns, texts, strict=True)
    ]
    return flagged.selectExpr(
        *picked,
        unless_gone("_last.op", "_cdc_op"),
        unless_gone("_last.seq", "_cdc_seq"),
        unless_gone("_last.event_ts", "_cdc_ts"),
        unless_gone("_last._cdc_batch", "_cdc_batch"),
        "CAST(_cdc_bucket AS INT) AS _cdc_bucket",
        "_key AS _cdc_key",
        "_gone",
        "CAST(_applied AS BIGINT) AS _applied",
        "CAST(_stale AS BIGINT) AS _stale",
    )


def typed_rows(batches: Iterator[pa.RecordBatch], columns: list[tuple[str, str]]) -> Iterator[pa.RecordBatch]:
    """Cast the chosen text values (``cast(from_json(text))``, as the reference model types them);
    rows of gone keys become ``gone`` markers; one ``stats`` row per Arrow batch carries the counts."""
    schema = _out_schema_aliased(columns)
    for batch in batches:
        gone = batch.column("_gone")
        arrays = []
        for i, (_, type_name) in enumerate(columns):
            texts = batch.column(f"_cdc_txt{i}").to_pylist()
            values = [None if t is None else cast(from_json(t), type_name) for t in texts]
            arrays.append(pa.array(values, arrow_type(type_name)))
        kinds = pc.if_else(gone, "gone", "row")
        table = pa.Table.from_arrays(
            [*arrays, *map(batch.column, META_NAMES), kinds, pa.nulls(batch.num_rows, pa.string())], schema=schema
        )
        info = {
            "applied": pc.sum(batch.column("_applied")).as_py() or 0,
            "stale": pc.sum(batch.column("_stale")).as_py() or 0,
            "deleted_keys": pc.sum(pc.cast(gone, pa.int64())).as_py() or 0,
        }
        stats = pa.Table.from_pylist([{"_cdc_kind": "stats", "_cdc_info": json.dumps(info)}], schema=schema)
        yield from pa.concat_tables([table, stats]).to_batches()


def _out_schema_aliased(columns: list[tuple[str, str]]) -> pa.Schema:
    schema = out_schema(columns)
    fields = [pa.field(alias, f.type) for alias, f in zip(alias_names(columns), schema, strict=False)]
    return pa.schema(fields + list(schema)[len(columns) :])


def fold_native(events, columns: list[tuple[str, str]], batch_id: str, truncate_seq: str | None):
    """The folded rows (``row`` / ``gone`` / ``stats``, data columns under their aliases) of keys
    without key changes: the same rows :func:`cdclake.compaction.folding.fold_part` gives them."""
    out_ddl = table_ddl(list(zip(alias_names(columns), [t for _, t in columns], strict=True)), META_DDL)
    out_ddl += ", _cdc_kind string, _cdc_info string"
    text = fold_text(events, columns, batch_id, truncate_seq)
    return text.mapInArrow(lambda it: typed_rows(it, columns), out_ddl)
