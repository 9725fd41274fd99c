"""Replay a batch's quarantined records after a fix (``python -m cdclake replay``).

A record is quarantined where it failed: decode (``decoded/kind=rejected``, the record's own
bytes in ``raw``), normalize (``quarantine/normalize``: a table without a key, a column name the
lake cannot hold), compact (``quarantine/compact/<table>``: a value that does not cast) or the
DDL parser (``quarantine/ddl``). After a fix -- a decoder fix, a key declared, a corrected option
-- :func:`replay_batch` collects them into a new batch next to the original,
``<source>/replay-<root>-<n>/``, and runs the pipeline's steps on it:

- Decode rejects become landing files of the batch's format again. Line formats: one record per
  line (``lineDelimiter`` / ``jsonDelimiter`` when set; a DataHub CSV file gets its header line
  back). GoldenGate XML: the documents one after another. Avro message streams (GoldenGate raw or
  wrapped messages, Qlik ``atMSG`` envelopes): the messages concatenated, they frame themselves.
  Avro object container files: re-framed under the original file's header -- a rejected block as it
  was, a rejected record (or the rest of a block) in a block of its own with the ``null`` codec.
  A record rejected whole-file (its bytes are the whole file) is replayed as a file. Records whose
  bytes were capped at ``MAX_RAW_BYTES``, or that kept none, are reported as not replayable, with
  the reason. Events decoded from replayed records get their original ``source_file`` and
  ``source_offset`` back, so lineage and the merge order are those of the first attempt.
- Events quarantined after decoding are canonical already: they are taken whole from the original
  batch's ``decoded/kind=event`` (matched by lineage, op, seq and images; rebuilt from the
  quarantined text if the original is gone) and start at normalize.
- Schema changes (``quarantine/ddl``) are not replayed: applied late they would land after newer
  changes in the table's schema history; apply them by hand or rebuild from the archive.

The merge depends only on the set of events (seq, then file and offset), so a late replay gives
the table an on-time batch would have given. Replayed events are never held back as incomplete
transactions: the rest of their transaction was applied (or held) by the regular batches already,
so holding them could only delay them. The replay batch takes over no held events either.

Idempotent: the replay batch id is tied to a digest of the quarantine's content, recorded in the
replayed batch's ``reports/replay.json`` and the replay batch's ``replay_of.json``. The same
quarantine replayed again returns the first replay's report; a replay that crashed is resumed
under the same id (compact skips what it had committed). What fails again lands in the replay
batch's own quarantine, which can be replayed in turn after the next fix.

Known limit: ``rebuild --from archive`` decodes a replay batch's landing files again, but not the
events it re-injected from normalize / compact quarantine; replay those batches again after an
archive rebuild (or put the fix, e.g. a declared key, in the source configuration).
"""

from __future__ import annotations

import bisect
import datetime as dt
import hashlib
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdclake.runtime.limits import MAX_RAW_BYTES
from cdclake.staging.batch import Manifest, StagedFile, read_manifest, read_report, write_json_atomic, write_report

REPLAY_PREFIX = "replay-"
#: ``reports/replay.json`` of a replayed batch: one entry per replay of its quarantine.
RECORD_STEP = "replay"
#: In a replay batch: which batch and which quarantine content it replays.
ORIGIN_FILE = "replay_of.json"
#: In a replay batch: replay file offsets -> original file and offset.
MAP_FILE = "replay_map.json"
#: In a replay batch: the re-injected events, copied into ``decoded/kind=event`` after decode.
EVENTS_FILE = "replay_events.parquet"
INJECTED_PART = "part-replayed-events.parquet"

