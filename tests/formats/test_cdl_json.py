"""cdl-json decoder: the vendor doc's CDL JSON sample, framing, Kafka Connect types, heartbeats, bad input."""

from __future__ import annotations

import base64
import copy
import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.events.change import ChangeEvent, Rejected, Source, to_json
from cdclake.formats.cdl_json import NO_TABLE, CdlJsonDecoder
from cdclake.options import OptionError, Options
from cdclake.registry import get_decoder

FIXTURES = Path(__file__).parents[1] / "fixtures" / "cdl_json"
UTC = dt.UTC
SEED = json.loads((FIXTURES / "seed_cdl_insert.json").read_text(), parse_float=Decimal)


def decode(data: bytes, file: str = "f.json", **options: str) -> list[ChangeEvent | Rejected]:
    dec = get_decoder("cdl-json", Options(options))
    assert isinstance(dec, CdlJsonDecoder)
    return list(dec.decode(data, file))


def events(items: list[ChangeEvent | Rejected]) -> list[ChangeEvent]:
    assert all(isinstance(i, ChangeEvent) for i in items), [i for i in items if isinstance(i, Rejected)]
    return items  # type: ignore[return-value]


def ms(value: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=value)


def message(**payload: Any) -> dict[str, Any]:
    """The seed message with payload members replaced (None values are kept as JSON null)."""
    result = copy.deepcopy(SEED)
    result["payload"].update(payload)
    return result


def lines(*messages: Any) -> bytes:
    return "".join(to_json(m) + "\n" for m in messages).encode()


SEED_META = {
    "TIMESTAMP": 1707047996013,
    "DATA_STORE": "POSTGRESQL",
    "message_version": "1.0",
    "message_type": "0",
    "HEARTBEAT_IDENTIFIER": "279fb050-0143-45c1-b184-50bc48c2461c",
    "transaction": {"lsn": 163955221008, "txId": 57227595},
    "unique": {"id": 34},
    "seq_from": "lsn",
    "column_types": {"count1": "bigint", "id": "bigint", "time1": "timestamp"},
}
SEED_EVENT = ChangeEvent(
    table="public.ct_pg2hudi",
    op="INSERT",
    seq="00000000163955221008",
    event_ts=dt.datetime(2024, 2, 4, 11, 59, 56, 13000, tzinfo=UTC),
    source=Source("seed_cdl_insert.json", 0),
    tx_id="57227595",
    keys=["id"],
    before=None,
    after={"count1": 13, "id": 34, "time1": None, "decimalNum": None},
    meta=SEED_META,
)


def test_registered():
    assert type(get_decoder("cdl-json")) is CdlJsonDecoder


def test_seed_cdl_json_every_field():
    [event] = decode((FIXTURES / "seed_cdl_insert.json").read_bytes(), "seed_cdl_insert.json")
    assert isinstance(event, ChangeEvent)
    for name in ("table", "op", "seq", "event_ts", "tx_id", "tx_pos", "tx_last", "keys", "before", "after", "ddl"):
        assert getattr(event, name) == getattr(SEED_EVENT, name), name
    assert event.meta == SEED_META
    assert event == SEED_EVENT
    assert event.event_ts == ms(1707047996013)
    assert "time1" in event.after and event.after["time1"] is None  # NULL: a present key


def test_seed_debezium_json_is_pointed_elsewhere():
    data = (FIXTURES / "seed_debezium_insert.json").read_bytes()
    [rejected] = decode(data, "seed_debezium_insert.json")
    assert isinstance(rejected, Rejected)
    assert rejected.error == "message_version 2.0 is open-source Debezium JSON: decode it with --format debezium-json"
    assert rejected.source == Source("seed_debezium_insert.json", 0)
    assert rejected.raw == data.rstrip(b"\n")


def test_update_and_delete_images():
    update = message(
        OPERATION="UPDATE",
        data={"count1": 14, "id": 34, "time1": 1707047996013, "decimalNum": "12.340"},
        before={"count1": 13, "id": 34, "time1": None, "decimalNum": None},
    )
    delete = message(OPERATION="DELETE", data=None, before={"count1": 14, "id": 34})
    bare_delete = message(OPERATION="DELETE", data=None, before=None, unique={"id": 35})
    u, d, bare = events(decode(lines(update, delete, bare_delete)))
    assert u.op == "UPDATE"
    assert u.after == {"count1": 14, "id": 34, "time1": "2024-02-04T11:59:56.013000Z", "decimalNum": Decimal("12.340")}
    assert str(u.after["decimalNum"]) == "12.340"
    assert u.before == {"count1": 13, "id": 34, "time1": None, "decimalNum": None}
    assert d.op == "DELETE" and d.after is None and d.before == {"count1": 14, "id": 34} and "count1" in d.before
    assert "before_from_unique" not in d.meta
    assert bare.before == {"id": 35} and bare.meta["before_from_unique"] is True and bare.keys == ["id"]


