"""Decode job: staged landing files -> canonical events + quarantine (Parquet).

Spark only distributes files to Python workers; each worker runs the pure
decoder of the format (``cdclake.formats``). Events and rejected records leave
in one pass, partitioned by ``kind``, so nothing is decoded twice.

A large file of a format whose records are independent lines, or a GoldenGate Avro object
container file (:func:`piece_test`), is cut at record (block) starts into pieces of about
:data:`PIECE_BYTES`, decoded by separate tasks: one big landing file then uses every core, and
a worker holds one piece, not the whole file. A later piece of an OCF file is read with the
file's header in front (schema, codec, sync marker). Offsets stay file offsets; only the
line/byte numbers quoted inside reject reasons count from the piece's start.
"""

from __future__ import annotations

import functools
import gc
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from cdclake.events.arrow import DECODED_FILE_SCHEMA, DecodedBuilder
from cdclake.events.batch import TaskSurvey
from cdclake.events.change import (
    ChangeEvent,
    Rejected,
    Source,
    event_to_row,
    rejected_to_row,
)
from cdclake.events.decoded import TableFilesWriter
from cdclake.formats._avro_binary import OCF_MAGIC, SYNC_SIZE, Malformed, read_varint
from cdclake.formats._gg_avro import codec_problem, ocf_header
from cdclake.jobs.decode_pool import run_tasks
from cdclake.lake.parquet_stats import intermediate_options
from cdclake.options import Options
from cdclake.registry import columnar_reader, get_decoder
from cdclake.runtime.settings import Settings
from cdclake.staging.batch import read_manifest, write_json_atomic, write_report
from cdclake.staging.reading import GZIP_MAGIC, LandingFileError, content_size, open_staged, read_staged_bytes

#: Rows per Arrow batch written to Parquet.
CHUNK_ROWS = 8192
#: Allocations between young-generation garbage collections while a task decodes (Python's default: 700).
GC_THRESHOLD = 50_000
#: Quarantined raw bytes are capped; the source file and offset locate the rest.
MAX_RAW_BYTES = 1 << 20
#: Decode tasks per core in local processes (small tasks of even bytes balance unequal files and pieces) ...
PROCESS_TASKS_PER_CORE = 8
#: ... each of at least this many bytes (many small files: fewer decoded files for normalize to read).
PROCESS_TASK_MIN_BYTES = 4 * 2**20
#: Files larger than this are decoded in pieces of about this size (formats of :func:`piece_test`).
PIECE_BYTES = 64 * 1024**2
#: How far past a piece's nominal end a record start is looked for before the rest stays whole.
_CUT_SEARCH_BYTES = 16 * 1024**2
#: Searched first: a record line is rarely longer (a staged copy's reads decompress whole 1 MiB frames).
_CUT_PROBE_BYTES = 256 * 1024
#: An OCF header (schema text included) longer than this keeps its file whole.
_OCF_HEADER_BYTES = 16 * 1024**2
#: :func:`piece_test`'s answer for Avro object container files: cut at block starts.
OCF_BLOCKS = "ocf-blocks"

DECODED_SPARK_DDL = (
    "kind string, table string, op string, seq string, event_ts timestamp, tx_id string, tx_pos bigint, "
    "tx_last boolean, keys array<string>, before map<string,string>, after map<string,string>, "
    "ddl string, meta string, source_file string, source_offset bigint, error string, raw binary"
)


