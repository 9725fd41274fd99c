"""goldengate-avro-op decoder: the vendor doc's samples (§6.5.2), the three column states of §6.5.1.2,
and the real GoldenGate schemas of BriData/DBus (avro_op, treatAllColumnsAsStrings=true, generic
wrapper with schema_hash). Containers and hostile input are shared with the row decoder and tested
in test_goldengate_avro_row.py; here each container is exercised with operation records.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.events.change import ChangeEvent, Rejected, Source
from cdclake.formats._gg_avro import avro_fingerprint, java_string_hash
from cdclake.formats.goldengate_avro_op import GoldenGateAvroOpDecoder
from cdclake.options import Options
from cdclake.registry import get_decoder

FIXTURES = Path(__file__).parents[1] / "fixtures" / "goldengate_avro"
SEED = FIXTURES / "seed"
SEED_OP = SEED / "op"
DBUS = FIXTURES / "dbus_avro_op_schemas"
UTC = dt.UTC
TABLE = "GG.TCUSTORD"
KEYS = ["CUST_CODE", "ORDER_DATE", "PRODUCT_CODE", "ORDER_ID"]
SAMPLES = ("insert", "update", "delete", "truncate")
COLUMNS = ["CUST_CODE", "ORDER_DATE", "PRODUCT_CODE", "ORDER_ID", "PRODUCT_PRICE", "PRODUCT_AMOUNT", "TRANSACTION_ID"]


# --- writers (test side) --------------------------------------------------------------------


def text_of(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def schema_of(path: Path) -> dict[str, Any]:
    return json.loads(text_of(path))


def ocf(schema: Any, records: list[dict[str, Any]], codec: str = "null") -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, codec=codec)
    return out.getvalue()


def message(schema: Any, record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


def raw(schema: Any, records: list[dict[str, Any]], delimiter: bytes = b"") -> bytes:
    return b"".join(message(schema, r) + delimiter for r in records)


WRAPPER_HASH = schema_of(DBUS / "generic_wrapper.avsc")  # the real one (DBus), schema_hash:int
WRAPPER_FINGERPRINT = {
    **WRAPPER_HASH,
    "fields": [
        {"name": "table_name", "type": "string"},
        {"name": "schema_fingerprint", "type": "long"},
        {"name": "payload", "type": "bytes"},
    ],
}


def wrapper_message(table: str, kind: str, value: int, payload: bytes) -> bytes:
    schema = WRAPPER_HASH if kind == "schema_hash" else WRAPPER_FINGERPRINT
    return message(schema, {"table_name": table, kind: value, "payload": payload})


def wrapped(schema_text: str, records: list[dict[str, Any]], table: str, kind: str = "schema_hash") -> bytes:
    """As GoldenGate with wrapMessageInGenericAvroMessage=true; the hash as DBus computes it
    (``schemaStr.hashCode()`` of the schema text), the fingerprint as Avro's parsingFingerprint64."""
    schema = json.loads(schema_text)
    value = java_string_hash(schema_text) if kind == "schema_hash" else avro_fingerprint(schema)
    return b"".join(wrapper_message(table, kind, value, message(schema, r)) for r in records)


def decoder(**options: str) -> GoldenGateAvroOpDecoder:
    dec = get_decoder("goldengate-avro-op", Options(options))
    assert isinstance(dec, GoldenGateAvroOpDecoder)
    return dec


def decode(data: bytes, file: str = "f", **options: str) -> list[ChangeEvent | Rejected]:
    """Decoded items without the SCHEMA events announcing each table (tested on their own)."""
    items = list(decoder(**options).decode(data, file))
    return [i for i in items if not (isinstance(i, ChangeEvent) and i.op == "SCHEMA")]


def events(items: list[ChangeEvent | Rejected]) -> list[ChangeEvent]:
    assert all(isinstance(i, ChangeEvent) for i in items), [i for i in items if isinstance(i, Rejected)]
    return items  # type: ignore[return-value]