LINE_FORMATS = frozenset(
    {"goldengate-json", "cdl-json", "debezium-json", "datahub-blob", "datahub-tuple", "goldengate-delimited"}
)
XML_FORMATS = frozenset({"goldengate-xml"})
AVRO_FORMATS = frozenset({"goldengate-avro-row", "goldengate-avro-op", "qlik-avro"})
OCF_MAGIC = b"Obj\x01"
_STEPS = ("decode", "normalize", "compact", "ddl")
#: How a reader failure names its record: "record 3 of 10 in block 0" (GoldenGate), "... in OCF block 0" (Qlik).
_RECORD_OF = re.compile(r"record (\d+) of (\d+) in (?:OCF )?block")


@dataclass(frozen=True)
class Record:
    """One quarantined item: the step that refused it, why, its lineage and kept bytes."""

    step: str
    error: str
    source_file: str | None
    source_offset: int | None
    raw: bytes | None
    table: str | None = None  # compact: the source table of its quarantine folder

    def sort_key(self) -> tuple:
        return (_STEPS.index(self.step), self.source_file or "", self.source_offset or -1, self.error, self.raw or b"")


@dataclass
class ReplayFile:
    """A landing file of the replay batch; ``spans``: (start here, original file, original offset, shift)."""

    name: str
    data: bytes
    spans: list[tuple[int, str, int, bool]] = field(default_factory=list)


@dataclass
class Plan:
    """What a replay of one batch's quarantine does."""

    files: list[ReplayFile] = field(default_factory=list)
    records: int = 0  # decode rejects replayed through the files
    events: list[dict[str, Any]] = field(default_factory=list)  # re-injected canonical events
    rebuilt_from_text: int = 0  # events not found in the original decoded events
    not_replayable: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        reasons: dict[str, int] = defaultdict(int)
        for item in self.not_replayable:
            reasons[item["why"]] += 1
        return {
            "records": self.records,
            "events": len(self.events),
            "events_rebuilt_from_text": self.rebuilt_from_text,
            "files": len(self.files),
            "not_replayable": len(self.not_replayable),
            "not_replayable_reasons": dict(sorted(reasons.items())),
        }


# --------------------------------------------------------------------------- collecting


def quarantined_records(batch_dir: str | Path) -> list[Record]:
    """Everything a batch quarantined, in a stable order (the replay's input and digest)."""
    batch_dir = Path(batch_dir)
    out: list[Record] = []
    _read_quarantine(batch_dir / "decoded" / "kind=rejected", "decode", out)
    _read_quarantine(batch_dir / "quarantine" / "normalize", "normalize", out)
    _read_quarantine(batch_dir / "quarantine" / "ddl", "ddl", out)
    compact_dir = batch_dir / "quarantine" / "compact"
    if compact_dir.is_dir():
        layouts_path = batch_dir / "tables.json"
        layouts = json.loads(layouts_path.read_text()) if layouts_path.exists() else {}
        by_identifier = {layout.get("identifier"): table for table, layout in layouts.items()}
        for sub in sorted(p for p in compact_dir.iterdir() if p.is_dir()):
            _read_quarantine(sub, "compact", out, by_identifier.get(sub.name))
    return sorted(out, key=Record.sort_key)


def _read_quarantine(path: Path, step: str, out: list[Record], table: str | None = None) -> None:
    import pyarrow.parquet as pq

    if not path.is_dir() or not any(p for p in path.glob("*.parquet") if not p.name.startswith((".", "_"))):
        return
    rows = pq.read_table(path, columns=["error", "source_file", "source_offset", "raw"]).to_pylist()
    out.extend(Record(step, r["error"] or "", r["source_file"], r["source_offset"], r["raw"], table) for r in rows)


def quarantine_digest(format_id: str, records: list[Record]) -> str:
    """Same quarantine content -> same digest (and so the same replay batch)."""
    digest = hashlib.sha256(format_id.encode())
    for r in records:
        raw = hashlib.sha256(r.raw or b"").hexdigest()
        digest.update(json.dumps([r.step, r.source_file, r.source_offset, r.error, r.table, raw]).encode())
    return digest.hexdigest()[:16]


# --------------------------------------------------------------------------- planning