def test_bare_payload_without_schema():
    payload = copy.deepcopy(SEED["payload"])
    payload["data"]["time1"] = 1707047996013
    [event] = events(decode(lines(payload)))
    assert event.after["time1"] == 1707047996013  # no schema: values as they are
    assert "column_types" not in event.meta
    assert (event.table, event.seq, event.tx_id, event.keys) == (
        "public.ct_pg2hudi",
        SEED_EVENT.seq,
        "57227595",
        ["id"],
    )


def test_framings_agree():
    records = [message(), message(OPERATION="UPDATE"), message(OPERATION="DELETE", data=None, before={"id": 34})]
    per_line = lines(*records)
    concatenated = "".join(to_json(r) for r in records).encode()
    pretty = "\n".join(json.dumps(json.loads(to_json(r)), indent=2) for r in records).encode()
    results = [events(decode(d)) for d in (per_line, concatenated, pretty)]
    strip = [[{k: v for k, v in e.to_dict().items() if k != "source"} for e in r] for r in results]
    assert strip[0] == strip[1] == strip[2]
    for data, result in zip((per_line, concatenated, pretty), results, strict=True):
        assert all(data[e.source.offset : e.source.offset + 1] == b"{" for e in result)
    assert [e.source.offset for e in results[1]] == [
        0,
        len(to_json(records[0])),
        len(to_json(records[0])) + len(to_json(records[1])),
    ]


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["INSERT", "UPDATE", "DELETE"]), st.integers(0, 2**64 - 1), st.integers(-(2**31), 2**31)
        ),
        min_size=1,
        max_size=5,
    ),
    st.sampled_from(["", "\n", " \r\n\t"]),
)
def test_property_one_per_line_equals_concatenated(changes, gap):
    records = [
        message(
            OPERATION=op,
            transaction={"properties": [{"name": "lsn", "value": lsn}, {"name": "txId", "value": 7}]},
            data={"count1": count, "id": 1} if op != "DELETE" else None,
            before={"id": 1} if op == "DELETE" else None,
        )
        for op, lsn, count in changes
    ]
    a = events(decode(lines(*records)))
    b = events(decode(gap.join(to_json(r) for r in records).encode()))
    assert [e.to_dict() | {"source": None} for e in a] == [e.to_dict() | {"source": None} for e in b]
    assert [int(e.seq) for e in a] == [lsn for _, lsn, _ in changes] and all(len(e.seq) == 20 for e in a)


# --- ordering, keys, tables ----------------------------------------------------------------------


def test_seq_sources():
    pg_text = message(
        transaction={"properties": [{"name": "LSN", "value": "16/B374D848"}, {"name": "txId", "value": "9"}]}
    )
    no_lsn = message(transaction={"properties": [{"name": "txId", "value": 9}]})
    no_transaction = message(transaction=None)
    a, b, c = events(decode(lines(pg_text, no_lsn, no_transaction)))
    assert a.seq == str((0x16 << 32) + 0xB374D848).zfill(20) and a.meta["seq_from"] == "lsn" and a.tx_id == "9"
    assert b.seq == "00000001707047996013" and b.meta["seq_from"] == "TIMESTAMP" and b.tx_id == "9"
    assert c.seq == b.seq and c.tx_id is None and "transaction" not in c.meta


def test_table_forms_and_options():
    no_owner = message(SEG_OWNER=None)
    empty_owner = message(SEG_OWNER="")
    a, b = events(decode(lines(no_owner, empty_owner)))
    assert a.table == b.table == "ct_pg2hudi"
    [c] = events(decode(lines(message()), table="X.Y", keys="count1, id"))
    assert c.table == "X.Y" and c.keys == ["count1", "id"]
    assert c.meta["unique"] == {"id": 34}


def test_heartbeats():
    table_row = message(SEG_OWNER="cdc_cdl", TABLE_NAME="cdc_heartbeat", OPERATION="UPDATE", data={"cdl_job_id": 1})
    oracle_row = message(SEG_OWNER="CDC_CDL", TABLE_NAME="CDC_HEARTBEAT", OPERATION="INSERT", data={"CDL_JOB_ID": "1"})
    explicit = {"payload": {"OPERATION": "HEARTBEAT", "TIMESTAMP": 1707047996013, "HEARTBEAT_IDENTIFIER": "x"}}
    a, b, c = events(decode(lines(table_row, oracle_row, explicit)))
    assert [e.op for e in (a, b, c)] == ["HEARTBEAT"] * 3
    assert (a.table, b.table, c.table) == ("cdc_cdl.cdc_heartbeat", "CDC_CDL.CDC_HEARTBEAT", NO_TABLE)
    assert a.after == {"cdl_job_id": 1} and c.meta["HEARTBEAT_IDENTIFIER"] == "x" and c.seq == "00000001707047996013"
    [other] = events(decode(lines(message(SEG_OWNER="hb", TABLE_NAME="beat")), heartbeatTable="HB.BEAT"))
    assert other.op == "HEARTBEAT"
    [disabled] = events(decode(lines(table_row), heartbeatTable=""))
    assert disabled.op == "UPDATE"