def split(items: list[ChangeEvent | Rejected]) -> tuple[list[ChangeEvent], list[Rejected]]:
    return [i for i in items if isinstance(i, ChangeEvent)], [i for i in items if isinstance(i, Rejected)]


def seed_records() -> list[dict[str, Any]]:
    """The seed's sample messages (§6.5.2), read verbatim from their text rendering."""
    return [json.loads(text_of(SEED_OP / f"sample_{name}.json")) for name in SAMPLES]


# --- the vendor doc's samples (§6.5.2) ---------------------------------------------------------------

COLUMN_TYPES = {
    "CUST_CODE": "string",
    "ORDER_DATE": "string",
    "PRODUCT_CODE": "string",
    "ORDER_ID": "string",
    "PRODUCT_PRICE": "double",
    "PRODUCT_AMOUNT": "double",
    "TRANSACTION_ID": "string",
}


def seed_event(op: str, pos: str, op_ts: str, current_ts: str, tokens: dict[str, str], before: Any, after: Any):
    return ChangeEvent(
        table=TABLE,
        op=op,
        seq=pos.zfill(32),
        event_ts=dt.datetime.fromisoformat(op_ts).replace(tzinfo=UTC),
        source=Source("f", 0),
        keys=KEYS,
        before=before,
        after=after,
        meta={
            "pos": pos,
            "op_ts": op_ts,
            "current_ts": current_ts,
            "tokens": tokens,
            "primary_keys": KEYS,
            "column_types": COLUMN_TYPES,
        },
    )


SEED_EXPECTED = [
    seed_event(
        "INSERT",
        "00000000000000001444",
        "2013-06-02 22:14:36.000000",
        "2015-09-18T10:17:49.570000",
        {"R": "AADPkvAAEAAEqL2AAA"},
        None,
        {
            "CUST_CODE": "WILL",
            "ORDER_DATE": "1994-09-30:15:33:00",
            "PRODUCT_CODE": "CAR",
            "ORDER_ID": "144",
            "PRODUCT_PRICE": Decimal("17520.0"),
            "PRODUCT_AMOUNT": Decimal("3.0"),
            "TRANSACTION_ID": "100",
        },
    ),
    seed_event(
        "UPDATE",
        "00000000000000002891",
        "2013-06-02 22:14:41.000000",
        "2015-09-18T10:17:49.880000",
        {"R": "AADPkvAAEAAEqLzAAA"},
        {
            "CUST_CODE": "BILL",
            "ORDER_DATE": "1995-12-31:15:00:00",
            "PRODUCT_CODE": "CAR",
            "ORDER_ID": "765",
            "PRODUCT_PRICE": Decimal("15000.0"),
            "PRODUCT_AMOUNT": Decimal("3.0"),
            "TRANSACTION_ID": "100",
        },
        {
            "CUST_CODE": "BILL",
            "ORDER_DATE": "1995-12-31:15:00:00",
            "PRODUCT_CODE": "CAR",
            "ORDER_ID": "765",
            "PRODUCT_PRICE": Decimal("14000.0"),
            "PRODUCT_AMOUNT": Decimal("3.0"),
            "TRANSACTION_ID": "100",
        },
    ),
    seed_event(
        "DELETE",
        "00000000000000004338",
        "2013-06-02 22:14:41.000000",
        "2015-09-18T10:17:49.899000",
        {"L": "206080450", "6": "9.0.80330", "R": "AADPkvAAEAAEqLzAAC"},
        # PRODUCT_PRICE, PRODUCT_AMOUNT, TRANSACTION_ID have _isMissing=true: absent keys
        {"CUST_CODE": "DAVE", "ORDER_DATE": "1993-11-03:07:51:35", "PRODUCT_CODE": "PLANE", "ORDER_ID": "600"},
        None,
    ),
    seed_event(
        "TRUNCATE",
        "00000000000000004515",
        "2013-06-02 22:14:41.000000",
        "2015-09-18T10:17:49.900000",
        {"R": "AADPkvAAEAAEqL2AAB"},
        None,
        None,
    ),
]