def plan_replay(batch_dir: str | Path, manifest: Manifest, records: list[Record]) -> Plan:
    """Decide for every quarantined record how it is replayed (or why it cannot be)."""
    batch_dir = Path(batch_dir)
    plan = Plan()
    decode_records = [r for r in records if r.step == "decode"]
    if decode_records:
        staged = {**staged_files(batch_dir), **{f.name: f.path for f in manifest.files}}
        frame_records(plan, manifest, decode_records, staged)
    later = [r for r in records if r.step in ("normalize", "compact")]
    if later:
        _plan_events(plan, batch_dir, later)
    for r in records:
        if r.step == "ddl":
            _refuse(
                plan,
                r,
                "a schema change is not replayed: applied late it would follow newer changes in the table's "
                "schema history; apply it by hand or rebuild the table from the archive",
            )
    return plan


def _refuse(plan: Plan, record: Record, why: str) -> None:
    plan.not_replayable.append(
        {
            "step": record.step,
            "source_file": record.source_file,
            "source_offset": record.source_offset,
            "error": record.error[:300],
            "why": why,
        }
    )


def staged_files(batch_dir: Path) -> dict[str, str]:
    """Landing file name -> staged copy, through the batches a replay batch replays (its records
    carry the original names)."""
    staged: dict[str, str] = {}
    seen: set[Path] = set()
    while batch_dir not in seen and (batch_dir / "manifest.json").exists():
        seen.add(batch_dir)
        for f in read_manifest(batch_dir).files:
            staged.setdefault(f.name, f.path)
        origin = _read_json(batch_dir / ORIGIN_FILE)
        if not origin:
            break
        batch_dir = batch_dir.parent / origin["of"]
    return staged


def frame_records(plan: Plan, manifest: Manifest, records: list[Record], staged: dict[str, str]) -> None:
    """Decode rejects -> landing files of ``manifest.format`` (see the module docstring); ``staged``:
    landing file name -> staged copy (:func:`staged_files`)."""
    from cdclake.options import Options
    from cdclake.registry import get_decoder
    from cdclake.staging.reading import read_staged_bytes, read_staged_raw

    decoder = get_decoder(manifest.format, Options(dict(manifest.options)))
    by_file: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        by_file[r.source_file or ""].append(r)
    for name, recs in sorted(by_file.items()):
        recs.sort(key=lambda r: r.source_offset or 0)
        stored, content = None, None
        path = staged.get(name)
        # the landing file is only read when a record may be all of it, or its framing needs it
        needed = manifest.format in AVRO_FORMATS or manifest.format == "datahub-tuple"
        needed = needed or any(not r.source_offset for r in recs)
        if needed and path and Path(path).is_file():
            try:
                stored = read_staged_raw(path)
            except (OSError, ValueError):  # a staged copy that does not read whole: nothing stored to replay
                stored = None
            try:
                content = read_staged_bytes(path)
            except Exception:  # unreadable (e.g. corrupt gzip): the stored bytes are the record
                content = None
        parts: list[Record] = []
        for r in recs:
            if content is not None and r.raw and r.raw == content:
                _add_file(plan, name, [(r, r.raw)], shift=True)  # the record was the whole file
            elif not r.raw and r.error.startswith("cannot read landing file") and stored is not None:
                _add_file(plan, name, [(r, stored)], shift=True)
            elif not r.raw:
                _refuse(plan, r, "no bytes were kept with the record")
            elif len(r.raw) >= MAX_RAW_BYTES:
                _refuse(
                    plan,
                    r,
                    f"only the first {MAX_RAW_BYTES} bytes of the record were kept; stage its landing file again",
                )
            else:
                parts.append(r)
        if not parts:
            continue
        fmt = manifest.format
        if fmt in LINE_FORMATS:
            _frame_lines(plan, decoder, name, parts, content)
        elif fmt in XML_FORMATS:
            _add_file(plan, name, [(r, r.raw.removesuffix(b"\n") + b"\n") for r in parts], shift=False)
        elif fmt in AVRO_FORMATS and content is not None and content.startswith(OCF_MAGIC):
            _frame_ocf(plan, name, parts, content)
        elif fmt in AVRO_FORMATS:  # message streams: the messages frame themselves
            _add_file(plan, name, [(r, r.raw) for r in parts], shift=False)
        else:
            for r in parts:
                _refuse(plan, r, f"format {fmt} has no replay framing")


