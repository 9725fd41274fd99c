"""debezium-json decoder: the Lindorm and Huawei CDL seed samples, real Debezium output from
Flink, Paimon and Debezium's own tests, Kafka Connect logical types, framing and bad input."""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.events.change import ChangeEvent, Rejected, Source, to_json
from cdclake.formats import debezium_json
from cdclake.formats import kafka_connect as kc
from cdclake.formats.debezium_json import DebeziumJsonDecoder
from cdclake.options import OptionError, Options
from cdclake.registry import get_decoder

FIXTURES = Path(__file__).parents[1] / "fixtures" / "debezium_json"
SEED = FIXTURES / "seed"
UTC = dt.UTC


def decoder(**options: str) -> DebeziumJsonDecoder:
    dec = get_decoder("debezium-json", Options(options))
    assert isinstance(dec, DebeziumJsonDecoder)
    return dec


def decode(data: bytes, file: str = "f.json", **options: str) -> list[ChangeEvent | Rejected]:
    return list(decoder(**options).decode(data, file))


def events(items: list[ChangeEvent | Rejected]) -> list[ChangeEvent]:
    assert all(isinstance(i, ChangeEvent) for i in items), [i for i in items if isinstance(i, Rejected)]
    return items  # type: ignore[return-value]


def split(items: list[ChangeEvent | Rejected]) -> tuple[list[ChangeEvent], list[Rejected]]:
    return [i for i in items if isinstance(i, ChangeEvent)], [i for i in items if isinstance(i, Rejected)]


def rows(items: list[ChangeEvent | Rejected]) -> list[ChangeEvent | Rejected]:
    """``items`` without SCHEMA events. A record with an inline schema is preceded by one when the schema
    is new for its table in the decoder; tests about values, types and framing look at the records only.
    The announcements are asserted in the seed and fixture tests below and in test_debezium_schema_events.py."""
    return [i for i in items if not (isinstance(i, ChangeEvent) and i.op == "SCHEMA")]


def announcement(
    table: str, seq: str, event_ts: dt.datetime | None, source: Source, columns: list[tuple[str, str | None]], keys=None
) -> ChangeEvent:
    """The SCHEMA event the decoder puts before the first row of ``table`` with an inline schema."""
    return ChangeEvent(
        table=table,
        op="SCHEMA",
        seq=seq,
        event_ts=event_ts,
        source=source,
        keys=keys,
        ddl={"columns": [{"name": n, "type": t} for n, t in columns], "keys": list(keys or [])},
        meta={"column_source": "schema"},
    )


def line(record: Any) -> bytes:
    return to_json(record).encode()


def payload(op: str = "c", **members: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "op": op,
        "ts_ms": 1700000000999,
        "before": None,
        "after": {"id": 1, "name": "a"},
        "source": {"connector": "postgresql", "db": "shop", "schema": "public", "table": "t", "lsn": 100, "txId": 7},
    }
    if op == "d":
        base["before"], base["after"] = {"id": 1, "name": "a"}, None
    base.update(members)
    return base


def with_schema(after_fields: list[dict[str, Any]], after: dict[str, Any], **members: Any) -> dict[str, Any]:
    struct = {"type": "struct", "fields": after_fields, "optional": True, "name": "srv.public.t.Value"}
    schema = {
        "type": "struct",
        "fields": [{**struct, "field": "before"}, {**struct, "field": "after"}],
        "optional": False,
        "name": "srv.public.t.Envelope",
    }
    return {"schema": schema, "payload": payload(after=after, **members)}


def test_registered_decoder_is_this_module():
    assert type(get_decoder("debezium-json")) is DebeziumJsonDecoder
    assert DebeziumJsonDecoder.format_id == "debezium-json" and DebeziumJsonDecoder.stateful is False


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"hbase": "maybe"}, "option hbase must be auto, true or false, not 'maybe'"),
        ({"schemas.enable": "true"}, "unknown option(s) schemas.enable for format debezium-json"),
    ],
)
def test_bad_options(options, message):
    with pytest.raises(OptionError) as info:
        get_decoder("debezium-json", Options(options))
    assert message in str(info.value)


# --- Lindorm seed samples (fixtures/debezium_json/seed, verbatim) -------------------------------------------

LINDORM_SOURCE = {
    "version": "v1.0",
    "db": "ld-xxxx",
    "namespace": "default",
    "table": "customers",
    "ts_ms": 1465491411807,
}
LINDORM_TS = dt.datetime(2016, 6, 9, 16, 56, 51, 807000, tzinfo=UTC)
LINDORM_SEQ = "00000001465491411807"


def lindorm_meta(op: str, **extra: Any) -> dict[str, Any]:
    return {"op": op, **extra, "source": LINDORM_SOURCE, "seq_from": "ts_ms", "ts_ms": 1465491411815}


def lindorm_event(name: str, op: str, offset: int, before: Any, after: Any, **meta: Any) -> ChangeEvent:
    return ChangeEvent(
        table="default.customers",
        op=op,
        seq=LINDORM_SEQ,
        event_ts=LINDORM_TS,
        source=Source(name, offset),
        before=before,
        after=after,
        meta=lindorm_meta({"INSERT": "c", "UPDATE": "u", "DELETE": "d"}[op], **meta),
    )


ANNE = {"id": "1004", "first_name": "Anne", "last_name": "Kretchmar"}
ANNE_MARIE = {"id": "1004", "first_name": "Anne Marie", "last_name": "Kretchmar"}
SEEDS_EXPECTED = {
    "lindorm_format_description.json": lindorm_event(
        "lindorm_format_description.json",
        "UPDATE",
        0,
        {"id": 1004, "name": "Jane"},
        {"id": 1004, "name": "Anne"},
        column_types={"id": "bigint", "name": "string"},
    ),
    "lindorm_sql_insert.json": lindorm_event("lindorm_sql_insert.json", "INSERT", 4, None, ANNE),
    "lindorm_sql_update.json": lindorm_event("lindorm_sql_update.json", "UPDATE", 4, ANNE_MARIE, ANNE),
    "lindorm_sql_delete.json": lindorm_event("lindorm_sql_delete.json", "DELETE", 4, ANNE_MARIE, None),
    "lindorm_sql_column_delete.json": lindorm_event(
        "lindorm_sql_column_delete.json",
        "UPDATE",
        4,
        ANNE_MARIE,
        {"id": "1004", "first_name": "Anne Marie", "last_name": None},
        deleted_columns=["last_name"],
    ),
}


