"""qlik-avro decoder: the real Replicate sample written as Avro, the vendor doc's mask example,
our own multi-table streams, containers (envelope stream, OCF) and bad input."""

from __future__ import annotations

import datetime as dt
import io
import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.events.change import ChangeEvent, Rejected, Source
from cdclake.formats import qlik_avro
from cdclake.formats.qlik_avro import ENVELOPE_SCHEMA, REFRESH_SEQ, QlikAvroDecoder, has_bit, mask_number
from cdclake.options import OptionError, Options
from cdclake.registry import get_decoder

FIXTURES = Path(__file__).parents[1] / "fixtures" / "qlik_avro"
UTC = dt.UTC
TS = "2024-01-02T03:04:05.123"


# --- writing Avro like Replicate ------------------------------------------------------------------


def avro(schema: Any, record: Any) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(schema), record)
    return buffer.getvalue()


def envelope(kind: str, message: bytes, schema_id: str | None = None, schema: str | None = None, **kw: Any) -> bytes:
    record = {
        "magic": b"atMSG",
        "type": kind,
        "headers": kw.get("headers"),
        "messageSchemaId": schema_id,
        "messageSchema": schema,
        "message": message,
    }
    return avro(ENVELOPE_SCHEMA, record)


_PROPS = ("ordinal", "type", "length", "precision", "scale", "primaryKeyPosition", "nullable")


def metadata_schema(columns: list[str]) -> dict[str, Any]:
    """A MetadataMessage schema like Replicate 6.x writes (one record type per column)."""
    props = [
        {"name": "ordinal", "type": "int"},
        {"name": "type", "type": "string"},
        {"name": "length", "type": "int"},
        {"name": "precision", "type": "int"},
        {"name": "scale", "type": "int"},
        {"name": "primaryKeyPosition", "type": "int"},
        {"name": "nullable", "type": "boolean"},
    ]
    return {
        "type": "record",
        "name": "MetadataMessage",
        "fields": [
            {"name": "schemaId", "type": "string"},
            {
                "name": "lineage",
                "type": {
                    "type": "record",
                    "name": "Lineage",
                    "fields": [
                        {"name": n, "type": t}
                        for n, t in (
                            ("server", "string"),
                            ("task", "string"),
                            ("schema", "string"),
                            ("table", "string"),
                            ("tableVersion", "long"),
                            ("timestamp", "string"),
                        )
                    ],
                },
            },
            {
                "name": "tableStructure",
                "type": {
                    "type": "record",
                    "name": "TableStructure",
                    "fields": [
                        {
                            "name": "tableColumns",
                            "type": {
                                "type": "record",
                                "name": "TableColumns",
                                "fields": [
                                    {"name": c, "type": {"type": "record", "name": f"col_{c}", "fields": props}}
                                    for c in columns
                                ],
                            },
                        }
                    ],
                },
            },
            {"name": "dataSchema", "type": "string"},
        ],
    }


def data_schema(columns: list[tuple[str, Any]], masks: str = "bytes", name: str = "DataRecord") -> dict[str, Any]:
    """A DataRecord schema (headers as in newer Replicate versions; masks as bytes or strings)."""
    return {
        "type": "record",
        "name": name,
        "fields": [
            {
                "name": "data",
                "type": {"type": "record", "name": "Data", "fields": [{"name": c, "type": t} for c, t in columns]},
            },
            {"name": "beforeData", "type": ["null", "Data"]},
            {
                "name": "headers",
                "type": {
                    "type": "record",
                    "name": "Headers",
                    "fields": [
                        {
                            "name": "operation",
                            "type": {
                                "type": "enum",
                                "name": "operation",
                                "symbols": ["INSERT", "UPDATE", "DELETE", "REFRESH"],
                            },
                        },
                        {"name": "changeSequence", "type": "string"},
                        {"name": "timestamp", "type": "string"},
                        {"name": "streamPosition", "type": "string"},
                        {"name": "transactionId", "type": "string"},
                        {"name": "changeMask", "type": ["null", masks]},
                        {"name": "columnMask", "type": ["null", masks]},
                        {"name": "transactionEventCounter", "type": ["null", "long"]},
                        {"name": "transactionLastEvent", "type": ["null", "boolean"]},
                        {"name": "externalSchemaId", "type": ["null", "string"]},
                    ],
                },
            },
        ],
    }


class Table:
    """One table version: writes its metadata envelope and data envelopes."""

    def __init__(
        self,
        schema_id: str,
        table: str,
        columns: list[tuple[str, str, Any, int]],  # name, Qlik type, Avro type, primaryKeyPosition
        version: int = 1,
        masks: str = "bytes",
        precision: dict[str, tuple[int, int]] | None = None,
    ) -> None:
        self.schema_id, self.version, self.masks = schema_id, version, masks
        self.owner, self.name = table.split(".")
        self.columns = columns
        self.data_schema = data_schema([(c, t) for c, _, t, _ in columns], masks)
        self.precision = precision or {}

    def metadata(self, timestamp: str = TS) -> bytes:
        names = [c for c, _, _, _ in self.columns]
        message = {
            "schemaId": self.schema_id,
            "lineage": {
                "server": "replicate-01",
                "task": "oracle-to-kafka",
                "schema": self.owner,
                "table": self.name,
                "tableVersion": self.version,
                "timestamp": timestamp,
            },
            "tableStructure": {
                "tableColumns": {
                    c: {
                        "ordinal": i + 1,
                        "type": q,
                        "length": 10,
                        "precision": self.precision.get(c, (0, 0))[0],
                        "scale": self.precision.get(c, (0, 0))[1],
                        "primaryKeyPosition": pk,
                        "nullable": pk == 0,
                    }
                    for i, (c, q, _, pk) in enumerate(self.columns)
                }
            },
            "dataSchema": json.dumps(self.data_schema),
        }
        schema = metadata_schema(names)
        return envelope("MD", avro(schema, message), self.schema_id, json.dumps(schema))

    def message(
        self,
        operation: str,
        data: dict[str, Any] | None,
        seq: str = "",
        before: dict[str, Any] | None = None,
        tx: str = "",
        counter: int | None = None,
        last: bool | None = None,
        column_mask: Any = None,
        change_mask: Any = None,
        timestamp: str = "",
        stream: str = "",
    ) -> bytes:
        names = [c for c, _, _, _ in self.columns]
        record = {
            "data": {c: (data or {}).get(c) for c in names},
            "beforeData": None if before is None else {c: before.get(c) for c in names},
            "headers": {
                "operation": operation,
                "changeSequence": seq,
                "timestamp": timestamp,
                "streamPosition": stream,
                "transactionId": tx,
                "changeMask": change_mask,
                "columnMask": column_mask,
                "transactionEventCounter": counter,
                "transactionLastEvent": last,
                "externalSchemaId": None,
            },
        }
        return avro(self.data_schema, record)

    def data(self, *args: Any, **kwargs: Any) -> bytes:
        return envelope("DT", self.message(*args, **kwargs), self.schema_id)


