"""Compact job: apply a batch to each lake table through its change log.

Per source table there are two Iceberg tables, both partitioned by
``_cdc_bucket`` = crc32(canonical key) mod N:

- ``<table>__changes``: the append-only change log (every row event with its
  key, images, order and lineage; truncates in bucket -1);
- ``<table>``: the current rows, each with its canonical key text in the hidden
  column ``_cdc_key``.

A batch is applied in two atomic commits, each carrying the batch id in its
snapshot summary: (1) append the batch's events to the change log, (2) replace
the rows of the affected keys by the *refold* of all their logged events
(``cdclake.merge.refold``). Because a key's row is a function of the set of its
events, batches applied late, twice or in any order give the same table; the
logged deletes are the tombstones. A crash between or during the commits leaves
the previous snapshots; the retry skips what is already committed and recomputes
the rest from the same inputs.

Commit (2) takes one of two paths (``merge_mode`` in the report):

- ``merge-on-read`` (an ordinary batch): the fold reads only the logged events
  of the affected keys, never the current rows, and returns per key its row or a
  ``gone`` marker; a ``MERGE INTO`` on (``_cdc_bucket``, ``_cdc_key``) updates,
  inserts or deletes those keys only (position deletes, format v2), so the cost
  follows the batch, not the table. Isolation: the MERGE goes to a private
  branch created at the snapshot read before the change log (``read_snapshot``),
  and is published by fast-forwarding ``main`` to it, which fails if anything
  was committed to ``main`` since then (a SQL MERGE would only validate from the
  snapshot it scans itself). ``_snapshot_info`` only counts ``main``'s
  ancestors, so a branch commit that was never published is redone.
- ``overwrite`` (full refresh, a batch with a TRUNCATE, a table whose rows lack
  ``_cdc_key``, the first commit of an empty table, buckets of fewer than
  ``MOR_MIN_BUCKET_ROWS`` rows on average, or a table holding more than
  ``MAX_EXTRA_FILES_PER_BUCKET`` x buckets delete files and small data files
  left by merges): every current row of the touched buckets goes through the
  fold (other keys pass through) and the buckets are replaced in one
  ``overwrite(_cdc_bucket IN ...)`` validated (serializable isolation) from
  ``read_snapshot``. Rewriting a bucket drops its delete files and leaves one
  data file: the maintenance rule also rewrites every bucket with extra files.

On a lost race (validation or fast-forward) the table is re-read and the fold
recomputed, up to COMMIT_ATTEMPTS times (docs/reliability.md, "Crashes and
retries"; docs/decisions.md, "Merge-on-read").
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from cdclake.batch import read_manifest, write_report
from cdclake.coltypes import CastError, arrow_type, canonical_type, quote_ident
from cdclake.events import ROW_OPS, image_from_text
from cdclake.faults import fault_point, inside_commit
from cdclake.merge import LoggedEvent, bucket_of, key_of, prepare, refold
from cdclake.naming import SOURCE_TABLE_PROPERTY
from cdclake.schema_evolution import ColumnMap
from cdclake.tables import BATCH_PROPERTY

META_DDL = "_cdc_op string, _cdc_seq string, _cdc_ts timestamp, _cdc_batch string, _cdc_bucket int, _cdc_key string"
META_NAMES = ["_cdc_op", "_cdc_seq", "_cdc_ts", "_cdc_batch", "_cdc_bucket", "_cdc_key"]
LOG_SUFFIX = "__changes"
LOG_DDL = (
    "_key string, _old_key string, _cdc_bucket int, _role string, op string, seq string, event_ts timestamp, "
    "tx_id string, tx_pos bigint, before map<string,string>, after map<string,string>, meta string, "
    "source_file string, source_offset bigint, _cdc_batch string"
)
LOG_SCHEMA = pa.schema(
    [
        ("_key", pa.string()),
        ("_old_key", pa.string()),
        ("_cdc_bucket", pa.int32()),
        ("_role", pa.string()),
        ("op", pa.string()),
        ("seq", pa.string()),
        ("event_ts", pa.timestamp("us", tz="UTC")),
        ("tx_id", pa.string()),
        ("tx_pos", pa.int64()),
        ("before", pa.map_(pa.string(), pa.string())),
        ("after", pa.map_(pa.string(), pa.string())),
        ("meta", pa.string()),
        ("source_file", pa.string()),
        ("source_offset", pa.int64()),
        ("_cdc_batch", pa.string()),
    ]
)
ROUTED_SCHEMA = LOG_SCHEMA.append(pa.field("_error", pa.string()))
TRUNCATE_BUCKET = -1
#: Tries of a table's compaction when another process commits to its buckets meanwhile.
COMMIT_ATTEMPTS = 3
#: Iceberg's words for a lost commit race (ValidationException / CommitFailedException / fast_forward).
_CONFLICTS = ("Found conflicting", "Found new conflicting", "CommitFailedException", "Cannot fast-forward")
#: Table property: "1" when every row has its ``_cdc_key`` (set at creation, or after one full rewrite).
ROW_KEYS_PROPERTY = "cdclake.row-keys"
#: Table properties of the main table: row-level commits write position deletes (format v2).
MOR_PROPERTIES = {"write.merge.mode": "merge-on-read"}
#: Fewer rows than this per touched bucket (on average): rewriting the buckets costs about the same as a
#: merge, and leaves no delete files. Table property ``cdclake.mor-min-bucket-rows`` overrides it.
MOR_MIN_BUCKET_ROWS = 1000
MIN_ROWS_PROPERTY = "cdclake.mor-min-bucket-rows"
#: Maintenance: merges leave delete files and small data files in the buckets. More such *extra* files
#: (delete files, and small data files beyond one a bucket) than this x buckets: the batch rewrites its
#: buckets and every bucket with extra files (the overwrite path), which leaves one data file per bucket
#: (or a few large ones) and no delete file. Table property ``cdclake.max-extra-files`` overrides the product.
MAX_EXTRA_FILES_PER_BUCKET = 4
MAX_EXTRA_FILES_PROPERTY = "cdclake.max-extra-files"
#: A data file under this share of ``write.target-file-size-bytes`` is small (as in Iceberg's rewrite_data_files).
SMALL_FILE_RATIO = 0.75
TARGET_FILE_SIZE = 512 * 1024 * 1024  # Iceberg's default write.target-file-size-bytes
#: Session conf prefix Iceberg reads snapshot summary properties of SQL commits from.
SNAPSHOT_PROPERTY_CONF = "spark.sql.iceberg.snapshot-property."

logger = logging.getLogger(__name__)
#: More keys linked by key changes than this are folded by reading whole buckets.
MAX_LINK_ROUNDS = 8


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _table_ddl(columns: list[tuple[str, str]]) -> str:
    return ", ".join(f"{quote_ident(n)} {canonical_type(t)}" for n, t in columns)


def _aliases(columns: list[tuple[str, str]]) -> list[str]:
    """Spark-side names of the data columns around a cogroup.

    PySpark's cogroup resolves every input column by parsing its name (``df[name]``), which a
    source name with a dot or a backtick breaks; the fold sees the real names again (data names
    never start with the reserved ``_cdc_``, so these cannot collide with one).
    """
    return [f"_cdc_col{i}" for i in range(len(columns))]


def _aliased(frame, columns: list[tuple[str, str]], meta: list[str]):
    """``frame``'s data columns under :func:`_aliases` (selected by their quoted real names), then ``meta``."""
    from pyspark.sql import functions as F

    picked = [F.col(quote_ident(n)).alias(a) for (n, _), a in zip(columns, _aliases(columns), strict=True)]
    return frame.select(*picked, *meta)