@pytest.mark.parametrize("name", sorted(SEEDS_EXPECTED))
def test_lindorm_sql_seed_every_field(name):
    *announced, event = events(decode((SEED / name).read_bytes(), name))
    expected = SEEDS_EXPECTED[name]
    # Only the format description has a schema block: its columns are announced before the row.
    if name == "lindorm_format_description.json":
        columns = [("id", "bigint"), ("name", "string")]
        assert announced == [announcement("default.customers", LINDORM_SEQ, LINDORM_TS, Source(name, 0), columns)]
    else:
        assert announced == []
    for field in ("table", "op", "seq", "event_ts", "tx_id", "tx_pos", "tx_last", "keys", "before", "after", "ddl"):
        assert getattr(event, field) == getattr(expected, field), field
    assert event.meta == expected.meta
    assert event == expected
    assert (SEED / name).read_bytes()[event.source.offset : event.source.offset + 1] == b"{"


def test_lindorm_column_deletion_is_explicit_null_not_missing():
    [event] = events(decode((SEED / "lindorm_sql_column_delete.json").read_bytes()))
    assert "last_name" in event.after and event.after["last_name"] is None
    # the same shape outside Lindorm (no namespace) keeps the column missing
    record = json.loads((SEED / "lindorm_sql_column_delete.json").read_text())
    del record["payload"]["source"]["namespace"]
    [plain] = events(decode(line(record)))
    assert "last_name" not in plain.after and plain.table == "ld-xxxx.customers"


def test_lindorm_hbase_seed_every_field():
    name = "lindorm_hbase_insert.json"
    [event] = events(decode((SEED / name).read_bytes(), name))
    assert event == ChangeEvent(
        table="default.customers",
        op="INSERT",
        seq="00000001725258833727",
        event_ts=dt.datetime(2024, 9, 2, 6, 33, 53, 727000, tzinfo=UTC),
        source=Source(name, 0),
        keys=["ROW"],
        before=None,
        after={"ROW": b"user1", "f_name": b"lucky"},
        meta={
            "op": "c",
            "source": {
                "version": "v2.0",
                "db": "ld-xxxx",
                "namespace": "default",
                "table": "customers",
                "ts_ms": 1725258833727,
            },
            "seq_from": "ts_ms",
            "ts_ms": 1725258859839,
            "column_types": {"ROW": "binary", "f_name": "binary"},
        },
    )
    # bytes are written back as base64 (events.to_json): the same text as the source
    assert '"after":{"ROW":"dXNlcjE=","f_name":"bHVja3k="}' in to_json(event.to_dict())


def test_hbase_option_and_bad_base64():
    record = json.loads((SEED / "lindorm_hbase_insert.json").read_text())
    [as_text] = events(decode(line(record), hbase="false"))
    assert as_text.after == {"ROW": "dXNlcjE=", "f_name": "bHVja3k="} and as_text.keys is None
    record["payload"]["after"]["f_name"] = "not base64!"
    [rejected] = decode(line(record))
    assert isinstance(rejected, Rejected)
    assert rejected.error == (
        "after image: column f_name: HBase table values are base64 text, this one is a JSON string 'not base64!' "
        "(if this Lindorm table is an SQL table with a ROW column, set hbase=false)"
    )
    # hbase=true: every record's values are base64, whatever the columns
    forced = json.loads((SEED / "lindorm_sql_insert.json").read_text())
    forced["payload"]["after"] = {"id": "MTAwNA==", "f_first": "QW5uZQ=="}
    [event] = events(decode(line(forced), hbase="true"))
    assert event.after == {"id": b"1004", "f_first": b"Anne"} and event.keys == ["ROW"]


def test_hbase_update_deleting_a_column():
    record = json.loads((SEED / "lindorm_hbase_insert.json").read_text())
    record["payload"].update(op="u", before={"ROW": "dXNlcjE=", "f_name": "bHVja3k=", "f_age": "MzA="})
    [event] = events(decode(line(record)))
    assert event.op == "UPDATE" and event.before == {"ROW": b"user1", "f_name": b"lucky", "f_age": b"30"}
    assert event.after == {"ROW": b"user1", "f_name": b"lucky", "f_age": None}
    assert event.meta["deleted_columns"] == ["f_age"]


# --- Huawei CDL seed samples --------------------------------------------------------------------------------


def test_huawei_cdl_debezium_seed_every_field():
    name = "huawei_debezium_json.json"
    announced, event = events(decode((SEED / name).read_bytes(), name))
    # The inline schema is announced first: every column, decimalNum (vendor Decimal, no fixed scale) untyped.
    columns = [("count1", "bigint"), ("id", "bigint"), ("time1", "timestamp"), ("decimalNum", None)]
    assert announced == announcement(
        "public.ct_pg2hudi", event.seq, event.event_ts, Source(name, 4), columns, keys=["id"]
    )
    assert event == ChangeEvent(
        table="public.ct_pg2hudi",
        op="INSERT",
        seq="00000000163955586912",
        event_ts=dt.datetime(2024, 2, 4, 12, 14, 51, 235000, tzinfo=UTC),
        source=Source(name, 4),
        tx_id="57227663",
        keys=["id"],
        before=None,
        after={"count1": 14, "id": 35, "time1": None, "decimalNum": None},
        meta={
            "op": "c",
            "source": {
                "version": "1.4.0.Final",
                "connector": "postgresql",
                "name": "cdl",
                "ts_ms": 1707048891235,
                "snapshot": "false",
                "db": "cdl",
                "schema": "public",
                "table": "ct_pg2hudi",
                "txId": 57227663,
                "lsn": 163955586912,
            },
            "seq_from": "lsn",
            "ts_ms": 1707048984208,
            "message_version": "2.0",
            "message_type": "0",
            "unique": {"id": 35},
            "LOB_COLUMNS": None,
            "schema_name": "public.ct_pg2hudi",
            "column_types": {"count1": "bigint", "id": "bigint", "time1": "timestamp"},
        },
    )


