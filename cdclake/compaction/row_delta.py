"""The driver fold's commits without Spark writes: files written by the driver, committed through Iceberg's
Java API (docs/decisions.md, "The driver fold commits its own files").

A ``MERGE INTO`` of the driver's few folded rows scans the touched buckets and joins them to the rows
(3 Spark jobs, 0.8-1.5 s for 1,000 keys of a 100k-row table), only to find where the affected keys' current
rows are. The row-state read already has that answer: the same read returns each row's ``_file`` and
``_pos``. So the commit writes, per touched bucket, one Parquet data file of the new rows and, per data
file it deletes from, one position delete file naming it, and commits them as one ``RowDelta``: the files
a ``MERGE`` leaves, no Spark job. The change log's rows are appended the same way (``append_rows``).

Isolation is the ``MERGE`` path's: validated from the snapshot read before the change log, no data or
delete file added to the touched buckets since, and every data file the deletes point at still live
(serializable, as Iceberg's own merge-on-read writes check it). A lost race raises a conflict like the
other paths, and the table is re-read and folded again.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cdclake.events.arrow_tables import ChunkedTake
from cdclake.lake.parquet_stats import dictionary_columns, statistics_columns
from cdclake.merge import bucket_of
from cdclake.runtime.faults import AFTER_FILES_WRITTEN, fault_point
from cdclake.runtime.spark import java_class

#: Iceberg's reserved field ids of a position delete file's columns (the spec's ``file_path`` and ``pos``).
DELETE_FILE_PATH_ID, DELETE_POS_ID = 2147483546, 2147483545
#: Threads building Iceberg's file objects (each a few Py4J calls, waiting on the JVM).
FILE_THREADS = 4
#: Iceberg's metadata columns of a row's place: its data file and its position in it.
POSITION_COLUMNS = ["_file", "_pos"]
LOCATED_COLUMNS = ["_cdc_key", "_cdc_bucket", *POSITION_COLUMNS]


def iceberg_type(arrow: pa.DataType) -> str:
    """How Iceberg's ``Type.toString`` names the type the lake tables store as ``arrow``."""
    if pa.types.is_decimal(arrow):
        return f"decimal({arrow.precision}, {arrow.scale})"
    if pa.types.is_map(arrow):
        return f"map<{iceberg_type(arrow.key_type)}, {iceberg_type(arrow.item_type)}>"
    if pa.types.is_timestamp(arrow):
        return "timestamptz" if arrow.tz else "timestamp"
    names = {pa.string(): "string", pa.int64(): "long", pa.int32(): "int", pa.float64(): "double"}
    names |= {pa.bool_(): "boolean", pa.date32(): "date", pa.binary(): "binary"}
    return names.get(arrow, str(arrow))


def _id(field_id: int) -> dict[bytes, bytes]:
    return {b"PARQUET:field_id": str(field_id).encode()}


def file_schema(spark, table, schema: pa.Schema) -> pa.Schema | None:
    """``schema`` with the Iceberg field ids of ``table`` (Iceberg's Java ``Table``), as its readers find
    columns in a Parquet file; None unless the table's schema is exactly these columns with these types (a
    column we do not write would lose its values: the Spark write paths keep them).

    The schema comes as its JSON in one Py4J call: walking the Java columns cost four calls a column, and
    the end of a Java list's iteration is an exception, which PySpark converts at a dozen more calls."""
    text = java_class(spark, "org.apache.iceberg.SchemaParser").toJson(table.schema())
    fields = json.loads(text)["fields"]
    if len(fields) != len(schema):
        return None
    out = []
    for field, arrow in zip(fields, schema, strict=True):
        kind = field["type"]
        if field["name"] != arrow.name or _type_text(kind) != iceberg_type(arrow.type):
            return None
        arrow_type = arrow.type
        if pa.types.is_map(arrow_type):
            arrow_type = pa.map_(
                pa.field("key", arrow_type.key_type, nullable=False, metadata=_id(kind["key-id"])),
                pa.field("value", arrow_type.item_type, metadata=_id(kind["value-id"])),
            )
        out.append(pa.field(arrow.name, arrow_type, metadata=_id(field["id"])))
    return pa.schema(out)


