"""Debezium JSON change events (format id ``debezium-json``).

Sources: Alibaba Lindorm "Data format" (Debezium format v2.0, SQL and HBase tables), Huawei
CDL "CDL JSON and Open-Source Debezium JSON" (``message_version`` 2.0), and Debezium's own
envelope as written by Kafka Connect's ``JsonConverter``. User documentation:
``docs/formats/debezium-json.md``. Why it is written this way:

- A landing file holds records one per line or concatenated, each either a ``{schema, payload}``
  envelope (``schemas.enable=true``) or a bare payload. The scanner is the reference decoder's
  (``JSONDecoder.raw_decode`` in a loop, numbers as ``Decimal``: :mod:`._json_framing`); after a bad record it resumes
  at the next line starting with ``{`` or ``null``, so comment headers and junk lines are
  rejected records and the rest decodes.
- Values are converted from the envelope's ``schema`` block (:mod:`.kafka_connect`): Decimal
  bytes, Debezium/Kafka Connect dates, times, timestamps, bytes as base64. Without a schema the
  JSON values are kept as parsed (exact numbers), because nothing says ``19439`` is a date.
- Ordering: ``seq`` is the source's log position, chosen per record from the first field the
  connector fills: ``lsn`` (PostgreSQL, CDL), ``commit_lsn``/``change_lsn`` (SQL Server),
  ``scn`` (Oracle), the binlog ``file``/``pos``/``row`` (MySQL), ``txId``, and last ``ts_ms``
  of the source (a weaker order: events of one millisecond tie and fall back to file order).
  A connector fills the same fields in every record, so the seqs of one table compare. Numbers
  are zero-padded to 20 digits. The payload's own ``ts_ms`` is processing time: never a seq.
- Records that are not row changes are not events: Kafka tombstones (``null`` or a null
  payload), Kafka key records (schema name ``*.Key``; their fields become the keys of the next
  record) and Debezium heartbeats are skipped and counted in :attr:`DebeziumJsonDecoder.skipped`.
- Lindorm: the table is ``namespace.table``; an ``u`` whose ``after`` lacks a column that
  ``before`` had deleted that column (explicit NULL). HBase tables (a ``ROW`` column) carry
  base64 values: decoded to bytes, ``family_column`` names kept, ``ROW`` is the key.
- Debezium's placeholder for values it could not read (TOASTed PostgreSQL columns, Oracle LOBs,
  ``__debezium_unavailable_value``) marks the column as missing, not as a value.
- Schema drift: a record whose inline value schema (the ``after``/``before`` struct) names other
  columns or types than the last one this decoder announced for its table is preceded by a
  ``SCHEMA`` event (``meta.column_source`` ``schema``) with the full column list, which the
  normalize job diffs against the lake table (adds, drops, type changes). Debezium's structs
  always list every column, which makes a full list safe; a struct missing an image column is
  not trusted. No schema (bare payloads), HBase tables (dynamic columns) and truncates: none.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from msgspec import Raw

from cdclake.events.arrow import DecodedBuilder
from cdclake.events.change import ChangeEvent, Rejected, Source, joined_text, meta_text, value_text
from cdclake.formats import kafka_connect as kc
from cdclake.formats._connect_decimals import connect_decimal_kind
from cdclake.formats._gg_common import ESCAPED, ByteOffsets, decode_escaping, schema_event_before
from cdclake.formats._json import json_kind, truncation_hint
from cdclake.formats._json_framing import JsonFraming, JsonLimits, JsonRecord, line_of, scan_records
from cdclake.formats.columnar import (
    CONVERT,
    DROPPED,
    EPOCH_KINDS,
    REFUSED,
    SCHEMA_READER,
    VALUE_READER,
    EnvelopeColumns,
    EnvelopeReader,
    SpanRow,
    builder_text,
    kind_of_kept,
)
from cdclake.options import OptionError, Options
from cdclake.registry import Decoder, register, register_columns
from cdclake.runtime.limits import MAX_JSON_DEPTH as MAX_DEPTH
from cdclake.runtime.limits import MAX_RAW_BYTES, MAX_RECORD_BYTES

if TYPE_CHECKING:
    pass

#: ``seq`` width of numeric positions (LSN, SCN, txId, ts_ms): zero-padded to this many digits.
SEQ_WIDTH = 20
#: Debezium's default ``unavailable.value.placeholder``.
UNAVAILABLE_PLACEHOLDER = "__debezium_unavailable_value"

OPS = {"c": "INSERT", "u": "UPDATE", "d": "DELETE", "r": "UPSERT", "t": "TRUNCATE"}
HEARTBEAT_SCHEMA = "io.debezium.connector.common.Heartbeat"
#: Payload members with a meaning here; others are kept in ``meta["extra"]``.
_PAYLOAD_MEMBERS = frozenset({"op", "ts_ms", "ts_us", "ts_ns", "before", "after", "source", "transaction"})
#: Huawei CDL extras kept in ``meta`` under their own names.
_CDL_MEMBERS = ("message_version", "message_type", "unique", "LOB_COLUMNS", "HEARTBEAT_IDENTIFIER")
_NEXT_RECORD_LINE = re.compile(r"\n[ \t\r\f\v]*(?:\{|null\b)")
_DIGITS = re.compile(r"[0-9]+")
_TRAILING_DIGITS = re.compile(r"([0-9]+)$")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@register("debezium-json")
class DebeziumJsonDecoder(Decoder):
    """Decoder of Debezium JSON envelopes and payloads (see the module docstring)."""

    option_names = frozenset({"hbase", "unavailableValuePlaceholder"})
    record_state = ("_layouts", "skipped_tombstones", "skipped_key_records", "skipped_heartbeats")
    independent_records = True  # but a key record waits for its value record: ``between_records``

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        hbase = (options.str("hbase") or "auto").strip().lower()
        if hbase not in ("auto", "true", "false"):
            raise OptionError(f"option hbase must be auto, true or false, not {options.str('hbase')!r}")
        self.hbase = hbase
        self.placeholder = options.str("unavailableValuePlaceholder", UNAVAILABLE_PLACEHOLDER) or None
        self._placeholder_b64 = base64.b64encode(self.placeholder.encode()).decode() if self.placeholder else None
        #: Texts one of which a record's bytes hold when a value of it may be the placeholder: its own UTF-8
        #: bytes, its base64's, or a backslash (an escape can spell it, or a ``"`` in it); None: no placeholder.
        self.placeholder_probes = (
            (self.placeholder.encode(), self._placeholder_b64.encode(), b"\\") if self.placeholder else None
        )
        #: Records read that are not row changes, counted over every file this decoder read.
        self.skipped_tombstones = 0
        self.skipped_key_records = 0
        self.skipped_heartbeats = 0
        self._pending_keys: list[str] | None = None
        #: Per table, the columns (name -> type) of the value schema last announced by a SCHEMA event.
        self._layouts: dict[str, dict[str, str | None]] = {}

    @property
    def skipped(self) -> dict[str, int]:
        """Skipped records by kind (for the batch report: read = events + rejected + skipped)."""
        return {
            "tombstones": self.skipped_tombstones,
            "key_records": self.skipped_key_records,
            "heartbeats": self.skipped_heartbeats,
        }

    # --- framing -------------------------------------------------------------------------------

    def between_records(self) -> bool:
        return self._pending_keys is None

    def decode(self, data: bytes, file: str) -> Iterator[ChangeEvent | Rejected]:
        """Events and rejected records of one landing file (already gunzipped), in file order."""
        self._pending_keys = None
        text, escapes = decode_escaping(data, "utf-8")
        base = 0
        if text.startswith("\ufeff"):
            base, text = 3, text[1:]
        identity = len(text) + base == len(data) and data.isascii()
        offsets = ByteOffsets(text, "utf-8", base, identity, escapes)
        limits = JsonLimits(MAX_RECORD_BYTES, MAX_DEPTH, MAX_RAW_BYTES)
        for record in scan_records(data, file, text, offsets, _FRAMING, limits):
            if isinstance(record, Rejected):
                yield record
            else:
                yield from self._record(record)

    # --- one record ------------------------------------------------------------------------------

    def _record(self, record: JsonRecord) -> list[ChangeEvent | Rejected]:
        """One parsed record as its row event (after a ``SCHEMA`` event when its value schema is new for
        the table), a rejection, or nothing when it is skipped (and counted)."""
        record_keys, self._pending_keys = self._pending_keys, None
        try:
            unwrapped = self._unwrap(record.value)
            if unwrapped is None:
                return []
            payload, schema = unwrapped
            env = envelope(self, payload)
            return self._events(record, env, payload, schema, record_keys)
        except RecordError as exc:
            return [record.reject(str(exc))]

    def _unwrap(self, value: Any) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
        """(payload, schema) of a record, or None for a record skipped by design (a tombstone, a key record: its
        key names wait for the value record, a heartbeat), counted. RecordError: neither."""
        if value is None:
            self.skipped_tombstones += 1
            return None
        if not isinstance(value, dict):
            raise RecordError(f"record is a JSON {json_kind(value)}, not an object")
        schema: dict[str, Any] | None = None
        payload: Any = value
        if "payload" in value and set(value) <= {"schema", "payload"}:
            envelope_schema, payload = value.get("schema"), value["payload"]
            if payload is None:
                self.skipped_tombstones += 1
                return None
            if not isinstance(payload, dict):
                raise RecordError(f"payload must be a JSON object, not a JSON {json_kind(payload)}")
            if envelope_schema is not None and not isinstance(envelope_schema, dict):
                raise RecordError(f"schema must be a JSON object, not a JSON {json_kind(envelope_schema)}")
            schema = envelope_schema or None
        if payload.get("op") is None:
            schema_name = schema.get("name") if schema else None
            if isinstance(schema_name, str) and schema_name.endswith(".Key"):
                self.skipped_key_records += 1
                self._pending_keys = [k for k in payload if isinstance(k, str)] or None
                return None
            if schema_name == HEARTBEAT_SCHEMA or set(payload) == {"ts_ms"}:
                self.skipped_heartbeats += 1
                return None
            raise RecordError(_no_op_reason(payload))
        return payload, schema

    def _events(
        self,
        record: JsonRecord,
        env: Envelope,
        payload: dict[str, Any],
        schema: dict[str, Any] | None,
        record_keys: list[str] | None,
    ) -> list[ChangeEvent | Rejected]:
        """The row event of an envelope (after its ``SCHEMA`` event where the value schema is new)."""
        for name, image in env.images.items():
            if image is not None and not isinstance(image, dict):
                raise RecordError(f"{name} must be a JSON object of column values, not a JSON {json_kind(image)}")
        hbase = self.hbase == "true" or (
            self.hbase == "auto"
            and env.lindorm
            and any(img is not None and "ROW" in img for img in env.images.values())
        )
        envelope_fields = kc.struct_fields(schema) or {}
        unavailable: list[str] = []
        column_types: dict[str, str] = {}
        before, after = self._images(record, env, envelope_fields, hbase, unavailable, column_types)
        if env.op == "TRUNCATE":
            before = after = None
        else:
            check_images(env.op, env.op_code, before, after)
        meta: dict[str, Any] = {"op": env.op_code}
        if env.lindorm and env.op == "UPDATE" and before is not None and after is not None:
            deleted = [c for c in before if c not in after]
            if deleted:
                after = {**after, **dict.fromkeys(deleted)}
                meta["deleted_columns"] = deleted
        tx_id, tx_pos = transaction_ids(payload, env.source)
        schema_name = schema.get("name") if schema else None
        event = ChangeEvent(
            table=env.table,
            op=env.op,
            seq=env.seq,
            event_ts=change_time(env.source, payload),
            source=record.source,
            tx_id=tx_id,
            tx_pos=tx_pos,
            keys=self._keys(payload, hbase, record_keys),
            before=before,
            after=after,
            meta=event_meta(meta, env.source, env.seq_from, payload, schema_name, unavailable, column_types),
        )
        columns = None if hbase or env.op == "TRUNCATE" else _schema_columns(envelope_fields, before, after)
        announced = self._announce(event, columns) if columns is not None else None
        return [event] if announced is None else [announced, event]

    def _images(
        self,
        record: JsonRecord,
        env: Envelope,
        envelope_fields: dict[str, Any],
        hbase: bool,
        unavailable: list[str],
        column_types: dict[str, str],
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """(before, after) converted by their Connect schemas (HBase tables: cells as bytes), without the
        columns holding the unavailable-value placeholder (added to ``unavailable``)."""
        # most records hold no placeholder: three byte searches of the record's values (after its schema
        # block) rather than a look at every value
        probes = self.placeholder_probes
        start, end, data = record.body, record.end, record.data
        placeholder = probes is not None and any(data.find(probe, start, end) >= 0 for probe in probes)
        images = dict(env.images)
        for name, image in env.images.items():
            if image is None:
                continue
            image_schema = envelope_fields.get(name)
            if placeholder:
                image = self._drop_unavailable(image, kc.struct_fields(image_schema) or {}, unavailable)
            try:
                if hbase:
                    image = _hbase_image(image, self.hbase == "auto")
                    column_types.update(dict.fromkeys(image, "binary"))
                else:
                    image = kc.convert_row(image, image_schema)
                    column_types.update(kc.column_types(image_schema))
            except kc.ConnectValueError as exc:
                raise RecordError(f"{name} image: {exc}") from None
            images[name] = image
        return images["before"], images["after"]

    def _keys(self, payload: dict[str, Any], hbase: bool, record_keys: list[str] | None) -> list[str] | None:
        """The option's keys, else CDL's ``unique`` names, else ``ROW`` for HBase tables, else the key record's."""
        keys = self.keys
        unique = payload.get("unique")
        if keys is None and isinstance(unique, dict) and unique:
            keys = list(unique)
        if keys is None and hbase:
            keys = ["ROW"]
        return record_keys if keys is None else keys

    def _announce(self, event: ChangeEvent, columns: list[tuple[str, str | None]]) -> ChangeEvent | None:
        """A ``SCHEMA`` event for ``event``'s table when ``columns`` (its record's full value schema) differ
        in names or types from the last ones announced in this decoder (the first ones always do).

        It carries the row's seq, event_ts and source, so it sorts just before the row. A decoder
        instance decodes one batch (not stateful), so every batch announces its tables again; the
        diff downstream finds nothing to do when the lake table already matches. Column order is
        not compared: a reordered schema changes nothing in the lake table.
        """
        layout = dict(columns)
        if self._layouts.get(event.table) == layout:
            return None
        self._layouts[event.table] = layout
        keys = event.keys if event.keys and all(_column_name(k) for k in event.keys) else None
        ddl = {"columns": [{"name": n, "type": t} for n, t in columns], "keys": list(keys or [])}
        return schema_event_before(event, keys, ddl, {"column_source": "schema"})

    def _drop_unavailable(self, image: dict[str, Any], fields: dict[str, Any], dropped: list[str]) -> dict[str, Any]:
        """The image without columns whose value is the unavailable-value placeholder (missing)."""
        if self.placeholder is None:
            return image
        values = image.values()  # one C search each; most images hold no placeholder at all
        if self.placeholder not in values and [self.placeholder] not in values and self._placeholder_b64 not in values:
            return image
        out = {}
        for column, value in image.items():
            if value == self.placeholder or value == [self.placeholder]:
                dropped.append(column)
            elif value == self._placeholder_b64 and (fields.get(column) or {}).get("type") == "bytes":
                dropped.append(column)
            else:
                out[column] = value
        return out