def test_huawei_cdl_vendor_decimal_and_timestamp_forms():
    record = json.loads((SEED / "huawei_debezium_json.json").read_text())
    record["payload"]["after"].update(time1="2024-02-04 11:59:56.013", decimalNum="-123.4500")
    record["payload"]["LOB_COLUMNS"] = "doc"
    record["payload"]["HEARTBEAT_IDENTIFIER"] = "279fb050-0143-45c1-b184-50bc48c2461c"
    [event] = events(rows(decode(line(record))))
    assert event.after["time1"] == "2024-02-04T11:59:56.013000Z"
    assert event.after["decimalNum"] == Decimal("-123.4500") and str(event.after["decimalNum"]) == "-123.4500"
    assert event.meta["LOB_COLUMNS"] == "doc"
    assert event.meta["HEARTBEAT_IDENTIFIER"] == "279fb050-0143-45c1-b184-50bc48c2461c"
    record["payload"]["after"]["decimalNum"] = "12,5"
    [rejected] = decode(line(record))  # a rejected record announces nothing
    assert rejected.error == "after image: column decimalNum: '12,5' is not a decimal number"


def test_huawei_cdl_json_1_0_is_pointed_to_cdl_json():
    name = "huawei_cdl_json.json"
    [rejected] = decode((SEED / name).read_bytes(), name)
    assert isinstance(rejected, Rejected) and rejected.source == Source(name, 4)
    assert rejected.error == (
        "record is CDL JSON (message_version 1.0, OPERATION), not Debezium JSON: decode it with --format cdl-json"
    )
    assert rejected.raw == (SEED / name).read_bytes()[4:].rstrip()


# --- real samples: Debezium core serde tests ----------------------------------------------------------------

SERDE_AFTER = {"id": 1004, "first_name": "Anne", "last_name": "Kretchmar", "email": "annek@noanswer.org"}
SERDE_SOURCE = {
    "version": "0.10.0.Final",
    "connector": "mysql",
    "name": "mysql-server-1",
    "ts_ms": 0,
    "snapshot": False,
    "db": "inventory",
    "table": "customers",
    "server_id": 0,
    "gtid": None,
    "file": "mysql-bin.000003",
    "pos": 154,
    "row": 0,
    "thread": 7,
    "query": "INSERT INTO customers (first_name, last_name, email) VALUES ('Anne', 'Kretchmar', 'annek@noanswer.org')",
}
SERDE_SEQ = "0000000003" + "00000000000000000154" + "0000000000"


def test_serde_with_schema_every_field():
    name = "serde-with-schema.json"
    announced, event = events(decode((FIXTURES / "debezium_core_serde" / name).read_bytes(), name))
    columns = [("id", "bigint"), ("first_name", "string"), ("last_name", "string"), ("email", "string")]
    assert announced == announcement("inventory.customers", SERDE_SEQ, event.event_ts, Source(name, 0), columns)
    assert event == ChangeEvent(
        table="inventory.customers",
        op="INSERT",
        seq=SERDE_SEQ,
        event_ts=dt.datetime(2016, 6, 9, 16, 56, 51, 815000, tzinfo=UTC),  # source.ts_ms 0: the payload's
        source=Source(name, 0),
        before=None,
        after=SERDE_AFTER,
        meta={
            "op": "c",
            "source": SERDE_SOURCE,
            "seq_from": "binlog",
            "ts_ms": 1465491411815,
            "ts_us": 1465491411815000,
            "ts_ns": 1465491411815000000,
            "schema_name": "mysql-server-1.inventory.customers.Envelope",
            "column_types": {"id": "bigint", "first_name": "string", "last_name": "string", "email": "string"},
        },
    )


def test_serde_without_schema_and_update():
    [insert] = events(decode((FIXTURES / "debezium_core_serde" / "serde-without-schema.json").read_bytes()))
    assert (insert.op, insert.seq, insert.after, insert.before) == ("INSERT", SERDE_SEQ, SERDE_AFTER, None)
    assert "column_types" not in insert.meta and insert.meta["source"] == SERDE_SOURCE
    [update] = events(decode((FIXTURES / "debezium_core_serde" / "serde-update.json").read_bytes()))
    assert update.op == "UPDATE" and update.before == {**SERDE_AFTER, "first_name": "Anne-Marie"}
    assert update.after == SERDE_AFTER and update.seq == SERDE_SEQ


def test_serde_unwrapped_row_rejected():
    name = "serde-unwrapped.json"
    data = (FIXTURES / "debezium_core_serde" / name).read_bytes()
    [rejected] = decode(data, name)
    assert isinstance(rejected, Rejected) and rejected.source == Source(name, 0) and rejected.raw == data.rstrip()
    assert rejected.error == (
        "record has no op: it is not a Debezium change event (a row flattened by ExtractNewRecordState has no op, "
        "table or log position; land the unflattened envelope)"
    )


# --- real samples: Apache Flink ------------------------------------------------------------------------------


def test_flink_mysql_schema_include_all_records():
    name = "debezium-data-schema-include.txt"
    data = (FIXTURES / "flink_json" / name).read_bytes()
    announced, *items = events(decode(data, name))
    # One schema for the whole file: announced once, before the first row, with the rows' column types.
    assert announced.op == "SCHEMA" and announced.source == items[0].source and announced.seq == items[0].seq
    assert {c["name"]: c["type"] for c in announced.ddl["columns"]} == items[0].meta["column_types"]
    assert len(items) == 16
    starts = [i for i in range(len(data)) if i == 0 or data[i - 1 : i] == b"\n"]
    assert [e.source.offset for e in items] == starts
    ops: dict[str, int] = {}
    for e in items:
        ops[e.op] = ops.get(e.op, 0) + 1
    assert ops == {"INSERT": 11, "UPDATE": 4, "DELETE": 1}
    assert all(e.table == "inventory.products" for e in items)
    assert all(
        e.meta["column_types"] == {"id": "bigint", "name": "string", "description": "string", "weight": "double"}
        for e in items
    )
    first = items[0]
    assert first.after == {
        "id": 101,
        "name": "scooter",
        "description": "Small 2-wheel scooter",
        "weight": Decimal("3.140000104904175"),
    }
    assert first.seq == "0000000003" + "00000000000000000154" + "0000000000" and first.meta["seq_from"] == "binlog"
    assert first.event_ts == dt.datetime(2020, 5, 13, 7, 40, 6, 100000, tzinfo=UTC)  # snapshot: source.ts_ms 0
    last = items[-1]
    assert last.op == "DELETE" and last.after is None and last.before["id"] == 111
    assert last.event_ts == dt.datetime.fromtimestamp(last.meta["source"]["ts_ms"] / 1000, UTC)
    # binlog positions give the file's order
    assert [e.seq for e in items] == sorted(e.seq for e in items)