def test_unknown_members_kept():
    [event] = events(decode(lines(message(NEW_FIELD=1, LOB_COLUMNS="doc"))))
    assert event.meta["extra"] == {"NEW_FIELD": 1} and event.meta["LOB_COLUMNS"] == "doc"


def test_unknown_option():
    with pytest.raises(OptionError, match="unknown option"):
        get_decoder("cdl-json", Options({"nullValue": "x"}))


def test_a_wide_connect_decimal_keeps_every_digit():
    # 38 digits: Decimal.scaleb would round it to the default context's 28
    unscaled = 12345678901234567890123456789012345678
    raw = base64.b64encode(unscaled.to_bytes(16, "big", signed=True)).decode()
    spec = {
        "type": "bytes",
        "field": "wide",
        "name": "org.apache.kafka.connect.data.Decimal",
        "parameters": {"scale": "2"},
    }
    [event] = events(decode(lines(typed_message([spec], {"wide": raw}))))
    assert str(event.after["wide"]) == "123456789012345678901234567890123456.78"


# --- Kafka Connect types ------------------------------------------------------------------------------


def typed_message(fields: list[dict[str, Any]], data: dict[str, Any]) -> dict[str, Any]:
    result = message(data=data)
    for member in result["schema"]["fields"]:
        if member["field"] == "data":
            member["fields"] = fields
    return result


def test_kafka_connect_types():
    connect = "org.apache.kafka.connect.data."
    fields = [
        {"type": "int32", "field": "d", "name": connect + "Date"},
        {"type": "int32", "field": "t", "name": connect + "Time"},
        {
            "type": "bytes",
            "field": "dec",
            "name": connect + "Decimal",
            "parameters": {"scale": "2", "connect.decimal.precision": "10"},
        },
        {"type": "bytes", "field": "dec0", "name": connect + "Decimal", "parameters": {"scale": "0"}},
        {"type": "bytes", "field": "decnum", "name": connect + "Decimal", "parameters": {"scale": "2"}},
        {"type": "bytes", "field": "raw"},
        {"type": "boolean", "field": "flag"},
        {"type": "double", "field": "odd"},
        {"type": "float64", "field": "f"},
        {"type": "string", "field": "s"},
        {"type": "string", "field": "vd", "name": "com.huawei.cdc.data.Decimal"},
    ]
    data = {
        "d": 19757,
        "t": 3723004,
        "dec": "AdTA",
        "dec0": "W5s=",
        "decnum": "12.50",
        "raw": "AP8=",
        "flag": False,
        "odd": 1,
        "f": 1.5,
        "s": "x",
        "vd": 3,
    }
    [event] = events(decode(lines(typed_message(fields, data))))
    assert event.after == {
        "d": "2024-02-04",
        "t": "01:02:03.004000",
        "dec": Decimal("1200.00"),
        "dec0": Decimal(23451),
        "decnum": Decimal("12.50"),
        "raw": b"\x00\xff",
        "flag": False,
        "odd": 1,
        "f": Decimal("1.5"),
        "s": "x",
        "vd": Decimal(3),
    }
    assert str(event.after["dec"]) == "1200.00"
    assert event.meta["column_types"] == {
        "d": "date",
        "t": "string",
        "dec": "decimal(10,2)",
        "dec0": "decimal(38,0)",
        "decnum": "decimal(38,2)",
        "raw": "binary",
        "flag": "boolean",
        "f": "double",
        "s": "string",
        # from the before image's schema, which the test left as the seed's
        "count1": "bigint",
        "id": "bigint",
        "time1": "timestamp",
    }


# --- bad input ---------------------------------------------------------------------------------------


