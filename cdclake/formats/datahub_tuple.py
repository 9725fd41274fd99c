"""Alibaba DataHub TUPLE records (format id ``datahub-tuple``; alibaba-datahub-tuple-blob.txt).

A TUPLE topic holds one source table; each record is the table's columns plus metadata
columns that DataWorks adds: ``_sequence_id_``, ``_operation_type_`` (``I``/``U``/``D``),
``_excute_time_`` (so spelled by the vendor; ``_execute_time_`` occurs too),
``_source_table_``, ``_before_image_`` and ``_after_image_`` (``Y``/``N``). Every other
column is the row.

Why it is written this way:

- Landing files are TUPLE records exported either as JSON lines (typed JSON values) or as
  CSV with a header (every value a string: the types are not in the file, so values stay
  strings; the ``nullValue`` option names the text that means NULL, by default none, as CSV
  cannot tell NULL from the empty string). The framing is detected: the first line that
  starts with ``{`` means JSON, the first line with a CSV field ``_operation_type_`` is the header.
  Lines before it are junk (rejected, one record). CSV is read with the ``csv`` module, line
  by line, so every record keeps the byte offset of its first line; a malformed CSV line is
  rejected and reading resumes at the next line.
- An update is two rows sharing ``_sequence_id_``: ``_before_image_=Y`` (before) and
  ``_after_image_=Y`` (after). They become ONE ``UPDATE`` with both images, whatever their
  order and distance in the file; a half without its partner when the file ends is rejected.
- ``_sequence_id_`` is zero-padded to 32 digits (the ``seq``); full-load rows have ``-1``:
  they become ``UPSERT`` with ``seq`` ``-1``, which sorts before every change.
- ``_excute_time_`` is epoch milliseconds in the vendor's example; seconds, microseconds
  (DataHub's TIMESTAMP type) and ``YYYY-MM-DD HH:MM:SS`` text are accepted too (the unit is
  told by magnitude: below 1e11 seconds, below 1e14 milliseconds, below 1e17 microseconds).
- TUPLE records carry no primary key: declare it with ``--option keys=...``.
"""

from __future__ import annotations

import csv
import datetime as dt
import re
from collections.abc import Iterator
from typing import Any

from cdclake.events.change import ChangeEvent, Rejected, Source
from cdclake.formats._datahub import (
    MAX_RAW_BYTES,
    MAX_RECORD_BYTES,
    Half,
    JsonRecord,
    RecordError,
    UpdatePairs,
    datahub_seq,
    from_epoch,
    integer,
    json_kind,
    scan_json,
    short,
)
from cdclake.options import Options
from cdclake.registry import Decoder, register

SEQUENCE, OPERATION, SOURCE_TABLE = "_sequence_id_", "_operation_type_", "_source_table_"
BEFORE_IMAGE, AFTER_IMAGE = "_before_image_", "_after_image_"
TIME_COLUMNS = ("_excute_time_", "_execute_time_")
#: Metadata columns (everything else is the row).
META_COLUMNS = frozenset({SEQUENCE, OPERATION, SOURCE_TABLE, BEFORE_IMAGE, AFTER_IMAGE, *TIME_COLUMNS})

_OPS = {
    "I": "INSERT",
    "INSERT": "INSERT",
    "D": "DELETE",
    "DELETE": "DELETE",
    "U": "UPDATE",
    "UPDATE": "UPDATE",
    "UPDATE_BEFOR": "before",
    "UPDATE_BEFORE": "before",
    "UPDATE_AFTER": "after",
}
#: Image flags (before, after) each op must have when the flags are given.
_FLAGS = {"INSERT": (False, True), "DELETE": (True, False), "before": (True, False), "after": (False, True)}
_YES_NO = {"Y": True, "N": False, "y": True, "n": False, True: True, False: False}
# Fields up to the record limit: csv's default (128 KiB) would reject real LOB columns. The
# limit is process-wide; it is only ever raised here.
csv.field_size_limit(max(csv.field_size_limit(), MAX_RECORD_BYTES))
_TEXT_TS = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?")


