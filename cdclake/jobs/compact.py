"""Compact job: fold a batch's change log into each Iceberg table, one commit each.

How a table is written (copy-on-write by bucket, DESIGN.md section 5):

1. every row carries ``_cdc_bucket`` = crc32(canonical key) mod N, and the
   table is partitioned by it, so a batch touches only its keys' buckets;
2. the events and the current rows of the affected buckets meet in Python
   workers (grouped by bucket; keys linked by a key change are routed to one
   worker) where :func:`cdclake.merge.apply_events` folds them;
3. the folded buckets replace the old ones in ONE Iceberg overwrite commit
   (``overwrite(_cdc_bucket IN affected)``) whose snapshot summary carries the
   batch id, so a crash leaves the previous snapshot and a batch that is
   already committed is skipped.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from cdclake.batch import read_manifest, write_report
from cdclake.coltypes import CastError, arrow_type, quote_ident
from cdclake.events import ROW_OPS, image_from_text, to_json
from cdclake.merge import MergeStats, apply_events, bucket_of, key_of, prepare
from cdclake.naming import SOURCE_TABLE_PROPERTY
from cdclake.tables import BATCH_PROPERTY

TRUNCATE_PROPERTY = "cdclake.truncate-watermark"
META_DDL = "_cdc_op string, _cdc_seq string, _cdc_ts timestamp, _cdc_batch string, _cdc_bucket int"


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _table_ddl(columns: list[tuple[str, str]]) -> str:
    return ", ".join(f"{quote_ident(n)} {t}" for n, t in columns)


def _out_schema(columns: list[tuple[str, str]]) -> pa.Schema:
    fields = [pa.field(n, arrow_type(t)) for n, t in columns]
    fields += [
        pa.field("_cdc_op", pa.string()),
        pa.field("_cdc_seq", pa.string()),
        pa.field("_cdc_ts", pa.timestamp("us", tz="UTC")),
        pa.field("_cdc_batch", pa.string()),
        pa.field("_cdc_bucket", pa.int32()),
        pa.field("_kind", pa.string()),
        pa.field("_info", pa.string()),
    ]
    return pa.schema(fields)


def _event_args(row: dict[str, Any]) -> tuple:
    return (
        row["op"],
        row["seq"],
        row["event_ts"],
        image_from_text(row["before"]),
        image_from_text(row["after"]),
        (row["source_file"], row["source_offset"]),
    )


def route_events(
    batches: Iterator[pa.RecordBatch], keys: list[str], types: dict[str, str], buckets: int
) -> Iterator[pa.RecordBatch]:
    """Key, old key and buckets of each event (or why it cannot be applied)."""
    schema = pa.schema(
        [
            ("source_file", pa.string()),
            ("source_offset", pa.int64()),
            ("op", pa.string()),
            ("seq", pa.string()),
            ("_key", pa.string()),
            ("_old_key", pa.string()),
            ("_bucket", pa.int32()),
            ("_old_bucket", pa.int32()),
            ("_error", pa.string()),
        ]
    )
    for batch in batches:
        out = []
        for row in batch.to_pylist():
            item = {
                "source_file": row["source_file"],
                "source_offset": row["source_offset"],
                "op": row["op"],
                "seq": row["seq"],
                "_key": None,
                "_old_key": None,
                "_bucket": None,
                "_old_bucket": None,
                "_error": None,
            }
            if row["op"] in ROW_OPS:
                try:
                    event = prepare(*_event_args(row), keys=keys, types=types)
                    item["_key"], item["_bucket"] = event.key, bucket_of(event.key, buckets)
                    if event.old_key is not None:
                        item["_old_key"], item["_old_bucket"] = (
                            event.old_key,
                            bucket_of(event.old_key, buckets),
                        )
                except CastError as exc:
                    item["_error"] = str(exc)
            out.append(item)
        yield pa.RecordBatch.from_pylist(out, schema=schema)


def link_groups(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """Union-find over key changes: every key of a chain maps to one representative."""
    parent: dict[str, str] = {}

    def find(k: str) -> str:
        parent.setdefault(k, k)
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {k: find(k) for k in parent}


def fold_bucket(
    events: pa.Table,
    rows: pa.Table,
    *,
    keys: list[str],
    columns: list[tuple[str, str]],
    batch_id: str,
    buckets: int,
    truncate_seq: str | None,
) -> pa.Table:
    """Fold one worker's events into its current rows; returns rows + stats + rejects."""
    types = dict(columns)
    names = [n for n, _ in columns]
    state: dict[str, dict[str, Any]] = {}
    for row in rows.to_pylist():
        row.pop("_part", None)
        state[key_of(row, keys)] = row
    prepared, stats = [], MergeStats()
    for row in events.to_pylist():
        if row["op"] not in ROW_OPS:
            continue
        try:
            prepared.append(prepare(*_event_args(row), keys=keys, types=types))
        except CastError as exc:
            stats.quarantined += 1
            stats.rejects.append(
                {"error": str(exc), "source_file": row["source_file"], "source_offset": row["source_offset"]}
            )
    stats.add(apply_events(state, prepared, names, batch_id, truncate_seq))
    out = []
    for key, row in state.items():
        row["_cdc_bucket"] = bucket_of(key, buckets)
        row["_kind"], row["_info"] = "row", None
        out.append(row)
    info = {"applied": stats.applied, "stale": stats.stale, "quarantined": stats.quarantined}
    out.append({"_kind": "stats", "_info": json.dumps(info)})
    out.extend({"_kind": "reject", "_info": json.dumps(r)} for r in stats.rejects)
    return pa.Table.from_pylist(out, schema=_out_schema(columns))