def seed_containers(tmp_path: Path) -> dict[str, tuple[bytes, dict[str, str]]]:
    schema_text = text_of(SEED_OP / "GG.TCUSTORD.avsc")
    schema = json.loads(schema_text)
    records = seed_records()
    return {
        "ocf-null": (ocf(schema, records), {}),
        "ocf-deflate": (ocf(schema, records, "deflate"), {}),
        "raw": (raw(schema, records), {"schemaDir": str(SEED_OP)}),
        "raw-delimited": (raw(schema, records, b"|~|"), {"schemaDir": str(SEED_OP), "lineDelimiter": "CDATA[|~|]"}),
        "wrapper-hash": (wrapped(schema_text, records, TABLE), {"schemaDir": str(SEED_OP)}),
        "wrapper-fingerprint": (
            wrapped(schema_text, records, TABLE, "schema_fingerprint"),
            {"schemaDir": str(SEED_OP), "genericWrapperUseFingerprint": "true"},
        ),
    }


def test_registered_decoder_is_this_module():
    assert type(get_decoder("goldengate-avro-op")) is GoldenGateAvroOpDecoder
    assert GoldenGateAvroOpDecoder.format_id == "goldengate-avro-op"


def test_seed_samples_are_records_of_the_seed_schema():
    schema = fastavro.parse_schema(schema_of(SEED_OP / "GG.TCUSTORD.avsc"))
    for record in seed_records():
        assert fastavro.validation.validate(record, schema)
        assert fastavro.schemaless_reader(io.BytesIO(message(schema, record)), schema) == record


@pytest.mark.parametrize(
    "container", ["ocf-null", "ocf-deflate", "raw", "raw-delimited", "wrapper-hash", "wrapper-fingerprint"]
)
def test_seed_samples_every_field(tmp_path, container):
    data, options = seed_containers(tmp_path)[container]
    items = events(decode(data, "f", **options))
    assert len(items) == 4
    for event, expected in zip(items, SEED_EXPECTED, strict=True):
        for name in ("table", "op", "seq", "event_ts", "tx_id", "tx_pos", "tx_last", "keys", "before", "after", "ddl"):
            assert getattr(event, name) == getattr(expected, name), (container, expected.op, name)
        assert {k: v for k, v in event.meta.items() if k != "avro"} == expected.meta, (container, expected.op)
        assert (
            event.meta["avro"]["container"]
            == {"ocf": "ocf", "raw": "raw", "wrapper": "generic_wrapper"}[container.split("-")[0]]
        )
        assert event.source.file == "f" and event.event_ts.utcoffset() == dt.timedelta(0)
    if container.startswith("raw"):
        schema = schema_of(SEED_OP / "GG.TCUSTORD.avsc")
        for event, record in zip(items, seed_records(), strict=True):
            assert data[event.source.offset :].startswith(message(schema, record))


def test_seed_delete_missing_versus_null():
    [_, update, delete, truncate] = events(decode(ocf(schema_of(SEED_OP / "GG.TCUSTORD.avsc"), seed_records())))
    assert set(delete.before) == {"CUST_CODE", "ORDER_DATE", "PRODUCT_CODE", "ORDER_ID"}
    assert "PRODUCT_PRICE" not in delete.before  # missing, not NULL
    assert set(update.before) == set(update.after) == set(COLUMNS)
    assert truncate.before is None and truncate.after is None


# --- the three column states (§6.5.1.2) --------------------------------------------------------------


def op_record(op: str, before: dict[str, Any] | None, after: dict[str, Any] | None, pos: int = 1) -> dict[str, Any]:
    """A §6.5 message; images given as {col: value} with the sentinel MISSING for a missing column."""

    def image(values: dict[str, Any] | None) -> dict[str, Any] | None:
        if values is None:
            return None
        out: dict[str, Any] = {}
        for column in COLUMNS:
            value = values.get(column, MISSING)
            out[column] = None if value is MISSING else value
            out[f"{column}_isMissing"] = value is MISSING
        return out

    return {
        "table": TABLE,
        "op_type": op,
        "op_ts": "2024-05-06 07:08:09.000010",
        "current_ts": "2024-05-06T07:08:10.000000",
        "pos": str(pos).zfill(20),
        "primary_keys": ["ORDER_ID"],
        "tokens": {},
        "before": image(before),
        "after": image(after),
    }