def test_malformed_records_rejected_neighbours_decode():
    bytes_schema = [{"type": "bytes", "field": "b"}]
    cases = {
        "unknown op": (
            message(OPERATION="MERGE"),
            "unknown OPERATION 'MERGE'; CDL JSON operations are INSERT, UPDATE, DELETE",
        ),
        "op lower case": (message(OPERATION="insert"), "unknown OPERATION 'insert'"),
        "no op": ({"payload": {"TABLE_NAME": "t"}}, "unknown OPERATION None"),
        "tombstone": ({"schema": None, "payload": None}, "payload is null (a Kafka tombstone?)"),
        "payload a list": ({"payload": []}, "payload must be a JSON object, not a JSON array"),
        "array": ([], "record is a JSON array, not an object"),
        "version": (message(message_version="3.0"), "message_version '3.0' is not CDL JSON 1.0"),
        "no table": (
            message(TABLE_NAME=None),
            "record names no table (TABLE_NAME missing or empty); set --option table=NAME",
        ),
        "table number": (message(TABLE_NAME=5), "TABLE_NAME must be a string, not a JSON number"),
        "no timestamp": (message(TIMESTAMP=None), "TIMESTAMP None is not the change time in epoch milliseconds"),
        "bad timestamp": (
            message(TIMESTAMP="yesterday"),
            "TIMESTAMP 'yesterday' is neither epoch milliseconds nor an ISO time",
        ),
        "bad lsn": (
            message(transaction={"properties": [{"name": "lsn", "value": "zz"}]}),
            "transaction lsn 'zz' is not an unsigned 64-bit",
        ),
        "huge lsn": (
            message(transaction={"properties": [{"name": "lsn", "value": 2**64 * 10}]}),
            "is not an unsigned 64-bit",
        ),
        "transaction list": (message(transaction=[1]), 'transaction must be {"properties": [{name, value}, ...]}'),
        "property": (
            message(transaction={"properties": [5]}),
            "transaction.properties holds 5, not a {name, value} object",
        ),
        "unique list": (message(unique=["id"]), "unique must be a JSON object of key columns, not a JSON array"),
        "data list": (message(data=[1]), "data must be a JSON object of column values, not a JSON array"),
        "no data": (message(data=None), "INSERT message has no data (after image)"),
        "update no data": (message(OPERATION="UPDATE", data=None), "UPDATE message has no data (after image)"),
        "delete nothing": (
            message(OPERATION="DELETE", data=None, before=None, unique=None),
            "DELETE message has neither a before image nor unique key values",
        ),
        "int as text": (
            message(data={"id": "abc"}),
            "column 'id' of data is int32 but holds string 'abc': expected an integer",
        ),
        "timestamp as text": (
            message(data={"id": 1, "time1": "now"}),
            "column 'time1' of data is org.apache.kafka.connect.data.Timestamp but holds string 'now'",
        ),
        "vendor decimal": (
            message(data={"id": 1, "decimalNum": "1,5"}),
            "column 'decimalNum' of data is com.xxx.cdc.data.Decimal but holds string '1,5': expected a decimal number",
        ),
        "bad base64": (
            typed_message(bytes_schema, {"b": "!!"}),
            "column 'b' of data is bytes but holds string '!!': not valid base64",
        ),
        "schema": (
            message() | {"schema": {"type": "struct"}},
            "schema is not a Kafka Connect struct schema (no fields list)",
        ),
    }
    good = [message(transaction={"properties": [{"name": "lsn", "value": i}]}) for i in range(len(cases) + 1)]
    stream: list[Any] = [good[0]]
    for i, (record, _) in enumerate(cases.values()):
        stream += [record, good[i + 1]]
    data = lines(*stream) + b'{"payload": nope}\n' + lines(good[0])
    starts = [0, *[i + 1 for i, b in enumerate(data) if b == ord("\n")][:-1]]
    items = decode(data, "bad.json")
    assert [i.source for i in items] == [Source("bad.json", s) for s in starts]
    assert all(isinstance(i, ChangeEvent) for i in items[0 : 2 * len(cases) + 1 : 2])
    for (name, (record, reason)), item in zip(cases.items(), items[1::2], strict=False):
        assert isinstance(item, Rejected), name
        assert reason in item.error, (name, item.error)
        assert item.raw == to_json(record).encode(), name
    assert items[-2].error.startswith("invalid JSON at line") and items[-2].raw == b'{"payload": nope}'
    assert isinstance(items[-1], ChangeEvent)


def test_junk_lines_and_truncated_record():
    good = lines(message())
    data = b"# exported 2024-02-04\n" + good + good[:50] + b"\n" + good
    junk, first, truncated, last = decode(data)
    assert isinstance(junk, Rejected) and junk.raw == b"# exported 2024-02-04" and junk.source.offset == 0
    assert isinstance(first, ChangeEvent) and first.source.offset == 22
    assert isinstance(truncated, Rejected) and truncated.source.offset == 22 + len(good)
    assert truncated.raw == good[:50]
    assert isinstance(last, ChangeEvent) and last.source.offset == 22 + len(good) + 51


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=300))
def test_property_any_bytes_terminate_with_increasing_offsets(data):
    good = lines(message())
    items = decode(data + b"\n" + good)
    offsets = [i.source.offset for i in items]
    assert offsets == sorted(set(offsets))
    assert isinstance(items[-1], ChangeEvent)