def _committed_batches(spark, name: str) -> tuple[set[str], str | None]:
    rows = spark.sql(
        f"SELECT summary['{BATCH_PROPERTY}'] AS batch, summary['{TRUNCATE_PROPERTY}'] AS wm, committed_at "
        f"FROM {name}.snapshots ORDER BY committed_at"
    ).collect()
    batches = {r["batch"] for r in rows if r["batch"]}
    watermark = rows[-1]["wm"] if rows else None
    return batches, watermark


def _ensure_table(spark, source_table: str, layout: dict[str, Any], buckets: int) -> int:
    """Create the table or add new columns; returns its bucket count."""
    name = layout["spark_name"]
    columns = [tuple(c) for c in layout["columns"]]
    namespace = name.rsplit(".", 1)[0]
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
    if not spark.catalog.tableExists(name):
        props = {
            "format-version": "2",
            SOURCE_TABLE_PROPERTY: source_table,
            "cdclake.keys": ",".join(layout["keys"]),
            "cdclake.buckets": str(buckets),
            "write.parquet.compression-codec": "zstd",
        }
        props_sql = ", ".join(f"{_sql_string(k)}={_sql_string(v)}" for k, v in props.items())
        spark.sql(
            f"CREATE TABLE IF NOT EXISTS {name} ({_table_ddl(columns)}, {META_DDL}) USING iceberg "
            f"PARTITIONED BY (_cdc_bucket) TBLPROPERTIES ({props_sql})"
        )
        return buckets
    props = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {name}").collect()}
    owner = props.get(SOURCE_TABLE_PROPERTY)
    if owner and owner != source_table:
        raise ValueError(
            f"lake table {name} holds source table {owner}, not {source_table}: two source "
            f"names map to one identifier; set a namespace per source to separate them"
        )
    present = {f.name for f in spark.table(name).schema.fields}
    new = [(n, t) for n, t in columns if n not in present]
    if new:
        spark.sql(f"ALTER TABLE {name} ADD COLUMNS ({_table_ddl(new)})")
    return int(props.get("cdclake.buckets", buckets))