def test_flink_postgres_replica_identity():
    name = "debezium-postgres-data-replica-identity.txt"
    data = (FIXTURES / "flink_json" / name).read_bytes()
    items = decode(data, name)
    ok, [rejected] = split(items)
    assert len(ok) == 15 and items[-1] is rejected
    assert [e.op for e in ok] == ["UPSERT"] * 9 + ["UPDATE", "UPDATE", "INSERT", "INSERT", "UPDATE", "UPDATE"]
    assert all(e.table == "inventory.products" and e.meta["seq_from"] == "lsn" for e in ok)
    assert ok[0].seq == "00000000000034078720" and ok[0].tx_id == "601"
    assert ok[9].before is None and ok[9].after["description"] == "18oz carpenter hammer"  # REPLICA IDENTITY DEFAULT
    assert [e.seq for e in ok] == sorted(e.seq for e in ok)
    assert rejected.error == (
        "op 'd' has no before image: the deleted row cannot be identified "
        "(PostgreSQL tables need a primary key or REPLICA IDENTITY FULL)"
    )
    assert rejected.source.offset == data.rindex(b'{"before":null,"after":null')


# --- real samples: Apache Paimon (license comment headers) ------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "paimon/schema_alltype_flinkcdc/debezium-data-1.txt",
        "paimon/debezium24_decimal_string_keyvalue/debezium-avro-data-1.txt",
        "paimon/schema_null_delete/debezium-data-with-delete.txt",
        "paimon/schemaless_nullvalue/debezium-data-1.txt",
    ],
)
def test_paimon_license_header_is_one_rejected_record(path):
    data = (FIXTURES / path).read_bytes()
    items = decode(data, path)
    rejected = items[0]
    assert isinstance(rejected, Rejected) and rejected.source == Source(path, 0)
    assert rejected.raw.startswith(b"/*") and rejected.raw.endswith(b"*/")
    assert rejected.error == (
        "invalid JSON at line 1 column 1: Expecting value (a record is a JSON object starting with '{', this one "
        f"starts with '/'); skipped {len(rejected.raw)} bytes up to the next line starting with '{{' or null"
    )
    assert all(isinstance(i, ChangeEvent) for i in items[1:]) and items[1:]


def test_paimon_alltype_logical_types():
    path = "paimon/schema_alltype_flinkcdc/debezium-data-1.txt"
    [_, announced, event] = decode((FIXTURES / path).read_bytes(), path)
    after, types = event.after, event.meta["column_types"]
    # the SCHEMA event before the row names every column; its types are the row's column types
    assert [c["name"] for c in announced.ddl["columns"]] == list(after)
    assert {c["name"]: c["type"] for c in announced.ddl["columns"] if c["type"]} == types
    assert (event.op, event.table, event.seq, event.meta["seq_from"]) == (
        "UPSERT",
        "paimon_sync_table.all_types_table",
        "0" * 20,
        "ts_ms",
    )
    expected = {
        "pt": Decimal("1.1"),
        "_bit1": True,
        "_bit": base64.b64decode("xwcAAAAAAAA="),
        "_tinyint1": 1,
        "_bigint_unsigned": Decimal("20000000000"),
        "_serial": Decimal("40000000000"),
        "_float": Decimal("1.5"),
        "_numeric": Decimal("12345.110"),
        "_decimal": Decimal("11111"),
        "_date": "2023-03-23",
        "_datetime": "2023-03-23T14:30:05.000000Z",
        "_datetime3": "2023-03-23T14:30:05.123000Z",
        "_datetime6": "2023-03-23T14:30:05.123456Z",
        "_timestamp": "2023-03-23T22:00:10.123456Z",
        "_timestamp0": "2023-03-23T07:10:00.000000Z",
        "_bin": b"bytes\x00\x00\x00\x00\x00",
        "_json": '{"a": "b"}',
        "_enum": "value1",
        "_year": 2023,
        "_time": "10:13:23.000000",
        "_set": "a,b",
    }
    assert {k: after[k] for k in expected} == expected
    assert str(after["_numeric"]) == "12345.110" and str(after["pt"]) == "1.1"
    assert (
        after["_point"]["wkb"] == base64.b64decode("AQEAAAAAAAAAAADwPwAAAAAAAPA/") and after["_point"]["srid"] is None
    )
    assert {
        k: types[k] for k in ("pt", "_numeric", "_fixed", "_big_decimal", "_date", "_time", "_bit", "_point", "_year")
    } == {
        "pt": "decimal(2,1)",
        "_numeric": "decimal(8,3)",
        "_fixed": "string",  # precision 40: wider than an Iceberg decimal, kept exact as text
        "_big_decimal": "decimal(38,10)",
        "_date": "date",
        "_time": "string",
        "_bit": "binary",
        "_point": "string",
        "_year": "bigint",
    }


def test_paimon_debezium24_key_records_give_keys_and_are_counted():
    path = "paimon/debezium24_decimal_string_keyvalue/debezium-avro-data-1.txt"
    dec = decoder()
    items = list(dec.decode((FIXTURES / path).read_bytes(), path))
    _, announced, first, second = items  # the schema is announced once, with the key record's keys
    assert announced.op == "SCHEMA" and announced.keys == ["_id"] and announced.ddl["keys"] == ["_id"]
    assert dec.skipped == {"tombstones": 0, "key_records": 2, "heartbeats": 0}
    assert first.keys == ["_id"] and second.keys == ["_id"]
    assert first.seq == "0000000074" + f"{13593:020d}" + "0" * 10 and first.meta["seq_from"] == "binlog"
    assert first.tx_id == "b8642e5a-af4d-11ed-b484-98f6094952c0:4210576"
    # decimal.handling.mode=string with column.propagate.source.type: exact decimals, typed
    assert first.after["pt"] == Decimal("1.1") and first.after["_fixed"] == Decimal(
        "123456789876543212345678987654321.110"
    )
    assert (
        first.meta["column_types"]["pt"] == "decimal(2,1)" and first.meta["column_types"]["_numeric"] == "decimal(8,3)"
    )
    assert first.after["_timestamp0"] == "2023-03-22T16:10:00.000000Z" and second.after["_serial"] == 50000000000