def _real_names(frame, columns: list[tuple[str, str]], meta: list[str]):
    """Inverse of :func:`_aliased` (``alias`` takes a name as it is, nothing is parsed)."""
    from pyspark.sql import functions as F

    picked = [F.col(a).alias(n) for (n, _), a in zip(columns, _aliases(columns), strict=True)]
    return frame.select(*picked, *meta)


def _renamed(table: pa.Table, names: list[str]) -> pa.Table:
    """``table`` with its first ``len(names)`` columns (the data columns) renamed."""
    return table.rename_columns([*names, *table.column_names[len(names) :]])


def _out_schema(columns: list[tuple[str, str]]) -> pa.Schema:
    fields = [pa.field(n, arrow_type(t)) for n, t in columns]
    fields += [
        pa.field("_cdc_op", pa.string()),
        pa.field("_cdc_seq", pa.string()),
        pa.field("_cdc_ts", pa.timestamp("us", tz="UTC")),
        pa.field("_cdc_batch", pa.string()),
        pa.field("_cdc_bucket", pa.int32()),
        pa.field("_cdc_key", pa.string()),
        pa.field("_cdc_kind", pa.string()),
        pa.field("_cdc_info", pa.string()),
    ]
    return pa.schema(fields)


def _prepare_row(row: dict[str, Any], keys: list[str], types: dict[str, str], cmap: ColumnMap | None = None):
    before, after = image_from_text(row["before"]), image_from_text(row["after"])
    if cmap is not None:  # old-layout events read in the current layout (renames, drops, ignored columns)
        before, after = cmap.translate(before, types), cmap.translate(after, types)
    return prepare(
        row["op"],
        row["seq"],
        row["event_ts"],
        before,
        after,
        (row["source_file"], row["source_offset"]),
        keys=keys,
        types=types,
    )