@register("datahub-tuple")
class DataHubTupleDecoder(Decoder):
    """Decoder of DataHub TUPLE records as JSON lines or CSV (see the module docstring)."""

    option_names = frozenset({"nullValue"})

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self.null_value = options.str("nullValue")

    def decode(self, data: bytes, file: str) -> Iterator[ChangeEvent | Rejected]:
        """Events and rejected records of one landing file, in file order (a paired update when it completes)."""
        return UpdatePairs().join(self._rows(data, file))

    def _rows(self, data: bytes, file: str) -> Iterator[ChangeEvent | Half | Rejected]:
        for item in self._records(data, file):
            if isinstance(item, Rejected):
                yield item
                continue
            fields, source, raw, from_csv = item
            try:
                result: ChangeEvent | Half | Rejected = self._row(fields, source, raw, from_csv)
            except RecordError as exc:
                result = Rejected(str(exc), source, raw)
            yield result

    # --- framing ----------------------------------------------------------------------------

    def _records(self, data: bytes, file: str) -> Iterator[tuple[dict[str, Any], Source, bytes, bool] | Rejected]:
        lines = _Lines(data)
        first = lines.find_start()
        if first is None:
            if data[lines.bom :].strip():
                yield lines.reject(
                    0,
                    len(lines),
                    file,
                    "the file holds neither JSON records (lines starting with '{') nor a CSV header naming "
                    f"{OPERATION}",
                )
            return
        index, kind = first
        if kind == "json":
            for item in scan_json(data, file):
                if isinstance(item, JsonRecord):
                    if not isinstance(item.value, dict):
                        yield item.reject(f"record is a JSON {json_kind(item.value)}, not an object")
                    else:
                        yield item.value, item.source, item.raw(), False
                else:
                    yield item
            return
        if not lines.is_blank(0, index):
            yield lines.reject(0, index, file, f"lines before the CSV header (the first line naming {OPERATION})")
        yield from self._csv(lines, index, file)

    def _csv(
        self, lines: _Lines, header_index: int, file: str
    ) -> Iterator[tuple[dict, Source, bytes, bool] | Rejected]:
        header, error = None, None
        position = header_index
        while position < len(lines):
            start = position
            reader = csv.reader(lines.feed(start), strict=True)
            try:
                fields = next(reader)
            except StopIteration:  # pragma: no cover - feed yields at least one line
                break
            except csv.Error as exc:
                yield lines.reject(start, start + 1, file, f"invalid CSV at line {start + 1}: {exc}; skipped this line")
                position = start + 1
                continue
            except _TooLarge:
                reason = f"CSV record at line {start + 1} is larger than {MAX_RECORD_BYTES} bytes; skipped this line"
                yield lines.reject(start, start + 1, file, reason)
                position = start + 1
                continue
            position = lines.consumed
            if lines.is_blank(start, position):
                continue
            source = Source(file, lines.start_of(start))
            raw = lines.raw(start, position)
            escaped = lines.bad_utf8(start, position)
            if escaped is not None:
                reason = f"bytes that are not valid UTF-8 at line {escaped[0] + 1} (first bad byte 0x{escaped[1]:02x})"
                yield Rejected(reason, source, raw)
                if header is None and error is None:
                    error = reason  # the header itself: the next line must not be taken for it
                continue
            if header is None and error is None:
                header, error = _check_header(fields)
                if error is not None:
                    yield Rejected(error, source, raw)
                continue
            if error is not None:
                yield Rejected(
                    f"no usable CSV header (see the record at line {header_index + 1}): {error}", source, raw
                )
                continue
            assert header is not None
            if len(fields) != len(header):
                reason = f"CSV record at line {start + 1} has {len(fields)} fields but the header has {len(header)}"
                cut = position >= len(lines) and not lines.line(position - 1).endswith(b"\n")
                if len(fields) < len(header) and cut:
                    reason += "; it is the last line and has no line break: the file looks truncated"
                yield Rejected(reason, source, raw)
                continue
            yield dict(zip(header, fields, strict=True)), source, raw, True

    # --- one row -----------------------------------------------------------------------------

    def _row(self, fields: dict[str, Any], source: Source, raw: bytes, from_csv: bool) -> ChangeEvent | Half:
        op_text = fields.get(OPERATION)
        op = _OPS.get(op_text.strip()) if isinstance(op_text, str) else None
        if op is None:
            raise RecordError(f"unknown {OPERATION} {short(op_text)}; expected I, U or D")
        sequence = fields.get(SEQUENCE)
        if sequence is None or sequence == "":
            raise RecordError(f"no {SEQUENCE}: DataHub rows need it for ordering")
        seq, snapshot = datahub_seq(sequence, SEQUENCE)
        table = self.table_override or fields.get(SOURCE_TABLE)
        if not isinstance(table, str) or not table:
            raise RecordError(f"no {SOURCE_TABLE} in the record; set --option table=NAME")
        time_column = next((c for c in TIME_COLUMNS if fields.get(c) not in (None, "")), None)
        event_ts = _time(fields[time_column], time_column) if time_column else None
        before_flag = _flag(fields.get(BEFORE_IMAGE), BEFORE_IMAGE)
        after_flag = _flag(fields.get(AFTER_IMAGE), AFTER_IMAGE)

        if op == "UPDATE":
            if (before_flag, after_flag) == (True, False):
                op = "before"
            elif (before_flag, after_flag) == (False, True):
                op = "after"
            else:
                raise RecordError(
                    f"update row with {BEFORE_IMAGE}={fields.get(BEFORE_IMAGE)!r} and {AFTER_IMAGE}="
                    f"{fields.get(AFTER_IMAGE)!r}: cannot tell whether it is the before or the after image"
                )
        expected = _FLAGS[op]
        for flag, want, name in ((before_flag, expected[0], BEFORE_IMAGE), (after_flag, expected[1], AFTER_IMAGE)):
            if flag is not None and flag != want:
                raise RecordError(f"{name}={fields.get(name)!r} contradicts {OPERATION} {op_text!r}")

        row = {k: v for k, v in fields.items() if k not in META_COLUMNS}
        if from_csv and self.null_value is not None:
            row = {k: None if v == self.null_value else v for k, v in row.items()}
        meta = {k: v for k, v in fields.items() if k in META_COLUMNS}
        event = ChangeEvent(
            table=table, op="UPDATE", seq=seq, event_ts=event_ts, source=source, keys=self.keys, meta=meta
        )
        if op == "INSERT":
            event.op, event.after = ("UPSERT" if snapshot else "INSERT"), row
            return event
        if op == "DELETE":
            event.op, event.before = "DELETE", row
            return event
        if snapshot:
            raise RecordError(f"update row with {SEQUENCE} -1: a half of an update cannot be paired without it")
        setattr(event, op, row)
        return Half(op, (table, seq), event, str(op_text), SEQUENCE, str(sequence), raw)


