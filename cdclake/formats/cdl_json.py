"""Huawei MRS CDL JSON, ``message_version`` 1.0 (format id ``cdl-json``; huawei-cdl-json-and-debezium-json.txt).

A message is a Kafka Connect JSON envelope ``{"schema": ..., "payload": ...}`` (or a bare
payload) whose payload has ``DATA_STORE`` (source database type), ``SEG_OWNER`` (schema),
``TABLE_NAME``, ``TIMESTAMP`` (change time, epoch ms), ``OPERATION``
(``INSERT``/``UPDATE``/``DELETE``), ``data`` (after image), ``before``,
``transaction.properties`` (``lsn``, ``txId``), ``unique`` (primary-key values),
``LOB_COLUMNS``, ``message_version``, ``message_type`` and ``HEARTBEAT_IDENTIFIER``.

Why it is written this way:

- Messages are read one per line, concatenated or pretty-printed
  (:func:`~cdclake.formats._datahub.scan_json`); a bad one is rejected alone.
- ``table`` is ``SEG_OWNER.TABLE_NAME`` (DESIGN §3: schema.table); ``DATA_STORE`` is the
  database *type* (``POSTGRESQL``), not a database name, so it is kept in ``meta`` only.
- ``seq`` is the LSN from ``transaction.properties`` zero-padded to 20 digits (an unsigned
  64-bit LSN has at most 20; PostgreSQL's ``16/B374D848`` text form is read too). Without an
  LSN the change time ``TIMESTAMP`` (ms, padded the same way) is the ``seq``: a weaker order
  (changes in one millisecond keep file order); ``meta["seq_from"]`` says which was used.
- ``unique`` holds the key columns and their values: its names are the ``keys``; a
  ``DELETE`` without a before image gets ``unique`` as its before image (the key is all a
  delete needs). ``txId`` is the ``tx_id``.
- Values are decoded with the Kafka Connect ``schema`` when the envelope has one:
  ``org.apache.kafka.connect.data.Timestamp`` (epoch ms) becomes UTC timestamp text, ``Date``
  a date, ``Time`` a time, ``Decimal`` (base64 unscaled + scale) and the vendor's string
  ``...cdc.data.Decimal`` exact ``Decimal``; ``bytes`` base64 becomes bytes. Column types go
  to ``meta["column_types"]`` where they are certain.
- Heartbeats: CDL writes the rows of its heartbeat table (``cdc_cdl.cdc_heartbeat``, see the
  vendor's heartbeat-table guide) through the same stream; those messages, and messages with
  ``OPERATION`` ``HEARTBEAT``, become ``HEARTBEAT`` events (the option ``heartbeatTable``
  names another table, empty: none).
- ``message_version`` 2.0 is open-source Debezium JSON: rejected with a pointer to
  ``debezium-json``.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from msgspec import Raw

from cdclake.events.change import ChangeEvent, Rejected, joined_text, meta_text
from cdclake.formats import kafka_connect as kc
from cdclake.formats._datahub import (
    JsonRecord,
    RecordError,
    epoch_millis,
    from_epoch,
    integer,
    json_kind,
    millis_text,
    scan_json,
    short,
)
from cdclake.formats.columnar import (
    DATE_DAYS,
    SCHEMA_READER,
    TEXT_DECIMAL,
    TS_MILLIS,
    UNNAMED,
    EnvelopeColumns,
    EnvelopeReader,
    SpanRow,
    kind_of_kept,
    reference_converter,
)
from cdclake.options import Options
from cdclake.registry import Decoder, register, register_columns

if TYPE_CHECKING:
    pass

#: ``seq`` width: an unsigned 64-bit LSN has at most 20 digits.
SEQ_WIDTH = 20
#: ``table`` of a HEARTBEAT message that names no table.
NO_TABLE = "_cdl"
#: Default of the ``heartbeatTable`` option (CDL's heartbeat table, compared case-insensitively).
HEARTBEAT_TABLE = "cdc_cdl.cdc_heartbeat"

OPS = {"INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE", "HEARTBEAT": "HEARTBEAT"}
_KNOWN_MEMBERS = frozenset(
    {
        "DATA_STORE",
        "SEG_OWNER",
        "TABLE_NAME",
        "TIMESTAMP",
        "OPERATION",
        "LOB_COLUMNS",
        "transaction",
        "unique",
        "data",
        "before",
        "message_version",
        "message_type",
        "HEARTBEAT_IDENTIFIER",
    }
)
_META_MEMBERS = ("DATA_STORE", "message_version", "message_type", "LOB_COLUMNS", "HEARTBEAT_IDENTIFIER")
_PG_LSN = re.compile(r"([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
CONNECT = "org.apache.kafka.connect.data."
_INT_TYPES = frozenset({"int8", "int16", "int32", "int64"})
_BASE_HINTS = {"int8": "bigint", "int16": "bigint", "int32": "bigint", "int64": "bigint"}
_BASE_HINTS |= {"float32": "double", "float64": "double", "boolean": "boolean", "string": "string", "bytes": "binary"}


@register("cdl-json")
class CdlJsonDecoder(Decoder):
    """Decoder of Huawei CDL JSON 1.0 messages (see the module docstring)."""

    option_names = frozenset({"heartbeatTable"})
    independent_records = True

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self.heartbeat_table = (options.str("heartbeatTable", HEARTBEAT_TABLE) or "").strip().lower() or None

    def decode(self, data: bytes, file: str) -> Iterator[ChangeEvent | Rejected]:
        """Events and rejected records of one landing file, in file order."""
        for item in scan_json(data, file):
            if isinstance(item, Rejected):
                yield item
                continue
            try:
                yield self._message(item)
            except RecordError as exc:
                yield item.reject(str(exc))

    def _message(self, record: JsonRecord) -> ChangeEvent:
        payload, schema = _payload(record.value)
        env = envelope(self, payload)
        fields, kept, hints = kc.memoized("cdl-plan", schema_plan, schema)
        before, after = (_image(env, member, fields, kept) for member in ("before", "data"))
        if hints:
            env.meta["column_types"] = dict(hints)
        check_images(env.op, before, after, env.unique)
        if env.op == "DELETE":
            if before is None:  # a delete keyed by ``unique`` (check_images: it has one)
                data_fields = fields.get("data", {})
                before = {col: connect_value(col, "unique", data_fields.get(col), v) for col, v in env.unique.items()}
                env.meta["before_from_unique"] = True
            after = None
        return ChangeEvent(
            table=env.table,
            op=env.op,
            seq=env.seq,
            event_ts=env.event_ts,
            source=record.source,
            tx_id=env.tx_id,
            keys=env.keys,
            before=before,
            after=after,
            meta=env.meta,
        )


def _payload(message: Any) -> tuple[dict[str, Any], Any]:
    """(payload, schema) of a message: a Kafka Connect envelope or a bare payload (RecordError: neither)."""
    if not isinstance(message, dict):
        raise RecordError(f"record is a JSON {json_kind(message)}, not an object")
    if "payload" in message and "OPERATION" not in message:
        payload, schema = message["payload"], message.get("schema")
    else:
        payload, schema = message, None  # a bare payload
    if payload is None:
        raise RecordError("payload is null (a Kafka tombstone?); CDL JSON messages always carry a payload")
    if not isinstance(payload, dict):
        raise RecordError(f"payload must be a JSON object, not a JSON {json_kind(payload)}")
    return payload, schema


@dataclass(slots=True)
class Envelope:
    """What a CDL payload says apart from its images' values (:func:`envelope`)."""

    table: str
    op: str
    seq: str
    event_ts: dt.datetime
    tx_id: str | None
    keys: list[str] | None
    unique: dict[str, Any] | None
    #: the images as the payload holds them (``before``; ``data``, the after image)
    images: dict[str, Any]
    #: ``meta`` without the schema's ``column_types`` (:func:`message_meta`)
    meta: dict[str, Any]