CUSTOMERS = [
    ("ID", "INT4", ["null", "int"], 1),
    ("NAME", "STRING", ["null", "string"], 0),
    ("CITY", "STRING", ["null", "string"], 0),
    ("BALANCE", "NUMERIC", ["null", "string"], 0),
]


def customers(**kw: Any) -> Table:
    return Table("SID-CUST-1", "SALES.CUSTOMERS", CUSTOMERS, precision={"BALANCE": (10, 2)}, **kw)


def seq(n: int) -> str:
    return f"2024010203040512{n:019d}"


def decoder(**options: str) -> QlikAvroDecoder:
    dec = get_decoder("qlik-avro", Options(options))
    assert isinstance(dec, QlikAvroDecoder)
    return dec


def decode(data: bytes, file: str = "f.avro", **options: str) -> list[ChangeEvent | Rejected]:
    return list(decoder(**options).decode(data, file))


def split(items: list[ChangeEvent | Rejected]) -> tuple[list[ChangeEvent], list[Rejected]]:
    return [i for i in items if isinstance(i, ChangeEvent)], [i for i in items if isinstance(i, Rejected)]


def events(items: list[ChangeEvent | Rejected]) -> list[ChangeEvent]:
    assert all(isinstance(i, ChangeEvent) for i in items), [i for i in items if isinstance(i, Rejected)]
    return items  # type: ignore[return-value]


def rows(items: list[ChangeEvent | Rejected]) -> list[ChangeEvent]:
    return [e for e in events(items) if e.op != "SCHEMA"]


def test_registered_and_stateful():
    assert type(get_decoder("qlik-avro")) is QlikAvroDecoder
    assert QlikAvroDecoder.format_id == "qlik-avro" and QlikAvroDecoder.stateful is True


def test_unknown_option_is_usage_error():
    with pytest.raises(OptionError, match="unknown option"):
        get_decoder("qlik-avro", Options({"changeMaskOrder": "little"}))


# --- the real Replicate sample (fixtures/qlik_avro, JSON rendering written as Avro) -----------------


def real_sample() -> tuple[bytes, bytes, dict[str, Any], dict[str, Any]]:
    md = json.loads((FIXTURES / "Metadata.json").read_text())
    data = json.loads((FIXTURES / "Data.json").read_text())
    md_message = avro(json.loads(md["messageSchema"]), md["message"])
    md_envelope = avro(ENVELOPE_SCHEMA, {**md, "magic": md["magic"].encode(), "message": md_message})
    dt_message = avro(json.loads(md["message"]["dataSchema"]), data["message"])
    dt_envelope = avro(ENVELOPE_SCHEMA, {**data, "magic": data["magic"].encode(), "message": dt_message})
    return md_envelope, dt_envelope, md, data


SALARY_COLUMNS = [
    {
        "name": "emp_no",
        "type": "bigint",
        "source_type": "INT4",
        "ordinal": 1,
        "length": 10,
        "precision": 0,
        "scale": 0,
        "primaryKeyPosition": 1,
        "nullable": False,
    },
    {
        "name": "salary",
        "type": "bigint",
        "source_type": "INT4",
        "ordinal": 2,
        "length": 10,
        "precision": 0,
        "scale": 0,
        "primaryKeyPosition": 0,
        "nullable": False,
    },
    {
        "name": "from_date",
        "type": "date",
        "source_type": "DATE",
        "ordinal": 3,
        "length": 0,
        "precision": 0,
        "scale": 0,
        "primaryKeyPosition": 2,
        "nullable": False,
    },
    {
        "name": "to_date",
        "type": "date",
        "source_type": "DATE",
        "ordinal": 4,
        "length": 0,
        "precision": 0,
        "scale": 0,
        "primaryKeyPosition": 0,
        "nullable": False,
    },
]
SALARY_TYPES = {"emp_no": "bigint", "salary": "bigint", "from_date": "date", "to_date": "date"}


def test_real_sample_every_field():
    md_envelope, dt_envelope, _, _ = real_sample()
    schema_event, row = events(decode(md_envelope + dt_envelope, "salaries.avro"))
    assert schema_event == ChangeEvent(
        table="employees.salaries",
        op="SCHEMA",
        seq=None,
        event_ts=dt.datetime(2018, 4, 13, 20, 13, 58, 289000, tzinfo=UTC),
        source=Source("salaries.avro", 0),
        keys=["emp_no", "from_date"],
        ddl={"columns": SALARY_COLUMNS, "keys": ["emp_no", "from_date"], "version": 1},
        meta={
            "schemaId": "8FB9D3C10EA4B25751DF9CC8318F0A02",
            "lineage": {
                "server": "attunity-01.custenborder.com",
                "task": "mysql-to-kafka",
                "tableVersion": 1,
                "timestamp": "2018-04-13T20:13:58.289",
            },
            "column_types": SALARY_TYPES,
        },
    )
    assert row == ChangeEvent(
        table="employees.salaries",
        op="UPSERT",
        seq=REFRESH_SEQ,
        event_ts=None,
        source=Source("salaries.avro", len(md_envelope)),
        tx_id=None,
        tx_pos=None,
        tx_last=None,
        keys=["emp_no", "from_date"],
        before=None,
        after={"emp_no": 14472, "salary": 49592, "from_date": "1993-11-25", "to_date": "1994-11-25"},
        meta={
            "operation": "REFRESH",
            "changeSequence": "",
            "schemaId": "8FB9D3C10EA4B25751DF9CC8318F0A02",
            "tableVersion": 1,
            "column_types": SALARY_TYPES,
        },
    )
    assert row.seq == "0" * 35 and len(row.seq) == 35