# --- pieces ---------------------------------------------------------------------------------


def _flag(value: Any, name: str) -> bool | None:
    if value is None or value == "":
        return None
    key = value.strip() if isinstance(value, str) else value
    if isinstance(key, (str, bool)) and key in _YES_NO:
        return _YES_NO[key]
    raise RecordError(f"{name} must be Y or N, not {short(value)}")


def _time(value: Any, name: str) -> dt.datetime | None:
    """Epoch seconds / milliseconds / microseconds (by magnitude) or timestamp text, as UTC."""
    number = integer(value)
    if number is not None:
        if number < 0:
            return None  # -1: unknown (full-load rows)
        unit = "seconds" if number < 10**11 else "milliseconds" if number < 10**14 else "microseconds"
        if number >= 10**17:
            number, unit = number // 1000, "microseconds"  # nanoseconds
        return from_epoch(number, unit)
    if isinstance(value, str) and _TEXT_TS.fullmatch(value.strip()):
        try:
            parsed = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            return (parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)
        except (ValueError, OverflowError):  # OverflowError: the offset moves it past year 1 or 9999
            pass
    raise RecordError(f"{name} {short(value)} is not epoch milliseconds nor a 'YYYY-MM-DD HH:MM:SS' time")


def _check_header(fields: list[str]) -> tuple[list[str] | None, str | None]:
    header = [f.strip() for f in fields]
    if header and header[0].startswith("\ufeff"):
        header[0] = header[0][1:]
    duplicates = sorted({h for h in header if header.count(h) > 1})
    if duplicates:
        return None, f"the CSV header names column(s) {', '.join(duplicates)} more than once"
    missing = [c for c in (SEQUENCE, OPERATION) if c not in header]
    if missing:
        return None, f"the CSV header lacks the metadata column(s) {', '.join(missing)}"
    return header, None


