"""Landing files for every format id, written from one :class:`~cdclake.bench.model.Stream`.

Each writer produces its vendor's real encoding (the shapes of ``tests/fixtures`` and
``docs/formats``), and says how the decoder must be configured. Where a format cannot carry
a partial update, the writer does what its source does instead, so every format still ends
in the same table:

- GoldenGate JSON / XML / Avro operation, CDL JSON, Qlik (``columnMask``): key and changed
  columns only (the source logged no more);
- GoldenGate delimited (row formatter): the after image with the other columns "missing";
- GoldenGate Avro row: no "missing" in Avro, so the whole row (full supplemental logging,
  as the vendor recommends for it); key changes as delete + insert (``pkUpdateHandling``);
- Debezium (Oracle connector): whole rows, with the unavailable-value placeholder for
  unchanged LOB columns;
- DataHub BLOB and TUPLE: whole rows, updates as before/after halves.
"""

from __future__ import annotations

import base64
import csv
import io
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import fastavro
import orjson

from cdclake.bench.model import (
    Change,
    Column,
    Stream,
    Table,
    date_text,
    dec_float,
    dec_text,
    text_of,
    time_digits,
    ts_text,
)

PLACEHOLDER = "__debezium_unavailable_value"
#: Column kinds whose JSON value is the plain value (a naive reader gets them right) per JSON format.
PLAIN_KINDS: dict[str, frozenset[str]] = {
    "goldengate-json": frozenset({"long", "decimal", "double", "string", "bool", "ts", "date"}),
    "debezium-json": frozenset({"long", "double", "string", "bool"}),
    "cdl-json": frozenset({"long", "decimal", "double", "string", "bool"}),
    "datahub-blob": frozenset({"long", "decimal", "double", "string", "bool", "date"}),
}
_OURS_TYPES = {"long": "bigint", "double": "double", "string": "string", "bool": "boolean", "ts": "timestamp"}
_OURS_TYPES["date"] = "date"


@dataclass
class Generated:
    """What one format's files hold and how to decode them."""

    format_id: str
    files: list[Path]
    options: dict[str, str]
    keys: dict[str, list[str]]  # configured keys (formats whose records carry none)
    events: int  # logical changes
    records: int  # physical records written (update halves count twice)
    ops: Counter = field(default_factory=Counter)  # row events the decoder must produce
    bytes: int = 0


class Writer:
    """Base: file rotation every ``file_events`` changes; per-table files for one-schema containers."""

    format_id: ClassVar[str]
    suffix: ClassVar[str]
    per_table: ClassVar[bool] = False

    def __init__(self, out_dir: Path, tables: tuple[Table, ...], file_events: int, total: int) -> None:
        self.dir = out_dir / self.format_id
        self.dir.mkdir(parents=True, exist_ok=True)
        self.tables, self.file_events, self.total = tables, file_events, total
        self.files: list[Path] = []
        self.records, self.events, self.ops = 0, 0, Counter()
        self._part, self._in_part = -1, file_events
        self._open: dict[str, Any] = {}

    # --- configuration ---------------------------------------------------------------------
    def options(self) -> dict[str, str]:
        return {}

    def keys(self) -> dict[str, list[str]]:
        return {}

    # --- writing ---------------------------------------------------------------------------
    def write(self, ch: Change) -> None:
        if self._in_part >= self.file_events:
            self._close_part()
            self._part += 1
            self._in_part = 0
        self._in_part += 1
        self.events += 1
        self.encode(ch)

    def encode(self, ch: Change) -> None:
        raise NotImplementedError

    def out(self, table: Table) -> Any:
        """The open output of this part (for ``per_table`` writers: of this table)."""
        slot = table.full_name if self.per_table else ""
        handle = self._open.get(slot)
        if handle is None:
            name = f"part-{self._part:05d}" + (f"-{table.full_name}" if self.per_table else "") + f".{self.suffix}"
            path = self.dir / name
            self.files.append(path)
            handle = self._open[slot] = self.open(path, table)
        return handle

    def open(self, path: Path, table: Table) -> Any:
        return open(path, "wb")

    def close_handle(self, handle: Any) -> None:
        handle.close()

    def _close_part(self) -> None:
        for handle in self._open.values():
            self.close_handle(handle)
        self._open = {}

    def close(self) -> Generated:
        self._close_part()
        return Generated(
            self.format_id,
            list(self.files),
            self.options(),
            self.keys(),
            self.events,
            self.records,
            self.ops,
            sum(p.stat().st_size for p in self.files),
        )

    def count(self, ch: Change, records: int = 1, split_key_change: bool = False) -> None:
        self.records += records
        if ch.op == "I":
            self.ops["INSERT"] += 1
        elif ch.op == "D":
            self.ops["DELETE"] += 1
        elif ch.key_change and split_key_change:
            self.ops["DELETE"] += 1
            self.ops["INSERT"] += 1
        else:
            self.ops["UPDATE"] += 1


