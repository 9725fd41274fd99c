"""Shared pieces of the ``datahub-tuple``, ``datahub-blob`` and ``cdl-json`` decoders.

- :func:`scan_json`: JSON objects one per line, concatenated or pretty-printed, in UTF-8
  (the encoding DataHub BLOB and CDL write), read by :mod:`._json_framing`; after a bad record
  scanning resumes at the next line starting with ``{`` (licence headers, junk lines and
  truncated records cost only themselves). Bytes that are not UTF-8 reject only their record.
- :func:`datahub_seq`: DataHub ``sequenceId`` / ``_sequence_id_`` (digits, e.g.
  ``1605339516000000004``) zero-padded to :data:`SEQ_WIDTH` so that string order is numeric
  order. Full-load (snapshot) rows carry ``-1``; their ``seq`` is the text ``-1``, which
  sorts before every padded sequence (``-`` < ``0``): a change captured during or after the
  full load always wins over the snapshot row of the same key.
- :class:`UpdatePairs`: DataHub splits one update into a before half and an after half that
  share the sequence id (possibly not adjacent). The halves become ONE ``UPDATE`` with both
  images whatever their order; a half left alone when the file ends is rejected.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from cdclake.events.change import ChangeEvent, Rejected, Source
from cdclake.formats._gg_common import ESCAPED
from cdclake.formats._json import json_kind, truncation_hint
from cdclake.formats._json_framing import JsonFraming, JsonLimits, JsonRecord, line_of, scan_records
from cdclake.formats.kafka_connect import timestamp_from_epoch
from cdclake.runtime.limits import MAX_JSON_DEPTH as MAX_DEPTH
from cdclake.runtime.limits import MAX_RAW_BYTES, MAX_RECORD_BYTES

#: ``seq`` width for DataHub sequence ids (19 digits are usual).
SEQ_WIDTH = 32
#: ``seq`` of full-load rows (sequence id ``-1``): sorts before every padded sequence id.
SNAPSHOT_SEQ = "-1"

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_NEXT_RECORD_LINE = re.compile(r"\n[ \t\r\f\v]*\{")
_INTEGER = re.compile(r"-?[0-9]+")
_DIGITS = re.compile(r"[0-9]+")


class RecordError(ValueError):
    """A record that cannot be decoded; the message is the rejection reason."""


# --- JSON records -------------------------------------------------------------------


class _ByteOffsets:
    """Character positions of the decoded text -> byte offsets (forward only). Cheaper than
    :class:`~cdclake.formats._gg_common.ByteOffsets` for UTF-8 with ``surrogateescape``: one encode."""

    def __init__(self, text: str, base: int, identity: bool, escapes: bool) -> None:
        self._text, self._identity = text, identity
        self._char, self._byte, self._base = 0, base, base
        self.escapes = escapes

    def at(self, char_pos: int) -> int:
        if self._identity:
            return self._base + char_pos
        chunk = self._text[self._char : char_pos]  # an ASCII chunk is counted, not encoded
        self._byte += len(chunk) if chunk.isascii() else len(chunk.encode("utf-8", "surrogateescape"))
        self._char = char_pos
        return self._byte


def scan_json(data: bytes, file: str) -> Iterator[JsonRecord | Rejected]:
    """JSON values of a UTF-8 file, in file order, or rejections of what is not JSON."""
    base = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    try:  # strict first (as fast): no escapes to look for when it succeeds
        text, escapes = data[base:].decode("utf-8"), False
    except UnicodeDecodeError:
        text, escapes = data[base:].decode("utf-8", "surrogateescape"), True
    offsets = _ByteOffsets(text, base, data.isascii(), escapes)  # ASCII: no escapes, one byte a character
    yield from scan_records(data, file, text, offsets, _FRAMING, JsonLimits(MAX_RECORD_BYTES, MAX_DEPTH, MAX_RAW_BYTES))


def _json_error(exc: json.JSONDecodeError, text: str, start: int) -> str:
    if exc.pos < len(text) and ESCAPED.match(text, exc.pos):  # surrogateescape of a byte that is not UTF-8
        return _encoding_error(text, exc.pos)
    reason = f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
    if text[start] != "{":
        reason += f" (a record is a JSON object starting with '{{', this one starts with {text[start]!r})"
    return reason + truncation_hint(exc, text)


def _resync(text: str, start: int) -> int:
    """Where scanning resumes after a bad record at ``start``: the next line starting with '{'."""
    found = _NEXT_RECORD_LINE.search(text, start)
    return found.end() - 1 if found else len(text)


def _encoding_error(text: str, char_pos: int) -> str:
    byte = ord(text[char_pos]) - 0xDC00
    return f"bytes that are not valid UTF-8 at line {line_of(text, char_pos)} (first bad byte 0x{byte:02x})"


_FRAMING = JsonFraming(
    resync=_resync,
    resume="the next line starting with '{'",
    json_error=_json_error,
    encoding_error=_encoding_error,
)


def short(value: Any, limit: int = 60) -> str:
    """``repr`` of a value, cut for reasons."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- sequence ids and times ---------------------------------------------------------------


def datahub_seq(value: Any, name: str) -> tuple[str, bool]:
    """(``seq``, is a snapshot row) of a DataHub sequence id; :class:`RecordError` if unusable."""
    if type(value) is str and len(value) <= SEQ_WIDTH and value.isascii() and value.isdigit():
        return value.zfill(SEQ_WIDTH), False  # the common case, as the checks below give it, without their calls
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise RecordError(f"{name} must be a string of digits, not {json_kind(value)} {short(value)}")
    text = str(value).strip()
    if text == "-1":
        return SNAPSHOT_SEQ, True
    if not _DIGITS.fullmatch(text):
        raise RecordError(f"{name} {short(value)} is not a string of digits (or -1 for a full-load row)")
    if len(text) > SEQ_WIDTH:
        raise RecordError(f"{name} {short(value)} has more than {SEQ_WIDTH} digits; cdclake cannot order it")
    return text.zfill(SEQ_WIDTH), False