def test_real_sample_metadata_in_earlier_file_of_the_batch():
    md_envelope, dt_envelope, _, _ = real_sample()
    dec = decoder()
    [schema_event] = events(list(dec.decode(md_envelope, "part-0001.avro")))
    [row] = events(list(dec.decode(dt_envelope, "part-0002.avro")))
    assert schema_event.op == "SCHEMA" and row.op == "UPSERT" and row.source == Source("part-0002.avro", 0)
    # a fresh decoder (another batch without the metadata) rejects and keeps the data message
    [rejected] = decode(dt_envelope, "part-0002.avro")
    assert isinstance(rejected, Rejected) and rejected.raw == dt_envelope
    assert rejected.error.startswith(
        "data message uses schema id 8FB9D3C10EA4B25751DF9CC8318F0A02, which no metadata message announced"
    )


def test_real_sample_envelope_bytes_layout():
    md_envelope, dt_envelope, md, _ = real_sample()
    assert md_envelope.startswith(b"atMSG\x04MD\x00\x02")  # magic, "MD", headers null, schema id present
    assert dt_envelope.startswith(b"atMSG\x04DT\x00\x02")
    envelope_record, after = qlik_avro.read_envelope(dt_envelope, 0, len(dt_envelope))
    assert after == len(dt_envelope)
    assert envelope_record["messageSchemaId"] == md["messageSchemaId"] and envelope_record["messageSchema"] is None


# --- the vendor doc's mask example and the real-data bit order ---------------------------------------


MASKED = [
    ("C1", "INT4", ["null", "int"], 1),
    ("C2", "STRING", ["null", "string"], 0),
    ("C3", "STRING", ["null", "string"], 0),
    ("C4", "STRING", ["null", "string"], 0),
]


@pytest.mark.parametrize("form", ["string", "bytes"])
def test_seed_mask_example_0b_is_ordinals_1_2_4(form):
    # Seed: "If UPDATE mask is 0B hexadecimal, which is 1011 binary – it means that the columns at
    # ordinals 1, 2 and 4 were changed."
    table = Table("SID-M", "S.M", MASKED, masks=form)
    mask = "0B" if form == "string" else b"\x0b"
    data = {"C1": 1, "C2": None, "C3": None, "C4": "d"}
    [_, update] = events(
        decode(table.metadata() + table.data("UPDATE", data, seq(1), column_mask=mask, change_mask=mask))
    )
    assert update.after == {"C1": 1, "C2": None, "C4": "d"}  # C3 not replicated: missing; C2 NULL
    assert "C3" not in update.after and "C2" in update.after
    assert update.meta["columnMask"] == "0B" and update.meta["changeMask"] == "0B"
    assert [o for o in range(1, 5) if has_bit(mask_number("0B"), o)] == [1, 2, 4]