def _add_file(plan: Plan, name: str, items: list[tuple[Record, bytes]], shift: bool, head: bytes = b"") -> None:
    data, spans = bytearray(head), []
    for record, chunk in items:
        spans.append((len(data), record.source_file or name, record.source_offset or 0, shift))
        data += chunk
    plan.files.append(ReplayFile(f"replay:{len(plan.files) + 1}:{name}", bytes(data), spans))
    plan.records += len(items)


def _frame_lines(plan: Plan, decoder, name: str, records: list[Record], content: bytes | None) -> None:
    sep_text = getattr(decoder, "line_delimiter", None) or getattr(decoder, "delimiter", None) or "\n"
    codec = getattr(decoder, "codec", None) or "utf-8"
    sep = sep_text.encode(codec, "replace")
    if sep != sep_text.encode("utf-8") or "\n".encode(codec) != b"\n":
        for r in records:
            _refuse(plan, r, f"records in {codec} cannot be joined byte-wise into lines")
        return

    def line(raw: bytes) -> bytes:
        return raw.rstrip(b"\r\n") + b"\n" if sep == b"\n" else raw.removesuffix(sep) + sep

    head = b""
    if decoder.format_id == "datahub-tuple" and content is not None and not _is_json_lines(content):
        found = _csv_header(content)
        if found is None:
            for r in records:
                _refuse(plan, r, "the CSV header of its landing file cannot be found")
            return
        head = found
        records = [r for r in records if line(r.raw) != head]  # a rejected header comes first anyway
    if records:
        _add_file(plan, name, [(r, line(r.raw)) for r in records], shift=False, head=head)


def _is_json_lines(content: bytes) -> bool:
    return content.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"{"


def _csv_header(content: bytes) -> bytes | None:
    """The first line naming the operation column (how the DataHub tuple decoder finds its header)."""
    from cdclake.formats.datahub_tuple import OPERATION

    marker = OPERATION.encode()
    for line in content.splitlines(keepends=True):
        if marker in line and not line.lstrip().startswith(b"{"):
            return line.rstrip(b"\r\n") + b"\n"
    return None


def _frame_ocf(plan: Plan, name: str, records: list[Record], content: bytes) -> None:
    """Avro OCF rejects under the original header: blocks as they were, records in blocks of their own."""
    try:
        from cdclake.formats._gg_avro import ocf_header

        meta, sync, first = ocf_header(content)
    except Exception as exc:
        for r in records:
            _refuse(plan, r, f"the header of its Avro container file cannot be read again: {exc}")
        return
    blocks, singles = [], []
    for r in records:
        raw, offset = r.raw or b"", r.source_offset or 0
        if raw.endswith(sync) and content[offset : offset + len(raw)] == raw:
            blocks.append((r, raw))  # a whole block as it was (count, size, body, sync)
            continue
        if " bytes after its " in r.error:
            _refuse(plan, r, "bytes after a block's records: nothing says how many records they hold")
            continue
        match = _RECORD_OF.search(r.error)
        count = int(match[2]) - int(match[1]) + 1 if match and "rest of the block" in r.error else 1
        singles.append((r, _varint(count) + _varint(len(raw)) + raw + sync))
    if blocks:
        _add_file(plan, name, blocks, shift=True, head=content[:first])
    if singles:
        header = {**meta, "avro.codec": b"null"}
        _add_file(plan, name, singles, shift=False, head=OCF_MAGIC + _avro_map(header) + sync)