def decode_items(
    format_id: str,
    options: dict[str, str],
    files: list[tuple[str, str]] | list[tuple[str, str, int, int | None]],
    state_path: str | None = None,
    columns: bool = False,
) -> Iterator[tuple[str, Any, int]]:
    """Decode ``(name, path)`` files, or ``(name, path, start, end)`` pieces, in order: yields
    ``("event", ChangeEvent, base)`` and ``("rejected", Rejected, base)`` (``base``: the piece's
    start, to add to the record's offset), then ``("skipped", (label, count, file), 0)``.
    ``columns``: runs of records a format reads as Arrow columns come as ``("columns", RecordBatch, base)``
    (the format's ``registry.columnar_reader``, one for the whole run: the decode task's fast path).

    ``state_path``: where a stateful decoder keeps what it learnt between batches (e.g. Qlik
    metadata messages, which the source sends once, not with every file).
    """
    decoder = get_decoder(format_id, Options(options))
    reader = columnar_reader(decoder) if columns else None
    ocf = piece_test(format_id, options) == OCF_BLOCKS
    if state_path and Path(state_path).exists():
        decoder.import_state(json.loads(Path(state_path).read_text())["state"])
    for item in files:
        name, path = item[0], item[1]
        start, end = (item[2], item[3]) if len(item) > 2 else (0, None)  # type: ignore[misc]
        try:
            data, head = (read_staged_bytes(path), 0) if end is None else _read_piece(path, start, end, ocf)
        except (LandingFileError, OSError, Malformed) as exc:
            yield "rejected", Rejected(f"cannot read landing file: {exc}", Source(name, start)), 0
            continue
        # the decoder counted offsets from the first byte it was given: the piece's, or the OCF
        # header's put in front of it (``head`` bytes, which are the file's first bytes)
        base = start - head
        for decoded in reader.read(data, name) if reader is not None and not head else decoder.decode(data, name):
            if type(decoded) is pa.RecordBatch:
                yield "columns", decoded, base
                continue
            at = base if not head or decoded.source.offset >= head else 0
            yield ("rejected" if type(decoded) is Rejected else "event"), decoded, at
    state = decoder.export_state() if state_path else None
    if state is not None:
        write_json_atomic(Path(state_path), {"format": format_id, "state": state})
    # records a format skips by design (e.g. Kafka tombstones): counted so the report adds up
    for label, count in (getattr(decoder, "skipped", None) or {}).items():
        if count:
            yield "skipped", (label, count, files[-1][0]), 0


def decode_files(
    format_id: str,
    options: dict[str, str],
    files: list[tuple[str, str]] | list[tuple[str, str, int, int | None]],
    state_path: str | None = None,
) -> Iterator[dict[str, Any]]:
    """:func:`decode_items` as row dicts of :data:`DECODED_SPARK_DDL` (for tools and tests; the
    decode task builds Arrow columns directly)."""
    for kind, item, base in decode_items(format_id, options, files, state_path):
        if kind == "skipped":
            label, count, name = item
            yield {"kind": "skipped", "error": label, "source_offset": count, "source_file": name}
            continue
        row = _reject_row(item) if kind == "rejected" else _event_row(item)
        row["source_offset"] += base
        yield row