def test_paimon_delete_and_schemaless():
    path = "paimon/schema_null_delete/debezium-data-with-delete.txt"
    [_, delete] = decode((FIXTURES / path).read_bytes(), path)
    assert delete.op == "DELETE" and delete.table == "test.product" and delete.after is None
    assert delete.before == {
        "id": 101,
        "name": "scooter",
        "description": "Small 2-wheel scooter",
        "weight": Decimal("3.14"),
    }
    assert delete.seq == "00000001596684883000" and "column_types" not in delete.meta
    path = "paimon/schemaless_nullvalue/debezium-data-1.txt"
    [_, insert] = decode((FIXTURES / path).read_bytes(), path)
    assert (insert.op, insert.table, insert.after) == ("INSERT", "test.test", {"id": 1, "value": "A"})


# --- Kafka Connect decimals ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "scale", "expected"),
    [
        ("AdTA", 2, "1200.00"),  # DESIGN fact: base64 big-endian unscaled
        ("W5s=", 0, "23451"),
        ("/w==", 3, "-0.001"),
        ("AA==", 2, "0.00"),
        (Decimal("1200"), 2, "1200.00"),  # as a JSON number
        (Decimal("3.14159"), 2, "3.14159"),  # more digits than the scale: kept, never rounded
        (1200, 2, "1200.00"),
        ("1200.5", 2, "1200.50"),  # as a string (not base64: has a point)
    ],
)
def test_decimal_forms(value, scale, expected):
    result = kc.decode_decimal(value, scale)
    assert isinstance(result, Decimal) and str(result) == expected


def test_decimal_string_vs_base64_by_schema_type():
    assert kc.decode_decimal("1234", 0) == Decimal(int.from_bytes(base64.b64decode("1234"), "big", signed=True))
    assert kc.decode_decimal("1234", 0, base64_text=False) == Decimal(1234)
    with pytest.raises(kc.ConnectValueError, match="neither base64"):
        kc.decode_decimal("12,5", 2)


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=-(10**40), max_value=10**40), st.integers(min_value=0, max_value=20))
def test_property_decimal_base64_round_trip(unscaled, scale):
    value = Decimal(unscaled).scaleb(-scale)
    text = kc.encode_decimal(value, scale)
    decoded = kc.decode_decimal(text, scale)
    assert decoded == value and decoded.as_tuple().exponent == -scale
    # minimal two's complement, as Java's BigInteger.toByteArray
    raw = base64.b64decode(text)
    assert len(raw) == 1 or not (raw[0] in (0, 0xFF) and (raw[0] & 0x80) == (raw[1] & 0x80))


def test_variable_scale_decimal_and_schema_driven_decimal():
    fields = [
        {"type": "int32", "optional": False, "field": "id"},
        {
            "type": "bytes",
            "optional": True,
            "name": "org.apache.kafka.connect.data.Decimal",
            "version": 1,
            "parameters": {"scale": "2", "connect.decimal.precision": "10"},
            "field": "price",
        },
        {
            "type": "struct",
            "fields": [{"type": "int32", "field": "scale"}, {"type": "bytes", "field": "value"}],
            "optional": True,
            "name": "io.debezium.data.VariableScaleDecimal",
            "field": "amount",
        },
    ]
    record = with_schema(fields, {"id": 1, "price": "AdTA", "amount": {"scale": 3, "value": "W5s="}})
    announced, event = events(decode(line(record)))
    # the announcement lists the untyped column too: a full column list never leaves one out
    assert announced.ddl["columns"] == [
        {"name": "id", "type": "bigint"},
        {"name": "price", "type": "decimal(10,2)"},
        {"name": "amount", "type": None},
    ]
    assert event.after == {"id": 1, "price": Decimal("1200.00"), "amount": Decimal("23.451")}
    assert event.meta["column_types"] == {"id": "bigint", "price": "decimal(10,2)"}  # variable scale: no hint
    assert '"price":1200.00' in to_json(event.to_dict())


# --- Kafka Connect / Debezium logical types -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "name", "value", "expected", "col_type"),
    [
        ("int32", "org.apache.kafka.connect.data.Date", 19439, "2023-03-23", "date"),
        ("int32", "io.debezium.time.Date", -1, "1969-12-31", "date"),
        ("int32", "org.apache.kafka.connect.data.Time", 36803123, "10:13:23.123000", "string"),
        ("int32", "io.debezium.time.Time", 36803123, "10:13:23.123000", "string"),
        ("int64", "io.debezium.time.MicroTime", 36803000001, "10:13:23.000001", "string"),
        ("int64", "io.debezium.time.NanoTime", 36803000001999, "10:13:23.000001", "string"),
        ("int64", "io.debezium.time.MicroTime", -3600000000, "-01:00:00.000000", "string"),  # MySQL TIME
        ("int64", "org.apache.kafka.connect.data.Timestamp", 1679581805123, "2023-03-23T14:30:05.123000Z", "timestamp"),
        ("int64", "io.debezium.time.Timestamp", 0, "1970-01-01T00:00:00.000000Z", "timestamp"),
        ("int64", "io.debezium.time.MicroTimestamp", 1679581805123456, "2023-03-23T14:30:05.123456Z", "timestamp"),
        ("int64", "io.debezium.time.NanoTimestamp", 1679581805123456789, "2023-03-23T14:30:05.123456Z", "timestamp"),
        (
            "string",
            "io.debezium.time.ZonedTimestamp",
            "2023-03-23T23:00:10.5+01:00",
            "2023-03-23T22:00:10.500000Z",
            "timestamp",
        ),
        (
            "string",
            "io.debezium.time.ZonedTimestamp",
            "2023-03-23T22:00:10.123456789Z",
            "2023-03-23T22:00:10.123456Z",
            "timestamp",
        ),
        ("string", "io.debezium.time.ZonedTime", "10:15:30+01:00", "09:15:30.000000", "string"),
        ("string", "io.debezium.time.IsoDate", "2024-02-29Z", "2024-02-29", "date"),
        ("int32", "io.debezium.time.Year", 2023, 2023, "bigint"),
        ("bytes", "io.debezium.data.Bits", "xwc=", b"\xc7\x07", "binary"),
        ("string", "io.debezium.data.Json", '{"a":1}', '{"a":1}', "string"),
        (
            "string",
            "io.debezium.data.Uuid",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "string",
        ),
        ("double", None, Decimal("1.5"), Decimal("1.5"), "double"),
        ("float", None, "NaN", Decimal("NaN"), "double"),
        ("float64", None, 2, 2, "double"),
        ("boolean", None, True, True, "boolean"),
        ("int64", None, 9007199254740993, 9007199254740993, "bigint"),
    ],
)
def test_logical_types(kind, name, value, expected, col_type):
    spec: dict[str, Any] = {"type": kind, "optional": True, "field": "c"}
    if name:
        spec["name"] = name
    [event] = events(rows(decode(line(with_schema([spec], {"c": value})))))
    result = event.after["c"]
    assert result == expected or (isinstance(expected, Decimal) and expected.is_nan() and result.is_nan())
    assert type(result) is type(expected)
    assert kc.column_type(spec) == col_type and event.meta["column_types"] == {"c": col_type}