class _Texts:
    """Per table, how each column's values are written as text (NULL: None)."""

    def __init__(self, tables: tuple[Table, ...]) -> None:
        self.of = {t.full_name: [text_of(c) for c in t.columns] for t in tables}

    def row(self, table: Table, row: list) -> list[str | None]:
        return [None if v is None else f(v) for f, v in zip(self.of[table.full_name], row, strict=True)]


def logged(ch: Change) -> tuple[int, ...]:
    """Columns an update's images carry: all, or the key and the changed ones (partial)."""
    if not ch.partial:
        return tuple(range(len(ch.table.columns)))
    return tuple(sorted(set(ch.table.key_idx) | set(ch.changed)))


def columns_option(tables: tuple[Table, ...]) -> str:
    """``columns=T(COL:type[:key],...);...`` for the GoldenGate text formats."""

    def spec(c: Column, t: Table) -> str:
        kind = f"decimal({c.precision},{c.scale})" if c.kind == "decimal" else _OURS_TYPES[c.kind]
        return f"{c.name}:{kind}" + (":key" if c.name in t.keys else "")

    return ";".join(f"{t.full_name}({','.join(spec(c, t) for c in t.columns)})" for t in tables)


# --- GoldenGate JSON ---------------------------------------------------------------------------


def _json_value(column: Column):
    kind, scale = column.kind, column.scale
    if kind == "decimal":
        return lambda v: dec_float(v, scale)
    if kind == "ts":
        return ts_text
    if kind == "date":
        return date_text
    return None


class _JsonImages:
    def __init__(self, tables: tuple[Table, ...], convert=_json_value) -> None:
        self.conv = {t.full_name: [(c.name, convert(c)) for c in t.columns] for t in tables}

    def image(self, table: Table, row: list, idxs) -> dict[str, Any]:
        conv = self.conv[table.full_name]
        out = {}
        for i in idxs:
            name, f = conv[i]
            v = row[i]
            out[name] = v if v is None or f is None else f(v)
        return out


class GoldenGateJson(Writer):
    format_id, suffix = "goldengate-json", "json"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.images = _JsonImages(self.tables)

    def encode(self, ch: Change) -> None:
        t = ch.table
        rec: dict[str, Any] = {
            "table": t.full_name,
            "op_type": ch.op,
            "op_ts": ts_text(ch.ms),
            "current_ts": ts_text(ch.ms + 40, "T"),
            "pos": f"{ch.n:020d}",
            "primary_keys": list(t.keys),
        }
        every = range(len(t.columns))
        if ch.before is not None:
            rec["before"] = self.images.image(t, ch.before, logged(ch) if ch.op == "U" else every)
        if ch.after is not None:
            rec["after"] = self.images.image(t, ch.after, logged(ch) if ch.op == "U" else every)
        self.out(t).write(orjson.dumps(rec) + b"\n")
        self.count(ch)


# --- GoldenGate delimited text ---------------------------------------------------------------


class GoldenGateDelimited(Writer):
    format_id, suffix = "goldengate-delimited", "txt"
    SEP = "\x01"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.texts = _Texts(self.tables)

    def options(self) -> dict[str, str]:
        return {"columns": columns_option(self.tables), "pkUpdateHandling": "delete-insert"}

    def _line(self, op: str, ch: Change, row: list, idxs) -> str:
        t = ch.table
        fields = [op, t.full_name, ts_text(ch.ms), ts_text(ch.ms + 40, "T"), f"{ch.n:020d}"]
        values = self.texts.row(t, row)
        if len(idxs) < len(values):
            present = set(idxs)
            values = [v if i in present else "" for i, v in enumerate(values)]  # "" = missingValueRepresentation
        fields.extend("NULL" if v is None else v for v in values)
        return self.SEP.join(fields) + "\n"

    def encode(self, ch: Change) -> None:
        every = range(len(ch.table.columns))
        out = self.out(ch.table)
        if ch.op == "I":
            out.write(self._line("I", ch, ch.after, every).encode())
        elif ch.op == "D":
            out.write(self._line("D", ch, ch.before, every).encode())
        elif ch.key_change:  # pkUpdateHandling=delete-insert: both at one position
            out.write((self._line("D", ch, ch.before, every) + self._line("I", ch, ch.after, every)).encode())
            self.records += 1
        else:
            out.write(self._line("U", ch, ch.after, logged(ch)).encode())
        self.count(ch, split_key_change=True)


# --- GoldenGate XML --------------------------------------------------------------------------