def decode_to_files(
    format_id: str,
    options: dict[str, str],
    pieces: list[tuple[str, str, int, int | None]],
    state_path: str | None,
    out_dir: str,
    part: str,
    columns: bool | None = None,
    batch_id: str | None = None,
) -> dict[str, int]:
    """One decode task: decode ``pieces`` into ``out_dir/kind=<event|rejected>/part-<part>.parquet``; with
    ``batch_id``, the events per table instead, in the change log's files (``decoded_tables``: normalize links
    them into the change log). ``columns``: read spans as Arrow columns where the format can (None:
    ``Settings.columnar_decode``).

    The worker writes its Parquet itself (pyarrow) instead of handing rows to the JVM: the rows
    never cross into Spark, and the counts come back with the task, so nothing is read again.
    A file is written under a temporary name and renamed, so a retried task replaces it whole.
    Returns ``{"event": n, "rejected": n, "skipped": n}``.
    """
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    builder = DecodedBuilder(MAX_RAW_BYTES)
    builders = {"event": builder, "rejected": DecodedBuilder(MAX_RAW_BYTES)}
    writers: dict[str, Any] = {}
    temps: dict[str, Path] = {}
    counts = {"event": 0, "rejected": 0, "skipped": 0}
    survey = TaskSurvey() if batch_id is not None else None
    per_table = TableFilesWriter(Path(out_dir) / "kind=event", part, batch_id, survey) if survey is not None else None

    def flush(kind: str, batch: pa.RecordBatch | None = None) -> None:
        """Write the builder's records (or ``batch``, a span read as columns)."""
        batch = builders[kind].flush() if batch is None else batch
        if batch is None:
            return
        if kind == "event" and per_table is not None:
            per_table.write(batch)
            return
        if kind not in writers:
            folder = Path(out_dir) / f"kind={kind}"
            folder.mkdir(parents=True, exist_ok=True)
            temps[kind] = folder / f".part-{part}.{os.getpid()}.tmp"
            writers[kind] = pq.ParquetWriter(
                str(temps[kind]), DECODED_FILE_SCHEMA, **intermediate_options(DECODED_FILE_SCHEMA)
            )
        writers[kind].write_batch(batch)

    def write_columns(batch: pa.RecordBatch, base: int) -> None:
        if base:
            index = batch.schema.get_field_index("source_offset")
            offsets = pc.add(batch.column(index), pa.scalar(base, pa.int64()))
            batch = batch.set_column(index, batch.schema.field(index), offsets)
        flush("event", batch)

    thresholds = gc.get_threshold()
    # every decoded record allocates dicts that live until their batch is flushed: with the default
    # thresholds the collector re-walks them thousands of times per batch (about a third of decoding)
    gc.set_threshold(GC_THRESHOLD, *thresholds[1:])
    try:
        if columns is None:
            columns = Settings.from_env().columnar_decode
        for kind, item, base in decode_items(format_id, options, pieces, state_path, columns):
            if kind == "skipped":
                counts["skipped"] += item[1]
                continue
            if kind == "columns":  # a span read as Arrow columns: after the events before it, in file order
                flush("event")
                write_columns(item, base)
                counts["event"] += item.num_rows
                continue
            target = builders[kind]
            if kind == "event":
                target.add_event(item, base)
            else:
                target.add_rejected(item, base)
            counts[kind] += 1
            if target.rows >= CHUNK_ROWS:
                flush(kind)
        for kind in builders:
            flush(kind)
        if per_table is not None and survey is not None:
            per_table.close()
            survey.save(Path(out_dir), part)  # after the files: a survey only stands for files in place
        for kind, writer in writers.items():
            writer.close()
            os.replace(temps[kind], temps[kind].parent / f"part-{part}.parquet")
    finally:
        gc.set_threshold(*thresholds)
        if per_table is not None:
            per_table.abort()
        for kind, temp in temps.items():
            if temp.exists():
                writers[kind].close()
                temp.unlink()
    return counts


def _read_piece(path: str, start: int, end: int, ocf: bool) -> tuple[bytes, int]:
    """The piece's bytes, and how many bytes of the file's start are put in front of them: a later
    piece of an OCF file gets the file's header (schema, codec, sync marker)."""
    with open_staged(path) as handle:
        head = b""
        if ocf and start > 0 and handle.read(len(OCF_MAGIC)) == OCF_MAGIC:
            handle.seek(0)
            first = handle.read(_OCF_HEADER_BYTES)
            head = first[: ocf_header(first)[2]]
        handle.seek(start)
        return head + handle.read(end - start), len(head)


