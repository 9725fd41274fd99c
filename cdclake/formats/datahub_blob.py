"""Alibaba DataHub BLOB JSON messages (format id ``datahub-blob``; alibaba-datahub-tuple-blob.txt).

Why it is written this way:

- A landing file holds the messages one per line (any JSON framing is read, see
  :func:`~cdclake.formats._datahub.scan_json`); licence headers and junk lines become
  rejected records and the rest still decodes.
- ``schema.dataColumn`` declares each column's StreamX type, and values are decoded by it:
  ``DOUBLE`` arrives as a string (``"1.100000"``, real data) and becomes an exact
  ``Decimal``; ``DATE`` is epoch milliseconds and becomes a UTC timestamp text (column type
  ``timestamp``: it is an instant, not a calendar date); ``BYTES`` is base64 and becomes
  bytes. A value that does not fit its declared type rejects the record (with the column).
  The types also go to ``meta["column_types"]`` so normalize need not guess.
- ``table`` is ``schemaName.tableName`` when the source has a schema, else
  ``dbName.tableName`` (DESIGN §3). Messages that name no table (heartbeats, transaction
  markers, database-level DDL) get :data:`NO_TABLE`, because an event needs a table name.
- An update arrives as ``UPDATE_BEFOR`` (also spelled ``UPDATE_BEFORE``) + ``UPDATE_AFTER``
  sharing ``sequenceId``: the halves become one ``UPDATE`` (either order, not necessarily
  adjacent; a half alone at the end of the file is rejected). An ``UPDATE_AFTER`` or
  ``UPDATE`` that carries both images is a whole update by itself (Apache Paimon's sample).
- Full-load rows have ``sequenceId`` ``-1`` (and ``eventTime`` -1): they are ``UPSERT`` with
  ``seq`` ``-1``, which sorts before every change, and no ``event_ts``.
- ``ddl.ddlMeta`` is a Java-serialized FastSQL object in base64. It is kept as opaque text
  in ``meta`` and never decoded, let alone deserialized (deserializing untrusted Java
  objects executes code); the DDL statement is ``ddl.text``.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from cdclake.events.change import ChangeEvent, Rejected
from cdclake.formats import _kafka_connect as kc
from cdclake.formats._datahub import (
    Half,
    JsonRecord,
    RecordError,
    UpdatePairs,
    datahub_seq,
    epoch_millis,
    integer,
    json_kind,
    millis_text,
    scan_json,
    short,
)
from cdclake.registry import Decoder, register

if TYPE_CHECKING:
    from cdclake.options import Options

#: ``table`` of messages that name no table (heartbeats, transaction markers, database DDL).
NO_TABLE = "_datahub"

#: StreamX column types -> cdclake column types (``meta["column_types"]``).
COLUMN_TYPES = {
    "BOOLEAN": "boolean",
    "DOUBLE": "double",
    "DATE": "timestamp",
    "BYTES": "binary",
    "LONG": "bigint",
    "STRING": "string",
}
_DDL_OPS = frozenset({"CREATE", "ALTER", "RENAME", "CINDEX", "DINDEX", "QUERY", "ERASE"})
#: Non-row messages: vendor op -> event op.
_MARKERS = {
    "TRANSACTION_BEGIN": "TX_BEGIN",
    "TRANSACTION_END": "TX_END",
    "XACOMMIT": "TX_END",
    "MHEARTBEAT": "HEARTBEAT",
    "GTID": "HEARTBEAT",  # a stream position without rows
}
BEFORE_HALVES = frozenset({"UPDATE_BEFOR", "UPDATE_BEFORE"})
_ROW_OPS = frozenset({"INSERT", "UPDATE", "UPDATE_AFTER", "DELETE", "TRUNCATE"}) | BEFORE_HALVES
_ALL_OPS = sorted(_ROW_OPS | _DDL_OPS | set(_MARKERS))
_PAYLOAD_MEMBERS = frozenset({"op", "before", "after", "sequenceId", "timestamp", "ddl"})
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_JAVA_SPECIALS = {"NaN": Decimal("NaN"), "Infinity": Decimal("Infinity"), "-Infinity": Decimal("-Infinity")}


@register("datahub-blob")
class DataHubBlobDecoder(Decoder):
    """Decoder of DataHub BLOB JSON messages (see the module docstring). Options: ``keys``, ``table``."""

    option_names = frozenset()

    def __init__(self, options: Options) -> None:
        super().__init__(options)

    def decode(self, data: bytes, file: str) -> Iterator[ChangeEvent | Rejected]:
        """Events and rejected records of one landing file, in file order (a paired update when it completes)."""
        return UpdatePairs().join(self._messages(data, file))

    def _messages(self, data: bytes, file: str) -> Iterator[ChangeEvent | Half | Rejected]:
        for item in scan_json(data, file):
            if isinstance(item, Rejected):
                yield item
                continue
            try:
                result: ChangeEvent | Half | Rejected = self._message(item)
            except RecordError as exc:
                result = item.reject(str(exc))
            yield result

    # --- one message --------------------------------------------------------------------

    def _message(self, record: JsonRecord) -> ChangeEvent | Half:
        message = record.value
        if not isinstance(message, dict):
            raise RecordError(f"record is a JSON {json_kind(message)}, not an object")
        schema = member_object(message.get("schema"), "schema") or {}
        payload = member_object(message.get("payload"), "payload")
        if payload is None:
            raise RecordError('record has no "payload" object')
        op = payload.get("op")
        if not isinstance(op, str) or op not in _ALL_OPS:
            if op == "XAROLLBACK":
                raise RecordError(
                    "XAROLLBACK: the changes of a rolled-back XA transaction may already have been applied and "
                    "cdclake cannot undo them; check the affected tables against the source"
                )
            raise RecordError(f"unknown op {short(op)}; DataHub BLOB ops are {', '.join(_ALL_OPS)} (case-sensitive)")

        source = member_object(schema.get("source"), "schema.source")
        table = self.table_override or table_name(source)
        keys = self.keys or primary_key(schema.get("primaryKey"))
        types, kept, hints = kc.memoized("blob-plan", schema_plan, schema)
        timestamp = member_object(payload.get("timestamp"), "payload.timestamp")
        event_ts = epoch_millis(timestamp.get("eventTime"), "timestamp.eventTime") if timestamp else None
        sequence = payload.get("sequenceId")
        seq, snapshot = datahub_seq(sequence, "sequenceId") if sequence is not None else (None, False)

        meta: dict[str, Any] = {"op": op}
        if sequence is not None:
            meta["sequenceId"] = sequence
        if timestamp is not None:
            meta["timestamp"] = timestamp
        if source is not None:
            meta["source"] = source
        if message.get("version") is not None:
            meta["version"] = message["version"]
        extra = {k: v for k, v in payload.items() if k not in _PAYLOAD_MEMBERS}
        extra.update({k: v for k, v in message.items() if k not in ("schema", "payload", "version")})
        if extra:
            meta["extra"] = extra
        if hints:
            meta["column_types"] = dict(hints)

        def event(event_op: str, **fields: Any) -> ChangeEvent:
            return ChangeEvent(
                table=table or NO_TABLE,
                op=event_op,
                seq=seq,
                event_ts=event_ts,
                source=record.source,
                keys=keys,
                meta=meta,
                **fields,
            )

        if op in _MARKERS:
            return event(_MARKERS[op])
        if op in _DDL_OPS:
            ddl = member_object(payload.get("ddl"), "payload.ddl") or {}
            text = ddl.get("text")
            if not isinstance(text, str) or not text.strip():
                raise RecordError(f"{op} message has no DDL statement (payload.ddl.text is {short(text)})")
            if "ddlMeta" in ddl:
                meta["ddlMeta"] = ddl["ddlMeta"]  # opaque base64 of a Java-serialized object: never decoded
            return event("DDL", ddl={"text": text})

        # row operations
        if table is None:
            raise RecordError(f"{op} message names no table (schema.source has no tableName); set --option table=NAME")
        if seq is None:
            raise RecordError(f"{op} message has no sequenceId: DataHub rows need it for ordering")
        if op == "TRUNCATE":
            return event("TRUNCATE")
        before = _image(payload, "before", types, kept)
        after = _image(payload, "after", types, kept)
        if op == "INSERT":
            if after is None:
                raise RecordError("INSERT message has no after image (payload.after.dataColumn)")
            return event("UPSERT" if snapshot else "INSERT", after=after)
        if op == "DELETE":
            if before is None:
                raise RecordError("DELETE message has no before image (payload.before.dataColumn)")
            return event("DELETE", before=before)
        if op == "UPDATE" or (before is not None and after is not None):
            if after is None:
                raise RecordError("UPDATE message has no after image (payload.after.dataColumn)")
            return event("UPDATE", before=before, after=after)
        # one half of a split update
        side = "before" if op in BEFORE_HALVES else "after"
        image = before if side == "before" else after
        if image is None:
            raise RecordError(f"{op} message has no {side} image (payload.{side}.dataColumn)")
        if snapshot:
            raise RecordError(f"{op} message has sequenceId -1: a half of an update cannot be paired without it")
        half_event = event("UPDATE", **{side: image})
        assert seq is not None
        return Half(side, (table, seq), half_event, op, "sequenceId", str(sequence), record.raw())


# --- pieces ---------------------------------------------------------------------------------


def member_object(value: Any, name: str) -> dict[str, Any] | None:
    if value is None or isinstance(value, dict):
        return value
    raise RecordError(f"{name} must be a JSON object, not a JSON {json_kind(value)}")


def table_name(source: dict[str, Any] | None) -> str | None:
    """``schemaName.tableName``, else ``dbName.tableName``, else ``tableName`` (None: no table)."""
    if not source:
        return None
    table = source.get("tableName")
    if not isinstance(table, str) or not table:
        return None
    for owner in (source.get("schemaName"), source.get("dbName")):
        if isinstance(owner, str) and owner:
            return f"{owner}.{table}"
    return table


def primary_key(value: Any) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
        raise RecordError(f"schema.primaryKey must be a list of column names, not {short(value)}")
    return list(value) or None


def _column_types(value: Any) -> dict[str, str]:
    """``schema.dataColumn`` -> {column: StreamX type}."""
    if value is None:
        return {}
    if not isinstance(value, list):
        raise RecordError(f"schema.dataColumn must be a list of {{name, type}} objects, not a JSON {json_kind(value)}")
    types: dict[str, str] = {}
    for index, column in enumerate(value):
        name = column.get("name") if isinstance(column, dict) else None
        kind = column.get("type") if isinstance(column, dict) else None
        if not isinstance(name, str) or not isinstance(kind, str):
            raise RecordError(f"schema.dataColumn[{index}] is not a {{name, type}} object of strings: {short(column)}")
        types[name] = kind
    return types


#: StreamX types whose values of these exact Python types :func:`blob_value` returns unchanged.
_KEPT_TYPES: dict[str, tuple[type, ...]] = {"STRING": (str,), "LONG": (int,), "BOOLEAN": (bool,), "DOUBLE": (Decimal,)}


def schema_plan(schema: dict[str, Any]) -> tuple[dict[str, str], dict[str, tuple[type, ...]], dict[str, str]]:
    """The declared types of a schema's columns, the Python types each keeps unchanged and the
    column type hints: worked out once per schema, which every message repeats
    (:func:`~cdclake.formats._kafka_connect.memoized`)."""
    types = _column_types(schema.get("dataColumn"))
    kept = {name: _KEPT_TYPES[t] for name, t in types.items() if t in _KEPT_TYPES}
    return types, kept, {name: COLUMN_TYPES[t] for name, t in types.items() if t in COLUMN_TYPES}


def _image(
    payload: dict[str, Any], name: str, types: dict[str, str], kept: dict[str, tuple[type, ...]]
) -> dict[str, Any] | None:
    """``payload.<name>.dataColumn`` with values decoded by their declared types (None: no image)."""
    holder = member_object(payload.get(name), f"payload.{name}")
    if not holder:
        return None
    columns = holder.get("dataColumn")
    if columns is None:
        return None
    if not isinstance(columns, dict):
        raise RecordError(f"payload.{name}.dataColumn must be a JSON object of column values, not {json_kind(columns)}")
    return {
        column: value
        if value is None or type(value) in kept.get(column, ())
        else blob_value(column, types.get(column), value, name)
        for column, value in columns.items()
    }


def blob_value(column: str, kind: str | None, value: Any, image: str) -> Any:
    """A column value decoded by its StreamX type (unknown or undeclared types: unchanged)."""
    if value is None or kind not in COLUMN_TYPES:
        return value

    def wrong(what: str) -> RecordError:
        return RecordError(
            f"column {column!r} of the {image} image is declared {kind} but holds {json_kind(value)} "
            f"{short(value)}: {what}"
        )

    if kind == "STRING":
        if not isinstance(value, str):
            raise wrong("expected a string")
        return value
    if kind == "LONG":
        number = integer(value)
        if number is None:
            raise wrong("expected an integer")
        return number
    if kind == "DOUBLE":
        if isinstance(value, bool):
            raise wrong("expected a number")
        if isinstance(value, (int, Decimal)):
            return Decimal(value)
        if isinstance(value, str):
            text = value.strip()
            if text in _JAVA_SPECIALS:
                return _JAVA_SPECIALS[text]
            if _NUMBER.fullmatch(text):
                try:
                    return Decimal(text)
                except InvalidOperation:  # pragma: no cover - the pattern only lets numbers through
                    pass
        raise wrong("expected a number or a string holding one")
    if kind == "BOOLEAN":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise wrong("expected true or false")
    if kind == "DATE":
        millis = integer(value)
        if millis is None:
            raise wrong("expected epoch milliseconds (a 13-digit integer)")
        try:
            return millis_text(millis)
        except RecordError as exc:
            raise wrong(str(exc)) from None
    # BYTES
    if not isinstance(value, str):
        raise wrong("expected base64 text")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise wrong(f"not valid base64 ({exc})") from None