def test_nested_array_map_struct_values():
    fields = [
        {
            "type": "array",
            "items": {"type": "int32", "name": "io.debezium.time.Date"},
            "optional": True,
            "field": "days",
        },
        {"type": "map", "keys": {"type": "string"}, "values": {"type": "bytes"}, "optional": True, "field": "blobs"},
    ]
    [event] = events(rows(decode(line(with_schema(fields, {"days": [0, None, 1], "blobs": {"k": "AAE="}})))))
    assert event.after == {"days": ["1970-01-01", None, "1970-01-02"], "blobs": {"k": b"\x00\x01"}}
    assert event.meta["column_types"] == {"days": "string", "blobs": "string"}


@pytest.mark.parametrize(
    ("spec", "value", "message"),
    [
        ({"type": "int32"}, "12", "column c: schema type int32 expects an integer, the value is a JSON string '12'"),
        (
            {"type": "int64"},
            Decimal("1.5"),
            "column c: schema type int64 expects an integer, the value is a JSON number",
        ),
        ({"type": "boolean"}, 1, "column c: schema type boolean expects true or false, the value is a JSON number 1"),
        ({"type": "string"}, 5, "column c: schema type string expects a string, the value is a JSON number 5"),
        ({"type": "bytes"}, "***", "column c: '***' is not valid base64 (schema type bytes)"),
        (
            {"type": "int32", "name": "io.debezium.time.Date"},
            10**9,
            "column c: date 1000000000 (days since 1970-01-01) is outside",
        ),
        (
            {"type": "string", "name": "io.debezium.time.ZonedTimestamp"},
            "noon",
            "column c: 'noon' is not a valid io.debezium.time.ZonedTimestamp value",
        ),
        (
            {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}},
            "12,5",
            "column c: '12,5' is neither base64 of an unscaled value nor a decimal number",
        ),
        (
            {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {}},
            "AdTA",
            "column c: the Decimal schema has no integer parameters.scale",
        ),
    ],
)
def test_wrong_types_rejected_with_column(spec, value, message):
    good = line(with_schema([{**spec, "field": "c"}], {"c": None}))
    bad = line(with_schema([{**spec, "field": "c"}], {"c": value}))
    items = decode(good + b"\n" + bad + b"\n" + good)
    assert items[0].op == "SCHEMA"  # announced before the first good record only (same schema after)
    items = rows(items)
    assert [type(i) for i in items] == [ChangeEvent, Rejected, ChangeEvent]
    assert items[1].error.startswith("after image: " + message), items[1].error
    assert items[1].source.offset == len(good) + 1 and items[1].raw == bad


def test_columns_without_field_schema_are_kept_as_parsed():
    [event] = events(decode(line(with_schema([{"type": "int32", "field": "id"}], {"id": 1, "extra": "x"}))))
    assert event.after == {"id": 1, "extra": "x"} and event.meta["column_types"] == {"id": "bigint"}


# --- ordering, transactions, tables, keys --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "seq", "seq_from"),
    [
        ({"lsn": 34078720, "txId": 601, "ts_ms": 5}, "00000000000034078720", "lsn"),
        ({"lsn": "34078720"}, "00000000000034078720", "lsn"),
        (
            {"commit_lsn": "00000027:00000758:0005", "change_lsn": "00000027:00000758:0003", "event_serial_no": 2},
            "00000027:00000758:0005|00000027:00000758:0003|0000000002",
            "commit_lsn",
        ),
        ({"scn": "1234567", "ts_ms": 5}, "00000000000001234567", "scn"),
        (
            {"file": "mysql-bin.000012", "pos": 154, "row": 3},
            "0000000012" + "00000000000000000154" + "0000000003",
            "binlog",
        ),
        ({"txId": 601, "ts_ms": 5}, "00000000000000000601", "txId"),
        ({"ts_ms": 1465491411807}, "00000001465491411807", "ts_ms"),
    ],
)
def test_seq_forms(source, seq, seq_from):
    [event] = events(decode(line(payload(source={"db": "d", "table": "t", **source}))))
    assert (event.seq, event.meta["seq_from"]) == (seq, seq_from)


def test_seq_string_order_is_numeric_order():
    lsns = [9, 10, 99, 100, 2**40, 2**63]
    data = b"\n".join(line(payload(source={"schema": "s", "table": "t", "lsn": n})) for n in reversed(lsns))
    seqs = [e.seq for e in events(decode(data))]
    assert sorted(seqs) == list(reversed(seqs)) and all(len(s) == 20 for s in seqs)


def test_no_position_rejected():
    [rejected] = decode(line(payload(source={"schema": "s", "table": "t"})))
    assert rejected.error == (
        "no ordering position: source has no lsn, commit_lsn, scn, binlog file/pos, txId or ts_ms "
        "(the payload's ts_ms is processing time and cannot order changes)"
    )


def test_transaction_block_gives_tx_id_and_position():
    transaction = {"id": "571:53195829", "total_order": 3, "data_collection_order": 1}
    [event] = events(decode(line(payload(transaction=transaction))))
    assert (event.tx_id, event.tx_pos, event.tx_last) == ("571:53195829", 3, None)
    assert event.meta["transaction"] == transaction
    [plain] = events(decode(line(payload())))
    assert (plain.tx_id, plain.tx_pos) == ("7", None)