def _type_text(kind: Any) -> str:
    """Iceberg's ``Type.toString`` of a type in its schema JSON: a primitive is its own text, a map an object
    (other nested types are named only by their kind: no column we write has one)."""
    if isinstance(kind, str):
        return kind
    if kind.get("type") == "map":
        return f"map<{_type_text(kind['key'])}, {_type_text(kind['value'])}>"
    return str(kind.get("type"))


def _parquet_bytes(table: pa.Table) -> tuple[pa.Buffer, pq.FileMetaData]:
    """The Parquet file of ``table``, and its footer as written (for its column counts). Written to Arrow's own
    buffer, not a Python ``BytesIO``: every data page written to a Python stream takes the GIL, and a bulk
    compact's file threads then waited on the tables' Python threads (and they on them)."""
    sink, footer = pa.BufferOutputStream(), []
    # decimals as Iceberg writes them (INT32/INT64 up to 18 digits), timestamps in microseconds; dictionary
    # pages only for the columns whose values repeat: a bucket's keys, images and texts are mostly distinct, and
    # their dictionaries were built and then dropped (the bench's 100k batch: table files written in 0.12 s
    # against 0.22 s, log files in 0.43 against 0.51 s, both smaller under zstd)
    pq.write_table(
        table,
        sink,
        compression="zstd",
        use_dictionary=dictionary_columns(table.schema),
        store_decimal_as_integer=True,
        coerce_timestamps="us",
        write_statistics=statistics_columns(table.schema),
        metadata_collector=footer,
    )
    return sink.getvalue(), footer[0]


def column_counts(schema: pa.Schema, footer: pq.FileMetaData) -> dict[str, dict[str, list[int]]] | None:
    """Iceberg's counts of a file's top-level columns (compressed sizes, values, nulls; by field id, in the
    JSON form of ``ContentFileParser``), from the footer the writer returned: what Iceberg's
    ``ParquetUtil.fileMetrics`` reads back from the file through the JVM (10-20 ms a file), less the value
    bounds. A map column's leaves get none (a reader then assumes nothing of them); None for another nested
    column, which this module does not write."""
    ids: list[int] = []
    sizes: list[int] = []
    values: list[int] = []
    nulls: list[int | None] = []
    leaf = 0
    for field in schema:
        if pa.types.is_map(field.type):
            if pa.types.is_nested(field.type.key_type) or pa.types.is_nested(field.type.item_type):
                return None  # more leaves than a key and a value: the places of the columns after it are unknown
            leaf += 2  # a key and a value leaf (the lake's maps are of strings)
            continue
        if pa.types.is_nested(field.type) or not field.metadata or b"PARQUET:field_id" not in field.metadata:
            return None
        chunks = [footer.row_group(g).column(leaf) for g in range(footer.num_row_groups)]
        leaf += 1
        ids.append(int(field.metadata[b"PARQUET:field_id"]))
        sizes.append(sum(c.total_compressed_size for c in chunks))
        values.append(sum(c.num_values for c in chunks))
        known = all(c.statistics is not None and c.statistics.has_null_count for c in chunks)
        nulls.append(sum(c.statistics.null_count for c in chunks) if known else None)
    counted = [i for i, n in enumerate(nulls) if n is not None]
    return {
        "column-sizes": {"keys": ids, "values": sizes},
        "value-counts": {"keys": ids, "values": values},
        "null-value-counts": {"keys": [ids[i] for i in counted], "values": [nulls[i] for i in counted]},
    }


#: A position delete file's columns (required, Iceberg's reserved ids), sorted by path then position.
DELETE_SCHEMA = pa.schema(
    [
        pa.field("file_path", pa.string(), nullable=False, metadata=_id(DELETE_FILE_PATH_ID)),
        pa.field("pos", pa.int64(), nullable=False, metadata=_id(DELETE_POS_ID)),
    ]
)