def integer(value: Any) -> int | None:
    """A JSON integer or a string of digits as ``int`` (None if it is neither)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip()) and len(value) < 40:
        return int(value)
    return None


def from_epoch(amount: int, unit: str) -> dt.datetime:
    """An aware UTC datetime ``amount`` units after the epoch (exact; RecordError if out of range)."""
    try:
        if unit == "milliseconds":  # the common unit, without a keyword dictionary a call
            return _EPOCH + dt.timedelta(0, 0, 0, amount)
        return _EPOCH + dt.timedelta(**{unit: amount})
    except OverflowError:
        raise RecordError(f"{amount} {unit} after 1970-01-01 is outside the years 1-9999") from None


def millis_text(amount: int) -> str:
    """``format_ts(from_epoch(amount, "milliseconds"))`` as Kafka Connect's writer spells it, from a naive epoch: an
    aware datetime's zone cost more than the rest of the value (three timestamps a record in the bench's data)."""
    try:
        return timestamp_from_epoch(amount, 1_000)
    except ValueError:
        raise RecordError(f"{amount} milliseconds after 1970-01-01 is outside the years 1-9999") from None


def epoch_millis(value: Any, name: str) -> dt.datetime | None:
    """Epoch milliseconds (number or digits) as a UTC datetime; None when absent or negative (-1: unknown)."""
    if type(value) is int and value >= 0:  # the common case, as below
        return from_epoch(value, "milliseconds")
    if value is None or value == "":
        return None
    millis = integer(value)
    if millis is None:
        raise RecordError(f"{name} {short(value)} is not epoch milliseconds (a 13-digit integer)")
    if millis < 0:
        return None
    return from_epoch(millis, "milliseconds")


# --- update halves -------------------------------------------------------------------------


def pair_meta(before: tuple[str, int, dict[str, Any]], after: tuple[str, int, dict[str, Any]]) -> dict[str, Any]:
    """``meta`` of the update joined from two halves, each ``(vendor op, offset, meta)``: what both halves say
    once, the column types of both, and what differs (op, offsets, the rest) per half under ``pair``."""
    b_meta, a_meta = before[2], after[2]
    meta = {k: v for k, v in a_meta.items() if k in b_meta and b_meta[k] == v and k != "column_types"}
    types = {**b_meta.get("column_types", {}), **a_meta.get("column_types", {})}
    if types:
        meta["column_types"] = types
    meta["pair"] = {
        name: {
            "op": op,
            "offset": offset,
            **{k: v for k, v in half_meta.items() if k not in meta and k not in ("column_types", "op")},
        }
        for name, (op, offset, half_meta) in (("before", before), ("after", after))
    }
    return meta


@dataclass(slots=True)
class Half:
    """One half of a split update: ``event`` holds only its own image (``side``)."""

    side: str  # "before" or "after"
    pair_key: tuple[str, str]
    event: ChangeEvent
    vendor_op: str
    seq_name: str
    seq_text: str
    raw: bytes = field(repr=False, default=b"")


class UpdatePairs:
    """Pairs update halves sharing (table, sequence id) into one ``UPDATE``, in either order."""

    def __init__(self) -> None:
        self._pending: dict[tuple[str, str], Half] = {}

    def add(self, half: Half) -> ChangeEvent | Rejected | None:
        """The paired UPDATE when ``half`` completes one; a rejection for a duplicate half; else None."""
        other = self._pending.get(half.pair_key)
        if other is None:
            self._pending[half.pair_key] = half
            return None
        if other.side == half.side:
            return Rejected(
                f"second {half.side} image ({half.vendor_op}) for the update with {half.seq_name} {half.seq_text} "
                f"of table {half.pair_key[0]}; the first one at offset {other.event.source.offset} is kept",
                half.event.source,
                half.raw,
            )
        del self._pending[half.pair_key]
        before, after = (other, half) if other.side == "before" else (half, other)
        first = min(before.event.source.offset, after.event.source.offset)
        meta = pair_meta(
            (before.vendor_op, before.event.source.offset, before.event.meta),
            (after.vendor_op, after.event.source.offset, after.event.meta),
        )
        a = after.event
        return ChangeEvent(
            table=a.table,
            op="UPDATE",
            seq=a.seq,
            event_ts=a.event_ts or before.event.event_ts,
            source=Source(a.source.file, first),
            tx_id=a.tx_id,
            keys=a.keys or before.event.keys,
            before=before.event.before,
            after=a.after,
            meta=meta,
        )

    def join(self, items: Iterable[ChangeEvent | Half | Rejected]) -> Iterator[ChangeEvent | Rejected]:
        """``items`` in file order with each update's halves joined where the second one is read,
        then the halves left alone (rejected): the one decode loop of both DataHub formats."""
        for item in items:
            if isinstance(item, Half):
                paired = self.add(item)
                if paired is not None:
                    yield paired
            else:
                yield item
        yield from self.leftovers()

    def leftovers(self) -> Iterator[Rejected]:
        """Halves still alone (the file ended), in file order."""
        for half in sorted(self._pending.values(), key=lambda h: h.event.source.offset):
            missing = "after" if half.side == "before" else "before"
            yield Rejected(
                f"{half.vendor_op} row is the {half.side} image of an update ({half.seq_name} {half.seq_text}, "
                f"table {half.pair_key[0]}) but no row with its {missing} image is in this file; "
                "an update needs both halves in one file",
                half.event.source,
                half.raw,
            )
        self._pending.clear()