class GoldenGateXml(Writer):
    format_id, suffix = "goldengate-xml", "xml"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.texts = _Texts(self.tables)
        self.heads = {
            t.full_name: [f" <col name='{c.name}' index='{i}'>\n" for i, c in enumerate(t.columns)] for t in self.tables
        }

    def options(self) -> dict[str, str]:
        return {"columns": columns_option(self.tables)}

    @staticmethod
    def _image(tag: str, values: list[str | None] | None, i: int) -> str:
        if values is None:
            return f"<{tag} missing='true'/>"
        v = values[i]
        return f"<{tag} isNull='true'/>" if v is None else f"<{tag}><![CDATA[{v}]]></{tag}>"

    def encode(self, ch: Change) -> None:
        t = ch.table
        present = set(logged(ch)) if ch.op == "U" else None
        before = None if ch.before is None else self.texts.row(t, ch.before)
        after = None if ch.after is None else self.texts.row(t, ch.after)
        parts = [
            "<?xml version='1.0' encoding='UTF-8'?>\n",
            f"<operation table='{t.full_name}' type='{ch.op}' ts='{ts_text(ch.ms)}' "
            f"current_ts='{ts_text(ch.ms + 40, 'T')}' pos='{ch.n:020d}' numCols='{len(t.columns)}'>\n",
        ]
        for i, head in enumerate(self.heads[t.full_name]):
            if present is not None and i not in present:
                parts.append(f"{head}  <missing/>\n </col>\n")
                continue
            parts.append(f"{head}   {self._image('before', before, i)}\n   {self._image('after', after, i)}\n </col>\n")
        parts.append(
            f" <tokens>\n   <token>\n     <Name><![CDATA[R]]></Name>\n     <Value><![CDATA[AADPkvAAEAAE{ch.n:06X}]]>"
            "</Value>\n   </token>\n </tokens>\n</operation>\n"
        )
        self.out(t).write("".join(parts).encode())
        self.count(ch)


# --- GoldenGate Avro (OCF, one file per table as the HDFS handler writes them) ---------------

_META_FIELDS = [
    {"name": "table", "type": "string"},
    {"name": "op_type", "type": "string"},
    {"name": "op_ts", "type": "string"},
    {"name": "current_ts", "type": "string"},
    {"name": "pos", "type": "string"},
    {"name": "primary_keys", "type": {"type": "array", "items": "string"}},
    {"name": "tokens", "type": {"type": "map", "values": "string"}, "default": {}},
]


def _avro_type(c: Column) -> Any:
    if c.kind == "decimal":
        return {"type": "bytes", "logicalType": "decimal", "precision": c.precision, "scale": c.scale}
    return {"long": "long", "double": "double", "bool": "boolean"}.get(c.kind, "string")


def _gg_avro_value(c: Column):
    from decimal import Decimal

    if c.kind == "decimal":
        scale = c.scale
        return lambda v: Decimal(v).scaleb(-scale)
    if c.kind == "ts":
        return ts_text
    if c.kind == "date":
        return date_text
    return None


class _Ocf:
    def __init__(self, path: Path, schema: dict[str, Any]) -> None:
        self.handle = open(path, "wb")
        self.writer = fastavro.write.Writer(self.handle, fastavro.parse_schema(schema), codec="null")

    def close(self) -> None:
        self.writer.flush()
        self.handle.close()


class _GoldenGateAvro(Writer):
    suffix, per_table = "avro", True

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.images = _JsonImages(self.tables, _gg_avro_value)

    def open(self, path: Path, table: Table) -> _Ocf:
        return _Ocf(path, self.schema(table))

    def close_handle(self, handle: _Ocf) -> None:
        handle.close()

    def schema(self, table: Table) -> dict[str, Any]:
        raise NotImplementedError

    def meta(self, ch: Change, op: str) -> dict[str, Any]:
        return {
            "table": ch.table.full_name,
            "op_type": op,
            "op_ts": ts_text(ch.ms),
            "current_ts": ts_text(ch.ms + 40, "T"),
            "pos": f"{ch.n:020d}",
            "primary_keys": list(ch.table.keys),
            "tokens": {},
        }


