"""Decode job: staged landing files -> canonical events + quarantine (Parquet).

Spark only distributes files to Python workers; each worker runs the pure
decoder of the format (``cdclake.formats``). Events and rejected records leave
in one pass, partitioned by ``kind``, so nothing is decoded twice.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from cdclake.batch import read_manifest, write_json_atomic, write_report
from cdclake.events import EVENT_SCHEMA, REJECT_SCHEMA, ChangeEvent, Rejected, event_to_row, rejected_to_row
from cdclake.options import Options
from cdclake.reading import LandingFileError, read_landing_bytes
from cdclake.registry import get_decoder

#: Rows per Arrow batch handed back to Spark.
CHUNK_ROWS = 8192
#: Quarantined raw bytes are capped; the source file and offset locate the rest.
MAX_RAW_BYTES = 1 << 20

DECODED_SCHEMA = pa.schema(
    [pa.field("kind", pa.string())] + list(EVENT_SCHEMA) + [f for f in REJECT_SCHEMA if f.name in ("error", "raw")]
)
DECODED_SPARK_DDL = (
    "kind string, table string, op string, seq string, event_ts timestamp, tx_id string, tx_pos bigint, "
    "tx_last boolean, keys array<string>, before map<string,string>, after map<string,string>, "
    "ddl string, meta string, source_file string, source_offset bigint, error string, raw binary"
)


def decode_files(
    format_id: str, options: dict[str, str], files: list[tuple[str, str]], state_path: str | None = None
) -> Iterator[dict[str, Any]]:
    """Decode ``(name, path)`` files in order into rows of :data:`DECODED_SCHEMA`.

    ``state_path``: where a stateful decoder keeps what it learnt between batches (e.g. Qlik
    metadata messages, which the source sends once, not with every file).
    """
    decoder = get_decoder(format_id, Options(options))
    if state_path and Path(state_path).exists():
        decoder.import_state(json.loads(Path(state_path).read_text())["state"])
    for name, path in files:
        try:
            data = read_landing_bytes(path)
        except (LandingFileError, OSError) as exc:
            yield _reject_row(Rejected(f"cannot read landing file: {exc}", _src(name, 0)))
            continue
        for item in decoder.decode(data, name):
            if isinstance(item, Rejected):
                yield _reject_row(item)
            else:
                yield _event_row(item)
    state = decoder.export_state() if state_path else None
    if state is not None:
        write_json_atomic(Path(state_path), {"format": format_id, "state": state})
    # records a format skips by design (e.g. Kafka tombstones): counted so the report adds up
    for label, count in (getattr(decoder, "skipped", None) or {}).items():
        if count:
            yield {"kind": "skipped", "error": label, "source_offset": count, "source_file": files[-1][0]}


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
        report = {"files": 0, "events": 0, "rejected": 0, "skipped": 0}
        write_report(batch_dir, "decode", report)
        return report

    def decode_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            pairs = sorted(
                zip(
                    batch.column("idx").to_pylist(),
                    batch.column("name").to_pylist(),
                    batch.column("path").to_pylist(),
                    strict=True,
                )
            )
            yield from _chunks(decode_files(format_id, options, [(n, p) for _, n, p in pairs], state_path))

    slices = max(1, min(len(files), spark.sparkContext.defaultParallelism * 2))
    state_path = None
    if get_decoder(format_id, Options(options)).stateful:
        slices = 1  # one decoder sees every file of the batch, in order
        state_path = str(batch_dir.parent / "_decoder_state" / f"{format_id}.json")
    frame = spark.createDataFrame(files, "idx int, name string, path string").repartition(slices, "idx")
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
    }
    write_report(batch_dir, "decode", report)
    return report