MISSING = object()


def test_value_null_and_missing():
    record = op_record(
        "U",
        {"ORDER_ID": "1", "CUST_CODE": "A", "PRODUCT_PRICE": None},
        {"ORDER_ID": "1", "CUST_CODE": None, "PRODUCT_PRICE": 2.5},
    )
    [event] = events(decode(ocf(schema_of(SEED_OP / "GG.TCUSTORD.avsc"), [record])))
    assert event.before == {"CUST_CODE": "A", "ORDER_ID": "1", "PRODUCT_PRICE": None}
    assert event.after == {"CUST_CODE": None, "ORDER_ID": "1", "PRODUCT_PRICE": Decimal("2.5")}
    assert "tokens" not in event.meta  # an empty token map is not kept


def test_missing_flag_with_a_value_is_a_contradiction():
    schema = schema_of(SEED_OP / "GG.TCUSTORD.avsc")
    bad = op_record("I", None, {"ORDER_ID": "1"})
    bad["after"]["CUST_CODE"] = "X"  # value present, flag says missing
    good = op_record("I", None, {"ORDER_ID": "2"}, pos=2)
    ok, [rejected] = split(decode(raw(schema, [bad, good]), schemaDir=str(SEED_OP)))
    assert [e.after for e in ok] == [{"ORDER_ID": "2"}]
    assert rejected.error == "after column CUST_CODE has a value although CUST_CODE_isMissing is true"
    assert rejected.source.offset == 0 and rejected.raw == message(schema, bad)


def test_columns_without_flags_and_extra_fields():
    schema = {
        "type": "record",
        "name": "T",
        "namespace": "GG",
        "fields": [
            {"name": "table", "type": "string"},
            {"name": "op_type", "type": "string"},
            {"name": "op_ts", "type": "string"},
            {"name": "pos", "type": "string"},
            {"name": "source_db", "type": ["null", "string"]},
            {
                "name": "before",
                "type": [
                    "null",
                    {
                        "type": "record",
                        "name": "columns",
                        "fields": [
                            {"name": "ID", "type": "long"},
                            {"name": "NAME", "type": ["null", "string"]},
                            {"name": "NAME_isMissing", "type": "boolean"},
                            {"name": "FLAG_isMissing", "type": "boolean"},  # no FLAG: an ordinary column
                        ],
                    },
                ],
            },
            {"name": "after", "type": ["null", "columns"]},
        ],
    }
    record = {
        "table": "GG.T",
        "op_type": "U",
        "op_ts": "2020-01-01 00:00:00",
        "pos": "7",
        "source_db": "ORCL",
        "before": {"ID": 1, "NAME": None, "NAME_isMissing": True, "FLAG_isMissing": False},
        "after": {"ID": 1, "NAME": "n", "NAME_isMissing": False, "FLAG_isMissing": True},
    }
    [event] = events(decode(ocf(schema, [record])))
    assert event.before == {"ID": 1, "FLAG_isMissing": False}
    assert event.after == {"ID": 1, "NAME": "n", "FLAG_isMissing": True}
    assert event.meta["extra"] == {"source_db": "ORCL"}
    assert event.meta["column_types"] == {"ID": "bigint", "NAME": "string", "FLAG_isMissing": "boolean"}


def test_op_decoder_refuses_row_data():
    row_schema = schema_of(SEED / "row" / "GG.TCUSTORD.avsc")
    record = json.loads(text_of(SEED / "row" / "sample_insert.json"))
    [bad] = decode(ocf(row_schema, [record]))
    assert "has no before/after record fields: this is not Avro operation data" in bad.error
    assert "--format goldengate-avro-row" in bad.error


