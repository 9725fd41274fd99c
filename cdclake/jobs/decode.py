"""Decode job: staged landing files -> canonical events + quarantine (Parquet).

Spark only distributes files to Python workers; each worker runs the pure
decoder of the format (``cdclake.formats``). Events and rejected records leave
in one pass, partitioned by ``kind``, so nothing is decoded twice.

A large file of a format whose records are independent lines (:func:`piece_test`) is cut
at record starts into pieces of about :data:`PIECE_BYTES`, decoded by separate tasks: one
big landing file then uses every core, and a worker holds one piece, not the whole file.
Offsets stay file offsets; only the line/byte numbers quoted inside reject reasons count
from the piece's start.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from cdclake.batch import read_manifest, write_json_atomic, write_report
from cdclake.events import EVENT_SCHEMA, REJECT_SCHEMA, ChangeEvent, Rejected, event_to_row, rejected_to_row
from cdclake.options import Options
from cdclake.reading import GZIP_MAGIC, LandingFileError, read_landing_bytes
from cdclake.registry import get_decoder

#: Rows per Arrow batch handed back to Spark.
CHUNK_ROWS = 8192
#: Quarantined raw bytes are capped; the source file and offset locate the rest.
MAX_RAW_BYTES = 1 << 20
#: Files larger than this are decoded in pieces of about this size (formats of :func:`piece_test`).
PIECE_BYTES = 64 * 1024**2
#: How far past a piece's nominal end a record start is looked for before the rest stays whole.
_CUT_SEARCH_BYTES = 16 * 1024**2

DECODED_SCHEMA = pa.schema(
    [pa.field("kind", pa.string())] + list(EVENT_SCHEMA) + [f for f in REJECT_SCHEMA if f.name in ("error", "raw")]
)
DECODED_SPARK_DDL = (
    "kind string, table string, op string, seq string, event_ts timestamp, tx_id string, tx_pos bigint, "
    "tx_last boolean, keys array<string>, before map<string,string>, after map<string,string>, "
    "ddl string, meta string, source_file string, source_offset bigint, error string, raw binary"
)


def decode_files(
    format_id: str,
    options: dict[str, str],
    files: list[tuple[str, str]] | list[tuple[str, str, int, int | None]],
    state_path: str | None = None,
) -> Iterator[dict[str, Any]]:
    """Decode ``(name, path)`` files, or ``(name, path, start, end)`` pieces, in order into rows
    of :data:`DECODED_SCHEMA` (``end`` None: the whole file).

    ``state_path``: where a stateful decoder keeps what it learnt between batches (e.g. Qlik
    metadata messages, which the source sends once, not with every file).
    """
    decoder = get_decoder(format_id, Options(options))
    if state_path and Path(state_path).exists():
        decoder.import_state(json.loads(Path(state_path).read_text())["state"])
    for item in files:
        name, path = item[0], item[1]
        start, end = (item[2], item[3]) if len(item) > 2 else (0, None)  # type: ignore[misc]
        try:
            data = read_landing_bytes(path) if end is None else _read_piece(path, start, end)
        except (LandingFileError, OSError) as exc:
            yield _reject_row(Rejected(f"cannot read landing file: {exc}", _src(name, start)))
            continue
        for decoded in decoder.decode(data, name):
            row = _reject_row(decoded) if isinstance(decoded, Rejected) else _event_row(decoded)
            if start:
                row["source_offset"] += start  # the decoder counted from the piece's first byte
            yield row
    state = decoder.export_state() if state_path else None
    if state is not None:
        write_json_atomic(Path(state_path), {"format": format_id, "state": state})
    # records a format skips by design (e.g. Kafka tombstones): counted so the report adds up
    for label, count in (getattr(decoder, "skipped", None) or {}).items():
        if count:
            yield {"kind": "skipped", "error": label, "source_offset": count, "source_file": files[-1][0]}


def _read_piece(path: str, start: int, end: int) -> bytes:
    with open(path, "rb") as handle:
        handle.seek(start)
        return handle.read(end - start)


def piece_test(format_id: str, options: dict[str, str]) -> Callable[[bytes], bool] | None:
    """Whether a line may start a piece (given its first bytes), or None: files are read whole.

    Only formats whose records are lines that depend on no earlier record, read as UTF-8:
    GoldenGate JSON and CDL JSON (a top-level record starts a line with ``{``; not with a
    ``jsonDelimiter``) and GoldenGate delimited text with ``\\n`` line ends (never in front of
    an insert line, which may be the second half of a delete-insert key update). Debezium JSON
    (a key record applies to the next record), DataHub (update halves, CSV header), XML and
    the binary formats keep one task per file.
    """
    opts = Options(options)
    if (opts.str("encoding") or "UTF-8").strip().lower().replace("-", "").replace("_", "") != "utf8":
        return None
    if format_id in ("goldengate-json", "cdl-json"):
        if opts.str("jsonDelimiter"):
            return None
        return lambda line: line.startswith(b"{")
    if format_id == "goldengate-delimited":
        if (opts.str("lineDelimiter") or "\n") != "\n":
            return None
        if not opts.bool("includeOpType", True):
            return lambda line: True
        insert = ((opts.str("insertOpKey") or "I") + (opts.str("fieldDelimiter") or "\x01")).encode()
        return lambda line: not line.startswith(insert)
    return None


def file_pieces(path: str, starts: Callable[[bytes], bool] | None, piece_bytes: int = PIECE_BYTES):
    """``(start, end)`` byte ranges cut just before record lines; ``[(0, None)]``: read whole."""
    try:
        size = os.path.getsize(path)
        if starts is None or size <= piece_bytes:
            return [(0, None)]
        with open(path, "rb") as handle:
            if handle.read(2) == GZIP_MAGIC:
                return [(0, None)]
            cuts = [0]
            while cuts[-1] + piece_bytes < size:
                cut = _next_cut(handle, cuts[-1] + piece_bytes, starts)
                if cut is None or cut >= size:
                    break
                cuts.append(cut)
    except OSError:
        return [(0, None)]  # the decode task reports why it cannot be read
    return list(zip(cuts, [*cuts[1:], size], strict=True))


def _next_cut(handle, target: int, starts: Callable[[bytes], bool]) -> int | None:
    """The first line start at or after ``target`` that ``starts`` accepts (None: none near)."""
    handle.seek(target - 1)
    block = handle.read(_CUT_SEARCH_BYTES)
    at = 0
    while True:
        newline = block.find(b"\n", at)
        if newline < 0 or newline + 1 >= len(block):
            return None
        line = block[newline + 1 : newline + 65]
        if starts(line):
            return target + newline
        at = newline + 1


def _src(name: str, offset: int):
    from cdclake.events import Source

    return Source(name, offset)


def _event_row(event: ChangeEvent) -> dict[str, Any]:
    row = event_to_row(event)
    row["kind"] = "event"
    return row


def _reject_row(rejected: Rejected) -> dict[str, Any]:
    row = rejected_to_row(rejected)
    row["raw"] = row["raw"][:MAX_RAW_BYTES]
    row["kind"] = "rejected"
    return row


def _chunks(rows: Iterator[dict[str, Any]]) -> Iterator[pa.RecordBatch]:
    chunk: list[dict[str, Any]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= CHUNK_ROWS:
            yield pa.RecordBatch.from_pylist(chunk, schema=DECODED_SCHEMA)
            chunk = []
    if chunk:
        yield pa.RecordBatch.from_pylist(chunk, schema=DECODED_SCHEMA)


def run(spark, batch_dir: str | Path) -> dict[str, Any]:
    """Decode every file of the batch; write ``decoded/`` and the decode report."""
    from pyspark.sql import functions as F

    batch_dir = Path(batch_dir)
    manifest = read_manifest(batch_dir)
    format_id, options = manifest.format, dict(manifest.options)
    files = [(i, f.name, f.path) for i, f in enumerate(manifest.files)]
    out = batch_dir / "decoded"
    if not files:
        report = {"files": 0, "events": 0, "rejected": 0, "skipped": 0, "tasks": 0}
        write_report(batch_dir, "decode", report)
        return report

    def decode_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            columns = (batch.column(c).to_pylist() for c in ("idx", "start", "name", "path", "end"))
            ordered = [(n, p, s, e) for _, s, n, p, e in sorted(zip(*columns, strict=True))]
            yield from _chunks(decode_files(format_id, options, ordered, state_path))

    state_path = None
    starts = piece_test(format_id, options)
    if get_decoder(format_id, Options(options)).stateful:
        starts = None  # one decoder sees every file of the batch, whole and in order
        state_path = str(batch_dir.parent / "_decoder_state" / f"{format_id}.json")
    pieces = [(i, start, name, path, end) for i, name, path in files for start, end in file_pieces(path, starts)]
    slices = 1 if state_path else max(1, min(len(pieces), spark.sparkContext.defaultParallelism * 2))
    # contiguous slices of the ordered list: every piece of a file in one task unless it was cut
    rows = spark.sparkContext.parallelize(pieces, slices)
    frame = spark.createDataFrame(rows, "idx int, start bigint, name string, path string, end bigint")
    decoded = frame.mapInArrow(decode_partition, DECODED_SPARK_DDL)
    decoded.write.mode("overwrite").partitionBy("kind").parquet(str(out))
    counts = {
        r["kind"]: (r["count"], r["skipped"])
        for r in spark.read.parquet(str(out))
        .groupBy("kind")
        .agg(F.count(F.lit(1)).alias("count"), F.sum("source_offset").alias("skipped"))
        .collect()
    }
    report = {
        "files": len(files),
        "events": counts.get("event", (0, 0))[0],
        "rejected": counts.get("rejected", (0, 0))[0],
        "skipped": int(counts.get("skipped", (0, 0))[1] or 0),
        "tasks": slices,
        "pieces": len(pieces),
    }
    write_report(batch_dir, "decode", report)
    return report