def envelope(decoder: CdlJsonDecoder, payload: dict[str, Any]) -> Envelope:
    """The format's envelope rules, for both the reference and the columnar path: version, operation, table
    (``SEG_OWNER.TABLE_NAME``; the heartbeat table's rows are heartbeats), position, keys (``unique``) and meta.
    RecordError: a payload these rules refuse."""
    version = payload.get("message_version")
    if version is not None and str(version) != "1.0":
        if str(version) == "2.0":
            raise RecordError("message_version 2.0 is open-source Debezium JSON: decode it with --format debezium-json")
        raise RecordError(f"message_version {short(version)} is not CDL JSON 1.0")
    op_text = payload.get("OPERATION")
    op = OPS.get(op_text) if isinstance(op_text, str) else None
    if op is None:
        raise RecordError(f"unknown OPERATION {short(op_text)}; CDL JSON operations are INSERT, UPDATE, DELETE")
    owner, name = payload.get("SEG_OWNER"), payload.get("TABLE_NAME")
    for member, value in (("SEG_OWNER", owner), ("TABLE_NAME", name)):
        if value is not None and not isinstance(value, str):
            raise RecordError(f"{member} must be a string, not a JSON {json_kind(value)}")
    source_table = f"{owner}.{name}" if owner and name else name or None
    table = decoder.table_override or source_table or (NO_TABLE if op == "HEARTBEAT" else None)
    if not table:
        raise RecordError("record names no table (TABLE_NAME missing or empty); set --option table=NAME")
    if decoder.heartbeat_table and source_table and source_table.lower() == decoder.heartbeat_table:
        op = "HEARTBEAT"
    event_ts, properties, seq, seq_from, tx_id = position(payload)
    unique = payload.get("unique")
    if unique is not None and not isinstance(unique, dict):
        raise RecordError(f"unique must be a JSON object of key columns, not a JSON {json_kind(unique)}")
    keys = decoder.keys or (list(unique) if unique else None)
    images = {"before": payload.get("before"), "data": payload.get("data")}
    meta = message_meta(payload, properties, unique, seq_from, {})
    return Envelope(table, op, seq, event_ts, tx_id, keys, unique, images, meta)