class GoldenGateAvroRow(_GoldenGateAvro):
    format_id = "goldengate-avro-row"

    def schema(self, table: Table) -> dict[str, Any]:
        columns = [{"name": c.name, "type": ["null", _avro_type(c)], "default": None} for c in table.columns]
        return {"type": "record", "name": table.name, "namespace": table.owner, "fields": _META_FIELDS + columns}

    def _record(self, ch: Change, op: str, row: list) -> dict[str, Any]:
        return {**self.meta(ch, op), **self.images.image(ch.table, row, range(len(ch.table.columns)))}

    def encode(self, ch: Change) -> None:
        out = self.out(ch.table).writer
        if ch.op == "I":
            out.write(self._record(ch, "I", ch.after))
        elif ch.op == "D":
            out.write(self._record(ch, "D", ch.before))
        elif ch.key_change:
            out.write(self._record(ch, "D", ch.before))
            out.write(self._record(ch, "I", ch.after))
            self.records += 1
        else:
            out.write(self._record(ch, "U", ch.after))  # a whole row: Avro cannot say "missing"
        self.count(ch, split_key_change=True)


class GoldenGateAvroOp(_GoldenGateAvro):
    format_id = "goldengate-avro-op"

    def schema(self, table: Table) -> dict[str, Any]:
        fields: list[dict[str, Any]] = []
        for c in table.columns:
            fields.append({"name": c.name, "type": ["null", _avro_type(c)], "default": None})
            fields.append({"name": f"{c.name}_isMissing", "type": "boolean"})
        image = {"type": "record", "name": "columns", "fields": fields}
        ops = [{"name": "before", "type": ["null", image]}, {"name": "after", "type": ["null", "columns"]}]
        return {"type": "record", "name": table.name, "namespace": table.owner, "fields": _META_FIELDS + ops}

    def _image(self, ch: Change, row: list | None, idxs) -> dict[str, Any] | None:
        if row is None:
            return None
        values = self.images.image(ch.table, row, idxs)
        out: dict[str, Any] = {}
        for c in ch.table.columns:
            present = c.name in values
            out[c.name] = values[c.name] if present else None
            out[f"{c.name}_isMissing"] = not present
        return out

    def encode(self, ch: Change) -> None:
        idxs = logged(ch) if ch.op == "U" else range(len(ch.table.columns))
        record = {**self.meta(ch, ch.op), "before": self._image(ch, ch.before, idxs)}
        record["after"] = self._image(ch, ch.after, idxs)
        self.out(ch.table).writer.write(record)
        self.count(ch)


# --- Qlik Replicate Avro envelopes -------------------------------------------------------------

_QLIK_TYPES = {"long": "INT8", "decimal": "NUMERIC", "double": "REAL8", "string": "STRING", "bool": "BOOLEAN"}
_QLIK_TYPES |= {"ts": "DATETIME", "date": "DATE"}


def _qlik_metadata_schema(table: Table) -> dict[str, Any]:
    props = [
        {"name": n, "type": t}
        for n, t in (
            ("ordinal", "int"),
            ("type", "string"),
            ("length", "int"),
            ("precision", "int"),
            ("scale", "int"),
            ("primaryKeyPosition", "int"),
            ("nullable", "boolean"),
        )
    ]
    lineage = [
        {"name": n, "type": t}
        for n, t in (
            ("server", "string"),
            ("task", "string"),
            ("schema", "string"),
            ("table", "string"),
            ("tableVersion", "long"),
            ("timestamp", "string"),
        )
    ]
    columns = [{"name": c.name, "type": {"type": "record", "name": c.name, "fields": props}} for c in table.columns]
    table_columns = {"type": "record", "name": "TableColumns", "fields": columns}
    structure = {
        "type": "record",
        "name": "TableStructure",
        "fields": [{"name": "tableColumns", "type": table_columns}],
    }
    return {
        "type": "record",
        "name": "MetadataMessage",
        "fields": [
            {"name": "schemaId", "type": "string"},
            {"name": "lineage", "type": {"type": "record", "name": "Lineage", "fields": lineage}},
            {"name": "tableStructure", "type": structure},
            {"name": "dataSchema", "type": "string"},
        ],
    }


def _qlik_data_schema(table: Table) -> dict[str, Any]:
    avro = {"long": "long", "double": "double", "bool": "boolean"}
    data = [{"name": c.name, "type": ["null", avro.get(c.kind, "string")]} for c in table.columns]
    headers = [
        {"name": "operation", "type": {"type": "enum", "name": "operation", "symbols": ["INSERT", "UPDATE", "DELETE"]}},
        {"name": "changeSequence", "type": "string"},
        {"name": "timestamp", "type": "string"},
        {"name": "streamPosition", "type": "string"},
        {"name": "transactionId", "type": "string"},
        {"name": "changeMask", "type": ["null", "bytes"]},
        {"name": "columnMask", "type": ["null", "bytes"]},
        {"name": "transactionEventCounter", "type": ["null", "long"]},
        {"name": "transactionLastEvent", "type": ["null", "boolean"]},
        {"name": "externalSchemaId", "type": ["null", "string"]},
    ]
    return {
        "type": "record",
        "name": "DataRecord",
        "fields": [
            {"name": "data", "type": {"type": "record", "name": "Data", "fields": data}},
            {"name": "beforeData", "type": ["null", "Data"]},
            {"name": "headers", "type": {"type": "record", "name": "Headers", "fields": headers}},
        ],
    }


