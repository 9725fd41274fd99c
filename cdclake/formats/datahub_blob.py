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
- The decode task's columnar path (:class:`DataHubBlobColumns`, docs/decisions 0045) runs this module's envelope
  rules over Arrow (``formats.columnar.EnvelopeColumns``); update halves are joined where the second is read, a
  span read only up to where no pair is split.
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

import numpy as np
from msgspec import UNSET, Raw

from cdclake.events.change import ChangeEvent, Rejected, joined_text, meta_text
from cdclake.formats import kafka_connect as kc
from cdclake.formats._datahub import (
    Half,
    JsonRecord,
    RecordError,
    UpdatePairs,
    datahub_seq,
    epoch_millis,
    from_epoch,
    integer,
    json_kind,
    millis_text,
    pair_meta,
    scan_json,
    short,
)
from cdclake.formats.columnar import (
    BOOL,
    CONVERT,
    INT,
    SCHEMA_READER,
    STR,
    TEXT_DECIMAL,
    TS_MILLIS,
    UNNAMED,
    EnvelopeColumns,
    EnvelopeReader,
    SpanRow,
    Unsplit,
    image_or_none,
    reference_converter,
)
from cdclake.registry import Decoder, register, register_columns

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
ROW_OPS = frozenset({"INSERT", "UPDATE", "UPDATE_AFTER", "DELETE", "TRUNCATE"}) | BEFORE_HALVES
_ALL_OPS = sorted(ROW_OPS | _DDL_OPS | set(_MARKERS))
_OPS = frozenset(_ALL_OPS)
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
        message, schema, payload = _parts(record.value)
        op = operation(payload.get("op"))  # before the schema block: its reason comes first
        block = schema_block(self, schema)
        env = envelope(op, block, payload.get("timestamp"), payload.get("sequenceId"))
        env.meta.update(meta_tail(block, message.get("version"), _extra(message, payload)))
        if op in _MARKERS:
            return _event(record, env, _MARKERS[op])
        if op in _DDL_OPS:
            ddl = member_object(payload.get("ddl"), "payload.ddl") or {}
            text = ddl.get("text")
            if not isinstance(text, str) or not text.strip():
                raise RecordError(f"{op} message has no DDL statement (payload.ddl.text is {short(text)})")
            if "ddlMeta" in ddl:
                env.meta["ddlMeta"] = ddl["ddlMeta"]  # opaque base64 of a Java-serialized object: never decoded
            return _event(record, env, "DDL", ddl={"text": text})
        if op == "TRUNCATE":
            return _event(record, env, "TRUNCATE")
        before = _image(payload, "before", block.types, block.kept)
        after = _image(payload, "after", block.types, block.kept)
        event_op, side = row_op(env, before, after)
        if op == "INSERT":
            before = None  # converted above (a value its type refuses rejects the message), then dropped
        elif op == "DELETE":
            after = None
        event = _event(record, env, event_op, before=before, after=after)  # a half's other image: None (row_op)
        if side is None:
            return event
        assert block.table is not None and env.seq is not None  # envelope: a row message has both
        return Half(side, (block.table, env.seq), event, op, "sequenceId", str(env.sequence), record.raw())


def _parts(message: Any) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(message, schema block, payload) of a record (RecordError: not a message)."""
    if not isinstance(message, dict):
        raise RecordError(f"record is a JSON {json_kind(message)}, not an object")
    schema = schema_object(message.get("schema"))
    payload = member_object(message.get("payload"), "payload")
    if payload is None:
        raise RecordError('record has no "payload" object')
    return message, schema, payload


def _extra(message: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    """The members of a message and its payload that DataHub does not write (``meta["extra"]``)."""
    extra = {k: v for k, v in payload.items() if k not in _PAYLOAD_MEMBERS}
    extra.update({k: v for k, v in message.items() if k not in ("schema", "payload", "version")})
    return extra


def _event(record: JsonRecord, env: Envelope, op: str, **fields: Any) -> ChangeEvent:
    """The event ``op`` of a message's envelope (``fields``: its images or DDL)."""
    return ChangeEvent(
        table=env.block.table or NO_TABLE,
        op=op,
        seq=env.seq,
        event_ts=env.event_ts,
        source=record.source,
        keys=env.block.keys,
        meta=env.meta,
        **fields,
    )