def test_masks_are_one_big_endian_number_bit_0_is_ordinal_1():
    columns = [(f"C{i}", "INT4", ["null", "int"], 1 if i == 1 else 0) for i in range(1, 11)]
    table = Table("SID-BE", "S.BE", columns)
    data = {f"C{i}": i for i in range(1, 11)}
    # 0x0201: bits 0 and 9 -> ordinals 1 and 10 (the doc's little-endian reading would give 2 and 9)
    items = decode(table.metadata() + table.data("INSERT", data, seq(1), column_mask=b"\x02\x01"))
    [_, insert] = events(items)
    assert insert.after == {"C1": 1, "C10": 10}
    [_, same] = events(
        decode(
            Table("SID-BE", "S.BE", columns, masks="string").metadata()
            + Table("SID-BE", "S.BE", columns, masks="string").data("INSERT", data, seq(1), column_mask="0201")
        )
    )
    assert same.after == {"C1": 1, "C10": 10}


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=1, max_value=40).flatmap(lambda n: st.tuples(st.just(n), st.sets(st.integers(1, n)))))
def test_property_mask_law(case):
    n, present = case
    number = sum(1 << (o - 1) for o in present)
    width = max(1, (n + 7) // 8)
    as_bytes, as_hex = number.to_bytes(width, "big"), f"{number:0{2 * width}X}"
    for mask in (as_bytes, as_hex):
        assert {o for o in range(1, n + 1) if has_bit(mask_number(mask), o)} == present


def test_no_column_mask_means_all_present_and_nulls_stay():
    table = customers()
    [_, insert] = events(decode(table.metadata() + table.data("INSERT", {"ID": 1, "NAME": "a"}, seq(1))))
    assert insert.after == {"ID": 1, "NAME": "a", "CITY": None, "BALANCE": None}


def test_bad_mask_rejected():
    table = Table("SID-M", "S.M", MASKED, masks="string")
    items = decode(table.metadata() + table.data("INSERT", {"C1": 1}, seq(1), column_mask="0Z"))
    [_, rejected] = items
    assert isinstance(rejected, Rejected)
    assert rejected.error == "data message of S.M (schema id SID-M): bad mask: '0Z' is not hexadecimal"


# --- operations, ordering, transactions -----------------------------------------------------------------


def test_operations_every_field():
    table = customers()
    stream = (
        table.metadata()
        + table.data("REFRESH", {"ID": 1, "NAME": "Ann", "CITY": "Oslo", "BALANCE": "10.50"})
        + table.data(
            "INSERT",
            {"ID": 2, "NAME": "Bob", "CITY": None, "BALANCE": "0.00"},
            seq(7),
            tx="00000000000000000000000000120001",
            counter=1,
            last=False,
            timestamp="2024-01-02T03:04:05.678",
            stream="00000000.01ab5068.00000001.0000.02.0000:88.67945.16",
            change_mask=b"\x0f",
            column_mask=b"\x0f",
        )
        + table.data(
            "UPDATE",
            {"ID": 2, "NAME": "Bobby", "CITY": None, "BALANCE": "1"},
            seq(8),
            before={"ID": 2, "NAME": "Bob", "CITY": None, "BALANCE": "0.00"},
            tx="00000000000000000000000000120001",
            counter=2,
            last=False,
            timestamp="2024-01-02 03:04:05.679000",
        )
        + table.data(
            "DELETE", {"ID": 1, "NAME": "Ann", "CITY": "Oslo", "BALANCE": "10.50"}, seq(9), counter=3, last=True
        )
    )
    schema_event, refresh, insert, update, delete = events(decode(stream, "cust.avro"))
    assert schema_event.op == "SCHEMA" and schema_event.table == "SALES.CUSTOMERS"
    assert schema_event.ddl["keys"] == ["ID"] and schema_event.ddl["version"] == 1
    assert [c["type"] for c in schema_event.ddl["columns"]] == ["bigint", "string", "string", "decimal(10,2)"]

    assert (refresh.op, refresh.seq, refresh.event_ts, refresh.tx_id) == ("UPSERT", REFRESH_SEQ, None, None)
    assert refresh.after == {"ID": 1, "NAME": "Ann", "CITY": "Oslo", "BALANCE": Decimal("10.50")}

    assert insert == ChangeEvent(
        table="SALES.CUSTOMERS",
        op="INSERT",
        seq="20240102030405120000000000000000007",
        event_ts=dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
        source=insert.source,
        tx_id="00000000000000000000000000120001",
        tx_pos=1,
        tx_last=False,
        keys=["ID"],
        before=None,
        after={"ID": 2, "NAME": "Bob", "CITY": None, "BALANCE": Decimal("0.00")},
        meta={
            "operation": "INSERT",
            "changeSequence": "20240102030405120000000000000000007",
            "timestamp": "2024-01-02T03:04:05.678",
            "streamPosition": "00000000.01ab5068.00000001.0000.02.0000:88.67945.16",
            "transactionId": "00000000000000000000000000120001",
            "changeMask": "0F",
            "columnMask": "0F",
            "schemaId": "SID-CUST-1",
            "tableVersion": 1,
            "column_types": {"ID": "bigint", "NAME": "string", "CITY": "string", "BALANCE": "decimal(10,2)"},
        },
    )
    assert update.op == "UPDATE" and update.before == {"ID": 2, "NAME": "Bob", "CITY": None, "BALANCE": Decimal("0.00")}
    assert update.after["NAME"] == "Bobby" and update.after["BALANCE"] == 1
    assert update.event_ts == dt.datetime(2024, 1, 2, 3, 4, 5, 679000, tzinfo=UTC)
    assert (update.tx_pos, update.tx_last) == (2, False)
    assert delete.op == "DELETE" and delete.after is None and delete.before["ID"] == 1
    assert (delete.tx_id, delete.tx_pos, delete.tx_last) == (None, 3, True)
    # string order of seq is commit order; REFRESH rows sort before every change
    ordered = [refresh, insert, update, delete]
    assert sorted(ordered, key=lambda e: e.seq) == ordered
    offsets = [e.source.offset for e in (schema_event, *ordered)]
    assert offsets == sorted(offsets) and all(stream[o : o + 5] == b"atMSG" for o in offsets)


def test_change_sequence_forms():
    table = customers()
    data = {"ID": 1}
    stream = table.metadata() + b"".join(
        [
            table.data("INSERT", data, "12345"),  # shorter: left-padded to 35
            table.data("INSERT", data, ""),  # no changeSequence outside REFRESH: cannot be ordered
            table.data("UPDATE", data, "2024-01-02"),
            table.data("REFRESH", data, seq(3)),  # a REFRESH that has one keeps it
        ]
    )
    _, padded, no_seq, bad_seq, refresh = decode(stream)
    assert padded.seq == "0" * 30 + "12345" and padded.meta["changeSequence"] == "12345"
    assert isinstance(no_seq, Rejected) and no_seq.error.endswith("an INSERT without changeSequence cannot be ordered")
    assert isinstance(bad_seq, Rejected) and bad_seq.error.endswith("changeSequence '2024-01-02' is not digits")
    assert refresh.seq == seq(3)


def test_typed_values_from_text_and_logical_types():
    columns = [
        ("ID", "INT8", ["null", "string"], 1),
        ("AMOUNT", "NUMERIC", ["null", "string"], 0),
        ("WHEN", "DATETIME", ["null", "string"], 0),
        ("DAY", "DATE", ["null", "string"], 0),
        ("RATE", "REAL8", ["null", "double"], 0),
        ("RAW", "BYTES", ["null", "bytes"], 0),
        ("PRICE", "NUMERIC", ["null", {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3}], 0),
        ("AT", "DATETIME", ["null", {"type": "long", "logicalType": "timestamp-micros"}], 0),
        ("ON", "DATE", ["null", {"type": "int", "logicalType": "date"}], 0),
        ("FLAG", "BOOLEAN", ["null", "boolean"], 0),
        ("NOTE", "CLOB", ["null", "string"], 0),
    ]
    table = Table("SID-T", "S.T", columns, precision={"AMOUNT": (12, 2), "PRICE": (12, 3)})
    data = {
        "ID": "9000000000",
        "AMOUNT": "17520.00",
        "WHEN": "2019-05-02 18:17:29.123456",
        "DAY": "2019-05-02",
        "RATE": 0.1,
        "RAW": b"\x00\xff",
        "PRICE": Decimal("-1.250"),
        "AT": dt.datetime(2020, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
        "ON": dt.date(1999, 12, 31),
        "FLAG": True,
        "NOTE": "x",
    }
    [schema_event, insert] = events(decode(table.metadata() + table.data("INSERT", data, seq(1))))
    assert insert.after == {
        "ID": 9000000000,
        "AMOUNT": Decimal("17520.00"),
        "WHEN": "2019-05-02T18:17:29.123456Z",
        "DAY": "2019-05-02",
        "RATE": Decimal("0.1"),
        "RAW": b"\x00\xff",
        "PRICE": Decimal("-1.250"),
        "AT": "2020-01-01T00:00:00.000001Z",
        "ON": "1999-12-31",
        "FLAG": True,
        "NOTE": "x",
    }
    assert str(insert.after["AMOUNT"]) == "17520.00" and type(insert.after["ID"]) is int
    assert insert.meta["column_types"] == {
        "ID": "bigint",
        "AMOUNT": "decimal(12,2)",
        "WHEN": "timestamp",
        "DAY": "date",
        "RATE": "double",
        "RAW": "binary",
        "PRICE": "decimal(12,3)",
        "AT": "timestamp",
        "ON": "date",
        "FLAG": "boolean",
        "NOTE": "string",
    }
    assert schema_event.meta["column_types"] == insert.meta["column_types"]


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("ID", "12a", "data column ID (INT8): '12a' is not an integer"),
        ("AMOUNT", "1,5", "data column AMOUNT (NUMERIC): '1,5' is not a number"),
        ("WHEN", "yesterday", "data column WHEN (DATETIME): 'yesterday' is not a timestamp"),
        ("DAY", "2019-13-01", "data column DAY (DATE): '2019-13-01' is not a date (YYYY-MM-DD)"),
    ],
)
def test_wrong_typed_text_rejected(column, value, message):
    columns = [
        ("ID", "INT8", ["null", "string"], 1),
        ("AMOUNT", "NUMERIC", ["null", "string"], 0),
        ("WHEN", "DATETIME", ["null", "string"], 0),
        ("DAY", "DATE", ["null", "string"], 0),
    ]
    table = Table("SID-T", "S.T", columns)
    good = table.data("INSERT", {"ID": "1"}, seq(1))
    bad = table.data("INSERT", {"ID": "2", column: value}, seq(2))
    _, ok1, rejected, ok2 = decode(table.metadata() + good + bad + good)
    assert isinstance(ok1, ChangeEvent) and isinstance(ok2, ChangeEvent)
    assert isinstance(rejected, Rejected) and rejected.raw == bad
    assert rejected.error == f"data message of S.T (schema id SID-T): {message}"


