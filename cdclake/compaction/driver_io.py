"""The driver path's reads and commits, without Spark jobs where it can: a table batch's events read by
pyarrow, current rows and rewritten buckets read by pyiceberg (or one bounded Spark job), and the log
append, the row delta and the bucket overwrite committed from the driver (``row_delta``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from cdclake.compaction.driver_read import read_buckets
from cdclake.compaction.lake_tables import LOG_DDL, META_NAMES, table_schema
from cdclake.compaction.lineage import head_summary, java_table
from cdclake.compaction.routing import component_homes
from cdclake.compaction.row_delta import POSITION_COLUMNS, Located, append_rows, commit_overwrite, commit_row_delta
from cdclake.lake.tables import BATCH_PROPERTY
from cdclake.merge import bucket_of
from cdclake.runtime.faults import inside_commit
from cdclake.runtime.spark import java_class
from cdclake.schema.coltypes import quote_ident

logger = logging.getLogger(__name__)


def to_frame(spark, table: pa.Table, ddl: str):
    """A Spark DataFrame of a driver-side Arrow table (no job; ``ddl`` gives Spark's names and types)."""
    return spark.createDataFrame(table, schema=ddl) if table.num_rows else spark.createDataFrame([], ddl)


def table_events(batch_dir: Path, source_table: str) -> int | None:
    """Events of ``source_table`` in the batch's change log, from the normalize report (None: unknown)."""
    from cdclake.staging.batch import read_report

    report = read_report(batch_dir, "normalize") or {}
    entry = report.get("tables", {}).get(source_table)
    return None if entry is None else int(entry.get("events", 0))


#: How many tables' shares of the driver's bulk budget the table being compacted may take (:func:`whole_budget`).
_BULK_SHARES: ContextVar[int] = ContextVar("bulk_shares", default=1)


@contextmanager
def whole_budget(shares: int) -> Iterator[None]:
    """Inside: the table compacted here may take ``shares`` tables' bulk bounds (the compact runner holds
    that many shares of the driver's budget for it while it runs; docs/decisions.md, "A large table takes
    the shares of the driver's bulk budget it needs")."""
    token = _BULK_SHARES.set(max(1, shares))
    try:
        yield
    finally:
        _BULK_SHARES.reset(token)


def bulk_shares(spark, changelog: Path, source_table: str, expected: int | None) -> float | None:
    """How many tables' bulk bounds (``Settings.driver_bulk_rows`` events, ``driver_bulk_bytes`` uncompressed
    bytes of them, from its folder's Parquet footers) this table batch needs; None: the bulk path never
    takes it (unknown size, no folder, the native fold off)."""
    from cdclake.events.batch import decoded_bytes
    from cdclake.runtime.settings import Settings

    settings = Settings.from_env()
    if expected is None or not settings.native_fold or not settings.driver_bulk_rows:
        return None
    folder = _events_folder(spark, changelog, source_table)
    if folder is None:
        return None
    size = decoded_bytes(sorted(folder.glob("*.parquet")))
    return max(expected / settings.driver_bulk_rows, size / max(1, settings.driver_bulk_bytes))


def bulk_bound(spark, changelog: Path, source_table: str, expected: int | None) -> int | None:
    """The bulk path's bound when it takes this table batch: ``Settings.driver_bulk_rows`` times the shares
    it may take (one, or all of them inside :func:`whole_budget`) when it needs no more; None when it does
    not take it (docs/decisions.md, "The bulk path in the driver")."""
    from cdclake.runtime.settings import Settings

    shares = _BULK_SHARES.get()
    needed = bulk_shares(spark, changelog, source_table, expected)
    if needed is None or needed > shares:
        return None
    return Settings.from_env().driver_bulk_rows * shares


def batch_events(spark, changelog: Path, source_table: str):
    """This batch's events of ``source_table``: its partition folder of the change log read alone.

    Reading the whole folder and filtering lists every table's folder first (a Spark listing job once there
    are more than 32): 0.73-1.0 s per table with 300 tables, against 0.08 s for its own folder.
    """
    from pyspark.sql import functions as F

    folder = _events_folder(spark, changelog, source_table)
    if folder is not None:
        return spark.read.parquet(str(folder)).withColumn("table", F.lit(source_table))
    return spark.read.parquet(str(changelog)).where(F.col("table") == source_table)


def _events_folder(spark, changelog: Path, source_table: str) -> Path | None:
    """``source_table``'s partition folder of the change log (Spark's escaping of its name), if there is one."""
    utils = java_class(spark, "org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils")
    if utils is None:
        return None
    escaped = utils.escapePathName(source_table)
    folder = changelog / f"table={escaped}"
    return folder if folder.is_dir() else None


def events_arrow(spark, changelog: Path, source_table: str) -> pa.Table:
    """This batch's events of ``source_table`` in the driver: its folder's Parquet files read by pyarrow (no
    Spark job: 0.3-1.3 s for a 30k-event table through Spark, and no Spark frame to plan), else through Spark."""
    import pyarrow.dataset as ds

    folder = _events_folder(spark, changelog, source_table)
    if folder is not None:
        try:
            read = ds.dataset(str(folder), format="parquet").to_table()
            if "op" in read.column_names:
                return coalesced(read)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:  # files Spark unifies
            logger.info("%s: events read through Spark (%s)", source_table, exc)
    return batch_events(spark, changelog, source_table).toArrow()


#: Events a batch's table is routed and folded in, at least (:func:`coalesced`).
COALESCE_ROWS = 65_536


def coalesced(events: pa.Table, rows: int = COALESCE_ROWS) -> pa.Table:
    """``events`` with runs of small chunks joined into chunks of about ``rows`` (larger ones kept as they are).

    Why: decode writes a table's change log as one file per decode task (``decoded_tables``), so a 100k-change
    batch of ten landing files reaches compact as ten chunks of a few thousand events a table, and routing pays
    its Arrow calls per chunk: the 100k batch's compact took 0.3-0.8 s longer than over normalize's one file a
    table. Joining copies only the small chunks (a few MB a table at that size)."""
    batches = events.to_batches()
    if len(batches) <= 1 or events.num_rows >= rows * len(batches):
        return events
    out: list[pa.RecordBatch] = []
    group: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        if batch.num_rows >= rows:  # a large chunk stays whole, after the group before it
            out.extend(_joined(group, events.schema))
            group, count = [], 0
            out.append(batch)
            continue
        group.append(batch)
        count += batch.num_rows
        if count >= rows:
            out.extend(_joined(group, events.schema))
            group, count = [], 0
    out.extend(_joined(group, events.schema))
    return pa.Table.from_batches(out, events.schema)


def _joined(group: list[pa.RecordBatch], schema: pa.Schema) -> list[pa.RecordBatch]:
    if len(group) <= 1:
        return group
    return pa.Table.from_batches(group, schema).combine_chunks().to_batches()


#: Up to about this many rows in the touched buckets, the current rows of a batch's keys are read by
#: reading the buckets whole and filtering in Arrow: no join to plan and broadcast (1,000 keys of a 100k
#: table: 0.42 s against 0.62 s for the semi-join, median of 5, /tmp script in the issue 19 note).
BUCKET_READ_ROWS = 200_000


#: A bucket overwrite of a table of at most this many rows reads them in the driver (pyiceberg) and commits
#: from there; a larger one passes its untouched rows through in Spark.
DRIVER_OVERWRITE_ROWS = 200_000


def current_rows(
    spark,
    name: str,
    keys: set[str],
    buckets: int,
    records: int | None = None,
    positions: bool = False,
    snapshot: int | None = None,
    columns: list[tuple[str, str]] | None = None,
) -> tuple[pa.Table, Located | None]:
    """The current rows of ``keys``: their whole buckets filtered in Arrow when they hold at most
    :data:`BUCKET_READ_ROWS` by the table's ``records`` (else one Spark job, a broadcast semi-join on
    ``_cdc_key``).

    With ``positions``, also where the rows the read saw live (every row of whole buckets read); whole
    buckets are then read by pyiceberg in the driver at ``snapshot`` (``driver_read``; the table's
    ``columns`` give the schema), else by one Spark job."""
    from pyspark.sql import functions as F

    touched = sorted({bucket_of(k, buckets) for k in keys})
    current = spark.table(name).where(F.col("_cdc_bucket").isin(touched))
    if positions:
        current = current.select("*", *POSITION_COLUMNS)
    wanted_keys = pa.array(sorted(keys), pa.string())
    if records is not None and records * len(touched) <= BUCKET_READ_ROWS * buckets:
        read = None
        if positions and snapshot is not None and columns is not None:
            read = read_buckets(spark, name, snapshot, touched, columns)
        if read is None:
            read = current.toArrow()
        located = Located.of(read, buckets=touched) if positions else None
        rows = read.filter(pc.is_in(read["_cdc_key"], wanted_keys))
    else:
        wanted = F.broadcast(spark.createDataFrame([(k,) for k in sorted(keys)], "k string"))
        rows = current.join(wanted, current["_cdc_key"] == wanted["k"], "left_semi").toArrow()
        located = Located.of(rows, keys=keys) if positions else None
    return (rows.drop_columns(POSITION_COLUMNS) if positions else rows), located


def commit_delta_in_driver(
    spark,
    name: str,
    read_snapshot: int,
    picked: pa.Table,
    located: Located | None,
    columns: list[tuple[str, str]],
    buckets: int,
    merge_buckets: list[int],
    properties: dict[str, str],
) -> bool:
    """Commit the driver fold's ``row``s and ``gone`` markers as a row delta (``row_delta.commit_row_delta``),
    locating the current rows the reads so far did not cover (one read). False: the caller merges (no JVM,
    or a table whose schema holds columns the fold does not write)."""
    table = java_table(spark, name)
    if table is None:
        return False
    keys = set(picked["_cdc_key"].to_pylist())
    missing = {k for k in keys if located is None or not located.covers(k, buckets)}
    if missing:
        records = int(head_summary(spark, name).get("total-records", 0))
        found = current_rows(spark, name, missing, buckets, records, True, read_snapshot, columns)[1]
        located = found if located is None else located.plus(found)
    rows = picked.filter(pc.equal(picked["_cdc_kind"], "row"))
    rows = rows.select([n for n, _ in columns] + META_NAMES).cast(table_schema(columns))
    with inside_commit(spark, name):
        done = commit_row_delta(spark, table, read_snapshot, rows, located.of_keys(keys), merge_buckets, properties)
    spark.catalog.refreshTable(name)
    return done


def append_in_driver(spark, log_name: str, logged: pa.Table, batch_id: str) -> bool:
    """Append the driver's change-log rows from the driver (``row_delta.append_rows``: no Spark job); False
    when there is no JVM or the log's schema is not ours (Spark appends them instead)."""
    table = java_table(spark, log_name)
    if table is None or not append_rows(spark, table, logged, {BATCH_PROPERTY: batch_id}):
        return False
    spark.catalog.refreshTable(log_name)
    return True


def overwrite_in_driver(spark, name: str, read_snapshot, rows: pa.Table, buckets: list[int], properties) -> bool:
    """The bucket overwrite of the driver's rows committed from the driver (``row_delta.commit_overwrite``:
    no Spark job, no Arrow frame shipped to the JVM); False when there is no JVM or the table's schema is not
    the fold's columns (Spark overwrites instead)."""
    table = java_table(spark, name)
    if table is None:
        return False
    with inside_commit(spark, name):
        done = commit_overwrite(spark, table, read_snapshot, rows, buckets, properties)
    if done:
        spark.catalog.refreshTable(name)
    return done


def buckets_in_driver(spark, name: str, snapshot: int, buckets: list[int], columns, in_order: set[str]):
    """The current rows of ``buckets`` at ``snapshot``, less the ``in_order`` keys' (the row-state fold gives
    theirs), read by pyiceberg; None when the table holds more than :data:`DRIVER_OVERWRITE_ROWS` rows or the
    reader does not apply (the overwrite then passes them through in Spark)."""
    if int(head_summary(spark, name).get("total-records", DRIVER_OVERWRITE_ROWS + 1)) > DRIVER_OVERWRITE_ROWS:
        return None
    read = read_buckets(spark, name, snapshot, buckets, columns)
    if read is None:
        return None
    read = read.drop_columns(POSITION_COLUMNS)
    return read.filter(pc.invert(pc.is_in(read["_cdc_key"], pa.array(sorted(in_order), pa.string()))))


def kept_rows(spark, name: str, rewrite_buckets: list[int], folded: set[str], truncate_seq, columns):
    """The rewritten buckets' rows the fold did not touch, as ``fold_part`` passes them through (rows
    older than the truncate watermark go: their events are not in the log)."""
    from pyspark.sql import functions as F

    current = spark.table(name).where(F.col("_cdc_bucket").isin(rewrite_buckets))
    if folded:
        done = F.broadcast(spark.createDataFrame([(k,) for k in sorted(folded)], "k string"))
        current = current.join(done, current["_cdc_key"] == done["k"], "left_anti")
    if truncate_seq is not None:
        current = current.where(F.coalesce(F.col("_cdc_seq"), F.lit("")) >= F.lit(truncate_seq))
    return current.select(*[F.col(quote_ident(n)) for n, _ in columns], *META_NAMES)


def parted_in_driver(spark, logged: pa.Table, buckets: int):
    """The logged events as a frame with ``_cdc_part`` (as :func:`_fold_on_workers` routes them), for SCD2."""
    old_keys = logged["_old_key"].to_pylist()
    pairs = sorted({(k, o) for k, o in zip(logged["_key"].to_pylist(), old_keys, strict=True) if o is not None})
    part_of = component_homes(pairs, buckets)
    parts = [
        part_of.get(k, b) if k is not None else b
        for k, b in zip(logged["_key"].to_pylist(), logged["_cdc_bucket"].to_pylist(), strict=True)
    ]
    parted = logged.append_column("_cdc_part", pa.array(parts, pa.int32()))
    return to_frame(spark, parted, LOG_DDL + ", _cdc_part int"), part_of