# --- the envelope: the format's rules, read by the reference and the columnar path alike ------------


def operation(op: Any) -> str:
    """A message's ``payload.op``, one of the format's (RecordError: any other, XAROLLBACK with why)."""
    if not isinstance(op, str) or op not in _OPS:
        if op == "XAROLLBACK":
            raise RecordError(
                "XAROLLBACK: the changes of a rolled-back XA transaction may already have been applied and "
                "cdclake cannot undo them; check the affected tables against the source"
            )
        raise RecordError(f"unknown op {short(op)}; DataHub BLOB ops are {', '.join(_ALL_OPS)} (case-sensitive)")
    return op


def schema_object(value: Any) -> dict[str, Any]:
    """A message's ``schema`` member: an object, or none (``{}``). RecordError: anything else."""
    return member_object(value, "schema") or {}


@dataclass(slots=True)
class Block:
    """What a schema block says (:func:`schema_block`): the same for every message that repeats it."""

    source: dict[str, Any] | None
    #: ``schemaName.tableName`` (or ``dbName.``), the ``table`` option's name; None: none
    table: str | None
    keys: list[str] | None
    #: :func:`schema_plan`: each column's StreamX type, the Python types kept as they are, the column types
    types: dict[str, str]
    kept: dict[str, tuple[type, ...]]
    hints: dict[str, str]


def schema_block(decoder: DataHubBlobDecoder, schema: dict[str, Any]) -> Block:
    """A schema block's source, table (:func:`table_name`), keys (``primaryKey``) and column plan, for both the
    reference and the columnar path (which works it out once per block). RecordError: a block these rules refuse."""
    source = member_object(schema.get("source"), "schema.source")
    table = decoder.table_override or table_name(source)
    keys = decoder.keys or primary_key(schema.get("primaryKey"))
    types, kept, hints = kc.memoized("blob-plan", schema_plan, schema)
    return Block(source, table, keys, types, kept, hints)


#: Epoch milliseconds an aware ``datetime`` holds (the years 1-9999): kept as the integer (:attr:`Envelope.event_time`).
_MILLIS_RANGE = range(0, 253_402_300_800_000)


@dataclass(slots=True)
class Envelope:
    """What a message says apart from its images and its schema block's members (:func:`envelope`)."""

    op: str
    block: Block
    #: ``sequenceId`` as the message gives it (None: none)
    sequence: Any
    #: the sequence id as :func:`~._datahub.datahub_seq` reads it (None: none)
    seq: str | None
    #: a full-load row (``sequenceId`` -1)
    snapshot: bool
    #: ``timestamp.eventTime``: epoch milliseconds as the integer where it is one in range (the columnar path
    #: converts a column at once), else :func:`~._datahub.epoch_millis`' datetime (None: none)
    event_time: dt.datetime | int | None
    #: ``meta``'s first members, the message's own (``op``, ``sequenceId``, ``timestamp``): :func:`meta_tail` the rest
    meta: dict[str, Any]

    @property
    def event_ts(self) -> dt.datetime | None:
        time = self.event_time
        return from_epoch(time, "milliseconds") if type(time) is int else time


def envelope(op: Any, block: Block, timestamp: Any, sequence: Any) -> Envelope:
    """The format's envelope rules, for both the reference and the columnar path: a message's op
    (:func:`operation`: the reference checks it before it reads the schema block, whose reasons come second),
    schema block, ``payload.timestamp`` and ``payload.sequenceId``, with its event time, ``seq`` and ``meta``'s
    own members; a row message (or truncate) needs a table and a sequence id. RecordError: a message these
    rules refuse."""
    if type(op) is not str or op not in _OPS:  # as operation, without its call where the op is one: a hot path
        op = operation(op)
    if timestamp is not None and type(timestamp) is not dict:  # as member_object, without its call: a hot path
        timestamp = member_object(timestamp, "payload.timestamp")
    millis = timestamp.get("eventTime") if timestamp else None
    if type(millis) is not int or millis not in _MILLIS_RANGE:
        millis = epoch_millis(millis, "timestamp.eventTime")
    seq, snapshot = datahub_seq(sequence, "sequenceId") if sequence is not None else (None, False)
    if op in ROW_OPS:
        if block.table is None:
            raise RecordError(f"{op} message names no table (schema.source has no tableName); set --option table=NAME")
        if seq is None:
            raise RecordError(f"{op} message has no sequenceId: DataHub rows need it for ordering")
    meta: dict[str, Any] = {"op": op}
    if sequence is not None:
        meta["sequenceId"] = sequence
    if timestamp is not None:
        meta["timestamp"] = timestamp
    return Envelope(op, block, sequence, seq, snapshot, millis, meta)