def test_keys_and_table_options_override():
    table = customers()
    items = events(decode(table.metadata() + table.data("INSERT", {"ID": 1}, seq(1)), keys="NAME,CITY", table="X.Y"))
    assert [(e.table, e.keys) for e in items] == [("X.Y", ["NAME", "CITY"]), ("X.Y", ["NAME", "CITY"])]
    assert items[0].ddl["keys"] == ["NAME", "CITY"]


def test_table_without_primary_key_has_no_keys():
    table = Table("SID-NK", "S.NOKEY", [("A", "STRING", ["null", "string"], 0)])
    schema_event, row = events(decode(table.metadata() + table.data("INSERT", {"A": "x"}, seq(1))))
    assert schema_event.keys is None and schema_event.ddl["keys"] == [] and row.keys is None


def test_envelope_headers_kept_in_meta():
    table = customers()
    data = envelope("DT", table.message("INSERT", {"ID": 1}, seq(1)), table.schema_id, headers={"k": "v"})
    [_, row] = events(decode(table.metadata() + data))
    assert row.meta["envelope_headers"] == {"k": "v"}


# --- several tables, a table version change ---------------------------------------------------------------


def test_multi_table_stream_with_table_version_change():
    cust_v1 = customers()
    orders = Table(
        "SID-ORD-1",
        "SALES.ORDERS",
        [
            ("ORDER_ID", "INT8", ["null", "long"], 1),
            ("LINE", "INT2", ["null", "int"], 2),
            ("QTY", "INT4", ["null", "int"], 0),
        ],
    )
    cust_v2 = Table(
        "SID-CUST-2",
        "SALES.CUSTOMERS",
        [*CUSTOMERS, ("EMAIL", "WSTRING", ["null", "string"], 0)],
        version=2,
        precision={"BALANCE": (10, 2)},
    )
    stream = b"".join(
        [
            cust_v1.metadata(),
            orders.metadata(),
            cust_v1.data("INSERT", {"ID": 1, "NAME": "a"}, seq(1), tx="T1", counter=1, last=False),
            orders.data("INSERT", {"ORDER_ID": 10, "LINE": 1, "QTY": 5}, seq(2), tx="T1", counter=2, last=True),
            cust_v2.metadata("2024-01-02T03:05:00.000"),  # DDL on the source: new version, new schema id
            cust_v2.data("UPDATE", {"ID": 1, "NAME": "a", "EMAIL": "a@x"}, seq(3), before={"ID": 1, "NAME": "a"}),
            cust_v1.data("DELETE", {"ID": 9}, seq(4)),  # a late message of the old version still decodes
            cust_v1.metadata(),  # metadata sent again (task restart): no new SCHEMA event
            orders.data("DELETE", {"ORDER_ID": 10, "LINE": 1}, seq(5)),
        ]
    )
    items = events(decode(stream, "mixed.avro"))
    assert [(e.op, e.table) for e in items] == [
        ("SCHEMA", "SALES.CUSTOMERS"),
        ("SCHEMA", "SALES.ORDERS"),
        ("INSERT", "SALES.CUSTOMERS"),
        ("INSERT", "SALES.ORDERS"),
        ("SCHEMA", "SALES.CUSTOMERS"),
        ("UPDATE", "SALES.CUSTOMERS"),
        ("DELETE", "SALES.CUSTOMERS"),
        ("DELETE", "SALES.ORDERS"),
    ]
    schemas = [e for e in items if e.op == "SCHEMA"]
    assert [(e.ddl["version"], e.meta["schemaId"]) for e in schemas] == [
        (1, "SID-CUST-1"),
        (1, "SID-ORD-1"),
        (2, "SID-CUST-2"),
    ]
    assert [c["name"] for c in schemas[2].ddl["columns"]] == ["ID", "NAME", "CITY", "BALANCE", "EMAIL"]
    assert schemas[1].keys == ["ORDER_ID", "LINE"]
    assert schemas[2].event_ts == dt.datetime(2024, 1, 2, 3, 5, tzinfo=UTC)
    rows_ = [e for e in items if e.op != "SCHEMA"]
    assert [e.meta["tableVersion"] for e in rows_] == [1, 1, 2, 1, 1]
    assert rows_[2].after == {"ID": 1, "NAME": "a", "CITY": None, "BALANCE": None, "EMAIL": "a@x"}
    assert rows_[2].before == {"ID": 1, "NAME": "a", "CITY": None, "BALANCE": None, "EMAIL": None}
    assert rows_[2].meta["column_types"]["EMAIL"] == "string"
    assert [(e.tx_id, e.tx_pos, e.tx_last) for e in rows_[:2]] == [("T1", 1, False), ("T1", 2, True)]
    assert [e.seq for e in rows_] == [seq(n) for n in (1, 2, 3, 4, 5)]
    assert rows_[4].before == {"ORDER_ID": 10, "LINE": 1, "QTY": None} and rows_[4].keys == ["ORDER_ID", "LINE"]