def _varint(value: int) -> bytes:
    """Avro ``long``: zig-zag, then base-128 varint."""
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _avro_map(entries: dict[str, bytes]) -> bytes:
    body = b"".join(_varint(len(k.encode())) + k.encode() + _varint(len(v)) + v for k, v in entries.items())
    return (_varint(len(entries)) + body if entries else b"") + _varint(0)


def _plan_events(plan: Plan, batch_dir: Path, records: list[Record]) -> None:
    """Normalize / compact quarantine -> the original canonical events (see the module docstring)."""
    originals = _original_events(batch_dir, {r.source_file for r in records if r.source_file})
    for r in records:
        try:
            quoted = json.loads((r.raw or b"").decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            quoted = None
        if not isinstance(quoted, dict) or not quoted.get("op"):
            _refuse(plan, r, "the quarantined event text cannot be read")
            continue
        table = quoted.get("table") or r.table
        if not table:
            _refuse(plan, r, "the quarantined event names no table")
            continue
        found = None
        for row in originals.get((r.source_file, r.source_offset), []):
            if (
                row["table"] == table
                and row["op"] == quoted["op"]
                and row["seq"] == quoted.get("seq")
                and _image(row["before"]) == quoted.get("before")
                and _image(row["after"]) == quoted.get("after")
            ):
                found = dict(row)
                break
        if found is None:
            plan.rebuilt_from_text += 1
            found = {
                "table": table,
                "op": quoted["op"],
                "seq": quoted.get("seq"),
                "before": _pairs(quoted.get("before")),
                "after": _pairs(quoted.get("after")),
                "source_file": r.source_file,
                "source_offset": r.source_offset,
            }
        found["error"], found["raw"] = None, None
        plan.events.append(found)


def _original_events(batch_dir: Path, files: set[str]) -> dict[tuple[str, int], list[dict[str, Any]]]:
    import pyarrow as pa
    import pyarrow.dataset as ds

    from cdclake.events.change import EVENT_SCHEMA

    path = batch_dir / "decoded" / "kind=event"
    index: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    if not files or not path.is_dir():
        return index
    # flat files carry ``table``; the per-table layout names it in its folders (``decoded_tables``), as Spark does
    tables = ds.partitioning(pa.schema([("table", pa.string())]), flavor="hive")
    flat = any(p.is_file() for p in path.iterdir())
    table = ds.dataset(str(path), format="parquet", partitioning=None if flat else tables).to_table(
        columns=EVENT_SCHEMA.names, filter=ds.field("source_file").isin(sorted(files))
    )
    for row in table.to_pylist():
        index[(row["source_file"], row["source_offset"])].append(row)
    return index


def _image(entries: Any) -> dict[str, Any] | None:
    return None if entries is None else dict(entries)


def _pairs(image: Any) -> list[tuple[str, str]] | None:
    return None if not isinstance(image, dict) else [(str(k), v) for k, v in image.items()]


# --------------------------------------------------------------------------- running


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text()) if path.exists() else None


def replay_id_for(batch_dir: Path, digest: str) -> str:
    """The replay batch of this quarantine content: an earlier (crashed) one, else the next number."""
    origin = _read_json(batch_dir / ORIGIN_FILE) or {}
    root = origin.get("root") or batch_dir.name
    pattern = re.compile(re.escape(REPLAY_PREFIX + root) + r"-(\d+)")
    numbers = [0]
    for other in batch_dir.parent.glob(f"{REPLAY_PREFIX}{root}-*"):
        match = pattern.fullmatch(other.name)
        if not match:
            continue
        found = _read_json(other / ORIGIN_FILE) or {}
        if found.get("of") == batch_dir.name and found.get("digest") == digest:
            return other.name
        numbers.append(int(match[1]))
    return f"{REPLAY_PREFIX}{root}-{max(numbers) + 1}"