def piece_test(format_id: str, options: dict[str, str]) -> Callable[[bytes, bytes], bool] | str | None:
    """Whether a piece may start at a line, given the line's first bytes and the whole line
    before it; :data:`OCF_BLOCKS`: Avro object container files are cut at block starts (other
    files of the format are read whole); or None: files are read whole.

    Only formats whose records are lines, read as UTF-8, where a record needs nothing from an
    earlier one, or only from a neighbour the rule keeps in the same piece:

    - GoldenGate JSON and CDL JSON (no ``jsonDelimiter``): a line starting with ``{`` after a
      line ending with ``}``, so a pretty-printed record is never cut inside;
    - Debezium JSON: the same, and never right after a Kafka key record (schema name ``*.Key``),
      whose fields are the keys of the record that follows it;
    - GoldenGate delimited text with ``\\n`` line ends: never in front of an insert line, which
      may be the second half of a delete-insert key update.

    GoldenGate Avro OCF blocks are independent (each record carries its whole image). DataHub
    (update halves, CSV header), XML, Qlik (stateful) and Avro message streams keep one task per
    file.
    """
    if format_id in ("goldengate-avro-row", "goldengate-avro-op"):
        return OCF_BLOCKS
    opts = Options(options)
    if (opts.str("encoding") or "UTF-8").strip().lower().replace("-", "").replace("_", "") != "utf8":
        return None
    if format_id in ("goldengate-json", "cdl-json"):
        if opts.str("jsonDelimiter"):
            return None
        return lambda line, previous: line.startswith(b"{") and previous.rstrip().endswith(b"}")
    if format_id == "debezium-json":
        return lambda line, previous: (
            line.startswith(b"{") and previous.rstrip().endswith(b"}") and b'.Key"' not in previous
        )
    if format_id == "goldengate-delimited":
        if (opts.str("lineDelimiter") or "\n") != "\n":
            return None
        if not opts.bool("includeOpType", True):
            return lambda line, previous: True
        insert = ((opts.str("insertOpKey") or "I") + (opts.str("fieldDelimiter") or "\x01")).encode()
        return lambda line, previous: not line.startswith(insert)
    return None


def file_pieces(
    path: str,
    starts: Callable[[bytes, bytes], bool] | str | None,
    piece_bytes: int = PIECE_BYTES,
    size: int | None = None,
):
    """``(start, end)`` byte ranges cut just before record lines; ``[(0, None)]``: read whole. ``size``: the
    landing file's, as the manifest records it (a file of at most one piece is then not opened here: a staged
    copy's seek table is two reads, and a batch of many small files would pay them all in the driver)."""
    if starts is None or (size is not None and size <= piece_bytes):
        return [(0, None)]
    try:
        with open_staged(path) as handle:
            size = content_size(handle)
            if size <= piece_bytes or handle.read(2) == GZIP_MAGIC:
                return [(0, None)]
            cuts = _ocf_cuts(handle, size, piece_bytes) if starts == OCF_BLOCKS else [0]
            while callable(starts) and cuts[-1] + piece_bytes < size:
                cut = _next_cut(handle, cuts[-1] + piece_bytes, starts)
                if cut is None or cut >= size:
                    break
                cuts.append(cut)
    except OSError:
        return [(0, None)]  # the decode task reports why it cannot be read
    if len(cuts) == 1:
        return [(0, None)]  # no cut found: read whole (as the decoder's usual input)
    return list(zip(cuts, [*cuts[1:], size], strict=True))


def _ocf_cuts(handle, size: int, piece_bytes: int) -> list[int]:
    """Block starts about ``piece_bytes`` apart, found by walking the chain of blocks (count,
    size, data, sync marker) from the header: exact, no search for the marker in the data.
    ``[0]`` for a file that is not an OCF; cuts stop where the chain breaks (the decoder of
    the last piece reports what is wrong there)."""
    handle.seek(0)
    try:
        meta, sync, pos = ocf_header(handle.read(_OCF_HEADER_BYTES))
        json.loads(meta.get("avro.schema", b""))
    except (Malformed, ValueError):
        return [0]
    if codec_problem((meta.get("avro.codec") or b"null").decode("utf-8", "replace")):
        return [0]  # a file the decoder rejects whole is rejected once, not once per piece
    cuts = [0]
    while pos < size:
        if pos >= cuts[-1] + piece_bytes:
            cuts.append(pos)
        handle.seek(pos)
        frame = handle.read(20)
        try:
            count, after = read_varint(frame, 0, len(frame))
            length, after = read_varint(frame, after, len(frame))
        except Malformed:
            break
        stop = pos + after + length
        if count < 0 or length < 0 or stop + SYNC_SIZE > size:
            break
        handle.seek(stop)
        if handle.read(SYNC_SIZE) != sync:
            break
        pos = stop + SYNC_SIZE
    return cuts