def check_images(op: str, before: Any, after: Any, unique: Any = None) -> None:
    """Which images an operation needs: INSERT and UPDATE an after image (``data``); DELETE a before image, or
    ``unique`` key values to build one from (``unique``: checked only where given)."""
    if op in ("INSERT", "UPDATE") and after is None:
        raise RecordError(f"{op} message has no data (after image)")
    if op == "DELETE" and before is None and not unique:
        raise RecordError("DELETE message has neither a before image nor unique key values")


def _image(env: Envelope, member: str, fields: dict[str, Any], kept: dict[str, Any]) -> dict[str, Any] | None:
    """One image's values by the schema's fields (``connect_value``; values of a type kept as they are)."""
    image = env.images[member]
    if image is None:
        return None
    if not isinstance(image, dict):
        raise RecordError(f"{member} must be a JSON object of column values, not a JSON {json_kind(image)}")
    specs, plain = fields.get(member, {}), kept.get(member, {})
    return {
        col: value
        if value is None or type(value) in plain.get(col, ())
        else connect_value(col, member, specs.get(col), value)
        for col, value in image.items()
    }


# --- envelope members ---------------------------------------------------------------------------


def position(payload: dict[str, Any]) -> tuple[dt.datetime, dict[str, Any], str, str, str | None]:
    """(event_ts, transaction properties, seq, seq_from, tx_id) of a payload (RecordError: unreadable)."""
    event_ts = _timestamp(payload)
    properties = _transaction(payload.get("transaction"))
    lsn = _lsn(properties)
    if lsn is not None:
        seq, seq_from = str(lsn).zfill(SEQ_WIDTH), "lsn"
    else:
        millis = (event_ts - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(milliseconds=1)
        seq, seq_from = str(millis).zfill(SEQ_WIDTH), "TIMESTAMP"
    tx = _property(properties, "txid")
    return event_ts, properties, seq, seq_from, None if tx is None else str(tx)


def message_meta(
    payload: dict[str, Any], properties: dict[str, Any], unique: Any, seq_from: str, hints: dict[str, str]
) -> dict[str, Any]:
    """An event's ``meta``, its members in this order (their JSON text's)."""
    meta: dict[str, Any] = {"TIMESTAMP": payload.get("TIMESTAMP")}
    meta.update({k: payload[k] for k in _META_MEMBERS if payload.get(k) is not None})
    if properties:
        meta["transaction"] = properties
    if unique is not None:
        meta["unique"] = unique
    meta["seq_from"] = seq_from
    extra = {k: v for k, v in payload.items() if k not in _KNOWN_MEMBERS}
    if extra:
        meta["extra"] = extra
    if hints:
        meta["column_types"] = hints
    return meta


def _timestamp(payload: dict[str, Any]) -> dt.datetime:
    value = payload.get("TIMESTAMP")
    if isinstance(value, str) and integer(value) is None:
        try:
            parsed = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            return (parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)
        except (ValueError, OverflowError):  # OverflowError: the offset moves it past year 1 or 9999
            raise RecordError(f"TIMESTAMP {short(value)} is neither epoch milliseconds nor an ISO time") from None
    event_ts = epoch_millis(value, "TIMESTAMP")
    if event_ts is None:
        raise RecordError(f"TIMESTAMP {short(value)} is not the change time in epoch milliseconds")
    return event_ts


def _transaction(value: Any) -> dict[str, Any]:
    """``transaction.properties`` (a list of {name, value}) as a dict."""
    if value is None:
        return {}
    properties = value.get("properties") if isinstance(value, dict) else None
    if properties is None and isinstance(value, dict):
        return {}
    if not isinstance(properties, list):
        raise RecordError(f'transaction must be {{"properties": [{{name, value}}, ...]}}, not {short(value)}')
    result: dict[str, Any] = {}
    for item in properties:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise RecordError(f"transaction.properties holds {short(item)}, not a {{name, value}} object")
        result[item["name"]] = item.get("value")
    return result


def _property(properties: dict[str, Any], name: str) -> Any:
    return next((v for k, v in properties.items() if k.lower() == name), None)


def _lsn(properties: dict[str, Any]) -> int | None:
    value = _property(properties, "lsn")
    if value is None:
        return None
    number = integer(value)
    if number is None and isinstance(value, str):
        match = _PG_LSN.fullmatch(value.strip())
        if match:
            number = (int(match[1], 16) << 32) + int(match[2], 16)
    if number is None or number < 0 or len(str(number)) > SEQ_WIDTH:
        raise RecordError(f"transaction lsn {short(value)} is not an unsigned 64-bit log sequence number")
    return number


# --- Kafka Connect schema -------------------------------------------------------------------------


def _schema_fields(schema: Any) -> dict[str, dict[str, dict[str, Any]]]:
    """{"data"|"before": {column: field schema}} from the envelope's struct schema ({} without one)."""
    if schema is None:
        return {}
    fields = schema.get("fields") if isinstance(schema, dict) else None
    if not isinstance(fields, list):
        raise RecordError("schema is not a Kafka Connect struct schema (no fields list)")
    result: dict[str, dict[str, dict[str, Any]]] = {}
    for member in fields:
        if isinstance(member, dict) and member.get("field") in ("data", "before"):
            columns = member.get("fields")
            if not isinstance(columns, list):
                raise RecordError(f"schema of {member['field']} has no fields list")
            specs = {
                c["field"]: kc.field_schema(c)
                for c in columns
                if isinstance(c, dict) and isinstance(c.get("field"), str)
            }
            result[member["field"]] = specs
    return result


_Plan = tuple[dict[str, dict[str, dict[str, Any]]], dict[str, dict[str, tuple[type, ...]]], dict[str, str]]


def schema_plan(schema: Any) -> _Plan:
    """What decoding a record needs of its schema, worked out once per schema (a CDL message repeats
    it; :func:`~cdclake.formats.kafka_connect.memoized`): the field schemas of each image, the
    Python types each field keeps unchanged (:func:`kept_types`), the column type hints."""
    fields = _schema_fields(schema)
    kept = {m: {col: t for col, spec in specs.items() if (t := kept_types(spec))} for m, specs in fields.items()}
    hints: dict[str, str] = {}
    for member in ("before", "data"):
        for col, spec in fields.get(member, {}).items():
            hint = _hint(spec)
            if hint:
                hints.setdefault(col, hint)
    return fields, kept, hints


#: The field types :func:`connect_value` checks; it returns a value of any other type (no logical name) unchanged.
CHECKED_TYPES = _INT_TYPES | {"float32", "float64", "boolean", "string", "bytes"}


def kept_types(spec: dict[str, Any]) -> tuple[type, ...]:
    """Python types (exactly: a ``bool`` is not an ``int``) :func:`connect_value` returns unchanged for a
    field schema without a logical name; () when every value goes through it."""
    if spec.get("name") is not None:
        return ()
    return {"boolean": (bool,), "string": (str,), "float32": (int, Decimal), "float64": (int, Decimal)}.get(
        spec.get("type"), (int,) if spec.get("type") in _INT_TYPES else ()
    )


def _hint(spec: dict[str, Any]) -> str | None:
    """The column type a field schema states for certain (None: leave it to normalize)."""
    name = spec.get("name")
    if name == CONNECT + "Timestamp":
        return "timestamp"
    if name == CONNECT + "Date":
        return "date"
    if name == CONNECT + "Time":
        return "string"
    if name == CONNECT + "Decimal":
        params = spec.get("parameters") if isinstance(spec.get("parameters"), dict) else {}
        scale, precision = integer(params.get("scale")), integer(params.get("connect.decimal.precision"))
        if scale is not None and 0 <= scale <= 38:
            return f"decimal({precision if precision and scale <= precision <= 38 else 38},{scale})"
        return None
    if isinstance(name, str):
        return None  # another logical type (e.g. the vendor's string Decimal): its base type would mislead
    return _BASE_HINTS.get(spec.get("type"))  # type: ignore[arg-type]


def connect_value(column: str, image: str, spec: dict[str, Any] | None, value: Any) -> Any:
    """A column value decoded by its field schema (no schema or unknown type: unchanged)."""
    if value is None or spec is None:
        return value
    kind, name = spec.get("type"), spec.get("name")

    def wrong(what: str) -> RecordError:
        label = name or kind
        return RecordError(
            f"column {column!r} of {image} is {label} but holds {json_kind(value)} {short(value)}: {what}"
        )

    if name == CONNECT + "Timestamp" or name == CONNECT + "Date" or name == CONNECT + "Time":
        number = integer(value)
        if number is None:
            raise wrong("expected an integer")
        try:
            if name.endswith("Timestamp"):
                return millis_text(number)
            if name.endswith("Date"):
                return from_epoch(number, "days").date().isoformat()
            return from_epoch(number, "milliseconds").time().isoformat(timespec="microseconds")
        except RecordError as exc:
            raise wrong(str(exc)) from None
    if name == CONNECT + "Decimal":
        params = spec.get("parameters") if isinstance(spec.get("parameters"), dict) else {}
        scale = integer(params.get("scale"))
        if isinstance(value, str) and scale is not None:
            try:
                unscaled = int.from_bytes(base64.b64decode(value, validate=True), "big", signed=True)
            except (binascii.Error, ValueError) as exc:
                if not _NUMBER.fullmatch(value.strip()):
                    raise wrong(f"neither base64 of the unscaled value ({exc}) nor a decimal number") from None
            else:
                return Decimal(f"{unscaled}E{-scale}")  # exact (scaleb would round to 28 digits)
        return _decimal(value, wrong)
    if isinstance(name, str) and name.endswith(".cdc.data.Decimal"):
        return _decimal(value, wrong)
    if kind in _INT_TYPES:
        if isinstance(value, bool) or not isinstance(value, int):
            raise wrong("expected an integer")
        return value
    if kind in ("float32", "float64"):
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
            raise wrong("expected a number")
        return value
    if kind == "boolean":
        if not isinstance(value, bool):
            raise wrong("expected true or false")
        return value
    if kind == "string":
        if not isinstance(value, str):
            raise wrong("expected a string")
        return value
    if kind == "bytes":
        if not isinstance(value, str):
            raise wrong("expected base64 text")
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise wrong(f"not valid base64 ({exc})") from None
    return value


def _decimal(value: Any, wrong: Any) -> Decimal:
    if isinstance(value, bool):
        raise wrong("expected a decimal number")
    if isinstance(value, (int, Decimal)):
        return Decimal(value)
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        try:
            return Decimal(value.strip())
        except InvalidOperation:  # pragma: no cover - the pattern only lets numbers through
            pass
    raise wrong("expected a decimal number")


# --- the columnar path (the decode task's: formats.columnar.EnvelopeColumns over this module's rules) --------

#: The payload members the columnar path reads, in the order CDL writes them (any other: the reference reads).
_COLUMNAR_PAYLOAD: dict[str, object] = {
    "DATA_STORE": Any,
    "SEG_OWNER": Any,
    "TABLE_NAME": Any,
    "TIMESTAMP": Any,
    "OPERATION": Any,
    "LOB_COLUMNS": Any,
    "transaction": Any,
    "unique": Any,
    "data": dict[str, Raw] | None,
    "before": dict[str, Raw] | None,
    "message_version": Any,
    "message_type": Any,
    "HEARTBEAT_IDENTIFIER": Any,
}
_IMAGES = ("before", "data")
#: ``connect_value``'s integer dates and timestamps (``millis_text``; ``from_epoch`` in days): converted at once.
_EPOCH_NAMES = {CONNECT + "Timestamp": TS_MILLIS, CONNECT + "Date": DATE_DAYS}


class _ColumnPlan:
    """:func:`schema_plan` of one schema block, and how each image column's values are judged."""

    __slots__ = ("fields", "hints_text", "kinds")

    def __init__(self, schema: Any) -> None:
        self.fields, _, hints = kc.memoized("cdl-plan", schema_plan, schema)
        #: the last member of every meta of the schema's events, written once (``events.joined_text``)
        self.hints_text = meta_text({"column_types": dict(hints)} if hints else {})
        self.kinds = {
            image: {col: _kind(spec) for col, spec in self.fields.get(image, {}).items()} for image in _IMAGES
        }


def _kind(spec: dict[str, Any]) -> int:
    """A field's kind: an integer date or timestamp, the vendor's text decimal (``_decimal`` of any JSON type),
    any value kept for a type ``connect_value`` does not check (CDL's ``double``), else by the types the
    reference keeps (:func:`kept_types`)."""
    name = spec.get("name")
    if isinstance(name, str) and name.endswith(".cdc.data.Decimal") and name not in _EPOCH_NAMES:
        return TEXT_DECIMAL
    if name is None and spec.get("type") not in CHECKED_TYPES:
        return UNNAMED
    return _EPOCH_NAMES.get(name, kind_of_kept(kept_types(spec)))  # type: ignore[arg-type]


@register_columns("cdl-json")
class CdlJsonColumns(EnvelopeColumns):
    """CDL's usual records (one compact ``{"schema", "payload"}`` record per line, UTF-8, the payload members CDL
    writes in its order) a span at a time: every scalar and ``meta`` from :func:`envelope`, the image values by
    :func:`connect_value` where they are not kept as their text (docs/decisions 0044). Where it stops (the
    reference reads the span): anything :func:`envelope` or :func:`check_images` refuses, heartbeats, a delete
    keyed by ``unique`` alone or carrying a data image, a bare payload, a member CDL does not write, blanks."""

    reader = EnvelopeReader("Cdl", _COLUMNAR_PAYLOAD, images=dict.fromkeys(_IMAGES, Raw))
    image_members = _IMAGES

    def __init__(self, decoder: CdlJsonDecoder) -> None:
        super().__init__(decoder)
        #: one list object per distinct key list: the column converts each once (``columnar.repeated_values``)
        self.key_lists: dict[tuple[str, ...], list[str]] = {}

    def read_plan(self, schema: bytes) -> _ColumnPlan | None:
        try:
            return _ColumnPlan(SCHEMA_READER.decode(schema.decode("utf-8")))
        except (ValueError, RecursionError, RecordError):
            return None

    def row(self, payload: dict[str, Any], plan: _ColumnPlan) -> SpanRow | None:
        decoder: CdlJsonDecoder = self.decoder  # type: ignore[assignment]
        try:
            env = envelope(decoder, payload)
            check_images(env.op, *env.images.values())  # a delete keyed by ``unique`` alone: the reference's
        except RecordError:
            return None
        if env.op == "HEARTBEAT" or (env.op == "DELETE" and env.images["data"] is not None):
            return None  # the reference converts, then drops, the data image of a delete
        keys = decoder.keys
        if not keys and env.unique:
            names = tuple(env.unique)
            keys = self.key_lists.get(names) or self.key_lists.setdefault(names, list(names))
        meta = joined_text(meta_text(env.meta), plan.hints_text)
        before, after = env.images["before"], env.images["data"]
        return SpanRow(
            env.table, env.op, env.seq, env.event_ts, env.tx_id, None, keys or None, before, after, plan, meta
        )

    def kinds(self, plan: _ColumnPlan, image: str) -> dict[str, int]:
        return plan.kinds[image]

    def converter(self, image: str, plans: list[_ColumnPlan]) -> Callable[[int, str, str, bool], Any]:
        return reference_converter(
            lambda owner, column, value: connect_value(
                column, image, plans[owner].fields.get(image, {}).get(column), value
            )
        )