def _qlik_value(c: Column):
    if c.kind in ("long", "double", "bool", "string"):
        return None
    if c.kind == "ts":
        return ts_text
    if c.kind == "date":
        return date_text
    scale = c.scale
    return lambda v: dec_text(v, scale)


def _mask(ordinals) -> bytes:
    number = 0
    for ordinal in ordinals:
        number |= 1 << (ordinal - 1)
    return number.to_bytes((number.bit_length() + 7) // 8 or 1, "big")


class QlikAvro(Writer):
    """Envelope stream; metadata messages before each table's first data message (one per run)."""

    format_id, suffix = "qlik-avro", "bin"
    TX_SIZE = 4

    def __init__(self, *args: Any) -> None:
        from cdclake.formats.qlik_avro import ENVELOPE_SCHEMA

        super().__init__(*args)
        self.envelope = fastavro.parse_schema(ENVELOPE_SCHEMA)
        self.data_schema = {t.full_name: _qlik_data_schema(t) for t in self.tables}
        self.parsed = {n: fastavro.parse_schema(s) for n, s in self.data_schema.items()}
        self.images = _JsonImages(self.tables, _qlik_value)
        self.announced: set[str] = set()

    def _envelope(self, kind: str, message: bytes, schema_id: str, schema: str | None = None) -> bytes:
        buffer = io.BytesIO()
        record = {
            "magic": b"atMSG",
            "type": kind,
            "headers": None,
            "messageSchemaId": schema_id,
            "messageSchema": schema,
            "message": message,
        }
        fastavro.schemaless_writer(buffer, self.envelope, record)
        return buffer.getvalue()

    def _metadata(self, t: Table) -> bytes:
        schema = _qlik_metadata_schema(t)
        columns = {
            c.name: {
                "ordinal": i + 1,
                "type": _QLIK_TYPES[c.kind],
                "length": 0 if c.kind != "string" else 200,
                "precision": c.precision,
                "scale": c.scale,
                "primaryKeyPosition": t.keys.index(c.name) + 1 if c.name in t.keys else 0,
                "nullable": c.nullable,
            }
            for i, c in enumerate(t.columns)
        }
        message = {
            "schemaId": f"SID-{t.full_name}",
            "lineage": {
                "server": "replicate-01",
                "task": "oracle-to-kafka",
                "schema": t.owner,
                "table": t.name,
                "tableVersion": 1,
                "timestamp": "2024-06-01T00:00:00.000",
            },
            "tableStructure": {"tableColumns": columns},
            "dataSchema": orjson.dumps(self.data_schema[t.full_name]).decode(),
        }
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, fastavro.parse_schema(schema), message)
        self.records += 1
        return self._envelope("MD", buffer.getvalue(), f"SID-{t.full_name}", orjson.dumps(schema).decode())

    def _data(self, t: Table, row: list | None, idxs) -> dict[str, Any] | None:
        if row is None:
            return None
        values = self.images.image(t, row, idxs)
        return {c.name: values.get(c.name) for c in t.columns}

    def encode(self, ch: Change) -> None:
        t = ch.table
        out = self.out(t)
        if t.full_name not in self.announced:
            self.announced.add(t.full_name)
            out.write(self._metadata(t))
        every = range(len(t.columns))
        mask = None
        if ch.op == "U":
            idxs = logged(ch)
            if ch.partial:
                mask = _mask(i + 1 for i in idxs)
            data, before = self._data(t, ch.after, idxs), self._data(t, ch.before, idxs)
        elif ch.op == "I":
            data, before = self._data(t, ch.after, every), None
        else:
            data, before = self._data(t, ch.before, every), None
        record = {
            "data": data,
            "beforeData": before,
            "headers": {
                "operation": {"I": "INSERT", "U": "UPDATE", "D": "DELETE"}[ch.op],
                "changeSequence": f"{time_digits(ch.ms)}{ch.n:019d}",
                "timestamp": ts_text(ch.ms, "T"),
                "streamPosition": f"{ch.n:016X}",
                "transactionId": f"{(ch.n - 1) // self.TX_SIZE:016X}",
                "changeMask": mask,
                "columnMask": mask,
                "transactionEventCounter": (ch.n - 1) % self.TX_SIZE + 1,
                "transactionLastEvent": ch.n % self.TX_SIZE == 0 or ch.n == self.total,
                "externalSchemaId": None,
            },
        }
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, self.parsed[t.full_name], record)
        out.write(self._envelope("DT", buffer.getvalue(), f"SID-{t.full_name}"))
        self.count(ch)


