"""The canonical change event (DESIGN.md section 3, a user-facing contract).

Every decoder turns its vendor's records into these events, so everything after
decoding (normalize, merge, reports) is written once. Row images keep the
difference between a NULL column (key present, value None) and a missing column
(key absent): partial updates depend on it.

Values inside images are plain JSON values; exact numbers are
``decimal.Decimal`` so that ``17520.00`` is not turned into a binary float.
In Arrow/Parquet each image is a ``map<string, string>`` whose values are the
JSON text of the column value; that keeps every value exact and lets one file
hold tables with different columns.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from json.encoder import encode_basestring  # the C escaper json.dumps(..., ensure_ascii=False) uses
from typing import Any

import orjson
import pyarrow as pa


class Op(StrEnum):
    """Operation of a change event (contract values)."""

    INSERT = "INSERT"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    UPSERT = "UPSERT"
    TRUNCATE = "TRUNCATE"
    DDL = "DDL"
    SCHEMA = "SCHEMA"
    HEARTBEAT = "HEARTBEAT"
    TX_BEGIN = "TX_BEGIN"
    TX_END = "TX_END"


#: Operations that change rows of a table.
ROW_OPS = frozenset({Op.INSERT.value, Op.UPDATE.value, Op.DELETE.value, Op.UPSERT.value})


@dataclass(slots=True)
class Source:
    """Where a record was read: file name and byte offset of its first byte."""

    file: str
    offset: int

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "offset": self.offset}


@dataclass(slots=True)
class ChangeEvent:
    """One canonical change event (field names are the contract's)."""

    table: str
    op: str
    seq: str | None
    event_ts: dt.datetime | None
    source: Source
    tx_id: str | None = None
    tx_pos: int | None = None
    tx_last: bool | None = None
    keys: list[str] | None = None
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    ddl: Any = None
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The event as the JSON object the decode CLI prints."""
        return {
            "table": self.table,
            "op": self.op,
            "seq": self.seq,
            "event_ts": format_ts(self.event_ts),
            "tx_id": self.tx_id,
            "tx_pos": self.tx_pos,
            "tx_last": self.tx_last,
            "keys": self.keys,
            "before": self.before,
            "after": self.after,
            "ddl": self.ddl,
            "meta": self.meta,
            "source": self.source.to_dict(),
        }


@dataclass(slots=True)
class Rejected:
    """A record that could not be decoded; it goes to quarantine, never lost.

    ``error`` is a sentence a person can act on; ``raw`` keeps the record's
    bytes (capped) so that it can be replayed after a fix.
    """

    error: str
    source: Source
    raw: bytes = b""

    def to_dict(self) -> dict[str, Any]:
        return {"error": self.error, "source": self.source.to_dict()}


def format_ts(value: dt.datetime | None) -> str | None:
    """ISO-8601 UTC with microseconds and a ``Z``: one spelling for every format."""
    if value is None:
        return None
    zone = value.tzinfo
    if zone is None:
        return value.isoformat("T", "microseconds") + "Z"
    if zone is not dt.UTC:
        value = value.astimezone(dt.UTC)
    return value.isoformat("T", "microseconds")[:-6] + "Z"  # "+00:00" off (positional: keywords cost)


# --- JSON text that keeps exact numbers -------------------------------------


def to_json(value: Any) -> str:
    """Serialize JSON values, writing ``Decimal`` as an exact JSON number."""
    parts: list[str] = []
    _write_json(value, parts)
    return "".join(parts)


def _write_json(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(encode_basestring(value))
    elif isinstance(value, Decimal):
        out.append(str(value) if value.is_finite() else json.dumps(str(value)))
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(json.dumps(value) if value == value and abs(value) != float("inf") else json.dumps(str(value)))
    elif isinstance(value, dict):
        out.append("{")
        for i, (k, v) in enumerate(value.items()):
            if i:
                out.append(",")
            out.append(encode_basestring(str(k)))
            out.append(":")
            _write_json(v, out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, v in enumerate(value):
            if i:
                out.append(",")
            _write_json(v, out)
        out.append("]")
    elif isinstance(value, (bytes, bytearray)):
        import base64

        out.append(json.dumps(base64.b64encode(value).decode("ascii")))
    elif isinstance(value, (dt.datetime, dt.date, dt.time)):
        out.append(json.dumps(value.isoformat()))
    else:
        raise TypeError(f"cannot write {type(value).__name__} as JSON")


_JSON_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_JSON_CONSTANTS = {"null": None, "true": True, "false": False}


def from_json(text: str) -> Any:
    """Parse JSON text, reading non-integer numbers as exact ``Decimal``.

    Column values are read back once per event in the merge, so the usual scalars skip the
    JSON parser: a string without escapes is its inside, ``null``/``true``/``false`` their
    constants, an integer or a number (checked against JSON's number grammar) ``int`` or
    ``Decimal`` of its text, which is what ``json.loads(text, parse_float=Decimal)`` gives.
    Anything else goes to ``json.loads``.
    """
    first = text[:1]
    if first == '"':
        inner = text[1:-1]
        if len(text) > 1 and text[-1] == '"' and "\\" not in inner and '"' not in inner:
            return inner
    elif first == "-" or "0" <= first <= "9":
        if _JSON_INT.fullmatch(text):
            return int(text)
        if _JSON_NUMBER.fullmatch(text):
            return Decimal(text)
    elif text in _JSON_CONSTANTS:
        return _JSON_CONSTANTS[text]
    return json.loads(text, parse_float=Decimal)


# --- Arrow / Spark layout ----------------------------------------------------

IMAGE_TYPE = pa.map_(pa.string(), pa.string())

#: Arrow schema of decoded events (Parquet written by the decode job).
EVENT_SCHEMA = pa.schema(
    [
        ("table", pa.string()),
        ("op", pa.string()),
        ("seq", pa.string()),
        ("event_ts", pa.timestamp("us", tz="UTC")),
        ("tx_id", pa.string()),
        ("tx_pos", pa.int64()),
        ("tx_last", pa.bool_()),
        ("keys", pa.list_(pa.string())),
        ("before", IMAGE_TYPE),
        ("after", IMAGE_TYPE),
        ("ddl", pa.string()),
        ("meta", pa.string()),
        ("source_file", pa.string()),
        ("source_offset", pa.int64()),
    ]
)

#: Arrow schema of quarantined records.
REJECT_SCHEMA = pa.schema(
    [
        ("error", pa.string()),
        ("source_file", pa.string()),
        ("source_offset", pa.int64()),
        ("raw", pa.binary()),
    ]
)


def _decimal_text(value: Decimal) -> str:
    return str(value) if value.is_finite() else json.dumps(str(value))


def _float_text(value: float) -> str:
    return float.__repr__(value) if value == value and abs(value) != float("inf") else json.dumps(str(value))


_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS

#: Scalar writers by exact type: one dict lookup per value instead of ``json.dumps``'s encoder set-up
#: (the decode task's hottest path: a map entry per column of every image). Same text as :func:`to_json`.
SCALAR_TEXT: dict[type, Callable[[Any], str]] = {
    str: encode_basestring,
    int: int.__repr__,
    Decimal: _decimal_text,
    float: _float_text,
    bool: lambda value: "true" if value else "false",
    type(None): lambda _: "null",
}


def _orjson_default(value: Any) -> Any:
    if type(value) is Decimal and value.is_finite():
        return orjson.Fragment(str(value))
    raise TypeError  # anything else: the whole value goes through to_json


def meta_text(value: Any) -> str:
    """JSON text of an event's ``meta`` / ``ddl`` (same values as :func:`to_json`).

    orjson writes the common case (dicts of strings and numbers, e.g. a ``column_types`` map on
    every event) in one C call; values it would write differently (bytes, datetimes, lone
    surrogates, non-string keys, non-finite decimals) make it raise, and :func:`to_json` writes
    those. One difference is kept: a float NaN/Infinity (never parsed from JSON text, where they
    are decimals) is written as ``null``.
    """
    try:
        return orjson.dumps(value, default=_orjson_default, option=_ORJSON_OPTIONS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return to_json(value)


def joined_text(head: str, tail: str) -> str:
    """The :func:`meta_text` of one object holding ``head``'s members, then ``tail``'s, from the two objects'
    texts (both written by :func:`meta_text`: compact, no blank around a brace). A decoder writes the members
    every message of a schema shares once, and joins them to each message's own."""
    if tail == "{}":
        return head
    if head == "{}":
        return tail
    return f"{head[:-1]},{tail[1:]}"


def value_text(value: Any) -> str:
    """JSON text of one column value (:func:`to_json`, fast for scalars)."""
    return SCALAR_TEXT.get(type(value), to_json)(value)


def image_to_text(image: dict[str, Any] | None) -> list[tuple[str, str]] | None:
    """A row image as map entries of JSON text (None stays None: no image)."""
    if image is None:
        return None
    get = SCALAR_TEXT.get
    return [(k, get(type(v), to_json)(v)) for k, v in image.items()]


def image_from_text(entries: Any) -> dict[str, Any] | None:
    """Inverse of :func:`image_to_text` (accepts a list of pairs or a dict)."""
    if entries is None:
        return None
    items = entries.items() if isinstance(entries, dict) else entries
    return {k: from_json(v) for k, v in items}


def event_to_row(event: ChangeEvent) -> dict[str, Any]:
    """An event as a row of :data:`EVENT_SCHEMA`."""
    ts = event.event_ts
    if ts is not None and ts.tzinfo is None:
        ts = ts.replace(tzinfo=dt.UTC)
    return {
        "table": event.table,
        "op": event.op,
        "seq": event.seq,
        "event_ts": ts,
        "tx_id": event.tx_id,
        "tx_pos": event.tx_pos,
        "tx_last": event.tx_last,
        "keys": event.keys,
        "before": image_to_text(event.before),
        "after": image_to_text(event.after),
        "ddl": None if event.ddl is None else to_json(event.ddl),
        "meta": to_json(event.meta) if event.meta else None,
        "source_file": event.source.file,
        "source_offset": event.source.offset,
    }


def rejected_to_row(rejected: Rejected) -> dict[str, Any]:
    """A rejected record as a row of :data:`REJECT_SCHEMA`."""
    return {
        "error": rejected.error,
        "source_file": rejected.source.file,
        "source_offset": rejected.source.offset,
        "raw": rejected.raw,
    }