# --- helpers ----------------------------------------------------------------------------------------


class RecordError(ValueError):
    """A record the format's rules refuse; its text is the reject reason."""


@dataclass(slots=True)
class Envelope:
    """What a Debezium payload says apart from its images' values (:func:`envelope`)."""

    op_code: str
    op: str
    source: dict[str, Any]
    table: str
    seq: str
    seq_from: str
    #: the images as the payload holds them (``before``, ``after``)
    images: dict[str, Any]
    #: an Alibaba Lindorm record (``source.namespace``): HBase tables and deleted columns are read otherwise
    lindorm: bool


def envelope(decoder: DebeziumJsonDecoder, payload: dict[str, Any]) -> Envelope:
    """The format's envelope rules, for both the reference and the columnar path: operation, source, table and
    ordering position (``seq``). RecordError: a payload these rules refuse."""
    op_code = payload.get("op")
    op = OPS.get(op_code) if isinstance(op_code, str) else None
    if op is None:
        raise RecordError(f"unknown op {op_code!r}; Debezium ops are c (create), u (update), d (delete), r (read), t")
    src = payload.get("source")
    if src is None:
        src = {}
    if not isinstance(src, dict):
        raise RecordError(f"source must be a JSON object, not a JSON {json_kind(src)}")
    table = decoder.table_override or table_name(src)
    if not table:
        raise RecordError("no table name: source has no table (or collection); set the table option")
    position = record_position(src)
    if position is None:
        raise RecordError(
            "no ordering position: source has no lsn, commit_lsn, scn, binlog file/pos, txId or ts_ms "
            "(the payload's ts_ms is processing time and cannot order changes)"
        )
    images = {"before": payload.get("before"), "after": payload.get("after")}
    return Envelope(op_code, op, src, table, position[0], position[1], images, "namespace" in src)