def _stage(replay_dir: Path, manifest: Manifest, plan: Plan) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from cdclake.events.change import EVENT_SCHEMA

    files_dir = replay_dir / "files"
    files_dir.mkdir(parents=True, exist_ok=True)
    staged, spans = [], {}
    for index, item in enumerate(plan.files):
        path = files_dir / f"{index:05d}.replay"
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(item.data)
        tmp.replace(path)
        sha = hashlib.sha256(item.data).hexdigest()
        staged.append(StagedFile(name=item.name, path=str(path), size=len(item.data), sha256=sha))
        spans[item.name] = item.spans
    write_json_atomic(replay_dir / MAP_FILE, spans)
    schema = pa.schema([*EVENT_SCHEMA, pa.field("error", pa.string()), pa.field("raw", pa.binary())])
    rows = [{**e, "tx_last": True if e.get("tx_id") is not None else e.get("tx_last")} for e in plan.events]
    tmp = replay_dir / (EVENTS_FILE + ".tmp")
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp)
    tmp.replace(replay_dir / EVENTS_FILE)
    if not (replay_dir / "held_in.json").exists():  # take over no held events: they belong to the regular batches
        (replay_dir / "held_in.json").write_text("[]")
    manifest.files, manifest.rejected = staged, []
    write_json_atomic(replay_dir / "manifest.json", manifest.to_json())


def original_position(spans: list[tuple[int, str, int, bool]], starts: list[int], offset: int) -> tuple[str, int]:
    """(file, offset) of the first attempt for a position in a replay file (``spans`` sorted, ``starts`` theirs)."""
    start, original, original_offset, shift = spans[max(0, bisect.bisect_right(starts, offset) - 1)]
    return original, original_offset + (offset - start) if shift else original_offset