# --- Debezium JSON (Oracle connector, JsonConverter with schemas.enable=true) ---------------


def _connect_field(c: Column, optional: bool) -> dict[str, Any]:
    base: dict[str, Any] = {"optional": optional, "field": c.name}
    if c.kind == "decimal":
        params = {"scale": str(c.scale), "connect.decimal.precision": str(c.precision)}
        return {
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "version": 1,
            "parameters": params,
        } | base
    if c.kind == "ts":
        return {"type": "int64", "name": "io.debezium.time.MicroTimestamp", "version": 1} | base
    if c.kind == "date":
        return {"type": "int32", "name": "io.debezium.time.Date", "version": 1} | base
    return {"type": {"long": "int64", "double": "double", "bool": "boolean"}.get(c.kind, "string")} | base


def _debezium_value(c: Column):
    if c.kind == "decimal":

        def decimal(v: int) -> str:
            return base64.b64encode(v.to_bytes(v.bit_length() // 8 + 1, "big", signed=True)).decode()

        return decimal
    if c.kind == "ts":
        return lambda v: v * 1000
    return None


_DBZ_SOURCE_FIELDS = [
    ("version", "string", False),
    ("connector", "string", False),
    ("name", "string", False),
    ("ts_ms", "int64", False),
    ("snapshot", "string", True),
    ("db", "string", False),
    ("sequence", "string", True),
    ("ts_us", "int64", True),
    ("ts_ns", "int64", True),
    ("schema", "string", False),
    ("table", "string", False),
    ("txId", "string", True),
    ("scn", "string", True),
    ("commit_scn", "string", True),
    ("lcr_position", "string", True),
    ("rs_id", "string", True),
    ("ssn", "int32", True),
    ("redo_thread", "int32", True),
    ("user_name", "string", True),
]


class DebeziumJson(Writer):
    format_id, suffix = "debezium-json", "json"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.images = _JsonImages(self.tables, _debezium_value)
        self.schema = {t.full_name: orjson.dumps(self._schema(t)) for t in self.tables}

    def keys(self) -> dict[str, list[str]]:
        return {t.full_name: list(t.keys) for t in self.tables}  # value records name no key

    @staticmethod
    def _schema(t: Table) -> dict[str, Any]:
        value = f"server1.{t.full_name}.Value"
        cols = [_connect_field(c, c.name not in t.keys) for c in t.columns]
        source = [{"type": ty, "optional": opt, "field": n} for n, ty, opt in _DBZ_SOURCE_FIELDS]
        return {
            "type": "struct",
            "fields": [
                {"type": "struct", "fields": cols, "optional": True, "name": value, "field": "before"},
                {"type": "struct", "fields": cols, "optional": True, "name": value, "field": "after"},
                {
                    "type": "struct",
                    "fields": source,
                    "optional": False,
                    "name": "io.debezium.connector.oracle.Source",
                    "field": "source",
                },
                {"type": "string", "optional": False, "field": "op"},
                {"type": "int64", "optional": True, "field": "ts_ms"},
                {"type": "int64", "optional": True, "field": "ts_us"},
                {"type": "int64", "optional": True, "field": "ts_ns"},
            ],
            "optional": False,
            "name": f"server1.{t.full_name}.Envelope",
            "version": 2,
        }

    def _image(self, ch: Change, row: list | None) -> dict[str, Any] | None:
        if row is None:
            return None
        image = self.images.image(ch.table, row, range(len(ch.table.columns)))
        if ch.op == "U":
            for i, c in enumerate(ch.table.columns):
                if c.lob and i not in ch.changed:
                    image[c.name] = PLACEHOLDER  # an unchanged LOB is not in the redo log
        return image

    def encode(self, ch: Change) -> None:
        t = ch.table
        ms = ch.ms
        payload = {
            "before": self._image(ch, ch.before),
            "after": self._image(ch, ch.after),
            "source": {
                "version": "2.7.3.Final",
                "connector": "oracle",
                "name": "server1",
                "ts_ms": ms,
                "snapshot": "false",
                "db": "ORCLPDB1",
                "sequence": None,
                "ts_us": ms * 1000,
                "ts_ns": ms * 1_000_000,
                "schema": t.owner,
                "table": t.name,
                "txId": f"{ch.n // 4:016x}",
                "scn": str(10**9 + ch.n),
                "commit_scn": str(10**9 + ch.n + 1),
                "lcr_position": None,
                "rs_id": None,
                "ssn": 0,
                "redo_thread": 1,
                "user_name": "APP",
            },
            "op": {"I": "c", "U": "u", "D": "d"}[ch.op],
            "ts_ms": ms + 120,
            "ts_us": (ms + 120) * 1000,
            "ts_ns": (ms + 120) * 1_000_000,
        }
        line = b'{"schema":' + self.schema[t.full_name] + b',"payload":' + orjson.dumps(payload) + b"}\n"
        self.out(t).write(line)
        self.count(ch)


# --- Huawei CDL JSON 1.0 ---------------------------------------------------------------------


def _cdl_field(c: Column, optional: bool) -> dict[str, Any]:
    base: dict[str, Any] = {"optional": optional, "field": c.name}
    if c.kind == "decimal":
        return {"type": "string", "name": "com.xxx.cdc.data.Decimal"} | base
    if c.kind == "ts":
        return {"type": "int64", "name": "org.apache.kafka.connect.data.Timestamp", "version": 1} | base
    if c.kind == "date":
        return {"type": "int32", "name": "org.apache.kafka.connect.data.Date", "version": 1} | base
    return {"type": {"long": "int64", "double": "double", "bool": "boolean"}.get(c.kind, "string")} | base


def _cdl_value(c: Column):
    if c.kind == "decimal":
        scale = c.scale
        return lambda v: dec_text(v, scale)
    return None


class CdlJson(Writer):
    format_id, suffix = "cdl-json", "json"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.images = _JsonImages(self.tables, _cdl_value)
        self.schema = {t.full_name: orjson.dumps(self._schema(t)) for t in self.tables}

    @staticmethod
    def _schema(t: Table) -> dict[str, Any]:
        def plain(field_name: str, kind: str, optional: bool = False, **kw: Any) -> dict[str, Any]:
            return {"type": kind, "optional": optional, "field": field_name, **kw}

        cols = [_cdl_field(c, c.name not in t.keys) for c in t.columns]
        unique = [_cdl_field(c, False) for c in t.columns if c.name in t.keys]
        prop = [plain("name", "string"), plain("value", "int64")]
        properties = {"type": "array", "items": {"type": "struct", "fields": prop, "optional": False}}
        transaction = [{**properties, "optional": False, "field": "properties"}]
        return {
            "type": "struct",
            "fields": [
                plain("DATA_STORE", "string"),
                plain("SEG_OWNER", "string"),
                plain("TABLE_NAME", "string"),
                plain("TIMESTAMP", "int64", name="org.apache.kafka.connect.data.Timestamp", version=1),
                plain("OPERATION", "string"),
                plain("LOB_COLUMNS", "string", True),
                {
                    "type": "struct",
                    "fields": transaction,
                    "optional": False,
                    "name": "transaction",
                    "field": "transaction",
                },
                {"type": "struct", "fields": unique, "optional": True, "name": "unique", "field": "unique"},
                {"type": "struct", "fields": cols, "optional": True, "name": "data", "field": "data"},
                {"type": "struct", "fields": cols, "optional": True, "name": "before", "field": "before"},
                plain("message_version", "string"),
                plain("message_type", "string"),
                plain("HEARTBEAT_IDENTIFIER", "string", True),
            ],
            "optional": False,
            "name": f"{t.owner.lower()}.{t.name.lower()}",
        }

    def encode(self, ch: Change) -> None:
        t = ch.table
        idxs = logged(ch) if ch.op == "U" else range(len(t.columns))
        data = None if ch.after is None else self.images.image(t, ch.after, idxs)
        before = None if ch.before is None else self.images.image(t, ch.before, idxs)
        key_row = ch.after if ch.after is not None else ch.before
        payload = {
            "DATA_STORE": "POSTGRESQL",
            "SEG_OWNER": t.owner,
            "TABLE_NAME": t.name,
            "TIMESTAMP": ch.ms,
            "OPERATION": {"I": "INSERT", "U": "UPDATE", "D": "DELETE"}[ch.op],
            "LOB_COLUMNS": None,
            "transaction": {
                "properties": [
                    {"name": "lsn", "value": 16_000_000_000 + ch.n * 64},
                    {"name": "txId", "value": ch.n // 4},
                ]
            },
            "unique": self.images.image(t, key_row, t.key_idx),
            "data": data,
            "before": before,
            "message_version": "1.0",
            "message_type": "0",
            "HEARTBEAT_IDENTIFIER": "279fb050-0143-45c1-b184-50bc48c2461c",
        }
        self.out(t).write(b'{"schema":' + self.schema[t.full_name] + b',"payload":' + orjson.dumps(payload) + b"}\n")
        self.count(ch)


# --- Alibaba DataHub BLOB and TUPLE ----------------------------------------------------------

_BLOB_TYPES = {"long": "LONG", "decimal": "DOUBLE", "double": "DOUBLE", "string": "STRING", "bool": "BOOLEAN"}
_BLOB_TYPES |= {"ts": "DATE", "date": "STRING"}


def _blob_value(c: Column):
    if c.kind == "decimal":
        scale = c.scale
        return lambda v: dec_text(v, scale)  # DataHub sends DOUBLE values as text
    if c.kind == "double":
        return repr
    if c.kind == "date":
        return date_text
    return None  # DATE (our ts): epoch ms as is


def _sequence_id(n: int) -> str:
    return str(1_717_200_000_000_000_000 + n)


class DataHubBlob(Writer):
    format_id, suffix = "datahub-blob", "json"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.images = _JsonImages(self.tables, _blob_value)
        self.schema = {
            t.full_name: orjson.dumps(
                {
                    "dataColumn": [{"name": c.name, "type": _BLOB_TYPES[c.kind]} for c in t.columns],
                    "source": {"dbName": t.owner, "dbType": "Oracle", "tableName": t.name},
                    "primaryKey": list(t.keys),
                }
            )
            for t in self.tables
        }

    def _message(self, ch: Change, op: str, image: str, row: list) -> bytes:
        payload = {
            "op": op,
            image: {"dataColumn": self.images.image(ch.table, row, range(len(ch.table.columns)))},
            "sequenceId": _sequence_id(ch.n),
            "timestamp": {"eventTime": ch.ms, "systemTime": ch.ms + 300, "checkpointTime": ch.ms},
        }
        schema = self.schema[ch.table.full_name]
        return b'{"schema":' + schema + b',"payload":' + orjson.dumps(payload) + b',"version":"0.0.1"}\n'

    def encode(self, ch: Change) -> None:
        out = self.out(ch.table)
        if ch.op == "I":
            out.write(self._message(ch, "INSERT", "after", ch.after))
        elif ch.op == "D":
            out.write(self._message(ch, "DELETE", "before", ch.before))
        else:
            out.write(
                self._message(ch, "UPDATE_BEFOR", "before", ch.before)
                + self._message(ch, "UPDATE_AFTER", "after", ch.after)
            )
        self.count(ch, records=2 if ch.op == "U" else 1)


class DataHubTuple(Writer):
    """CSV exports with a header, one file per table (a TUPLE topic holds one table)."""

    format_id, suffix, per_table = "datahub-tuple", "csv", True
    META: ClassVar[list[str]] = [
        "_sequence_id_",
        "_operation_type_",
        "_excute_time_",
        "_source_table_",
        "_before_image_",
        "_after_image_",
    ]

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.texts = _Texts(self.tables)

    def options(self) -> dict[str, str]:
        return {"nullValue": "\\N"}

    def keys(self) -> dict[str, list[str]]:
        return {t.full_name: list(t.keys) for t in self.tables}  # TUPLE records carry no key

    def open(self, path: Path, table: Table) -> Any:
        handle = open(path, "w", encoding="utf-8", newline="")
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(table.names + self.META)
        return handle, writer

    def close_handle(self, handle: Any) -> None:
        handle[0].close()

    def _row(self, ch: Change, row: list, op: str, flags: tuple[str, str]) -> list[str]:
        values = self.texts.row(ch.table, row)
        meta = [_sequence_id(ch.n), op, str(ch.ms), ch.table.full_name, *flags]
        return ["\\N" if v is None else v for v in values] + meta

    def encode(self, ch: Change) -> None:
        writer = self.out(ch.table)[1]
        if ch.op == "I":
            writer.writerow(self._row(ch, ch.after, "I", ("N", "Y")))
        elif ch.op == "D":
            writer.writerow(self._row(ch, ch.before, "D", ("Y", "N")))
        else:
            writer.writerow(self._row(ch, ch.before, "U", ("Y", "N")))
            writer.writerow(self._row(ch, ch.after, "U", ("N", "Y")))
        self.count(ch, records=2 if ch.op == "U" else 1)


WRITERS: dict[str, type[Writer]] = {
    w.format_id: w
    for w in (
        CdlJson,
        DataHubBlob,
        DataHubTuple,
        DebeziumJson,
        GoldenGateAvroOp,
        GoldenGateAvroRow,
        GoldenGateDelimited,
        GoldenGateJson,
        GoldenGateXml,
        QlikAvro,
    )
}


def generate(
    format_ids: list[str], out_dir: Path, events: int, seed: int = 7, file_events: int = 100_000
) -> tuple[dict[str, Generated], Stream]:
    """Write ``events`` changes in every format at once (one pass over the stream)."""
    stream = Stream(events, seed)
    writers = [WRITERS[f](Path(out_dir), stream.tables, file_events, events) for f in format_ids]
    for change in stream:
        for writer in writers:
            writer.write(change)
    return {w.format_id: w.close() for w in writers}, stream