def test_data_before_metadata_rejected_then_replayable():
    table = customers()
    early = table.data("INSERT", {"ID": 1}, seq(1))
    late = table.data("INSERT", {"ID": 2}, seq(2))
    stream = early + table.metadata() + late
    rejected, schema_event, row = decode(stream, "batch.avro")
    assert isinstance(rejected, Rejected) and rejected.source == Source("batch.avro", 0) and rejected.raw == early
    assert rejected.error == (
        "data message uses schema id SID-CUST-1, which no metadata message announced before it (in this file or "
        "an earlier file of the batch); it is kept so that a run that reads the metadata message first can decode it"
    )
    assert schema_event.op == "SCHEMA" and row.after["ID"] == 2
    # replay: the quarantined bytes decode once the metadata has been read
    dec = decoder()
    list(dec.decode(table.metadata(), "metadata.avro"))
    [replayed] = events(list(dec.decode(rejected.raw, "quarantine")))
    assert replayed.after["ID"] == 1


# --- framing and bad input ---------------------------------------------------------------------------------


def stream_of_three() -> tuple[bytes, bytes, bytes, bytes]:
    table = customers()
    return (
        table.metadata(),
        table.data("INSERT", {"ID": 1, "NAME": "x" * 40}, seq(1)),
        table.data("INSERT", {"ID": 2, "NAME": "y" * 40}, seq(2)),
        table.data("INSERT", {"ID": 3, "NAME": "z" * 40}, seq(3)),
    )


