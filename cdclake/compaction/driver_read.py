"""A few buckets' current rows read in the driver by pyiceberg, with each row's place (``_file``, ``_pos``).

The row-state read of a larger table reads whole touched buckets and filters the batch's keys in Arrow.
Through Spark that is a job whose rows are converted to Arrow in the JVM and sent over a socket
(0.5-1.1 s for 100k rows of 16 buckets, warm); pyiceberg reads the same Parquet files straight into Arrow
in 0.07-0.3 s. It reads at the snapshot the compaction validates from, planned from the metadata file
the session's catalog holds (no second catalog connection).

Positions: each data file is read whole, without its deletes, so its rows come in file order and a row's
``_pos`` is its index; the position deletes (pyiceberg's own reader of delete files and deletion vectors)
are then removed. Anything this reader does not handle (equality deletes, a schema other than the fold's
columns, no JVM) returns None and the caller reads through Spark.
"""

from __future__ import annotations

import logging

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdclake.compaction.lake_tables import table_schema
from cdclake.compaction.lineage import java_table
from cdclake.compaction.row_delta import POSITION_COLUMNS, file_schema

logger = logging.getLogger(__name__)


def placed_schema(columns: list[tuple[str, str]]) -> pa.Schema:
    """The lake table of ``columns`` with each row's place: ``_file`` and ``_pos`` after its columns."""
    return table_schema(columns).append(pa.field("_file", pa.string())).append(pa.field("_pos", pa.int64()))


def read_buckets(
    spark, name: str, snapshot_id: int, buckets: list[int], table_columns: list[tuple[str, str]]
) -> pa.Table | None:
    """Every live row of ``buckets`` of ``name`` at ``snapshot_id`` in :func:`placed_schema` of the table's
    ``table_columns``, or None when this reader does not apply."""
    from pyiceberg.expressions import AlwaysTrue, In
    from pyiceberg.io.pyarrow import ArrowScan, _read_all_delete_files
    from pyiceberg.manifest import DataFileContent
    from pyiceberg.table import FileScanTask, StaticTable

    schema = placed_schema(table_columns)
    columns = pa.schema(list(schema)[: -len(POSITION_COLUMNS)])
    table = java_table(spark, name)
    if table is None or file_schema(spark, table, columns) is None:
        return None
    location = table.operations().current().metadataFileLocation()
    static = StaticTable.from_metadata(location, properties=_io_properties(location))
    # the current snapshot is read in the current schema (a scan at a snapshot id takes that snapshot's schema:
    # a column renamed since its last commit would be missing by its new name)
    current = static.metadata.current_snapshot_id == snapshot_id
    scan = static.scan(row_filter=In("_cdc_bucket", set(buckets)), snapshot_id=None if current else snapshot_id)
    tasks = list(scan.plan_files())
    if any(d.content == DataFileContent.EQUALITY_DELETES for t in tasks for d in t.delete_files):
        return None
    whole = [FileScanTask(t.file) for t in tasks]  # no deletes, no filter: every row, in file order
    read = ArrowScan(static.metadata, static.io, scan.projection(), AlwaysTrue()).to_table(whole)
    counts = [t.file.record_count for t in tasks]
    if read.num_rows != sum(counts):  # rows not in file order after all: positions would be wrong
        logger.warning("%s: pyiceberg read %d rows of %d; reading through Spark", name, read.num_rows, sum(counts))
        return None
    read = read.select(columns.names).cast(columns)
    paths = [t.file.file_path for t in tasks]
    read = read.append_column(
        "_file", pc.take(pa.array(paths, pa.string()), pa.array(np.repeat(np.arange(len(counts)), counts)))
    )
    starts = np.repeat(np.cumsum(counts) - counts, counts)  # each row's file's first row
    read = read.append_column("_pos", pa.array(np.arange(read.num_rows) - starts, pa.int64()))
    deletes = _read_all_delete_files(static.io, tasks)
    if deletes:
        read = read.filter(pa.array(~_deleted(paths, counts, deletes)))
    return read.cast(schema)


def _deleted(paths: list[str], counts: list[int], deletes: dict[str, list[pa.ChunkedArray]]) -> np.ndarray:
    """True for the rows (files ``paths`` of ``counts`` rows, read whole, one after another) that a position
    delete names: a mask set at each file's first row plus the deleted positions (no text per row)."""
    first = dict(zip(paths, np.cumsum(counts) - counts, strict=True))
    size = dict(zip(paths, counts, strict=True))
    mask = np.zeros(sum(counts), dtype=bool)
    for path, arrays in deletes.items():
        if path not in first:
            continue
        for positions in arrays:
            pos = np.asarray(positions.to_numpy(), dtype=np.int64)
            mask[first[path] + pos[(pos >= 0) & (pos < size[path])]] = True
    return mask


def _io_properties(location: str) -> dict[str, str]:
    """pyiceberg FileIO properties for the metadata's location (S3 endpoint and style from the settings)."""
    from cdclake.lake.tables import s3_properties
    from cdclake.runtime.settings import CatalogSettings, is_s3

    return s3_properties(CatalogSettings.from_env()) if is_s3(location) else {}


def read_log(
    spark, log_name: str, schema: pa.Schema, buckets: list[int] | None = None, key_changes: bool = False
) -> pa.Table | None:
    """The change-log rows of ``buckets`` (all: None), or its key changes only, at the log's current snapshot,
    in ``schema``'s columns and types, read by pyiceberg in the driver: no Spark job, and files whose column
    metrics rule the filter out are not opened. None without a JVM table."""
    from pyiceberg.expressions import AlwaysTrue, And, In, NotNull
    from pyiceberg.table import StaticTable

    table = java_table(spark, log_name)
    if table is None:
        return None
    location = table.operations().current().metadataFileLocation()
    static = StaticTable.from_metadata(location, properties=_io_properties(location))
    if static.current_snapshot() is None:
        return schema.empty_table()
    row_filter = In("_cdc_bucket", set(buckets)) if buckets is not None else AlwaysTrue()
    if key_changes:
        row_filter = And(row_filter, NotNull("_old_key"))
    read = static.scan(row_filter=row_filter, selected_fields=tuple(schema.names)).to_arrow()
    return read.select(schema.names).cast(schema)