def _write(table, location: str, data: pa.Buffer) -> None:
    """``data`` at ``location``: a local path straight from Python (a Py4J stream costs ~10 ms a file),
    anything else through the table's ``FileIO`` (S3 and the like)."""
    parts = urlsplit(location)
    if parts.scheme in ("", "file"):
        path = Path(parts.path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return
    out = table.io().newOutputFile(location)
    stream = out.create()
    try:
        stream.write(bytearray(data))
    finally:
        stream.close()


def _file_locations(spark, table):
    """``(bucket, file name) -> location`` of a new data file, as the table's ``LocationProvider`` names it.

    Asked of the provider twice up front: where it places files under ``<prefix>/_cdc_bucket=<n>/<name>`` with
    one prefix (Iceberg's default provider), the rest are named here; otherwise (an object-store layout hashes
    each name) the provider names each file. Three Py4J calls a file were a sixth of a small batch's compact."""
    spec, provider = table.spec(), table.locationProvider()
    partition_data = java_class(spark, "org.apache.iceberg.DataFiles").data

    def asked(bucket: int, name: str) -> str:
        return str(provider.newDataLocation(spec, partition_data(spec, f"_cdc_bucket={bucket}"), name))

    tails = [(f"/_cdc_bucket={b}/{n}", asked(b, n)) for b, n in ((0, "cdclake-a.parquet"), (1, "cdclake-b.parquet"))]
    prefixes = {location[: -len(tail)] for tail, location in tails}
    if len(prefixes) == 1 and all(location.endswith(tail) for tail, location in tails):
        (prefix,) = prefixes
        return lambda bucket, name: f"{prefix}/_cdc_bucket={bucket}/{name}"
    return asked


def _by_bucket(rows: pa.Table | None) -> Callable[[int], pa.Table]:
    """``rows`` of a bucket, each bucket's taken by its positions when asked (a filter per bucket read every
    row's images once per bucket: 16 filters of a 400k-event log append took twice the CPU of one sort). The
    takes run in the file writers' threads, side by side: one take of the whole table, sorted by bucket, ran
    alone on one core before any file was written, and so did joining its chunks for the takes."""
    if rows is None or not rows.num_rows:
        return lambda bucket: rows.slice(0, 0) if rows is not None else None
    codes = np.asarray(pc.fill_null(rows["_cdc_bucket"], -1).to_numpy(), np.int64)
    order = np.argsort(codes, kind="stable")  # stable: a bucket's positions ascend
    ordered = codes[order]
    chunked = ChunkedTake(rows)  # the chunks are not joined first (``arrow_tables``)

    def part(bucket: int) -> pa.Table:
        start, end = np.searchsorted(ordered, [bucket, bucket + 1])
        if start == 0 and end == len(ordered):
            return rows
        return chunked.take(order[int(start) : int(end)])

    return part


def _write_files(spark, table, rows: pa.Table | None, deletes: pa.Table | None, buckets: list[int]) -> list:
    """Per bucket, one Parquet data file of ``rows`` and, per data file that ``deletes`` point into, one
    position delete file (either may be None), written from the driver; returns (kind, Iceberg's
    ``DataFile`` / ``DeleteFile``) pairs.

    A data file carries its column counts (sizes, values, nulls: later reads skip a log file whose
    ``_old_key`` is all null), taken from the footer as written and handed to Iceberg as the JSON of the
    file (``ContentFileParser``): two Py4J calls a file. Iceberg reading each footer back for the same
    counts cost 10-20 ms of JVM a file, 128 files in a 100k-change batch of 4 tables (docs/decisions.md,
    "The driver's files carry the counts it already has"). No value bounds: the reads of these tables filter
    on the bucket (the partition) and on nulls, and a bucket's file of keys spread by hash has bounds
    that prune nothing.
    """
    spec = table.spec()
    spec_id = spec.specId()
    parquet = java_class(spark, "org.apache.iceberg.FileFormat").PARQUET
    read_tree = java_class(spark, "org.apache.iceberg.util.JsonUtil").mapper().readTree
    from_json = java_class(spark, "org.apache.iceberg.ContentFileParser").fromJson  # a member looked up once
    location_of = _file_locations(spark, table)

    def written(bucket: int, kind: str, part: pa.Table, referenced: str | None = None):
        location = location_of(bucket, f"cdclake-{uuid.uuid4().hex}-{kind}.parquet")
        data, footer = _parquet_bytes(part)
        _write(table, location, data)
        if kind == "data":
            doc = {
                "spec-id": spec_id,
                "content": "data",
                "file-path": location,
                "file-format": "parquet",
                "partition": [bucket],
                "file-size-in-bytes": len(data),
                "record-count": part.num_rows,
                **(column_counts(part.schema, footer) or {}),
                "sort-order-id": 0,  # unsorted, as Iceberg's DataFiles.builder has it
            }
            return kind, from_json(read_tree(json.dumps(doc)), spec)
        built = (
            java_class(spark, "org.apache.iceberg.FileMetadata")
            .deleteFileBuilder(spec)
            .ofPositionDeletes()
            .withRecordCount(part.num_rows)
            .withReferencedDataFile(referenced)
            .withPath(location)
            .withFormat(parquet)
            .withFileSizeInBytes(len(data))
            .withPartitionPath(f"_cdc_bucket={bucket}")
            .build()
        )
        return kind, built

    row_parts = _by_bucket(rows)
    delete_parts = _by_bucket(deletes)

    def bucket_files(bucket: int) -> list:
        out = []
        if rows is not None and (part := row_parts(bucket)).num_rows:
            out.append(written(bucket, "data", part))
        if deletes is not None:
            part = _delete_table(delete_parts(bucket))
            # one delete file per data file it deletes from, naming it (Iceberg's own writers' default
            # granularity): a reader applies it to that file alone
            for referenced in sorted(set(part["file_path"].to_pylist())):
                out.append(written(bucket, "deletes", part.filter(pc.equal(part["file_path"], referenced)), referenced))
        return out

    # buckets side by side: Arrow's filters and Parquet's encoding and compression run without the GIL (a
    # large table's commit, which runs alone, used one core), and each file's Py4J calls wait on the JVM;
    # a thread holds one bucket's rows at a time
    with ThreadPoolExecutor(max_workers=FILE_THREADS) as pool:
        return [built for found in pool.map(bucket_files, sorted(buckets)) for built in found]


def append_rows(spark, table, rows: pa.Table, properties: dict[str, str]) -> bool:
    """Append ``rows`` (a table with ``_cdc_bucket``, in the table's columns) to ``table`` in one commit
    with the snapshot ``properties``. False (nothing written) when the table's schema is not ``rows``'."""
    schema = file_schema(spark, table, rows.schema)
    if schema is None:
        return False
    rows = rows.cast(schema)
    files = _write_files(spark, table, rows, None, sorted(set(rows["_cdc_bucket"].to_pylist())))
    append = table.newAppend()
    for _, built in files:
        append = append.appendFile(built)
    for key, value in properties.items():
        append = append.set(key, value)
    append.commit()
    return True


def _in_buckets(spark, buckets: list[int]):
    """Iceberg's expression ``_cdc_bucket IN buckets`` (as ORs of equalities, what conflict checks take), built
    from its JSON in one Py4J call (``ExpressionParser``: two calls a bucket before), as a balanced tree so that
    no count of buckets nests deeper than a JSON reader takes."""

    def ors(part: list[int]) -> Any:
        if len(part) == 1:
            return {"type": "eq", "term": "_cdc_bucket", "value": part[0]}
        middle = len(part) // 2
        return {"type": "or", "left": ors(part[:middle]), "right": ors(part[middle:])}

    chosen = sorted({int(b) for b in buckets})
    parser = java_class(spark, "org.apache.iceberg.expressions.ExpressionParser")
    return parser.fromJson(json.dumps(ors(chosen) if chosen else False))


def commit_overwrite(
    spark, table, read_snapshot: int | None, rows: pa.Table, buckets: list[int], properties: dict[str, str]
) -> bool:
    """Replace ``buckets`` of ``table`` with ``rows`` (in the table's columns) in one ``OverwriteFiles``:
    what the Spark overwrite of the driver's rows commits, serializable from ``read_snapshot`` (None: the
    table was empty when read, so its whole history is checked), with column counts. False (nothing
    written) when the table's schema is not ``rows``'."""
    schema = file_schema(spark, table, rows.schema)
    if schema is None:
        return False
    in_buckets = _in_buckets(spark, buckets)
    overwrite = table.newOverwrite().overwriteByRowFilter(in_buckets)
    for _, built in _write_files(spark, table, rows.cast(schema), None, buckets):
        overwrite = overwrite.addFile(built)
    fault_point(AFTER_FILES_WRITTEN)
    if read_snapshot is not None:
        overwrite = overwrite.validateFromSnapshot(read_snapshot)
    overwrite = overwrite.conflictDetectionFilter(in_buckets).validateNoConflictingData().validateNoConflictingDeletes()
    for key, value in properties.items():
        overwrite = overwrite.set(key, value)
    overwrite.commit()
    return True


def commit_row_delta(
    spark,
    table,
    read_snapshot: int,
    rows: pa.Table,
    deletes: pa.Table,
    buckets: list[int],
    properties: dict[str, str],
) -> bool:
    """Commit ``rows`` (the new rows, in the table's columns) and ``deletes`` (``_cdc_bucket``, ``_file``,
    ``_pos`` of the rows they replace or delete) to ``table`` (Iceberg's Java ``Table``) as one ``RowDelta``
    validated from ``read_snapshot`` on ``buckets``. False (nothing written) when the table's schema is not
    ``rows``': the caller merges instead."""
    schema = file_schema(spark, table, rows.schema)
    if schema is None:
        return False
    delta = table.newRowDelta()
    for kind, built in _write_files(spark, table, rows.cast(schema), deletes, buckets):
        delta = delta.addRows(built) if kind == "data" else delta.addDeletes(built)
    fault_point(AFTER_FILES_WRITTEN)  # the table's files are complete, no snapshot references them yet
    conflicts = _in_buckets(spark, buckets)
    paths = java_class(spark, "java.util.ArrayList")()
    for path in sorted(set(deletes["_file"].to_pylist())):
        paths.add(path)
    delta = (
        delta.validateFromSnapshot(read_snapshot)
        .conflictDetectionFilter(conflicts)
        .validateDataFilesExist(paths)
        .validateDeletedFiles()
        .validateNoConflictingDataFiles()
        .validateNoConflictingDeleteFiles()
    )
    for key, value in properties.items():
        delta = delta.set(key, value)
    delta.commit()
    return True


def _delete_table(deletes: pa.Table) -> pa.Table:
    """A position delete file's rows: ``file_path`` and ``pos``, sorted as the spec requires."""
    positions = deletes.select(POSITION_COLUMNS).sort_by([("_file", "ascending"), ("_pos", "ascending")])
    return pa.table([positions["_file"].cast(pa.string()), positions["_pos"].cast(pa.int64())], schema=DELETE_SCHEMA)


@dataclass(frozen=True)
class Located:
    """Where current rows live (``_cdc_key``, ``_cdc_bucket``, ``_file``, ``_pos``), as a read found them:
    every key of ``buckets`` (whole buckets read) and ``keys`` (read by key). A covered key without a
    position has no row."""

    positions: pa.Table
    buckets: frozenset[int] = frozenset()
    keys: frozenset[str] = frozenset()

    @classmethod
    def of(cls, read: pa.Table, buckets: Any = (), keys: Any = ()) -> Located:
        return cls(read.select(LOCATED_COLUMNS), frozenset(buckets), frozenset(keys))

    def covers(self, key: str, buckets: int) -> bool:
        return key in self.keys or bucket_of(key, buckets) in self.buckets

    def plus(self, other: Located) -> Located:
        return Located(
            pa.concat_tables([self.positions, other.positions]), self.buckets | other.buckets, self.keys | other.keys
        )

    def of_keys(self, keys: Any) -> pa.Table:
        """The positions of ``keys``' rows, each once (two reads may have seen one row)."""
        found = self.positions.filter(pc.is_in(self.positions["_cdc_key"], pa.array(sorted(keys), pa.string())))
        return found.group_by(LOCATED_COLUMNS).aggregate([]).select(LOCATED_COLUMNS)