def test_schema_event_lists_columns_without_flags(tmp_path):
    base = schema_of(SEED_OP / "GG.TCUSTORD.avsc")
    columns = base["fields"][7]["type"][1]
    wider = json.loads(json.dumps(base))
    wider["fields"][7]["type"][1]["fields"] = [
        *columns["fields"],
        {"name": "NOTE", "type": ["null", "string"], "default": None},
        {"name": "NOTE_isMissing", "type": "boolean"},
    ]
    dec = decoder()
    record = seed_records()[0]
    first = list(dec.decode(ocf(base, [record]), "a"))
    assert [e.op for e in first] == ["SCHEMA", "INSERT"]
    assert [c["name"] for c in first[0].ddl["columns"]] == COLUMNS
    widened = dict(record, after={**record["after"], "NOTE": "hi", "NOTE_isMissing": False})
    schema_event, insert = dec.decode(ocf(wider, [widened]), "b")
    assert schema_event.op == "SCHEMA" and insert.after["NOTE"] == "hi"
    assert [c["name"] for c in schema_event.ddl["columns"]] == [*COLUMNS, "NOTE"]
    assert all(c["type"] in ("string", "double") and c["nullable"] for c in schema_event.ddl["columns"])


# --- real GoldenGate schemas (BriData/DBus; fixtures/goldengate_avro/SOURCES.md) ----------------------

DBUS_TABLES = {
    "DBUS.DB_HEARTBEAT_MONITOR": ["ID", "DS_NAME", "SCHEMA_NAME", "TABLE_NAME", "PACKET", "CREATE_TIME", "UPDATE_TIME"],
    "DBUS.DB_FULL_PULL_REQUESTS": [
        "SEQNO",
        "SCHEMA_NAME",
        "TABLE_NAME",
        "SCN_NO",
        "SPLIT_COL",
        "SPLIT_BOUNDING_QUERY",
        "PULL_TARGET_COLS",
        "PULL_REQ_CREATE_TIME",
        "PULL_START_TIME",
        "PULL_END_TIME",
        "PULL_STATUS",
        "PULL_REMARK",
    ],
    "DBUS.META_SYNC_EVENT": ["SERNO", "TABLE_OWNER", "TABLE_NAME", "VERSION", "EVENT_TIME", "DDL_TYPE", "DDL"],
}


def dbus_record(table: str, op: str, pos: int, before: dict | None, after: dict | None) -> dict[str, Any]:
    """A message as OGG writes it for these schemas: treatAllColumnsAsStrings, iso8601Format."""

    def image(values: dict[str, str | None] | None) -> dict[str, Any] | None:
        if values is None:
            return None
        out: dict[str, Any] = {}
        for column in DBUS_TABLES[table]:
            out[column] = values.get(column)
            out[f"{column}_isMissing"] = column not in values
        return out

    return {
        "table": table,
        "op_type": op,
        "op_ts": f"2018-03-01 10:00:{pos:02d}.000000",
        "current_ts": f"2018-03-01T10:00:{pos:02d}.500000",
        "pos": f"{pos:020d}",
        "primary_keys": [DBUS_TABLES[table][0]],
        "tokens": {"TKN-SCN": str(1000 + pos)},
        "before": image(before),
        "after": image(after),
    }


def dbus_history() -> list[dict[str, Any]]:
    hb, pull, meta = DBUS_TABLES
    return [
        dbus_record(
            hb,
            "I",
            1,
            None,
            {
                "ID": "1",
                "DS_NAME": "db5",
                "SCHEMA_NAME": "S",
                "TABLE_NAME": "T",
                "PACKET": '{"node":"/DBus/HeartBeat/Monitor/db5/S/T"}',
                "CREATE_TIME": "2018-03-01 10:00:01",
                "UPDATE_TIME": None,
            },
        ),
        dbus_record(pull, "I", 2, None, {"SEQNO": "7", "SCHEMA_NAME": "S", "TABLE_NAME": "T", "PULL_STATUS": "init"}),
        dbus_record(
            hb, "U", 3, {"ID": "1"}, {"ID": "1", "PACKET": '{"node":"x"}', "UPDATE_TIME": "2018-03-01 10:00:03"}
        ),
        dbus_record(
            meta,
            "I",
            4,
            None,
            {
                "SERNO": "1",
                "TABLE_OWNER": "S",
                "TABLE_NAME": "T",
                "VERSION": "2",
                "EVENT_TIME": "2018-03-01 10:00:04",
                "DDL_TYPE": "ALTER",
                "DDL": "ALTER TABLE S.T ADD (C NUMBER)",
            },
        ),
        dbus_record(pull, "D", 5, {"SEQNO": "7"}, None),
        dbus_record(hb, "T", 6, None, None),
    ]