def route_events(
    batches: Iterator[pa.RecordBatch],
    keys: list[str],
    types: dict[str, str],
    buckets: int,
    batch_id: str,
    cmap: ColumnMap | None = None,
) -> Iterator[pa.RecordBatch]:
    """Change-log rows of a batch's row events: key, old key, bucket (or why not).

    TRUNCATE events are logged by the truncate step, not here.
    """
    for batch in batches:
        out = []
        for row in batch.to_pylist():
            base = {name: row.get(name) for name in LOG_SCHEMA.names if name in row}
            base.update(_cdc_batch=batch_id, _error=None, _old_key=None)
            if row["op"] not in ROW_OPS:
                continue
            try:
                event = _prepare_row(row, keys, types, cmap)
            except CastError as exc:
                out.append({**base, "_key": None, "_cdc_bucket": None, "_role": "error", "_error": str(exc)})
                continue
            main = {**base, "_key": event.key, "_old_key": event.old_key, "_role": "main"}
            main["_cdc_bucket"] = bucket_of(event.key, buckets)
            out.append(main)
            if event.old_key is not None and bucket_of(event.old_key, buckets) != main["_cdc_bucket"]:
                # logged under the old key's bucket too, so a refold of the old key finds it
                out.append({**main, "_role": "link", "_cdc_bucket": bucket_of(event.old_key, buckets)})
        yield pa.RecordBatch.from_pylist(out, schema=ROUTED_SCHEMA)


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
    logged = []
    for row in events.to_pylist():
        logged.append(LoggedEvent(_prepare_row(row, keys, types, cmap), row["_cdc_batch"]))
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
    return pa.Table.from_pylist(out, schema=_out_schema(columns))


HISTORY_SUFFIX = "__history"
HISTORY_META_DDL = (
    "valid_from timestamp, valid_to timestamp, is_current boolean, _cdc_op string, _cdc_seq string, "
    "_cdc_ts timestamp, _cdc_batch string, _cdc_bucket int"
)
HISTORY_META_NAMES = [
    "valid_from",
    "valid_to",
    "is_current",
    "_cdc_op",
    "_cdc_seq",
    "_cdc_ts",
    "_cdc_batch",
    "_cdc_bucket",
]


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
    logged = [LoggedEvent(_prepare_row(r, keys, types, cmap), r["_cdc_batch"]) for r in events.to_pylist()]
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