def test_truncated_envelope_rejected_rest_decodes():
    md, a, b, c = stream_of_three()
    cut = b[: len(b) // 2]
    data = md + a + cut + c
    items = decode(data)
    assert [type(i) for i in items] == [ChangeEvent, ChangeEvent, Rejected, ChangeEvent]
    rejected = items[2]
    assert rejected.source.offset == len(md) + len(a) and rejected.raw == cut
    assert rejected.error.startswith(f"envelope at offset {len(md) + len(a)} is cut short")
    assert items[3].after["ID"] == 3 and items[3].source.offset == len(md) + len(a) + len(cut)


def test_truncated_last_envelope():
    md, a, b, _ = stream_of_three()
    items = decode(md + a + b[:-7])
    assert [type(i) for i in items] == [ChangeEvent, ChangeEvent, Rejected]
    start = len(md) + len(a)
    assert items[2].source.offset == start
    assert re.fullmatch(
        rf"envelope at offset {start} declares \d+ bytes for its message but only \d+ remain; "
        rf"skipped {len(b) - 7} bytes up to the end of the file",
        items[2].error,
    )
    assert items[2].raw == b[:-7]


def test_separators_and_junk_between_envelopes():
    md, a, b, c = stream_of_three()
    data = b"\n" + md + b"\r\n" + a + b"\n" + b"GARBAGE!" + b + b"\n\n" + c + b"\n"
    items = decode(data)
    assert [type(i) for i in items] == [ChangeEvent, ChangeEvent, Rejected, ChangeEvent, ChangeEvent]
    junk = items[2]
    assert junk.source.offset == data.index(b"GARBAGE!") and junk.raw == b"GARBAGE!"
    assert junk.error == (
        f"8 bytes at offset {junk.source.offset} are not a Qlik envelope (an envelope starts with 'atMSG'); "
        f"skipped up to the next envelope at offset {junk.source.offset + 8}"
    )
    assert [e.after["ID"] for e in items if isinstance(e, ChangeEvent) and e.op != "SCHEMA"] == [1, 2, 3]
    assert all(data[e.source.offset : e.source.offset + 5] == b"atMSG" for e in items if isinstance(e, ChangeEvent))


def test_bad_envelopes_each_rejected():
    md, a, _, c = stream_of_three()
    unknown_type = envelope("XX", b"\x00", "SID-CUST-1")
    bad_branch = b"atMSG\x04DT\x06"  # headers union branch 3
    huge = b"atMSG\x04DT\x00\x00\x00" + b"\xfe\xff\xff\xff\x0f"  # message of 2 GiB declared
    no_id = envelope("DT", b"\x00")
    no_schema_md = envelope("MD", b"\x00", "X")
    parts = [md, unknown_type, a, bad_branch, no_id, no_schema_md, huge, c]
    data = b"".join(parts)
    items = decode(data)
    assert [type(i).__name__ for i in items] == [
        "ChangeEvent",
        "Rejected",
        "ChangeEvent",
        "Rejected",
        "Rejected",
        "Rejected",
        "Rejected",
        "ChangeEvent",
    ]
    offsets = [sum(len(p) for p in parts[:i]) for i in range(len(parts))]
    assert [i.source.offset for i in items] == offsets
    assert items[1].error == "envelope type 'XX' is neither MD (metadata) nor DT (data)"
    assert items[3].error.startswith(f"envelope at offset {offsets[3]} has union branch 3 for its headers")
    assert items[4].error == "data envelope has no messageSchemaId: its schema cannot be found"
    assert items[5].error.startswith("metadata envelope has no messageSchema")
    assert items[6].error.startswith(
        f"envelope at offset {offsets[6]} declares 2147483647 bytes for its message, more than the limit of 67108864"
    )
    assert items[7].after["ID"] == 3


def test_message_not_matching_its_schema_rejected():
    table = customers()
    good = table.data("INSERT", {"ID": 1}, seq(1))
    trailing = envelope("DT", table.message("INSERT", {"ID": 2}, seq(2)) + b"\x00\x00", table.schema_id)
    short = envelope("DT", table.message("INSERT", {"ID": 3}, seq(3))[:-3], table.schema_id)
    _, ok, r1, r2, ok2 = decode(table.metadata() + good + trailing + short + good)
    assert isinstance(ok, ChangeEvent) and isinstance(ok2, ChangeEvent)
    prefix = "data message cannot be read with the dataSchema of schema id SID-CUST-1 (SALES.CUSTOMERS): "
    assert r1.error == prefix + "2 bytes remain after the record: not written with this schema"
    assert r2.error == prefix + "the bytes end early: truncated, or not written with this schema"


def test_unsafe_schemas_refused():
    recursive = {
        "type": "record",
        "name": "Node",
        "fields": [{"name": "next", "type": ["null", "Node"]}],
    }
    md = envelope("MD", b"\x00", "R", json.dumps(recursive))
    [rejected] = decode(md)
    assert rejected.error == (
        "the metadata envelope's messageSchema: type Node refers to itself; recursive schemas are not supported"
    )
    zero_width = data_schema([("A", {"type": "array", "items": "null"})])
    table = Table("SID-Z", "S.Z", [("A", "STRING", "string", 0)])
    table.data_schema = zero_width
    dec = decoder()
    [bad_md] = list(dec.decode(table.metadata(), "f"))
    assert isinstance(bad_md, Rejected)
    assert bad_md.error == (
        "metadata message: the dataSchema of schema id SID-Z (S.Z): an array's items take no bytes "
        "(a corrupt count would loop without end)"
    )
    [bad_dt] = list(dec.decode(envelope("DT", b"\x02\x00", "SID-Z"), "g"))
    assert bad_dt.error.startswith("data message uses schema id SID-Z, whose metadata was rejected: the dataSchema")
    deep: Any = "string"
    for _ in range(100):
        deep = {"type": "array", "items": deep}
    [too_deep] = decode(envelope("MD", b"\x00", "D", json.dumps(deep)))
    assert "types nest deeper than 64 levels" in too_deep.error
    [not_json] = decode(envelope("MD", b"\x00", "J", "{nope"))
    assert not_json.error.startswith("the metadata envelope's messageSchema is not JSON")


def test_bad_metadata_rejected():
    table = customers()
    schema = metadata_schema(["A"])
    base = {
        "schemaId": "S1",
        "lineage": {"server": "s", "task": "t", "schema": "S", "table": "T", "tableVersion": 1, "timestamp": TS},
        "tableStructure": {"tableColumns": {"A": {p: 0 for p in _PROPS} | {"type": "INT4", "nullable": True}}},
        "dataSchema": json.dumps(table.data_schema),
    }
    [rejected] = decode(envelope("MD", avro(schema, base), "S1", json.dumps(schema)))
    assert rejected.error == "metadata message: schema id S1 (S.T): column A has no ordinal >= 1 (0)"
    bad_data_schema = {**base, "dataSchema": "[]"}
    bad_data_schema["tableStructure"]["tableColumns"]["A"]["ordinal"] = 1
    [rejected] = decode(envelope("MD", avro(schema, bad_data_schema), "S1", json.dumps(schema)))
    assert rejected.error == (
        "metadata message: the dataSchema of schema id S1 (S.T) is not a record with data and headers fields"
    )
    bad_data_schema["dataSchema"] = '{"type": "record", "name": "X", "fields": [{"name": "data", "type": "nope"}]}'
    [rejected] = decode(envelope("MD", avro(schema, bad_data_schema), "S1", json.dumps(schema)))
    assert rejected.error.startswith(
        "metadata message: the dataSchema of schema id S1 (S.T) is not a valid Avro schema"
    )


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=400), st.integers(min_value=0, max_value=3))
def test_property_any_bytes_terminate_with_increasing_offsets(noise, where):
    md, a, b, c = stream_of_three()
    parts = [md, a, b, c]
    parts.insert(where + 1, noise)
    data = b"".join(parts)
    items = decode(data)
    offsets = [i.source.offset for i in items]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
    assert all(0 <= o < len(data) for o in offsets)
    if b"atMSG" not in noise:
        # the noise costs at most the envelope it lands in front of; the metadata always decodes
        assert isinstance(items[0], ChangeEvent) and items[0].op == "SCHEMA"
        decoded = {e.after["ID"] for e in items if isinstance(e, ChangeEvent) and e.op == "INSERT"}
        assert len(decoded) >= 2


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=300))
def test_property_random_bytes_never_crash(data):
    for item in decode(b"atMSG" + data) + decode(data):
        assert isinstance(item, (ChangeEvent, Rejected))


# --- Avro object container files ---------------------------------------------------------------------------


def ocf(schema: Any, records: list[Any], codec: str = "null", sync_interval: int = 16000) -> bytes:
    if codec == "zstandard":  # fastavro writes zstandard only with backports.zstd: one block, by hand
        return zstd_ocf(schema, records)
    buffer = io.BytesIO()
    fastavro.writer(buffer, fastavro.parse_schema(schema), records, codec=codec, sync_interval=sync_interval)
    return buffer.getvalue()