def dbus_expected(record: dict[str, Any]) -> tuple[str, dict | None, dict | None]:
    def image(values: dict[str, Any] | None) -> dict[str, Any] | None:
        if values is None:
            return None
        return {k: v for k, v in values.items() if not k.endswith("_isMissing") and not values[f"{k}_isMissing"]}

    if record["op_type"] == "T":
        return "TRUNCATE", None, None
    op = {"I": "INSERT", "U": "UPDATE", "D": "DELETE"}[record["op_type"]]
    return op, image(record["before"]), image(record["after"])


def test_dbus_generic_wrapper_with_schema_hash_interleaves_tables():
    texts = {table: text_of(DBUS / f"{table}.avsc") for table in DBUS_TABLES}
    history = dbus_history()
    data = b"".join(wrapped(texts[r["table"]], [r], r["table"]) for r in history)
    # the real setup: wrapper schema and table schemas in the schema directory, no other option
    items = events(decode(data, schemaDir=str(DBUS)))
    assert [(e.table, e.op) for e in items] == [(r["table"], dbus_expected(r)[0]) for r in history]
    for event, record in zip(items, history, strict=True):
        _, before, after = dbus_expected(record)
        assert (event.before, event.after) == (before, after)
        assert event.keys == record["primary_keys"] and event.seq == record["pos"].zfill(32)
        assert event.meta["tokens"] == record["tokens"] and event.meta["current_ts"] == record["current_ts"]
        assert set(event.meta["column_types"].values()) == {"string"}  # treatAllColumnsAsStrings=true
        assert list(event.meta["column_types"]) == DBUS_TABLES[record["table"]]
        assert event.meta["avro"] == {
            "container": "generic_wrapper",
            "schema": f"{record['table']}.avsc",
            "schema_hash": java_string_hash(texts[record["table"]]),
            "wrapper_table": record["table"],
        }
    # the heartbeat update left DS_NAME etc. missing, not NULL: the merge keeps their values
    assert items[2].after == {"ID": "1", "PACKET": '{"node":"x"}', "UPDATE_TIME": "2018-03-01 10:00:03"}
    assert items[0].after["UPDATE_TIME"] is None


def test_dbus_schema_hash_values_are_javas():
    # String.hashCode() of each real schema text, as DBus's OracleGenericSchemaProvider computes it
    for table in DBUS_TABLES:
        text = text_of(DBUS / f"{table}.avsc")
        encoded = text.encode("utf-16-be")
        h = 0
        for unit in (int.from_bytes(encoded[i : i + 2], "big") for i in range(0, len(encoded), 2)):
            h = (h * 31 + unit) % 2**32
        assert java_string_hash(text) == (h - 2**32 if h >= 2**31 else h)


def test_dbus_generic_wrapper_with_schema_fingerprint():
    history = dbus_history()
    data = b"".join(
        wrapped(text_of(DBUS / f"{r['table']}.avsc"), [r], r["table"], "schema_fingerprint") for r in history
    )
    # genericWrapperUseFingerprint=true overrides the schema_hash wrapper file of the directory
    items = events(decode(data, schemaDir=str(DBUS), genericWrapperUseFingerprint="true"))
    assert [e.op for e in items] == [dbus_expected(r)[0] for r in history]
    assert items[0].meta["avro"]["schema_fingerprint"] == avro_fingerprint(
        schema_of(DBUS / f"{history[0]['table']}.avsc")
    )