def meta_tail(block: Block, version: Any, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The members of a message's ``meta`` after its own (:attr:`Envelope.meta`), in order: its schema block's
    ``source``, the message's ``version``, the members DataHub does not write (``extra``), the column types."""
    tail: dict[str, Any] = {}
    if block.source is not None:
        tail["source"] = block.source
    if version is not None:
        tail["version"] = version
    if extra:
        tail["extra"] = extra
    if block.hints:
        tail["column_types"] = dict(block.hints)
    return tail


def row_op(env: Envelope, before: Any, after: Any) -> tuple[str, str | None]:
    """Which images a row message needs, and the event it makes: (event op, the side of the update it is a half
    of; None: a whole event). ``INSERT`` (``UPSERT`` for a full-load row) needs an after image, ``DELETE`` a
    before image, ``UPDATE`` (or a half holding both images) an after image; a half its own side's image and a
    sequence id other than -1 (its partner is found by it). RecordError: a message these rules refuse."""
    op = env.op
    if op == "INSERT":
        if after is None:
            raise RecordError("INSERT message has no after image (payload.after.dataColumn)")
        return "UPSERT" if env.snapshot else "INSERT", None
    if op == "DELETE":
        if before is None:
            raise RecordError("DELETE message has no before image (payload.before.dataColumn)")
        return "DELETE", None
    if op == "UPDATE" or (before is not None and after is not None):
        if after is None:
            raise RecordError("UPDATE message has no after image (payload.after.dataColumn)")
        return "UPDATE", None
    side = "before" if op in BEFORE_HALVES else "after"
    if (before if side == "before" else after) is None:
        raise RecordError(f"{op} message has no {side} image (payload.{side}.dataColumn)")
    if env.snapshot:
        raise RecordError(f"{op} message has sequenceId -1: a half of an update cannot be paired without it")
    return "UPDATE", side


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
    (:func:`~cdclake.formats.kafka_connect.memoized`)."""
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


# --- the columnar path (the decode task's: formats.columnar.EnvelopeColumns over this module's rules) --------

_HOLDER = dict[str, dict[str, Raw] | None] | None
#: An image holder with its ``dataColumn`` object read as ``Raw`` text, to split in C (``columnar.image_array``).
_SPLIT = dict[str, Raw] | None
#: The payload members the columnar path reads, in the order DataHub writes them (any other: the reference reads).
_COLUMNAR_PAYLOAD: dict[str, object] = {"op": Any, "before": _HOLDER, "after": _HOLDER}
_COLUMNAR_PAYLOAD |= {"sequenceId": Any, "timestamp": Any, "ddl": Any}  # a row's ``ddl``: not read
#: How each StreamX type's values are judged (:func:`blob_value`: kept, converted at once, or one at a time).
_KINDS = {"STRING": STR, "LONG": INT, "BOOLEAN": BOOL, "DOUBLE": TEXT_DECIMAL, "DATE": TS_MILLIS, "BYTES": CONVERT}
#: The ops the columnar path reads (markers, DDL and truncates: the reference's).
_READ_OPS = ROW_OPS - {"TRUNCATE"}
_TAILS = 256
#: The members of a message's ``meta`` that are its own; the rest (``_ColumnPlan.tail``) its block's and version's.
_OWN_MEMBERS = ("op", "sequenceId", "timestamp")


class _ColumnPlan:
    """A schema block (:func:`schema_block`) worked out once for every message repeating it, with how the columnar
    path judges each column's values and its messages' ``meta`` tails."""

    __slots__ = ("_tails", "block", "kinds")

    def __init__(self, block: Block) -> None:
        self.block = block
        self.kinds = {column: _KINDS.get(kind, UNNAMED) for column, kind in block.types.items()}
        self._tails: dict[Any, str] = {}

    def tail(self, version: Any) -> dict[str, Any]:
        """:func:`meta_tail` (no ``extra``: the path reads no member DataHub does not write)."""
        return meta_tail(self.block, version)

    def tail_text(self, version: Any) -> str:
        """:meth:`tail`'s JSON text, written once per plan and version (the column types are most of a meta)."""
        if type(version) is not str and version is not None:
            return meta_text(self.tail(version))
        text = self._tails.get(version)
        if text is None:
            if len(self._tails) >= _TAILS:
                self._tails.clear()
            text = self._tails[version] = meta_text(self.tail(version))
        return text


@dataclass(slots=True)
class _Half(SpanRow):
    """A half of an update (``side``); ``meta``: its message's own members (:data:`_OWN_MEMBERS`), the join writes
    the rest from its plan and ``version``."""

    side: str
    vendor_op: str
    version: Any


@register_columns("datahub-blob")
class DataHubBlobColumns(EnvelopeColumns):
    """DataHub BLOB's messages (one compact ``{"schema", "payload", "version"}`` message per line, UTF-8, DataHub's
    members in its order or sorted by name) a span at a time: every scalar and ``meta`` from :func:`envelope`,
    :func:`meta_tail` and :func:`row_op`, the image values by :func:`blob_value` where they are not kept as their
    text (docs/decisions 0045). Update halves sharing a sequence id are joined where the second one is read, the
    span read up to the first record a pair would cut (:meth:`joined`). Where it stops (the reference reads the
    span): anything the rules refuse, markers, DDL and truncates, an insert with a before image or a delete with
    an after image, two halves of one side, a bare payload, a member DataHub does not write, blanks."""

    reader = EnvelopeReader("Blob", _COLUMNAR_PAYLOAD, {"version": Any}, dict.fromkeys(("before", "after"), _SPLIT))

    def read_plan(self, schema: bytes) -> _ColumnPlan | None:
        try:
            block = schema_block(self.decoder, schema_object(SCHEMA_READER.decode(schema.decode("utf-8"))))
        except (ValueError, RecursionError, RecordError):
            return None
        return _ColumnPlan(block)

    def record_row(self, record: Any, plan: _ColumnPlan) -> SpanRow | None:
        p = record.payload
        timestamp = None if p.timestamp is UNSET else p.timestamp
        sequence = None if p.sequenceId is UNSET else p.sequenceId
        try:
            env = envelope(p.op, plan.block, timestamp, sequence)
            if env.op not in _READ_OPS:
                return None
            before = _data_column(b) if (b := p.before) else None  # no holder (UNSET, null, empty): no image
            after = _data_column(a) if (a := p.after) else None
            op, side = row_op(env, before, after)
        except RecordError:
            return None
        block, at = plan.block, env.event_time
        event_ts = at * 1_000 if type(at) is int else at  # epoch milliseconds: microseconds, converted at once
        version = None if record.version is UNSET else record.version
        if side is None:
            if (env.op == "INSERT" and before is not None) or (env.op == "DELETE" and after is not None):
                return None  # the reference converts, then drops, the image
            meta = joined_text(meta_text(env.meta), plan.tail_text(version))
            return SpanRow(block.table, op, env.seq, event_ts, None, None, block.keys, before, after, plan, meta)
        row = (block.table, op, env.seq, event_ts, None, None, block.keys, before, after, plan, env.meta)
        return _Half(*row, side, env.op, version)

    def joined(self, rows: list[SpanRow], starts: np.ndarray) -> tuple[list[SpanRow], list[int], int] | None:
        """Each update's halves joined where the second is read (``UpdatePairs.add``), at the first one's offset;
        read up to the first record a pair would cut (:func:`_cut`); None: two halves of one side."""
        offsets = starts.tolist()
        events: list[SpanRow | None] = list(rows)
        pending: dict[tuple[str, str], int] = {}
        pairs: list[tuple[int, int]] = []
        for index, row in enumerate(rows):
            if type(row) is not _Half:
                continue
            other = pending.pop(key := (row.table, row.seq), None)
            if other is None:
                pending[key] = index
                continue
            first = rows[other]
            if first.side == row.side:
                return None  # the reference rejects the second one
            events[index], events[other] = _joined(first, row, offsets[other], offsets[index]), None
            offsets[index] = offsets[other]
            pairs.append((other, index))
        read_to = _cut(len(rows), pending.values(), pairs)
        if read_to == 0:
            return None
        kept = [index for index in range(read_to) if events[index] is not None]
        return [events[index] for index in kept], [offsets[index] for index in kept], read_to

    def kinds(self, plan: Any, image: str) -> dict[str, int]:
        return plan.kinds if type(plan) is _ColumnPlan else _image_plan(plan, image).kinds  # a call less per event

    def converter(self, image: str, plans: list[Any]) -> Callable[[int, str, str, bool], Any]:
        return reference_converter(
            lambda owner, column, value: blob_value(
                column, _image_plan(plans[owner], image).block.types.get(column), value, image
            )
        )

    def metas(self, rows: list[SpanRow], unavailable: list[list[str]]) -> list[str]:
        return [meta if type(meta := row.meta) is str else meta_text(meta) for row in rows]


def _data_column(holder: dict[str, Any]) -> Any:
    """``payload.<image>.dataColumn`` of a holder (None: no image), as the reference's ``_image`` finds it. Read
    ``split`` (its members ``Raw`` texts), a holder with a member beside ``dataColumn`` is left to the dict reader
    (:class:`~.columnar.Unsplit`), which checks that it is an object or null written as the writer writes it."""
    if len(holder) == 1 and "dataColumn" in holder:
        return image_or_none(holder["dataColumn"])
    if type(next(iter(holder.values()))) is Raw:
        raise Unsplit
    return holder.get("dataColumn")


def _image_plan(plan: Any, image: str) -> _ColumnPlan:
    """The plan of an event's ``image``: its own, or (an update joined from halves of two schema blocks) its
    half's (a ``(before, after)`` pair)."""
    return plan if type(plan) is _ColumnPlan else plan[image == "after"]


def _cut(records: int, unpaired: Any, pairs: list[tuple[int, int]]) -> int:
    """The most records a span can give (from its first) with no update split: none past a half whose partner
    is not in the span, none that splits a pair."""
    cut = min(unpaired, default=records)
    if cut == records or not pairs:
        return cut
    firsts, seconds = np.array(pairs).T
    while True:
        split = (firsts < cut) & (seconds >= cut)
        if not split.any():
            return cut
        cut = int(firsts[split].min())


def _joined(first: _Half, second: _Half, first_at: int, second_at: int) -> SpanRow:
    """The reference's ``UPDATE`` of two halves (``UpdatePairs.add``; ``*_at``: their offsets)."""
    if first.side == "before":
        (before, b_at), (after, a_at) = (first, first_at), (second, second_at)
    else:
        (before, b_at), (after, a_at) = (second, second_at), (first, first_at)
    b_half, a_half = (before.vendor_op, b_at, before.meta), (after.vendor_op, a_at, after.meta)
    plan, version = before.plan, before.version
    if plan is after.plan and version == after.version and type(version) in (str, type(None)):
        meta: dict[str, Any] | str = _pair_text(b_half, a_half, plan.tail_text(version))
    else:  # each half's whole meta, as the reference's halves hold it
        b_half = (*b_half[:2], {**before.meta, **before.plan.tail(before.version)})
        a_half = (*a_half[:2], {**after.meta, **after.plan.tail(after.version)})
        meta = pair_meta(b_half, a_half)
    event_ts = after.event_ts if after.event_ts is not None else before.event_ts
    plans = plan if plan is after.plan else (plan, after.plan)
    keys = after.keys or before.keys
    return SpanRow(
        after.table, "UPDATE", after.seq, event_ts, None, None, keys, before.before, after.after, plans, meta
    )


def _pair_text(before: tuple[str, int, dict[str, Any]], after: tuple[str, int, dict[str, Any]], tail: str) -> str:
    """``meta_text(pair_meta(before, after))`` of two halves of one schema block and version (``tail``: the text of
    the members those give, ``_ColumnPlan.tail_text``): the same members in the same order, the shared ones (most
    of the text: the column types) written once per plan rather than once per update."""
    b_meta, a_meta = before[2], after[2]
    shared = {k: v for k in _OWN_MEMBERS if k in a_meta and k in b_meta and b_meta[k] == (v := a_meta[k])}
    pair = {
        name: {
            "op": op,
            "offset": offset,
            **{k: half_meta[k] for k in _OWN_MEMBERS if k in half_meta and k not in shared and k != "op"},
        }
        for name, (op, offset, half_meta) in (("before", before), ("after", after))
    }
    return joined_text(joined_text(meta_text(shared), tail), meta_text({"pair": pair}))