@pytest.mark.parametrize(
    ("source", "table"),
    [
        ({"db": "shop", "schema": "public", "table": "t"}, "public.t"),
        ({"db": "shop", "table": "t"}, "shop.t"),
        ({"db": "ld-1", "namespace": "default", "table": "t"}, "default.t"),
        ({"db": "mongo", "collection": "c"}, "mongo.c"),
        ({"table": "t"}, "t"),
    ],
)
def test_table_names(source, table):
    [event] = events(decode(line(payload(source={**source, "ts_ms": 1}))))
    assert event.table == table


def test_table_option_and_missing_table():
    data = line(payload(source={"ts_ms": 1}))
    [rejected] = decode(data)
    assert rejected.error == "no table name: source has no table (or collection); set the table option"
    [event] = events(decode(data, table="app.orders"))
    assert event.table == "app.orders"


def test_keys_sources():
    cdl = line(payload(unique={"id": 1, "region": "eu"}))
    plain = line(payload())
    a, b = events(decode(cdl + b"\n" + plain))
    assert (a.keys, b.keys) == (["id", "region"], None)
    a, b = events(decode(cdl + b"\n" + plain, keys="name"))
    assert (a.keys, b.keys) == (["name"], ["name"])


def test_key_record_applies_to_the_next_record_only():
    key = {
        "schema": {"type": "struct", "fields": [{"type": "int32", "field": "id"}], "name": "srv.public.t.Key"},
        "payload": {"id": 1},
    }
    dec = decoder()
    a, b = events(list(dec.decode(line(key) + b"\n" + line(payload()) + b"\n" + line(payload()), "f")))
    assert (a.keys, b.keys) == (["id"], None) and dec.skipped_key_records == 1


# --- operations ------------------------------------------------------------------------------------------------


def test_ops_and_truncate():
    data = b"\n".join(
        line(p)
        for p in (
            payload("c"),
            payload("r"),
            payload("u", before={"id": 1, "name": "a"}, after={"id": 1, "name": "b"}),
            payload("d"),
            payload("t", before=None, after=None),
        )
    )
    items = events(decode(data))
    assert [e.op for e in items] == ["INSERT", "UPSERT", "UPDATE", "DELETE", "TRUNCATE"]
    assert items[4].before is None and items[4].after is None and items[4].table == "public.t"
    assert items[3].before == {"id": 1, "name": "a"} and items[3].after is None


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (payload("x"), "unknown op 'x'; Debezium ops are c (create), u (update), d (delete), r (read), t"),
        (payload("m"), "unknown op 'm'"),
        (payload("c", after=None), "op 'c' has no after image: the new row values are missing"),
        (payload("u", after=None), "op 'u' has no after image"),
        (payload("c", after=[1]), "after must be a JSON object of column values, not a JSON array"),
        (payload("c", source="mysql"), "source must be a JSON object, not a JSON string"),
        ({"schema": None, "payload": [1]}, "payload must be a JSON object, not a JSON array"),
        ({"schema": "x", "payload": payload()}, "schema must be a JSON object, not a JSON string"),
        (
            {"status": "BEGIN", "id": "571", "event_count": None},
            "record is Debezium transaction metadata (status BEGIN)",
        ),
        ([1, 2], "record is a JSON array, not an object"),
        (42, "record is a JSON number, not an object"),
    ],
)
def test_bad_records_rejected(record, message):
    good = line(payload())
    bad = line(record)
    items = decode(good + b"\n" + bad + b"\n" + good)
    assert [type(i) for i in items] == [ChangeEvent, Rejected, ChangeEvent]
    assert items[1].error.startswith(message), items[1].error
    assert items[1].raw == bad and items[1].source.offset == len(good) + 1


# --- tombstones, heartbeats, placeholders -------------------------------------------------------------------------


def test_tombstones_skipped_and_counted():
    good = line(payload())
    data = good + b"\nnull\n" + line({"schema": None, "payload": None}) + b"\n" + good + b"\nnull"
    dec = decoder()
    items = events(list(dec.decode(data, "f")))
    assert len(items) == 2
    assert dec.skipped_tombstones == 3 and dec.skipped == {"tombstones": 3, "key_records": 0, "heartbeats": 0}
    list(dec.decode(b"null\n", "g"))
    assert dec.skipped_tombstones == 4  # counted over every file the decoder read


def test_heartbeats_skipped_and_counted():
    heartbeat = {
        "schema": {"type": "struct", "name": "io.debezium.connector.common.Heartbeat"},
        "payload": {"ts_ms": 1},
    }
    dec = decoder()
    items = list(dec.decode(line(heartbeat) + b"\n" + line({"ts_ms": 2}) + b"\n" + line(payload()), "f"))
    assert len(events(items)) == 1 and dec.skipped_heartbeats == 2


def test_unavailable_value_placeholder_is_missing():
    fields = [
        {"type": "int32", "field": "id"},
        {"type": "string", "optional": True, "field": "doc"},
        {"type": "bytes", "optional": True, "field": "blob"},
        {"type": "array", "items": {"type": "string"}, "optional": True, "field": "tags"},
    ]
    placeholder_b64 = base64.b64encode(b"__debezium_unavailable_value").decode()
    after = {
        "id": 1,
        "doc": "__debezium_unavailable_value",
        "blob": placeholder_b64,
        "tags": ["__debezium_unavailable_value"],
    }
    record = with_schema(fields, after, op="u")
    announced, event = events(decode(line(record)))
    assert event.after == {"id": 1} and event.meta["unavailable_columns"] == ["blob", "doc", "tags"]
    # unavailable columns are missing values, not missing columns: the schema still names them
    assert [c["name"] for c in announced.ddl["columns"]] == ["id", "doc", "blob", "tags"]
    [custom] = events(
        rows(decode(line(with_schema(fields, {"id": 1, "doc": "??"}, op="u")), unavailableValuePlaceholder="??"))
    )
    assert custom.after == {"id": 1}


def test_a_placeholder_is_missing_however_the_json_text_spells_it():
    """The decoder looks at the values only when the record's bytes could spell the placeholder: its own
    bytes, its base64's, or an escape. Spelled with escapes, or with a quote in it, it is still missing."""
    fields = [{"type": "int32", "field": "id"}, {"type": "string", "optional": True, "field": "doc"}]
    escaped = line(with_schema(fields, {"id": 1, "doc": "__debezium_unavailable_value"}, op="u")).replace(
        b"__debezium_unavailable_value", b"\\u005f_debezium_unavailable\\u005fvalue"
    )
    assert b"__debezium_unavailable_value" not in escaped
    [event] = events(rows(decode(escaped)))
    assert event.after == {"id": 1} and event.meta["unavailable_columns"] == ["doc"]
    quoted = line(with_schema(fields, {"id": 2, "doc": 'n/a "gone"'}, op="u"))
    [event] = events(rows(decode(quoted, unavailableValuePlaceholder='n/a "gone"')))
    assert event.after == {"id": 2}
    # a record whose bytes hold none of them keeps its values
    [event] = events(rows(decode(line(with_schema(fields, {"id": 3, "doc": "x"}, op="u")))))
    assert event.after == {"id": 3, "doc": "x"} and "unavailable_columns" not in event.meta