def _names_operation(line: str) -> bool:
    """Whether a line is a CSV header: one of its fields is ``_operation_type_``.

    Containing the name is not enough: a JSON line with junk before its ``{`` (a stray byte
    order mark) names it too, as a member, and must not turn a JSON-lines file into CSV.
    """
    try:
        fields = next(csv.reader([line]))
    except (csv.Error, StopIteration):
        return False
    return any(f.strip().lstrip("\ufeff") == OPERATION for f in fields)


class _TooLarge(Exception):
    """A CSV record grew beyond :data:`MAX_RECORD_BYTES`."""


class _Lines:
    """The file's lines (with their line ends) and their byte offsets, decoded one by one."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
        self.starts: list[int] = []
        pos = self.bom
        while pos < len(data):
            self.starts.append(pos)
            end = data.find(b"\n", pos)
            pos = len(data) if end < 0 else end + 1
        self.consumed = 0

    def __len__(self) -> int:
        return len(self.starts)

    def start_of(self, index: int) -> int:
        return self.starts[index] if index < len(self.starts) else len(self.data)

    def line(self, index: int) -> bytes:
        return self.data[self.start_of(index) : self.start_of(index + 1)]

    def text(self, index: int) -> str:
        return self.line(index).decode("utf-8", "surrogateescape")

    def find_start(self) -> tuple[int, str] | None:
        """Index and kind ("json" or "csv") of the first line that starts records."""
        for index in range(len(self.starts)):
            line = self.line(index)
            if line.lstrip().startswith(b"{"):
                return index, "json"
            if OPERATION.encode() in line and _names_operation(self.text(index)):
                return index, "csv"
        return None

    def is_blank(self, start: int, end: int) -> bool:
        return not self.data[self.start_of(start) : self.start_of(end)].strip()

    def feed(self, start: int) -> Iterator[str]:
        """Lines from ``start`` for ``csv.reader``; ``consumed`` follows what it took."""
        self.consumed = start
        first = self.start_of(start)
        while self.consumed < len(self.starts):
            index = self.consumed
            if self.start_of(index + 1) - first > MAX_RECORD_BYTES:
                raise _TooLarge()
            self.consumed += 1
            yield self.text(index)

    def raw(self, start: int, end: int) -> bytes:
        begin = self.start_of(start)
        return self.data[begin : min(self.start_of(end), begin + MAX_RAW_BYTES)].rstrip(b"\r\n")

    def bad_utf8(self, start: int, end: int) -> tuple[int, int] | None:
        """(line index, first bad byte) of the first line in [start, end) that is not UTF-8."""
        for index in range(start, end):
            line = self.line(index)
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                return index, line[exc.start]
        return None

    def reject(self, start: int, end: int, file: str, reason: str) -> Rejected:
        begin = self.start_of(start)
        chunk = self.data[begin : self.start_of(end)].rstrip()
        return Rejected(reason, Source(file, begin), chunk[:MAX_RAW_BYTES])