def zstd_ocf(schema: Any, records: list[Any], frames: int = 1) -> bytes:
    import zstandard

    def long(n: int) -> bytes:
        return avro("long", n)

    def text(b: bytes) -> bytes:
        return long(len(b)) + b

    sync = bytes(range(16))
    header = b"Obj\x01" + long(2) + text(b"avro.schema") + text(json.dumps(schema).encode())
    header += text(b"avro.codec") + text(b"zstandard") + long(0) + sync
    step = -(-len(records) // frames)  # a writer that flushes mid-block starts a new frame
    parts = [records[i : i + step] for i in range(0, len(records), step)]
    body = b"".join(zstandard.ZstdCompressor().compress(b"".join(avro(schema, r) for r in p)) for p in parts)
    return header + long(len(records)) + long(len(body)) + body + sync


def envelope_records(*envelopes: bytes) -> list[dict[str, Any]]:
    return [qlik_avro.read_envelope(e, 0, len(e))[0] for e in envelopes]


@pytest.mark.parametrize("codec", ["null", "deflate", "bzip2", "xz", "zstandard"])
def test_ocf_of_envelopes(codec):
    md, a, b, c = stream_of_three()
    data = ocf(ENVELOPE_SCHEMA, envelope_records(md, a, b, c), codec=codec)
    items = events(decode(data, "envelopes.avro"))
    assert [e.op for e in items] == ["SCHEMA", "INSERT", "INSERT", "INSERT"]
    assert [e.after["ID"] for e in items[1:]] == [1, 2, 3]
    assert without_source(items) == without_source(events(decode(md + a + b + c)))
    if codec == "null":  # uncompressed: each record has its own byte offset
        offsets = [e.source.offset for e in items]
        assert offsets == sorted(set(offsets)) and data[offsets[0] : offsets[0] + 5] == b"atMSG"


def test_ocf_zstandard_block_of_several_frames_is_read_whole():
    md, a, b, c = stream_of_three()
    data = zstd_ocf(ENVELOPE_SCHEMA, envelope_records(md, a, b, c), frames=3)
    items = events(decode(data, "frames.avro"))
    assert [e.op for e in items] == ["SCHEMA", "INSERT", "INSERT", "INSERT"]
    assert [e.after["ID"] for e in items[1:]] == [1, 2, 3]


def test_ocf_of_envelope_bytes_and_stateful_across_files():
    md, a, b, c = stream_of_three()
    dec = decoder()
    first = list(dec.decode(ocf("bytes", [md, a]), "one.avro"))
    second = list(dec.decode(ocf("bytes", [b, c, b"atMSG\x04DT"]), "two.avro"))
    assert [e.op for e in events(first)] == ["SCHEMA", "INSERT"]
    ok, [bad] = split(second)
    assert [e.after["ID"] for e in ok] == [2, 3]
    assert bad.error.startswith("envelope in the OCF record at offset") and "ends inside a number" in bad.error


def test_ocf_bare_metadata_and_data_messages():
    table = customers()
    md_record = fastavro.schemaless_reader(
        io.BytesIO(qlik_avro.read_envelope(table.metadata(), 0, len(table.metadata()))[0]["message"]),
        fastavro.parse_schema(metadata_schema([c for c, _, _, _ in CUSTOMERS])),
        None,
    )
    metadata_file = ocf(metadata_schema([c for c, _, _, _ in CUSTOMERS]), [md_record])
    data_records = [
        fastavro.schemaless_reader(io.BytesIO(table.message("INSERT", {"ID": i}, seq(i))), table.data_schema, None)
        for i in (1, 2)
    ]
    data_file = ocf(table.data_schema, data_records)
    dec = decoder()
    unknown = list(dec.decode(data_file, "data-first.avro"))
    assert all(isinstance(r, Rejected) for r in unknown) and len(unknown) == 2
    assert unknown[0].error.startswith("bare data message in an OCF whose schema no metadata message announced")
    [schema_event] = events(list(dec.decode(metadata_file, "metadata.avro")))
    assert schema_event.op == "SCHEMA" and schema_event.table == "SALES.CUSTOMERS"
    decoded = events(list(dec.decode(data_file, "data.avro")))
    assert [(e.op, e.after["ID"], e.seq) for e in decoded] == [("INSERT", 1, seq(1)), ("INSERT", 2, seq(2))]


def test_ocf_corrupt_block_rest_decodes():
    md, a, b, c = stream_of_three()
    data = bytearray(ocf(ENVELOPE_SCHEMA, envelope_records(md, a, b, c), sync_interval=1))
    header_end = data.index(b"atMSG") - 2
    # damage the second block's sync marker: decoding resumes after the next intact sync marker
    sync = bytes(data[header_end - 16 : header_end])
    second_sync = data.index(sync, data.index(sync, header_end) + 16)
    data[second_sync] ^= 0xFF
    items = decode(bytes(data), "damaged.avro")
    ok, bad = split(items)
    assert ok[0].op == "SCHEMA" and len(bad) >= 1
    assert bad[0].error.startswith("OCF block 1 at offset") and "sync marker" in bad[0].error
    assert "skipped" in bad[0].error and "up to the next sync marker" in bad[0].error
    assert [e.after["ID"] for e in ok if e.op == "INSERT"] == [3]


def test_ocf_other_records_rejected_as_a_whole():
    data = ocf({"type": "record", "name": "Other", "fields": [{"name": "x", "type": "int"}]}, [{"x": 1}])
    [rejected] = decode(data, "other.avro")
    assert rejected.source == Source("other.avro", 0)
    assert rejected.error.startswith("Avro OCF file cannot be read: its records are neither Qlik envelopes")
    [truncated] = decode(data[:12], "short.avro")
    assert truncated.error.startswith("Avro OCF header is corrupt or truncated")


def without_source(items: list[ChangeEvent]) -> list[dict[str, Any]]:
    out = []
    for e in items:
        d = e.to_dict()
        d.pop("source")
        out.append(d)
    return out


def test_empty_file():
    assert decode(b"") == []
    assert decode(b"\n\n") == []