def _next_cut(handle, target: int, starts: Callable[[bytes, bytes], bool]) -> int | None:
    """The first line start at or after ``target`` that ``starts`` accepts (None: none near).

    A candidate needs its whole previous line inside the block read, so the line that runs
    into ``target`` is never judged on a part of it. A small block is searched first (a staged
    copy decompresses what is read): the large one only when no candidate is judged in it.
    """
    for length in (_CUT_PROBE_BYTES, _CUT_SEARCH_BYTES):
        handle.seek(target - 1)
        block = handle.read(length)
        last = len(block) < length or length == _CUT_SEARCH_BYTES  # the whole search: no larger block
        previous_end = block.find(b"\n")
        while previous_end >= 0:
            newline = block.find(b"\n", previous_end + 1)
            if newline < 0 or newline + 1 >= len(block) or (not last and newline + 65 > len(block)):
                break  # the block ends before this candidate's first 64 bytes
            if starts(block[newline + 1 : newline + 65], block[previous_end + 1 : newline]):
                return target + newline
            previous_end = newline
        if last:
            return None
    return None


def _event_row(event: ChangeEvent) -> dict[str, Any]:
    row = event_to_row(event)
    row["kind"] = "event"
    return row


def _reject_row(rejected: Rejected) -> dict[str, Any]:
    row = rejected_to_row(rejected)
    row["raw"] = row["raw"][:MAX_RAW_BYTES]
    row["kind"] = "rejected"
    return row


def decode_task(
    format_id: str,
    options: dict[str, str],
    state_path: str | None,
    out: str,
    items: list[tuple[int, int, str, str, int | None]],
    batch_id: str | None = None,
) -> dict[str, int]:
    """One decode task over pieces ``(idx, start, name, path, end)``, in file order (a Spark task, a
    local process or the driver run the same); ``batch_id``: the events per table (``decode_to_files``)."""
    items = sorted(items)
    part = f"{items[0][0]:06d}-{items[0][1]:012d}"  # the task's first piece: the same on a retry
    ordered = [(n, p, s, e) for _, s, n, p, e in items]
    return decode_to_files(format_id, options, ordered, state_path, out, part, batch_id=batch_id)