def _with_part(rows, part_of: dict[str, int], keys: list[str], ddl: str):
    """Add ``_cdc_part``: the worker a row goes to (its key-change component's home, else its bucket)."""
    from pyspark.sql import functions as F

    if not part_of:
        return rows.withColumn("_cdc_part", F.col("_cdc_bucket"))

    def rows_part(it: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in it:
            parts = [part_of.get(key_of(r, keys), r["_cdc_bucket"]) for r in batch.to_pylist()]
            yield batch.append_column("_cdc_part", pa.array(parts, pa.int32()))

    return rows.mapInArrow(rows_part, f"{ddl}, _cdc_part int")


#: Snapshot property with the batch's counts, so a retry after the commit reports them again.
COUNTS_PROPERTY = "cdclake.counts"


def _lineage(spark, name: str) -> list[Any]:
    """``main``'s snapshots, newest first, with their batch id and counts.

    Commits to other branches (an unpublished merge of a crashed or beaten attempt) are not part of it.
    """
    head = spark.sql(f"SELECT snapshot_id FROM {name}.refs WHERE name = 'main'").first()
    rows = spark.sql(
        f"SELECT snapshot_id, parent_id, summary['{BATCH_PROPERTY}'] AS batch, "
        f"summary['{COUNTS_PROPERTY}'] AS counts FROM {name}.snapshots"
    ).collect()
    by_id = {r["snapshot_id"]: r for r in rows}
    out, current = [], (head["snapshot_id"] if head else None)
    while current is not None and current in by_id:
        out.append(by_id[current])
        current = by_id[current]["parent_id"]
    return out


def _committed_counts(spark, name: str, batch_id: str) -> dict[str, Any]:
    """Counts of the commit that already applied ``batch_id`` (the report of a retried task)."""
    found = next((r for r in _lineage(spark, name) if r["batch"] == batch_id), None)
    counts = json.loads(found["counts"]) if found is not None and found["counts"] else {}
    return {"applied": 0, "stale": 0, "quarantined": 0, **counts, "status": "already-committed"}


def _fresh_snapshot_id(spark, name: str) -> int | None:
    """Drop the session's cached copy of ``name`` and return its current snapshot id.

    Reads planned afterwards see this snapshot or a later one, so validating from it is safe
    (at worst a false conflict, which only costs a retry).
    """
    spark.catalog.refreshTable(name)
    row = spark.sql(f"SELECT snapshot_id FROM {name}.refs WHERE name = 'main'").first()
    return None if row is None else row["snapshot_id"]


def _validated(writer, snapshot_id: int | None):
    """Fail the commit if another one added or deleted files matching the overwrite filter since ``snapshot_id``.

    Without a snapshot id Iceberg validates the whole history: right for a table that was empty when read.
    """
    writer = writer.option("isolation-level", "serializable")
    return writer if snapshot_id is None else writer.option("validate-from-snapshot-id", str(snapshot_id))


class PublishConflict(RuntimeError):
    """``main`` does not hold this batch's merge after the fast-forward (its branch was replaced meanwhile)."""


def _is_conflict(exc: Exception) -> bool:
    return isinstance(exc, PublishConflict) or any(word in str(exc) for word in _CONFLICTS)


def _snapshot_info(spark, name: str) -> set[str]:
    """Batch ids committed to ``name`` (``main``'s history only)."""
    return {r["batch"] for r in _lineage(spark, name) if r["batch"]}


def _properties(spark, name: str) -> dict[str, str]:
    return {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {name}").collect()}


def _create(spark, name: str, ddl: str, props: dict[str, str]) -> None:
    props_sql = ", ".join(f"{_sql_string(k)}={_sql_string(v)}" for k, v in props.items())
    spark.sql(
        f"CREATE TABLE IF NOT EXISTS {name} ({ddl}) USING iceberg PARTITIONED BY (_cdc_bucket) "
        f"TBLPROPERTIES ({props_sql})"
    )


def ensure_tables(spark, source_table: str, layout: dict[str, Any], buckets: int) -> int:
    """Create the table and its change log, or add new columns; returns the bucket count.

    A table made before ``_cdc_key`` existed gets the column (empty; its first compaction is a full
    rewrite, see ROW_KEYS_PROPERTY) and the merge-on-read properties. Nothing is committed when the
    table is already as it should be.
    """
    name = layout["spark_name"]
    columns = [tuple(c) for c in layout["columns"]]
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {name.rsplit('.', 1)[0]}")
    common = {
        "format-version": "2",
        SOURCE_TABLE_PROPERTY: source_table,
        "cdclake.keys": ",".join(layout["keys"]),
        "write.parquet.compression-codec": "zstd",
    }
    if not spark.catalog.tableExists(name):
        main_props = {**common, "cdclake.buckets": str(buckets), ROW_KEYS_PROPERTY: "1", **MOR_PROPERTIES}
        _create(spark, name, f"{_table_ddl(columns)}, {META_DDL}", main_props)
    props = _properties(spark, name)
    owner = props.get(SOURCE_TABLE_PROPERTY)
    if owner and owner != source_table:
        raise ValueError(
            f"lake table {name} holds source table {owner}, not {source_table}: two source names map to "
            f"one identifier; give the sources different namespaces to separate them"
        )
    buckets = int(props.get("cdclake.buckets", buckets))
    present = {f.name for f in spark.table(name).schema.fields}
    new = [(n, t) for n, t in columns if n not in present]
    if "_cdc_key" not in present:
        new.append(("_cdc_key", "string"))
    if new:
        spark.sql(f"ALTER TABLE {name} ADD COLUMNS ({_table_ddl(new)})")
    missing = {k: v for k, v in MOR_PROPERTIES.items() if k not in props}
    if missing:
        pairs = ", ".join(f"{_sql_string(k)}={_sql_string(v)}" for k, v in missing.items())
        spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ({pairs})")
    if not spark.catalog.tableExists(name + LOG_SUFFIX):
        _create(spark, name + LOG_SUFFIX, LOG_DDL, {**common, "cdclake.buckets": str(buckets)})
    if layout.get("scd2"):
        hist = name + HISTORY_SUFFIX
        if not spark.catalog.tableExists(hist):
            _create(
                spark, hist, f"{_table_ddl(columns)}, {HISTORY_META_DDL}", {**common, "cdclake.buckets": str(buckets)}
            )
        present = {f.name for f in spark.table(hist).schema.fields}
        new = [(n, t) for n, t in columns if n not in present]
        if new:
            spark.sql(f"ALTER TABLE {hist} ADD COLUMNS ({_table_ddl(new)})")
    return buckets


MERGE_ON_READ, OVERWRITE = "merge-on-read", "overwrite"


def _choose_mode(spark, name: str, props: dict[str, str], touched: list[int], buckets: int) -> tuple[str, list[int]]:
    """Merge-on-read, or overwrite (and which buckets) for a batch that could merge.

    From the table's file list (metadata only): more extra files (delete files, and small data files
    beyond one a bucket) than the limit -> overwrite the touched buckets and every bucket with extra
    files (maintenance); touched buckets smaller than the minimum on average -> overwrite them.
    Returns (mode, buckets to write).
    """
    target = int(props.get("write.target-file-size-bytes", TARGET_FILE_SIZE))
    rows = spark.sql(
        f"SELECT partition._cdc_bucket AS bucket, content, file_size_in_bytes < {int(target * SMALL_FILE_RATIO)} "
        f"AS small, count(*) AS files, sum(record_count) AS records FROM {name}.files GROUP BY 1, 2, 3"
    ).collect()
    small, deletes, live = {}, {}, {}
    for r in rows:
        bucket = r["bucket"]
        if r["content"] == 0:
            live[bucket] = live.get(bucket, 0) + r["records"]
            small[bucket] = small.get(bucket, 0) + (r["files"] if r["small"] else 0)
        else:
            deletes[bucket] = deletes.get(bucket, 0) + r["files"]
            live[bucket] = live.get(bucket, 0) - (r["records"] if r["content"] == 1 else 0)
    extra = {b: deletes.get(b, 0) + max(0, small.get(b, 0) - 1) for b in set(small) | set(deletes)}
    limit = int(props.get(MAX_EXTRA_FILES_PROPERTY, MAX_EXTRA_FILES_PER_BUCKET * buckets))
    if sum(extra.values()) > limit:
        return OVERWRITE, sorted(set(touched) | {b for b, n in extra.items() if n})
    min_rows = int(props.get(MIN_ROWS_PROPERTY, MOR_MIN_BUCKET_ROWS))
    if sum(live.get(b, 0) for b in touched) < min_rows * len(touched):
        return OVERWRITE, touched
    return MERGE_ON_READ, touched


def _branch_name(batch_id: str) -> str:
    """The private branch a batch's merge is committed to before it is published (a plain identifier)."""
    return "cdclake_" + hashlib.sha1(batch_id.encode("utf-8")).hexdigest()[:16]


def _drop_branch(spark, name: str, branch: str) -> None:
    """Drop ``branch`` if it exists (nothing is committed otherwise)."""
    if spark.sql(f"SELECT 1 FROM {name}.refs WHERE name = {_sql_string(branch)}").first() is not None:
        spark.sql(f"ALTER TABLE {name} DROP BRANCH IF EXISTS {branch}")


@contextlib.contextmanager
def _snapshot_properties(spark, properties: dict[str, str]) -> Iterator[None]:
    """Snapshot summary properties of the SQL commits made inside (Iceberg reads them from the session)."""
    for key, value in properties.items():
        spark.conf.set(SNAPSHOT_PROPERTY_CONF + key, value)
    try:
        yield
    finally:
        for key in properties:
            spark.conf.unset(SNAPSHOT_PROPERTY_CONF + key)


def _merge_sql(target: str, view: str, columns: list[tuple[str, str]], buckets: list[int]) -> str:
    """MERGE of the fold's rows and ``gone`` markers into ``target`` on (bucket, key); names quoted."""
    cols = [quote_ident(n) for n, _ in columns] + META_NAMES
    sets = ", ".join(f"t.{c} = s.{c}" for c in cols)
    values = ", ".join(f"s.{c}" for c in cols)
    return (
        f"MERGE INTO {target} t USING {view} s "
        f"ON t._cdc_bucket IN ({', '.join(str(b) for b in buckets)}) "
        "AND t._cdc_bucket = s._cdc_bucket AND t._cdc_key = s._cdc_key "
        "WHEN MATCHED AND s._cdc_kind = 'gone' THEN DELETE "
        f"WHEN MATCHED THEN UPDATE SET {sets} "
        f"WHEN NOT MATCHED AND s._cdc_kind = 'row' THEN INSERT ({', '.join(cols)}) VALUES ({values})"
    )


def _merge_and_publish(
    spark,
    name: str,
    batch_id: str,
    read_snapshot: int,
    source,
    columns: list[tuple[str, str]],
    buckets: list[int],
    properties: dict[str, str],
) -> None:
    """Merge ``source`` into a branch at ``read_snapshot``, then fast-forward ``main`` to it.

    The fast-forward fails ("Cannot fast-forward") if ``main`` moved since ``read_snapshot``: the
    serializable check of the overwrite path, for a commit whose own validation would only start at
    the snapshot its scan reads. The branch stays for the caller to drop (after the fault point).
    """
    branch = _branch_name(batch_id)
    spark.sql(f"ALTER TABLE {name} CREATE OR REPLACE BRANCH {branch} AS OF VERSION {read_snapshot}")
    spark.catalog.refreshTable(name)
    view = f"cdclake_merge_{branch}"
    source.createOrReplaceTempView(view)
    catalog = name.split(".", 1)[0]
    try:
        with inside_commit(spark, name):
            with _snapshot_properties(spark, properties):
                spark.sql(_merge_sql(f"{name}.branch_{branch}", view, columns, buckets))
            spark.sql(
                f"CALL {catalog}.system.fast_forward(table => {_sql_string(name)}, branch => 'main', "
                f"to => {_sql_string(branch)})"
            ).collect()
    finally:
        spark.catalog.dropTempView(view)
    spark.catalog.refreshTable(name)
    if batch_id not in _snapshot_info(spark, name):
        raise PublishConflict(f"{name}: branch {branch} was replaced before it was published")


def _head_summary(spark, name: str) -> dict[str, str]:
    head = spark.sql(f"SELECT snapshot_id FROM {name}.refs WHERE name = 'main'").first()
    if head is None:
        return {}
    row = spark.sql(f"SELECT summary FROM {name}.snapshots WHERE snapshot_id = {head['snapshot_id']}").first()
    return dict(row["summary"]) if row is not None else {}


def _linked_keys(spark, log_name: str, keys_df) -> list[str]:
    """Keys linked to ``keys_df`` by key changes anywhere in the log, to a fixpoint.

    Only key-change pairs reach the driver (they are rare), never the key set.
    """
    from pyspark.sql import functions as F

    links = spark.table(log_name).where(F.col("_old_key").isNotNull()).select("_key", "_old_key")
    if not links.limit(1).count():
        return []
    found: set[str] = set()
    frontier = keys_df
    for _ in range(MAX_LINK_ROUNDS):
        # two equi-joins, not one join on `_key = k OR _old_key = k`: Spark runs an OR condition
        # as a nested loop over every link and every key of the batch
        pairs = links.join(frontier, links["_key"] == frontier["k"], "left_semi").union(
            links.join(frontier, links["_old_key"] == frontier["k"], "left_semi")
        )
        new = {v for r in pairs.distinct().collect() for v in r} - found
        if not new:
            break
        found |= new
        frontier = spark.createDataFrame([(k,) for k in sorted(new)], "k string")
    return sorted(found)


def _component_homes(pairs: list[tuple[str, str]], buckets: int) -> dict[str, int]:
    """Every key linked by a key change -> the bucket of its component's smallest key."""
    from cdclake.merge import PreparedEvent, components

    fake = [PreparedEvent("UPDATE", "", ("", "", 0), None, k, old, None, None, ("", 0)) for k, old in pairs]
    homes: dict[str, int] = {}
    for group in components(fake):
        members = {e.key for e in group} | {e.old_key for e in group}
        homes.update(dict.fromkeys(members, bucket_of(min(members), buckets)))
    return homes


def compact_table(
    spark,
    batch_dir: Path,
    batch_id: str,
    source_table: str,
    layout: dict[str, Any],
    default_buckets: int,
    full_refresh: bool = False,
    attempt: int = 1,
) -> dict[str, Any]:
    from pyspark.sql import functions as F

    name = layout["spark_name"]
    log_name = name + LOG_SUFFIX
    keys: list[str] = layout["keys"]
    columns = [tuple(c) for c in layout["columns"]]
    types = dict(columns)
    cmap = ColumnMap.from_dict(layout.get("column_map"))
    buckets = ensure_tables(spark, source_table, layout, default_buckets)
    branch = _branch_name(batch_id)
    _drop_branch(spark, name, branch)  # an unpublished merge of a crashed attempt
    main_done = batch_id in _snapshot_info(spark, name) and not full_refresh
    history_done = not layout.get("scd2") or batch_id in _snapshot_info(spark, name + HISTORY_SUFFIX)
    if main_done and history_done:
        return _committed_counts(spark, name, batch_id)
    # else: a crash between the table's commit and the history commit; the fold is redone for the history only

    # 1. this batch's events -> change-log rows (or quarantine) -> appended once
    events = spark.read.parquet(str(batch_dir / "changelog")).where(F.col("table") == source_table)
    routed_dir = batch_dir / "routed" / layout["identifier"]
    events.mapInArrow(
        lambda it: route_events(it, keys, types, buckets, batch_id, cmap), LOG_DDL + ", _error string"
    ).write.mode("overwrite").parquet(str(routed_dir))
    routed = spark.read.parquet(str(routed_dir))
    errors = routed.where("_error IS NOT NULL")
    quarantined = errors.count()
    if quarantined:
        errors.select(
            F.col("_error").alias("error"),
            "source_file",
            "source_offset",
            F.to_json(F.struct("op", "seq", "before", "after")).cast("binary").alias("raw"),
        ).write.mode("overwrite").parquet(str(batch_dir / "quarantine" / "compact" / layout["identifier"]))
    good = routed.where("_error IS NULL").drop("_error")
    fault_point("compact:before-log-append")
    if batch_id not in _snapshot_info(spark, log_name) and good.limit(1).count():
        good.writeTo(log_name).option(f"snapshot-property.{BATCH_PROPERTY}", batch_id).append()
    fault_point("compact:after-log-append")

    # 2. affected keys (with keys linked by key changes) and buckets; the table before the log: every
    # batch committed to the table by the snapshot read has its events in the log read
    read_snapshot = _fresh_snapshot_id(spark, name)
    props = _properties(spark, name)
    keyed = props.get(ROW_KEYS_PROPERTY) == "1"
    spark.catalog.refreshTable(log_name)
    log = spark.table(log_name)
    truncates = events.where(F.col("op") == "TRUNCATE").count()  # logged by the truncate step
    wm_row = log.where(F.col("_cdc_bucket") == TRUNCATE_BUCKET).agg(F.max("seq").alias("wm")).first()
    truncate_seq = wm_row["wm"] if wm_row else None
    batch_keys = (
        good.where("_key IS NOT NULL")
        .select(F.col("_key").alias("k"))
        .union(good.where("_old_key IS NOT NULL").select(F.col("_old_key").alias("k")))
        .distinct()
    )
    full = full_refresh or truncates > 0 or not keyed  # not keyed: rows without _cdc_key, rewritten once
    linked = [] if full else _linked_keys(spark, log_name, batch_keys)
    if linked:
        batch_keys = batch_keys.union(spark.createDataFrame([(k,) for k in linked], "k string")).distinct()
    if full:
        affected_buckets = list(range(buckets))
        log_events = log.where(F.col("_cdc_bucket") >= 0)
    else:
        affected_buckets = sorted({bucket_of(r["k"], buckets) for r in batch_keys.collect()})
        in_buckets = log.where(F.col("_cdc_bucket").isin(affected_buckets))
        keyset = F.broadcast(batch_keys) if len(affected_buckets) < buckets else batch_keys
        log_events = in_buckets.join(keyset, in_buckets["_key"] == keyset["k"], "left_semi").union(
            in_buckets.join(keyset, in_buckets["_old_key"] == keyset["k"], "left_semi")
        )
    if not affected_buckets:
        return {"status": "no-change", "applied": 0, "stale": 0, "quarantined": quarantined}
    if full or read_snapshot is None or main_done:
        mode, rewrite_buckets = OVERWRITE, affected_buckets
    else:
        mode, rewrite_buckets = _choose_mode(spark, name, props, affected_buckets, buckets)

    # 3. route each key-change component to one worker: the bucket of its smallest key
    pairs = log_events.where("_old_key IS NOT NULL").select("_key", "_old_key").distinct().collect()
    part_of = _component_homes([(r["_key"], r["_old_key"]) for r in pairs], buckets)

    part_udf = F.udf(lambda k, b: part_of.get(k, b) if k is not None else b, "int")
    ev_parted = log_events.withColumn("_cdc_part", part_udf(F.col("_key"), F.col("_cdc_bucket")))

    # data columns under aliases on the Spark side (see _aliases); fold_part sees the real names
    names, aliases = [n for n, _ in columns], _aliases(columns)
    aliased = list(zip(aliases, [t for _, t in columns], strict=True))
    alias_keys = [aliases[names.index(k)] for k in keys]
    out_ddl = f"{_table_ddl(aliased)}, {META_DDL}, _cdc_kind string, _cdc_info string"
    fold_args = {
        "keys": keys,
        "columns": columns,
        "batch_id": batch_id,
        "buckets": buckets,
        "truncate_seq": truncate_seq,
        "cmap": cmap,
    }

    if mode == MERGE_ON_READ:  # the affected keys' events only: no current row is read

        def fold_events(ev: pa.Table) -> pa.Table:
            return _renamed(fold_part(ev, None, markers=True, **fold_args), aliases)

        folded = ev_parted.groupBy("_cdc_part").applyInArrow(fold_events, out_ddl)
    else:
        current = spark.table(name).where(F.col("_cdc_bucket").isin(rewrite_buckets))
        current = _with_part(
            _aliased(current, columns, META_NAMES), part_of, alias_keys, f"{_table_ddl(aliased)}, {META_DDL}"
        )

        def fold(ev: pa.Table, rows: pa.Table) -> pa.Table:
            return _renamed(fold_part(ev, _renamed(rows, names), **fold_args), aliases)

        folded = ev_parted.groupBy("_cdc_part").cogroup(current.groupBy("_cdc_part")).applyInArrow(fold, out_ddl)

    merged_dir = batch_dir / "merged" / layout["identifier"]
    fault_point("compact:before-write")
    folded.write.mode("overwrite").parquet(str(merged_dir))
    merged = spark.read.schema(out_ddl).parquet(str(merged_dir))
    stats = {"applied": 0, "stale": 0, "deleted_keys": 0}
    for r in merged.where("_cdc_kind = 'stats'").select("_cdc_info").collect():
        for k, v in json.loads(r["_cdc_info"]).items():
            stats[k] += v
    counts = {**stats, "quarantined": quarantined}
    properties = {BATCH_PROPERTY: batch_id, COUNTS_PROPERTY: json.dumps(counts, sort_keys=True)}
    if truncate_seq:
        properties["cdclake.truncate-watermark"] = truncate_seq
    fault_point("compact:before-commit")
    try:
        if not main_done and mode == MERGE_ON_READ:
            source = _real_names(merged.where("_cdc_kind IN ('row', 'gone')"), columns, [*META_NAMES, "_cdc_kind"])
            # the buckets of the fold's keys (= the touched buckets, unless a key-change chain was cut short)
            merge_buckets = sorted({r["_cdc_bucket"] for r in source.select("_cdc_bucket").distinct().collect()})
            _merge_and_publish(spark, name, batch_id, read_snapshot, source, columns, merge_buckets, properties)
        elif not main_done:
            writer = _real_names(merged.where("_cdc_kind = 'row'"), columns, META_NAMES).writeTo(name)
            for key, value in properties.items():
                writer = writer.option(f"snapshot-property.{key}", value)
            with inside_commit(spark, name):
                _validated(writer, read_snapshot).overwrite(F.col("_cdc_bucket").isin(rewrite_buckets))
            if not keyed:  # every row was rewritten with its key
                spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ({_sql_string(ROW_KEYS_PROPERTY)}='1')")
        fault_point("compact:after-commit")
        if mode == MERGE_ON_READ:
            _drop_branch(spark, name, branch)
        if layout.get("scd2"):
            _write_history(
                spark,
                name + HISTORY_SUFFIX,
                ev_parted,
                part_of,
                affected_buckets,
                keys,
                columns,
                buckets,
                batch_id,
                log,
                batch_dir / "history" / layout["identifier"],
                cmap,
            )
    except Exception as exc:
        if not _is_conflict(exc) or attempt >= COMMIT_ATTEMPTS:
            raise
        logger.warning(
            "compact %s, batch %s: another commit changed its buckets since it was read (attempt %d of %d); "
            "re-reading the table and folding again",
            name,
            batch_id,
            attempt,
            COMMIT_ATTEMPTS,
        )
        for table in [name, log_name] + ([name + HISTORY_SUFFIX] if layout.get("scd2") else []):
            spark.catalog.refreshTable(table)  # what is committed now, e.g. by a zombie run of this batch
        return compact_table(
            spark, batch_dir, batch_id, source_table, layout, default_buckets, full_refresh, attempt + 1
        )
    summary = _head_summary(spark, name)
    return {
        "status": "committed",
        **stats,
        "quarantined": quarantined,
        "truncates_seen": truncates,
        "merge_mode": mode,
        "buckets_rewritten": len(rewrite_buckets),
        "buckets": buckets,
        "files_added": int(summary.get("added-data-files", 0)),
        "files_removed": int(summary.get("deleted-data-files", 0)),
        "files_total": int(summary.get("total-data-files", 0)),
        "delete_files_added": int(summary.get("added-delete-files", 0)),
        "delete_files_total": int(summary.get("total-delete-files", 0)),
        "rows_rewritten": int(summary.get("added-records", 0)),
        "committed_at": dt.datetime.now(dt.UTC).isoformat(),
    }


def _write_history(
    spark,
    hist: str,
    ev_parted,
    part_of: dict[str, int],
    affected_buckets: list[int],
    keys: list[str],
    columns: list[tuple[str, str]],
    buckets: int,
    batch_id: str,
    log,
    out_dir: Path,
    cmap: ColumnMap | None = None,
) -> None:
    from pyspark.sql import functions as F

    if batch_id in _snapshot_info(spark, hist):
        return
    read_snapshot = _fresh_snapshot_id(spark, hist)
    truncates = [
        (r["seq"], r["event_ts"])
        for r in log.where(F.col("_cdc_bucket") == TRUNCATE_BUCKET).select("seq", "event_ts").collect()
    ]
    names, aliases = [n for n, _ in columns], _aliases(columns)
    alias_keys = [aliases[names.index(k)] for k in keys]
    current = spark.table(hist).where(F.col("_cdc_bucket").isin(affected_buckets))
    ddl = f"{_table_ddl(list(zip(aliases, [t for _, t in columns], strict=True)))}, {HISTORY_META_DDL}"
    current = _with_part(_aliased(current, columns, HISTORY_META_NAMES), part_of, alias_keys, ddl)

    def fold(ev: pa.Table, rows: pa.Table) -> pa.Table:
        out = fold_history_part(
            ev, _renamed(rows, names), keys=keys, columns=columns, buckets=buckets, truncates=truncates, cmap=cmap
        )
        return _renamed(out, aliases)

    ev_parted.groupBy("_cdc_part").cogroup(current.groupBy("_cdc_part")).applyInArrow(fold, ddl).write.mode(
        "overwrite"
    ).parquet(str(out_dir))
    writer = (
        _real_names(spark.read.schema(ddl).parquet(str(out_dir)), columns, HISTORY_META_NAMES)
        .writeTo(hist)
        .option(f"snapshot-property.{BATCH_PROPERTY}", batch_id)
    )
    _validated(writer, read_snapshot).overwrite(F.col("_cdc_bucket").isin(affected_buckets))


def run(
    spark, batch_dir: str | Path, tables: list[str] | None = None, buckets: int = 16, full_refresh: bool = False
) -> dict[str, Any]:
    """Compact every table of the batch (or only ``tables``); report per table."""
    batch_dir = Path(batch_dir)
    manifest = read_manifest(batch_dir)
    layouts = json.loads((batch_dir / "tables.json").read_text())
    step = "compact" if not tables else "compact-" + "-".join(sorted(tables))
    report: dict[str, Any] = {}
    for source_table, layout in sorted(layouts.items()):
        if tables and source_table not in tables:
            continue
        if layout.get("error"):
            report[source_table] = {"status": "skipped", "error": layout["error"]}
            continue
        report[source_table] = compact_table(
            spark, batch_dir, manifest.batch_id, source_table, layout, buckets, full_refresh
        )
    write_report(batch_dir, step, report)
    return report