def check_images(op: str, op_code: str, before: Any, after: Any) -> None:
    """Which images an operation needs: INSERT, UPSERT (read) and UPDATE an after image, DELETE a before image."""
    if op in ("INSERT", "UPSERT", "UPDATE") and after is None:
        raise RecordError(f"op {op_code!r} has no after image: the new row values are missing")
    if op == "DELETE" and before is None:
        raise RecordError(
            "op 'd' has no before image: the deleted row cannot be identified "
            "(PostgreSQL tables need a primary key or REPLICA IDENTITY FULL)"
        )


def table_name(src: dict[str, Any]) -> str | None:
    """DESIGN §3: Lindorm ``namespace.table``; ``schema.table`` when the source has a schema,
    else ``db.table`` (MongoDB: ``db.collection``)."""
    table = src.get("table")
    if not isinstance(table, str) or not table:
        table = src.get("collection")
    if not isinstance(table, str) or not table:
        return None
    for qualifier in ("namespace", "schema", "db"):
        value = src.get(qualifier)
        if isinstance(value, str) and value:
            return f"{value}.{table}"
    return table


def _number(value: Any) -> int | None:
    """A non-negative integer from an int or a string of digits."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and _DIGITS.fullmatch(value) and len(value) <= 40:
        return int(value)
    return None


def record_position(src: dict[str, Any]) -> tuple[str, str] | None:
    """(seq, the source field it came from) — see the module docstring for the order."""
    lsn = _number(src.get("lsn"))
    if lsn is not None:
        return f"{lsn:0{SEQ_WIDTH}d}", "lsn"
    commit_lsn, change_lsn = src.get("commit_lsn"), src.get("change_lsn")
    if isinstance(commit_lsn, str) and commit_lsn:
        serial = _number(src.get("event_serial_no")) or 0
        return f"{commit_lsn}|{change_lsn if isinstance(change_lsn, str) else ''}|{serial:010d}", "commit_lsn"
    scn = _number(src.get("scn"))
    if scn is not None:
        return f"{scn:0{SEQ_WIDTH}d}", "scn"
    file, pos = src.get("file"), _number(src.get("pos"))
    if isinstance(file, str) and file and pos is not None:
        index = _TRAILING_DIGITS.search(file)
        row = _number(src.get("row")) or 0
        return f"{int(index[1]) if index else 0:010d}{pos:0{SEQ_WIDTH}d}{row:010d}", "binlog"
    tx = _number(src.get("txId"))
    if tx is not None:
        return f"{tx:0{SEQ_WIDTH}d}", "txId"
    ts = _number(src.get("ts_ms"))
    if ts is not None:
        return f"{ts:0{SEQ_WIDTH}d}", "ts_ms"
    return None


def change_time(src: dict[str, Any], payload: dict[str, Any]) -> dt.datetime | None:
    """The source's change time (``source.ts_ns/us/ms``); snapshots without one (``ts_ms`` 0)
    fall back to the payload's ``ts_ms`` (when the connector read the row)."""
    for holder in (src, payload):
        for name, per_second in (("ts_ns", 1_000_000_000), ("ts_us", 1_000_000), ("ts_ms", 1_000)):
            value = _number(holder.get(name))
            if value:
                try:
                    return _EPOCH + dt.timedelta(0, 0, value * 1_000_000 // per_second)
                except OverflowError:
                    return None
    return None


def _column_name(name: Any) -> bool:
    """Whether ``name`` can name a lake column (the schema-change diff refuses others)."""
    return isinstance(name, str) and bool(name) and "\x00" not in name


def _schema_columns(
    envelope_fields: dict[str, Any], before: dict[str, Any] | None, after: dict[str, Any] | None
) -> list[tuple[str, str | None]] | None:
    """The record's full column list from its value schema (the ``after`` struct, else ``before``).

    None when there is no such list to trust: no struct with fields, a name that cannot be a
    column, or an image column the struct does not name. Debezium's structs name every column of
    the table; a struct that misses one is not a full list, and diffing against it would drop
    the missing column from the lake table.
    """
    listed = kc.memoized("listed", listed_columns, envelope_fields.get("after")) or kc.memoized(
        "listed", listed_columns, envelope_fields.get("before")
    )
    if not listed:
        return None
    columns, names = listed
    if names is None or any(image and not names.issuperset(image) for image in (before, after)):
        return None
    return list(columns)


def listed_columns(struct_schema: Any) -> tuple[list[tuple[str, str | None]], frozenset[str] | None] | None:
    """A value schema's columns and their names (None: one cannot name a column); None: no list.
    Worked out once per schema (:func:`~cdclake.formats.kafka_connect.memoized`)."""
    columns = kc.schema_columns(struct_schema)
    if not columns:
        return None
    names = frozenset(n for n, _ in columns) if all(_column_name(n) for n, _ in columns) else None
    return columns, names


def _hbase_image(image: dict[str, Any], auto: bool) -> dict[str, Any]:
    """Lindorm HBase values: base64 text -> bytes (``family_column`` names kept)."""
    out: dict[str, Any] = {}
    for column, value in image.items():
        if value is None:
            out[column] = None
            continue
        try:
            if not isinstance(value, str):
                raise ValueError
            out[column] = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            hint = " (if this Lindorm table is an SQL table with a ROW column, set hbase=false)" if auto else ""
            raise kc.ConnectValueError(
                f"column {column}: HBase table values are base64 text, this one is a JSON "
                f"{json_kind(value)} {str(value)[:60]!r}{hint}"
            ) from None
    return out


def transaction_ids(payload: dict[str, Any], src: dict[str, Any]) -> tuple[str | None, int | None]:
    """(tx_id, tx_pos): the payload's ``transaction`` block, else the source's ``txId`` or ``gtid``."""
    transaction = payload.get("transaction")
    if isinstance(transaction, dict) and transaction.get("id") is not None:
        order = transaction.get("total_order")
        return str(transaction["id"]), order if isinstance(order, int) and not isinstance(order, bool) else None
    if src.get("txId") is not None:
        return str(src["txId"]), None
    if isinstance(src.get("gtid"), str) and src["gtid"]:
        return src["gtid"], None
    return None, None


def event_meta(
    meta: dict[str, Any],
    src: dict[str, Any],
    seq_from: str,
    payload: dict[str, Any],
    schema_name: Any,
    unavailable: list[str],
    column_types: dict[str, str],
) -> dict[str, Any]:
    """An event's ``meta`` (``meta`` holds its ``op``), its members in this order (their JSON text's)."""
    meta["source"] = src
    meta["seq_from"] = seq_from
    for name in ("ts_ms", "ts_us", "ts_ns"):
        if payload.get(name) is not None:
            meta[name] = payload[name]
    if payload.get("transaction") is not None:
        meta["transaction"] = payload["transaction"]
    for name in _CDL_MEMBERS:
        if name in payload:
            meta[name] = payload[name]
    if isinstance(schema_name, str):
        meta["schema_name"] = schema_name
    if unavailable:
        meta["unavailable_columns"] = sorted(set(unavailable))
    extra = {k: v for k, v in payload.items() if k not in _PAYLOAD_MEMBERS and k not in _CDL_MEMBERS}
    if extra:
        meta["extra"] = extra
    if column_types:
        meta["column_types"] = column_types
    return meta


def _no_op_reason(payload: dict[str, Any]) -> str:
    if payload.get("message_version") == "1.0" or "OPERATION" in payload:
        return (
            "record is CDL JSON (message_version 1.0, OPERATION), not Debezium JSON: decode it with --format cdl-json"
        )
    if payload.get("status") in ("BEGIN", "END") and "id" in payload:
        return (
            f"record is Debezium transaction metadata (status {payload['status']}), not a row change; "
            "land the transaction topic apart from the table topics"
        )
    return (
        "record has no op: it is not a Debezium change event (a row flattened by ExtractNewRecordState "
        "has no op, table or log position; land the unflattened envelope)"
    )


def _resync(text: str, start: int) -> int:
    """Where scanning resumes after a bad record at ``start``: the next line starting a record."""
    found = _NEXT_RECORD_LINE.search(text, start)
    return found.start() + 1 if found else len(text)


def _json_error(exc: json.JSONDecodeError, text: str, start: int) -> str:
    if exc.pos < len(text) and ESCAPED.match(text, exc.pos):
        bad = ord(text[exc.pos]) - 0xDC00
        return f"bytes that are not valid UTF-8 at line {exc.lineno} (first bad byte 0x{bad:02x})"
    reason = f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
    if not text.startswith(("{", "null"), start):
        reason += f" (a record is a JSON object starting with '{{', this one starts with {text[start]!r})"
    return reason + truncation_hint(exc, text)


def _encoding_error(text: str, char_pos: int) -> str:
    bad = ord(text[char_pos]) - 0xDC00
    return (
        f"bytes that are not valid UTF-8 at line {line_of(text, char_pos)} "
        f"(first bad byte 0x{bad:02x}); Debezium JSON is always UTF-8"
    )


_FRAMING = JsonFraming(
    resync=_resync,
    resume="the next line starting with '{' or null",
    json_error=_json_error,
    encoding_error=_encoding_error,
)


# --- the columnar path (the decode task's: formats.columnar.EnvelopeColumns over this module's rules) --------

#: The payload members this path reads, in the order Debezium writes them (any other: the reference reads).
_COLUMNAR_PAYLOAD: dict[str, object] = {
    "before": dict[str, Raw] | None,
    "after": dict[str, Raw] | None,
    "source": dict[str, Any] | None,
    "transaction": Any,
    "op": Any,
    "ts_ms": Any,
    "ts_us": Any,
    "ts_ns": Any,
}


class _ColumnPlan:
    """What one schema block says, worked out once: its name, the image structs' fields, how each
    column's values are judged, the ``column_types`` of each combination of images, the full column list."""

    __slots__ = ("columns", "happy", "kinds", "layout", "names", "schema_name", "structs", "types", "types_texts")

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema_name = schema.get("name")
        envelope_fields = kc.struct_fields(schema) or {}
        self.structs = {image: envelope_fields.get(image) for image in ("before", "after")}
        self.kinds = {image: _kinds(struct) for image, struct in self.structs.items()}
        #: per image, per column of a Connect decimal or an integer date, time or timestamp: the reference's
        #: conversion of its common case (``kafka_connect.happy_path``)
        self.happy = {
            image: {n: f for n, spec in (kc.struct_fields(struct) or {}).items() if (f := kc.happy_path(spec))}
            for image, struct in self.structs.items()
        }
        before_types, after_types = (kc.column_types(self.structs[i]) for i in ("before", "after"))
        self.types = {
            (False, False): {},
            (True, False): before_types,
            (False, True): after_types,
            (True, True): {**before_types, **after_types},
        }
        #: each combination's ``column_types`` as a meta's last member, written once (``events.joined_text``)
        self.types_texts = {shape: meta_text({"column_types": t} if t else {}) for shape, t in self.types.items()}
        listed = kc.memoized("listed", listed_columns, self.structs["after"]) or kc.memoized(
            "listed", listed_columns, self.structs["before"]
        )
        self.columns, self.names = (list(listed[0]), listed[1]) if listed else (None, None)
        self.layout = dict(self.columns) if self.columns is not None else None


def _kinds(struct: Any) -> dict[str, int]:
    """Per field of an image struct, how its values are judged (a column it does not name: ``UNNAMED``)."""
    fields = kc.struct_fields(struct) or {}
    return {name: _kind(spec) for name, spec in fields.items()}


def _kind(spec: dict[str, Any]) -> int:
    """A field's kind: a Connect decimal or an integer date or timestamp (the happy path's,
    ``kafka_connect.happy_path``), else by the types the reference keeps."""
    if spec.get("name") == kc.CONNECT_DECIMAL and spec.get("type") == "bytes":  # the happy path's decimals
        decimal = connect_decimal_kind(kc.int_param(spec, "scale"))
        if decimal is not None:
            return decimal
    logical = kc.INTEGER_LOGICAL.get(spec.get("name")) if spec.get("type") in kc.INT_TYPES else None  # type: ignore[arg-type]
    return EPOCH_KINDS.get(logical, CONVERT) if logical else kind_of_kept(kc.kept_types(spec))


@register_columns("debezium-json")
def debezium_json_columns(decoder: DebeziumJsonDecoder) -> DebeziumJsonColumns | None:
    """The columnar path reads Kafka Connect's ``JsonConverter`` shape; not HBase tables (``hbase`` ``true``)."""
    return None if decoder.hbase == "true" else DebeziumJsonColumns(decoder)


class DebeziumJsonColumns(EnvelopeColumns):
    """Kafka Connect's ``JsonConverter`` records (one compact ``{"schema", "payload"}`` record per line, UTF-8, a
    handful of schema blocks per file) a span at a time (docs/decisions 0044): every scalar from :func:`envelope`
    and the reference's own helpers (``change_time``, ``transaction_ids``, ``event_meta``), ``SCHEMA``
    announcements from the decoder's ``_announce``, a value kept as its text only where the reference keeps the
    parsed value and the builder writes that text back, every other value through ``convert_row`` one at a
    time. Where it stops (the reference reads the span): anything :func:`envelope` or :func:`check_images`
    refuses, a tombstone, a key record, a Lindorm or HBase record, a truncate, a bare payload, a value its field
    refuses."""

    reader = EnvelopeReader("Debezium", _COLUMNAR_PAYLOAD, images=dict.fromkeys(("before", "after"), Raw))

    def read_plan(self, schema: bytes) -> _ColumnPlan | None:
        try:
            value = SCHEMA_READER.decode(schema.decode("utf-8"))
        except (ValueError, RecursionError):
            return None
        return _ColumnPlan(value) if isinstance(value, dict) and value else None

    def row(self, payload: dict[str, Any], plan: _ColumnPlan) -> SpanRow | None:
        decoder: DebeziumJsonDecoder = self.decoder  # type: ignore[assignment]
        try:
            env = envelope(decoder, payload)
            before, after = env.images["before"], env.images["after"]
            check_images(env.op, env.op_code, before, after)
        except RecordError:
            return None
        if env.op == "TRUNCATE" or env.lindorm:  # Lindorm: its HBase and deleted-column rules are the reference's
            return None
        src = env.source
        tx_id, tx_pos = transaction_ids(payload, src)
        stamp = change_time(src, payload)
        meta = (env.op_code, src, payload, env.seq_from)
        return SpanRow(env.table, env.op, env.seq, stamp, tx_id, tx_pos, decoder.keys, before, after, plan, meta)

    def kinds(self, plan: _ColumnPlan, image: str) -> dict[str, int]:
        return plan.kinds[image]

    def converter(self, image: str, plans: list[_ColumnPlan]) -> Callable[[int, str, str, bool], Any]:
        return _converter(self.decoder, image, plans)  # type: ignore[arg-type]

    def placeholder(self) -> tuple[tuple[bytes, ...] | None, str | None]:
        decoder: DebeziumJsonDecoder = self.decoder  # type: ignore[assignment]
        return decoder.placeholder_probes, _dropped_text(decoder)

    def metas(self, rows: list[SpanRow], unavailable: list[list[str]]) -> list[str]:
        texts = []
        for row, dropped in zip(rows, unavailable, strict=True):
            op_code, src, payload, seq_from = row.meta
            plan = row.plan
            meta = event_meta({"op": op_code}, src, seq_from, payload, plan.schema_name, dropped, {})
            shape = (row.before is not None, row.after is not None)
            texts.append(joined_text(meta_text(meta), plan.types_texts[shape]))  # column_types: the last member
        return texts

    def finish(self, batch: pa.RecordBatch, rows: list[SpanRow], kept: dict[str, list], file: str) -> pa.RecordBatch:
        plans = [row.plan for row in rows]
        return _announced(self.decoder, batch, plans, kept, file)  # type: ignore[arg-type]


def _announced(
    decoder: DebeziumJsonDecoder, batch: pa.RecordBatch, plans: list[_ColumnPlan], kept: dict[str, list], file: str
) -> pa.RecordBatch:
    """``batch`` with the decoder's ``SCHEMA`` event just before each record whose full column list differs
    from the last one announced for its table (``DebeziumJsonDecoder._announce``)."""
    layouts = decoder._layouts
    tables = batch.column("table").to_pylist()
    at, events = [], []
    for i, plan in enumerate(plans):
        if plan.layout is None or layouts.get(tables[i]) == plan.layout:
            continue
        names = plan.names
        if names is None or any(
            image and not names.issuperset(image) for image in (kept["before"][i], kept["after"][i])
        ):
            continue  # not a full list (the reference's _schema_columns)
        row = batch.slice(i, 1).to_pylist()[0]
        event = ChangeEvent(
            table=row["table"],
            op=row["op"],
            seq=row["seq"],
            event_ts=row["event_ts"],
            source=Source(file, row["source_offset"]),
            keys=row["keys"],
        )
        announced = decoder._announce(event, list(plan.columns))
        if announced is not None:
            at.append(i)
            events.append(announced)
    if not at:
        return batch
    builder = DecodedBuilder(MAX_RAW_BYTES)
    for event in events:
        builder.add_event(event)
    rows = builder.flush()
    # each SCHEMA event sorts just before its record: record i at 2i + 1, its announcement at 2i
    order = np.argsort(np.concatenate((np.arange(batch.num_rows) * 2 + 1, np.array(at) * 2)), kind="stable")
    both = pa.Table.from_batches([batch, rows]).combine_chunks()
    return both.take(pa.array(order)).to_batches()[0]


def _dropped_text(decoder: DebeziumJsonDecoder) -> str | None:
    """The placeholder's JSON text where it has no escape (``_converted`` drops that text in any column)."""
    placeholder = decoder.placeholder
    if placeholder is None:
        return None
    text = json.dumps(placeholder, ensure_ascii=False)
    return None if "\\" in text else text


def _converter(decoder: DebeziumJsonDecoder, image: str, plans: list[_ColumnPlan]):
    """The reference's conversion of one value of ``image`` (``image_array``'s ``convert``)."""

    def convert(owner: int, column: str, text: str, probed: bool) -> Any:
        plan = plans[owner]
        happy = None if probed else plan.happy[image].get(column)
        if happy is not None:
            value = _happy_text(happy, text)
            if value is not None:
                return value
        return _converted(decoder, plan.structs[image], column, text)

    return convert


def _happy_text(happy: Any, text: str) -> str | None:
    """A Connect decimal's or an integer date's, time's or timestamp's text through its field's happy path,
    read from the JSON text as the reference's reader reads it (None: the reference's whole conversion)."""
    if text[:1] == '"':
        value: Any = text[1:-1]  # an escape in it: base64 has no backslash, the happy path refuses it
    elif text.isdigit() or (text[:1] == "-" and text[1:].isdigit()):
        value = int(text)
    else:
        return None
    converted = happy(value)
    return None if converted is kc.ANOTHER_WAY else value_text(converted)


def _converted(decoder: DebeziumJsonDecoder, struct: Any, column: str, text: str) -> Any:
    """One value as the reference gives it: :data:`DROPPED` (the unavailable-value placeholder),
    :data:`REFUSED` (its field refuses it: the reference words it), else its JSON text."""
    try:
        value = VALUE_READER.decode(text)
    except (ValueError, RecursionError):
        return REFUSED
    placeholder = decoder.placeholder
    if placeholder is not None:
        if value == placeholder or value == [placeholder]:
            return DROPPED
        if (
            value == decoder._placeholder_b64
            and ((kc.struct_fields(struct) or {}).get(column) or {}).get("type") == "bytes"
        ):
            return DROPPED
    try:
        converted = kc.convert_row({column: value}, struct)[column]
    except kc.ConnectValueError:
        return REFUSED
    return builder_text(converted)