def test_dbus_payload_with_several_records():
    # DBus unwraps `while (!decoder.isEnd())`: a payload may hold more than one message
    table = "DBUS.DB_HEARTBEAT_MONITOR"
    text = text_of(DBUS / f"{table}.avsc")
    schema = json.loads(text)
    records = [r for r in dbus_history() if r["table"] == table]
    payload = b"".join(message(schema, r) for r in records)
    data = wrapper_message(table, "schema_hash", java_string_hash(text), payload)
    items = events(decode(data, schemaDir=str(DBUS)))
    assert [e.op for e in items] == ["INSERT", "UPDATE", "TRUNCATE"] and {e.source.offset for e in items} == {0}


def test_dbus_raw_messages_need_the_table_option(tmp_path):
    table = "DBUS.META_SYNC_EVENT"
    records = [r for r in dbus_history() if r["table"] == table]
    data = raw(schema_of(DBUS / f"{table}.avsc"), records)
    [bad] = decode(data, schemaDir=str(DBUS), wrapMessageInGenericAvroMessage="false")
    assert "do not name their table: set the table option" in bad.error and "has 3 tables" in bad.error
    [event] = events(decode(data, schemaDir=str(DBUS), table=table))
    assert event.after["DDL"] == "ALTER TABLE S.T ADD (C NUMBER)"


def test_dbus_replicate_properties_options_are_accepted():
    # the formatter settings of the real replicate.properties, keys without their prefix
    settings_seen = {}
    for line in text_of(DBUS / "replicate.properties").splitlines():
        key, _, value = line.partition("=")
        if ".format." in key:
            settings_seen[key.split(".format.")[1]] = value
    assert settings_seen == {
        "wrapMessageInGenericAvroMessage": "true",
        "genericWrapperUseFingerprint": "false",
        "treatAllColumnsAsStrings": "true",
        "versionSchemas": "true",
        "iso8601Format": "true",
    }
    history = dbus_history()
    data = b"".join(wrapped(text_of(DBUS / f"{r['table']}.avsc"), [r], r["table"]) for r in history)
    assert len(events(decode(data, schemaDir=str(DBUS), **settings_seen))) == len(history)


def test_dbus_unknown_hash_names_the_table_and_known_hashes(tmp_path):
    table = "DBUS.DB_HEARTBEAT_MONITOR"
    text = text_of(DBUS / f"{table}.avsc")
    record = dbus_history()[0]
    directory = tmp_path / "d"
    shutil.copytree(DBUS, directory)
    stale = wrapper_message(table, "schema_hash", 42, message(json.loads(text), record))
    good = wrapped(text, [record], table)
    ok, [bad] = split(decode(stale + good, schemaDir=str(directory)))
    assert len(ok) == 1 and bad.source.offset == 0
    assert bad.error.startswith(f"generic wrapper message at offset 0 for table {table} has schema_hash 42")
    assert str(java_string_hash(text)) in bad.error


# --- round trip law -------------------------------------------------------------------------------

_values = st.one_of(st.just(MISSING), st.none(), st.text(max_size=6))
_images = st.fixed_dictionaries({c: _values for c in ("CUST_CODE", "ORDER_ID", "TRANSACTION_ID")})


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("IUD"), _images, _images), min_size=1, max_size=5), st.booleans())
def test_property_three_states_survive_every_container(changes, use_wrapper):
    text = text_of(SEED_OP / "GG.TCUSTORD.avsc")
    schema = json.loads(text)
    records = []
    for i, (op, before, after) in enumerate(changes):
        records.append(op_record(op, None if op == "I" else before, None if op == "D" else after, pos=i + 1))
    data = wrapped(text, records, TABLE) if use_wrapper else ocf(schema, records, "deflate")
    items = events(decode(data, schemaDir=str(SEED_OP)))
    for event, (op, before, after) in zip(items, changes, strict=True):
        expect_before = None if op == "I" else {k: v for k, v in before.items() if v is not MISSING}
        expect_after = None if op == "D" else {k: v for k, v in after.items() if v is not MISSING}
        assert (event.before, event.after) == (expect_before, expect_after)