def _restore_lineage(replay_dir: Path) -> None:
    """Decoded rows of replay files get their original file and offset; replayed transactions are not held."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    spans = {name: sorted(map(tuple, items)) for name, items in (_read_json(replay_dir / MAP_FILE) or {}).items()}
    starts = {name: [s[0] for s in items] for name, items in spans.items()}
    for kind in ("event", "rejected"):
        for path in sorted((replay_dir / "decoded" / f"kind={kind}").glob("*.parquet")):
            if path.name == INJECTED_PART:
                continue
            table = pq.read_table(path)
            files, offsets = table.column("source_file").to_pylist(), table.column("source_offset").to_pylist()
            for i, (name, offset) in enumerate(zip(files, offsets, strict=True)):
                items = spans.get(name)
                if not items or offset is None:
                    continue
                files[i], offsets[i] = original_position(items, starts[name], offset)
            table = table.set_column(
                table.schema.get_field_index("source_file"), "source_file", pa.array(files, pa.string())
            )
            table = table.set_column(
                table.schema.get_field_index("source_offset"), "source_offset", pa.array(offsets, pa.int64())
            )
            if kind == "event":
                tx_ids, last = table.column("tx_id").to_pylist(), table.column("tx_last").to_pylist()
                last = [True if tx is not None else flag for tx, flag in zip(tx_ids, last, strict=True)]
                table = table.set_column(table.schema.get_field_index("tx_last"), "tx_last", pa.array(last, pa.bool_()))
            tmp = path.with_name("." + path.name + ".tmp")
            pq.write_table(table, tmp)
            tmp.replace(path)
            path.with_name(f".{path.name}.crc").unlink(missing_ok=True)  # Hadoop's checksum of the old bytes


def _add_events(replay_dir: Path) -> int:
    """Re-injected events into ``decoded/kind=event``, counted as read by the decode report."""
    import pyarrow.parquet as pq

    source = replay_dir / EVENTS_FILE
    count = pq.read_metadata(source).num_rows if source.exists() else 0
    if count:
        target = replay_dir / "decoded" / "kind=event" / INJECTED_PART
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read_bytes())
    report = read_report(replay_dir, "decode") or {"files": 0, "events": 0, "rejected": 0, "skipped": 0}
    report["events"] = report.get("events", 0) + count
    report["replayed_events"] = count
    write_report(replay_dir, "decode", report)
    return count


def run_replay_batch(spark, replay_dir: str | Path, buckets: int = 16) -> dict[str, Any]:
    """The pipeline's steps on a replay batch (``cdclake.pipeline.run_batch`` with two steps after decode:
    lineage restored, quarantined events re-injected), then the usual report."""
    from cdclake.jobs import compact, ddl, decode, normalize, truncate
    from cdclake.pipeline import build_report

    replay_dir = Path(replay_dir)
    decode.run(spark, replay_dir, by_table=False)  # flat: lineage rewrites the files, an injected file joins them
    _restore_lineage(replay_dir)
    _add_events(replay_dir)
    normalize.run(spark, replay_dir)
    ddl.run(spark, replay_dir, buckets=buckets)
    truncate.run(spark, replay_dir, buckets=buckets)
    compact.run(spark, replay_dir, buckets=buckets)
    return build_report(replay_dir)


def replay_batch(
    spark,
    batch_dir: str | Path,
    *,
    options: dict[str, str] | None = None,
    keys: dict[str, list[str]] | None = None,
    buckets: int = 16,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Replay the quarantine of one staged batch (see the module docstring).

    ``options``: decoder options that override the batch's (a corrected option); ``keys``: primary
    keys per source table (``*``: every table) that override the batch's. ``spark`` may be None
    for a dry run.
    """
    batch_dir = Path(batch_dir).resolve()
    manifest = read_manifest(batch_dir)
    records = quarantined_records(batch_dir)
    result: dict[str, Any] = {"batch": batch_dir.name, "quarantined": len(records)}
    if not records:
        return {**result, "status": "nothing-to-replay"}
    digest = quarantine_digest(manifest.format, records)
    result["digest"] = digest
    for entry in (read_report(batch_dir, RECORD_STEP) or {}).get("replays", []):
        done = batch_dir.parent / entry["replay_batch"]
        if entry.get("digest") == digest and (done / "reports" / "batch.json").exists():
            return {**result, **entry, "status": "already-replayed", "report": read_report(done, "batch")}
    replay_manifest = Manifest.from_dict(json.loads(manifest.to_json()))
    replay_manifest.options = {**manifest.options, **(options or {})}
    replay_manifest.keys = {**manifest.keys, **(keys or {})}
    plan = plan_replay(batch_dir, replay_manifest, records)
    result.update(plan.summary())
    if plan.not_replayable:
        result["not_replayable_records"] = plan.not_replayable[:50]
    if dry_run:
        return {**result, "status": "dry-run"}
    if not plan.files and not plan.events:
        return {**result, "status": "not-replayable"}
    replay_id = replay_id_for(batch_dir, digest)
    replay_dir = batch_dir.parent / replay_id
    origin = _read_json(batch_dir / ORIGIN_FILE) or {}
    replay_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(
        replay_dir / ORIGIN_FILE,
        {"of": batch_dir.name, "root": origin.get("root") or batch_dir.name, "digest": digest},
    )
    replay_manifest.batch_id = replay_id
    _stage(replay_dir, replay_manifest, plan)
    report = run_replay_batch(spark, replay_dir, buckets=buckets)
    entry = {
        "replay_batch": replay_id,
        "digest": digest,
        **plan.summary(),
        "replayed_at": dt.datetime.now(dt.UTC).isoformat(),
    }
    record = read_report(batch_dir, RECORD_STEP) or {"replays": []}
    record["replays"] = [e for e in record["replays"] if e.get("digest") != digest] + [entry]
    write_report(batch_dir, RECORD_STEP, record)
    return {**result, **entry, "status": "replayed", "report": report}


def replay_source(spark, source_dir: str | Path, **kwargs: Any) -> list[dict[str, Any]]:
    """Replay every staged batch of a source folder that has a quarantine, oldest first.

    The batches are listed once, before the first replay: a replay batch made here is not
    replayed again in the same run (its quarantine failed after the same fix).
    """
    from cdclake.jobs.rebuild import source_batches

    return [replay_batch(spark, batch, **kwargs) for batch in source_batches(Path(source_dir))]