def compact_table(
    spark, batch_dir: Path, batch_id: str, source_table: str, layout: dict[str, Any], default_buckets: int
) -> dict[str, Any]:
    from pyspark.sql import functions as F

    name = layout["spark_name"]
    keys: list[str] = layout["keys"]
    columns = [tuple(c) for c in layout["columns"]]
    types = dict(columns)
    buckets = _ensure_table(spark, source_table, layout, default_buckets)
    committed, stored_wm = _committed_batches(spark, name)
    if batch_id in committed:
        return {"status": "already-committed", "applied": 0, "stale": 0, "quarantined": 0}

    events = spark.read.parquet(str(batch_dir / "changelog")).where(F.col("table") == source_table)
    routed = events.mapInArrow(
        lambda it: route_events(it, keys, types, buckets),
        "source_file string, source_offset bigint, op string, seq string, _key string, _old_key string, "
        "_bucket int, _old_bucket int, _error string",
    ).cache()
    info = routed.agg(
        F.collect_set("_bucket").alias("b"),
        F.collect_set("_old_bucket").alias("ob"),
        F.max(F.when(F.col("op") == "TRUNCATE", F.col("seq"))).alias("trunc"),
        F.sum(F.when(F.col("op") == "TRUNCATE", 1).otherwise(0)).alias("truncates"),
    ).first()
    pairs = [
        (r["_old_key"], r["_key"]) for r in routed.where("_old_key IS NOT NULL").select("_old_key", "_key").collect()
    ]
    routed.unpersist()
    truncate_seq = max([s for s in (info["trunc"], stored_wm) if s], default=None)
    if info["trunc"]:
        affected = list(range(buckets))
    else:
        affected = sorted({b for b in (info["b"] or []) + (info["ob"] or []) if b is not None})
    groups = link_groups(pairs)
    part_of = {k: bucket_of(rep, buckets) for k, rep in groups.items()}

    def part_for_events(it: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in it:
            parts = []
            for row in batch.select(
                ["op", "before", "after", "seq", "event_ts", "source_file", "source_offset"]
            ).to_pylist():
                part = -1
                if row["op"] in ROW_OPS:
                    try:
                        key = prepare(*_event_args(row), keys=keys, types=types).key
                        part = part_of.get(key, bucket_of(key, buckets))
                    except CastError:
                        part = 0
                parts.append(part)
            yield batch.append_column("_part", pa.array(parts, pa.int32()))

    event_ddl = events.schema.simpleString()[len("struct<") : -1] + ",_part:int"
    parted_events = events.mapInArrow(part_for_events, event_ddl.replace(":", " "))
    current = spark.table(name).where(F.col("_cdc_bucket").isin(affected)) if affected else None
    if current is not None and part_of:
        row_part = F.udf(lambda *vals: part_of.get(to_json(list(vals))), "int")
        current = current.withColumn(
            "_part", F.coalesce(row_part(*[F.col(quote_ident(k)) for k in keys]), F.col("_cdc_bucket"))
        )
    elif current is not None:
        current = current.withColumn("_part", F.col("_cdc_bucket"))
    if current is None:
        current = spark.createDataFrame([], f"{_table_ddl(columns)}, {META_DDL}, _part int")

    out_schema = _out_schema(columns)
    out_ddl = f"{_table_ddl(columns)}, {META_DDL}, _kind string, _info string"

    def fold(ev: pa.Table, rows: pa.Table) -> pa.Table:
        return fold_bucket(
            ev,
            rows,
            keys=keys,
            columns=columns,
            batch_id=batch_id,
            buckets=buckets,
            truncate_seq=truncate_seq,
        )

    merged_dir = batch_dir / "merged" / layout["identifier"]
    folded = parted_events.groupBy("_part").cogroup(current.groupBy("_part")).applyInArrow(fold, out_ddl)
    folded.write.mode("overwrite").parquet(str(merged_dir))
    merged = spark.read.schema(out_ddl).parquet(str(merged_dir))
    stats = {"applied": 0, "stale": 0, "quarantined": 0}
    rejects = []
    for r in merged.where("_kind <> 'row'").select("_kind", "_info").collect():
        if r["_kind"] == "stats":
            for k, v in json.loads(r["_info"]).items():
                stats[k] += v
        else:
            rejects.append(json.loads(r["_info"]))
    if rejects:
        spark.createDataFrame(
            [(x["error"], x["source_file"], x["source_offset"], None) for x in rejects],
            "error string, source_file string, source_offset bigint, raw binary",
        ).write.mode("overwrite").parquet(str(batch_dir / "quarantine" / "compact" / layout["identifier"]))
    truncates = int(info["truncates"] or 0)
    if affected:
        writer = (
            merged.where("_kind = 'row'")
            .select(
                [quote_ident(n) for n, _ in columns] + ["_cdc_op", "_cdc_seq", "_cdc_ts", "_cdc_batch", "_cdc_bucket"]
            )
            .writeTo(name)
            .option(f"snapshot-property.{BATCH_PROPERTY}", batch_id)
        )
        if truncate_seq:
            writer = writer.option(f"snapshot-property.{TRUNCATE_PROPERTY}", truncate_seq)
        writer.overwrite(F.col("_cdc_bucket").isin(affected))
    del out_schema
    return {
        "status": "committed" if affected else "no-change",
        **stats,
        "truncates": truncates,
        "buckets_rewritten": len(affected),
        "buckets": buckets,
        "committed_at": dt.datetime.now(dt.UTC).isoformat(),
    }


def run(spark, batch_dir: str | Path, tables: list[str] | None = None, buckets: int = 16) -> dict[str, Any]:
    """Compact every table of the batch (or only ``tables``); report per table."""
    batch_dir = Path(batch_dir)
    manifest = read_manifest(batch_dir)
    layouts = json.loads((batch_dir / "tables.json").read_text())
    report: dict[str, Any] = {}
    for source_table, layout in sorted(layouts.items()):
        if tables and source_table not in tables:
            continue
        if layout.get("error"):
            report[source_table] = {"status": "skipped", "error": layout["error"]}
            continue
        report[source_table] = compact_table(spark, batch_dir, manifest.batch_id, source_table, layout, buckets)
    step = "compact" if not tables else "compact-" + "-".join(sorted(tables))
    write_report(batch_dir, step, report)
    return report