def even_piece_bytes(total: int, cores: int) -> int:
    """The piece size for a batch of ``total`` bytes on ``cores``: :data:`PIECE_BYTES`, or less where the batch
    would not give every core a piece (a 100k-change batch is one 68 MB file: cut at 64 MB it kept one core busy
    for the whole decode and the other for its 4 MB tail), but not under :data:`PROCESS_TASK_MIN_BYTES`."""
    share = -(-total // max(1, cores))
    return max(PROCESS_TASK_MIN_BYTES, min(PIECE_BYTES, share))


def byte_slices(pieces: list, sizes: dict[int, int], slices: int, min_bytes: int) -> list[list]:
    """``pieces`` (``(idx, start, name, path, end)``, in order) in contiguous runs of about ``1/slices`` of
    their bytes each, and at least ``min_bytes``: a run closes before a piece would take it past that (a
    piece is never split), unless the piece is the small rest of its file (under a quarter of a run): a
    68 MB file's 4 MB tail made a task, and so a file per table, of a few thousand events, each routed by
    the compact step at a batch's fixed cost. ``sizes``: each file's size by ``idx``, for its pieces read
    to the end."""

    def size(piece: tuple) -> int:
        idx, start, _, _, end = piece
        return (sizes[idx] if end is None else end) - start

    target = max(min_bytes, sum(size(p) for p in pieces) // max(1, slices))
    runs: list[list] = []
    run: list = []
    run_bytes = 0
    for piece in pieces:
        tail = piece[1] > 0 and size(piece) * 4 < target and run[-1][0] == piece[0] if run else False
        if run and run_bytes + size(piece) > target and not tail:
            runs.append(run)
            run, run_bytes = [], 0
        run.append(piece)
        run_bytes += size(piece)
    return [*runs, run] if run else runs


def local_cores(spark) -> int | None:
    """The cores of a local-mode application (its executor is this machine's processes), else None."""
    master = spark.sparkContext.master
    return spark.sparkContext.defaultParallelism if master == "local" or master.startswith("local[") else None


def run(spark, batch_dir: str | Path, by_table: bool = True) -> dict[str, Any]:
    """Decode every file of the batch; write ``decoded/`` and the decode report. ``by_table``: the events in
    the change log's per-table files (``decoded_tables``), else flat (a replay batch rewrites them after decode).

    Where the tasks run (``runner`` in the report): a small batch in the driver, one task; in local
    mode, a pool of local processes, one per core; else a Spark job, whose tasks a cluster spreads
    over its executors (docs/decisions.md, "Local mode decodes in processes, not a Spark job").
    """
    batch_dir = Path(batch_dir)
    manifest = read_manifest(batch_dir)
    format_id, options = manifest.format, dict(manifest.options)
    files = [(i, f.name, f.path, f.size) for i, f in enumerate(manifest.files)]
    out = batch_dir / "decoded"
    if not files:
        report = {"files": 0, "events": 0, "rejected": 0, "skipped": 0, "tasks": 0, "runner": "driver"}
        write_report(batch_dir, "decode", report)
        return report

    state_path = None
    starts = piece_test(format_id, options)
    if get_decoder(format_id, Options(options)).stateful:
        starts = None  # one decoder sees every file of the batch, whole and in order
        state_path = str(batch_dir.parent / "_decoder_state" / f"{format_id}.json")
    batch_id = manifest.batch_id if by_table else None
    task = functools.partial(decode_task, format_id, options, state_path, str(out), batch_id=batch_id)

    def decode_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        items = []
        for batch in batches:
            columns = (batch.column(c).to_pylist() for c in ("idx", "start", "name", "path", "end"))
            items.extend(zip(*columns, strict=True))
        if items:
            yield pa.RecordBatch.from_pylist([{"kind": k, "count": n} for k, n in task(items).items()])

    piece_bytes = even_piece_bytes(sum(f.size for f in manifest.files), spark.sparkContext.defaultParallelism)
    pieces = [
        (i, start, name, path, end)
        for i, name, path, size in files
        for start, end in file_pieces(path, starts, piece_bytes, size=size)
    ]
    shutil.rmtree(out, ignore_errors=True)  # a re-run replaces the whole output
    counts = {"event": 0, "rejected": 0, "skipped": 0}
    settings = Settings.from_env()
    cores = local_cores(spark) if settings.local_decode else None
    if sum(f.size for f in manifest.files) <= settings.driver_decode_bytes or (cores and state_path):
        # a small batch (or a stateful format's one task, here in local mode): the job's task function,
        # here, as one task (no job, no Python worker to start)
        slices, runner = 0, "driver"
        counts.update(task(pieces))
    else:
        slices = 1 if state_path else max(1, min(len(pieces), spark.sparkContext.defaultParallelism * 2))
        if cores:  # no Spark job: its Python workers' and Arrow's start-up cost seconds per application
            runner = "processes"
            # small tasks of even bytes, handed out as processes free up: a 68 MB file is cut into 64 + 4 MB
            # pieces, and count-even slices of them left one core with twice the other's bytes
            sizes = {i: f.size for i, f in enumerate(manifest.files)}
            runs = byte_slices(pieces, sizes, cores * PROCESS_TASKS_PER_CORE, PROCESS_TASK_MIN_BYTES)
            slices = len(runs)
            args = {
                "format_id": format_id,
                "options": options,
                "state_path": state_path,
                "out": str(out),
                "batch_id": batch_id,
            }
            for done in run_tasks(args, runs, cores):
                for kind, n in done.items():
                    counts[kind] += n
        else:
            runner = "spark"
            # contiguous slices of the ordered list: every piece of a file in one task unless it was cut
            rows = spark.sparkContext.parallelize(pieces, slices)
            frame = spark.createDataFrame(rows, "idx int, start bigint, name string, path string, end bigint")
            for r in frame.mapInArrow(decode_partition, "kind string, count bigint").collect():
                counts[r["kind"]] += r["count"]
    report = {
        "files": len(files),
        "events": counts["event"],
        "rejected": counts["rejected"],
        "skipped": counts["skipped"],
        "tasks": slices,
        "pieces": len(pieces),
        "runner": runner,
    }
    write_report(batch_dir, "decode", report)
    return report
