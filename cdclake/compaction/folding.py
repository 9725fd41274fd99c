"""What a merge means, per worker: the refold of the affected keys' logged events into rows
(``cdclake.merge`` is the reference model), and the SCD2 versions. Arrow in, Arrow out.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from cdclake.compaction.lake_tables import table_schema
from cdclake.compaction.routing import prepared_rows
from cdclake.merge import LoggedEvent, bucket_of, key_of, refold
from cdclake.schema.coltypes import arrow_type, quote_ident
from cdclake.schema.evolution import ColumnMap


def alias_names(columns: list[tuple[str, str]]) -> list[str]:
    """Spark-side names of the data columns around a cogroup.

    PySpark's cogroup resolves every input column by parsing its name (``df[name]``), which a
    source name with a dot or a backtick breaks; the fold sees the real names again (data names
    never start with the reserved ``_cdc_``, so these cannot collide with one).
    """
    return [f"_cdc_col{i}" for i in range(len(columns))]


def with_aliases(frame, columns: list[tuple[str, str]], meta: list[str]):
    """``frame``'s data columns under :func:`alias_names` (selected by their quoted real names), then ``meta``."""
    from pyspark.sql import functions as F

    picked = [F.col(quote_ident(n)).alias(a) for (n, _), a in zip(columns, alias_names(columns), strict=True)]
    return frame.select(*picked, *meta)


def real_names(frame, columns: list[tuple[str, str]], meta: list[str]):
    """Inverse of :func:`with_aliases` (``alias`` takes a name as it is, nothing is parsed)."""
    from pyspark.sql import functions as F

    picked = [F.col(a).alias(n) for (n, _), a in zip(columns, alias_names(columns), strict=True)]
    return frame.select(*picked, *meta)


def with_names(table: pa.Table, names: list[str]) -> pa.Table:
    """``table`` with its first ``len(names)`` columns (the data columns) renamed."""
    return table.rename_columns([*names, *table.column_names[len(names) :]])


def out_schema(columns: list[tuple[str, str]]) -> pa.Schema:
    """A fold's output: the table's rows, what each is (``row``, ``gone``, ``stats``) and the stats."""
    return table_schema(columns).append(pa.field("_cdc_kind", pa.string())).append(pa.field("_cdc_info", pa.string()))


def fold_part(
    events: pa.Table,
    rows: pa.Table | None,
    *,
    keys: list[str],
    columns: list[tuple[str, str]],
    batch_id: str,
    buckets: int,
    truncate_seq: str | None,
    cmap: ColumnMap | None = None,
    markers: bool = False,
) -> pa.Table:
    """Refold the affected keys of one worker's part; other rows pass through.

    ``markers`` (the merge-on-read path, no current rows): an affected key left without a row gets a
    ``gone`` row (only ``_cdc_key`` and ``_cdc_bucket``), so the merge deletes it.
    """
    types = dict(columns)
    names = [n for n, _ in columns]
    prepared = prepared_rows(events, keys, types, cmap)
    logged = [LoggedEvent(e, b) for e, b in zip(prepared, events["_cdc_batch"].to_pylist(), strict=True)]
    state, stats, affected = refold(logged, names, batch_id, truncate_seq)
    out = []
    for row in rows.to_pylist() if rows is not None else []:
        row.pop("_cdc_part", None)
        key = key_of(row, keys)
        if key in affected:
            continue
        if truncate_seq is not None and (row.get("_cdc_seq") or "") < truncate_seq:
            continue  # only reached when the rows' events are not in the log (table older than its log)
        row["_cdc_key"] = key  # rows written before _cdc_key existed get theirs here
        row["_cdc_kind"], row["_cdc_info"] = "row", None
        out.append(row)
    return folded_output(out, state, affected, stats, columns=columns, buckets=buckets, markers=markers)


def folded_output(
    out: list[dict[str, Any]],
    state: dict[str, dict[str, Any]],
    affected: set[str],
    stats: Any,
    *,
    columns: list[tuple[str, str]],
    buckets: int,
    markers: bool,
) -> pa.Table:
    """``out`` (rows passed through) + the folded ``state`` as ``row``s, a ``gone`` marker per affected key
    left without a row (with ``markers``), and one ``stats`` row: what every fold hands the commit."""
    for key, row in state.items():
        row["_cdc_bucket"], row["_cdc_key"] = bucket_of(key, buckets), key
        row["_cdc_kind"], row["_cdc_info"] = "row", None
        out.append(row)
    gone = sorted(affected - set(state))
    if markers:
        out.extend(
            {"_cdc_key": key, "_cdc_bucket": bucket_of(key, buckets), "_cdc_kind": "gone", "_cdc_info": None}
            for key in gone
        )
    info = {"applied": stats.applied, "stale": stats.stale, "deleted_keys": len(gone)}
    out.append({"_cdc_kind": "stats", "_cdc_info": json.dumps(info)})
    return pa.Table.from_pylist(out, schema=out_schema(columns))


def _history_schema(columns: list[tuple[str, str]]) -> pa.Schema:
    fields = [pa.field(n, arrow_type(t)) for n, t in columns]
    fields += [
        pa.field("valid_from", pa.timestamp("us", tz="UTC")),
        pa.field("valid_to", pa.timestamp("us", tz="UTC")),
        pa.field("is_current", pa.bool_()),
        pa.field("_cdc_op", pa.string()),
        pa.field("_cdc_seq", pa.string()),
        pa.field("_cdc_ts", pa.timestamp("us", tz="UTC")),
        pa.field("_cdc_batch", pa.string()),
        pa.field("_cdc_bucket", pa.int32()),
    ]
    return pa.schema(fields)


def fold_history_part(
    events: pa.Table,
    rows: pa.Table,
    *,
    keys: list[str],
    columns: list[tuple[str, str]],
    buckets: int,
    truncates: list[tuple[str, Any]],
    cmap: ColumnMap | None = None,
) -> pa.Table:
    """SCD2: recompute every version of the affected keys; other keys' versions pass through."""
    from cdclake.merge import history

    types = dict(columns)
    names = [n for n, _ in columns]
    prepared = prepared_rows(events, keys, types, cmap)
    logged = [LoggedEvent(e, b) for e, b in zip(prepared, events["_cdc_batch"].to_pylist(), strict=True)]
    versions = history(logged, names, truncates)
    out = []
    for row in rows.to_pylist():
        row.pop("_cdc_part", None)
        if key_of(row, keys) not in versions:
            out.append(row)
    for key, items in versions.items():
        for version in items:
            out.append({**version, "_cdc_bucket": bucket_of(key, buckets)})
    return pa.Table.from_pylist(out, schema=_history_schema(columns))