def test_a_placeholder_is_found_in_records_that_repeat_a_long_schema_block():
    """Records repeating a schema block are searched after it (the block holds no values): a placeholder in any
    of them is still found, with non-ASCII text in the block (bytes and characters differ) and the placeholder's
    own words in it (a field's doc)."""
    fields = [
        {"type": "int32", "field": "id", "doc": "clé primaire, « __debezium_unavailable_value » jamais"},
        {"type": "string", "optional": True, "field": "doc"},
        {"type": "bytes", "optional": True, "field": "blob"},
    ]
    b64 = base64.b64encode(b"__debezium_unavailable_value").decode()
    afters = [
        {"id": 1, "doc": "é", "blob": None},
        {"id": 2, "doc": "__debezium_unavailable_value", "blob": None},
        {"id": 3, "doc": "ü", "blob": b64},
        {"id": 4, "doc": "x", "blob": None},
    ]
    data = b"\n".join(line(with_schema(fields, after, op="u")) for after in afters)
    assert len(line(with_schema(fields, afters[0], op="u")).split(b'"payload"')[0]) > 256  # a remembered head
    found = events(rows(decode(data)))
    assert [e.after for e in found] == [
        {"id": 1, "doc": "é", "blob": None},
        {"id": 2, "blob": None},
        {"id": 3, "doc": "ü"},
        {"id": 4, "doc": "x", "blob": None},
    ]
    assert [e.meta.get("unavailable_columns") for e in found] == [None, ["doc"], ["blob"], None]


# --- framing and bad input ----------------------------------------------------------------------------------------


def test_framings_give_identical_events():
    records = [payload(), payload("u", before={"id": 1, "name": "a"}), payload("d")]
    one_per_line = b"\n".join(line(r) for r in records) + b"\n"
    concatenated = b"".join(line(r) for r in records)
    pretty = b"\n".join(json.dumps(json.loads(line(r)), indent=2).encode() for r in records)
    enveloped = b"\r\n".join(line({"schema": {}, "payload": r}) for r in records)
    results = [events(decode(d)) for d in (one_per_line, concatenated, pretty, enveloped)]

    def strip(items: list[ChangeEvent]) -> list[dict[str, Any]]:
        return [{k: v for k, v in e.to_dict().items() if k != "source"} for e in items]

    assert all(strip(r) == strip(results[0]) for r in results[1:])
    for data, result in zip((one_per_line, concatenated, pretty, enveloped), results, strict=True):
        assert all(data[e.source.offset : e.source.offset + 1] == b"{" for e in result)


def test_junk_lines_rejected_rest_decodes():
    good = line(payload())
    data = b"# exported 2024-01-01\n" + good + b"\n--- not json ---\n" + good + b"\n{broken\n" + good
    items = decode(data, "landing/x.json")
    assert [type(i) for i in items] == [Rejected, ChangeEvent, Rejected, ChangeEvent, Rejected, ChangeEvent]
    assert [i.source.offset for i in items if isinstance(i, Rejected)] == [
        0,
        data.index(b"--- not"),
        data.index(b"{broken"),
    ]
    assert items[0].raw == b"# exported 2024-01-01" and items[4].raw == b"{broken"
    assert items[4].error.startswith(
        "invalid JSON at line 5 column 2: Expecting property name enclosed in double quotes"
    )


def test_non_ascii_offsets_and_invalid_utf8():
    a = line(payload(after={"id": 1, "name": "Müller 日本 😀"}))
    bad = line(payload(after={"id": 2, "name": "XX"})).replace(b"XX", b"\xff\xfe")
    c = line(payload(after={"id": 3, "name": "ok"}))
    data = a + b"\n" + bad + b"\n" + c
    items = decode(data)
    assert [type(i) for i in items] == [ChangeEvent, Rejected, ChangeEvent]
    assert items[0].after["name"] == "Müller 日本 😀"
    assert items[1].source.offset == len(a) + 1 and items[1].raw == bad
    assert "not valid UTF-8" in items[1].error and "0xff" in items[1].error
    assert items[2].source.offset == len(a) + len(bad) + 2


def test_non_ascii_offsets_of_valid_utf8():
    # no undecodable byte: the offsets are counted without looking for escapes (decode_escaping)
    records = [line(payload(after={"id": i, "name": "Müller 日本 😀" * i})) for i in range(1, 4)]
    data = b"\n".join(records)
    items = decode(data)
    assert [i.source.offset for i in items] == [data.index(r) for r in records]


def test_deep_nesting_and_size_limit(monkeypatch):
    good = line(payload())
    deep = b'{"op":"c","after":{"x":' + b"[" * 600 + b"]" * 600 + b"}}"
    items = decode(good + b"\n" + deep + b"\n" + good)
    assert [type(i) for i in items] == [ChangeEvent, Rejected, ChangeEvent]
    assert "deeper than 512 levels" in items[1].error
    monkeypatch.setattr(debezium_json, "MAX_RECORD_BYTES", 100)
    big = line(payload(after={"id": 1, "name": "x" * 200}))
    items = decode(b"\n".join([line({"op": "c"}), big]))
    assert items[1].error.startswith(f"record is {len(big)} bytes, larger than the limit of 100")


def test_utf8_bom_skipped():
    [event] = events(decode(b"\xef\xbb\xbf" + line(payload())))
    assert event.source.offset == 3


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=300))
def test_property_any_bytes_terminate_with_increasing_offsets(noise):
    good = line(payload())
    data = noise + b"\n" + good
    items = decode(data)
    offsets = [i.source.offset for i in items]
    assert offsets == sorted(set(offsets)) and all(0 <= o < len(data) for o in offsets)
    if b"\n" not in noise:
        assert isinstance(items[-1], ChangeEvent) and items[-1].source.offset == len(noise) + 1
