"""datahub-blob decoder: the vendor doc's sample messages, Apache Paimon's real samples, pairing and bad input."""

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
from cdclake.formats import datahub_blob
from cdclake.formats.datahub_blob import NO_TABLE, DataHubBlobDecoder
from cdclake.options import OptionError, Options
from cdclake.registry import get_decoder

FIXTURES = Path(__file__).parents[1] / "fixtures" / "datahub_blob"
PAIMON = FIXTURES / "paimon_aliyun"
UTC = dt.UTC
SEQ_PAD = "0" * 13  # 19-digit sequence ids padded to 32


def decode(data: bytes, file: str = "f.json", **options: str) -> list[ChangeEvent | Rejected]:
    dec = get_decoder("datahub-blob", Options(options))
    assert isinstance(dec, DataHubBlobDecoder)
    return list(dec.decode(data, file))


def events(items: list[ChangeEvent | Rejected]) -> list[ChangeEvent]:
    assert all(isinstance(i, ChangeEvent) for i in items), [i for i in items if isinstance(i, Rejected)]
    return items  # type: ignore[return-value]


def split(items: list[ChangeEvent | Rejected]) -> tuple[list[ChangeEvent], list[Rejected]]:
    return [i for i in items if isinstance(i, ChangeEvent)], [i for i in items if isinstance(i, Rejected)]


def ms(value: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=value)


def msg(
    op: str = "INSERT",
    seq: Any = "1000",
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    columns: dict[str, str] | None = None,
    **payload: Any,
) -> dict[str, Any]:
    """A BLOB message on table db.t with columns id LONG, name STRING (unless given)."""
    columns = columns if columns is not None else {"id": "LONG", "name": "STRING"}
    body: dict[str, Any] = {"op": op, "timestamp": {"eventTime": 1700000000000}}
    if seq is not None:
        body["sequenceId"] = seq
    if before is not None:
        body["before"] = {"dataColumn": before}
    if after is not None:
        body["after"] = {"dataColumn": after}
    body.update(payload)
    schema = {
        "dataColumn": [{"name": n, "type": t} for n, t in columns.items()],
        "primaryKey": ["id"],
        "source": {"dbType": "MySQL", "dbName": "db", "tableName": "t"},
    }
    return {"schema": schema, "payload": body, "version": "0.0.1"}


def lines(*messages: dict[str, Any]) -> bytes:
    return "".join(to_json(m) + "\n" for m in messages).encode()


# --- the vendor doc's sample messages ------------------------------------------------------

SEED_SCHEMA_META = {
    "source": {"dbName": "example_db", "dbType": "MySQL", "tableName": "example_table_pk"},
    "version": "0.0.1",
    "column_types": {"id": "bigint", "name": "string", "comment": "string"},
}
SEED_INSERT = ChangeEvent(
    table="example_db.example_table_pk",
    op="INSERT",
    seq=SEQ_PAD + "1605339516000000004",
    event_ts=ms(1605339932000),
    source=Source("seed_insert.json", 0),
    keys=["id", "name"],
    before=None,
    after={"name": "joe", "comment": "comment", "id": 1},
    meta={
        "op": "INSERT",
        "sequenceId": "1605339516000000004",
        "timestamp": {"eventTime": 1605339932000, "systemTime": 1605339932736, "checkpointTime": 1605339932000},
        **SEED_SCHEMA_META,
    },
)
SEED_UPDATE = ChangeEvent(
    table="example_db.example_table_pk",
    op="UPDATE",
    seq=SEQ_PAD + "1605339516000000005",
    event_ts=ms(1605339934000),
    source=Source("seed_update.json", 0),
    keys=["id", "name"],
    before={"name": "joe", "comment": "comment", "id": 1},
    after={"name": "joe", "comment": "com1", "id": 1},
    meta={
        "sequenceId": "1605339516000000005",
        "timestamp": {"eventTime": 1605339934000, "systemTime": 1605339934951, "checkpointTime": 1605339934000},
        **SEED_SCHEMA_META,
        "pair": {"before": {"op": "UPDATE_BEFOR", "offset": 0}, "after": {"op": "UPDATE_AFTER", "offset": 549}},
    },
)
SEED_DELETE = ChangeEvent(
    table="example_db.example_table_pk",
    op="DELETE",
    seq=SEQ_PAD + "1605339516000000006",
    event_ts=ms(1605339937000),
    source=Source("seed_delete.json", 0),
    keys=["id", "name"],
    before={"name": "joe", "comment": "com1", "id": 1},
    after=None,
    meta={
        "op": "DELETE",
        "sequenceId": "1605339516000000006",
        "timestamp": {"eventTime": 1605339937000, "systemTime": 1605339937671, "checkpointTime": 1605339937000},
        **SEED_SCHEMA_META,
    },
)
SEED_HEARTBEAT = ChangeEvent(
    table=NO_TABLE,
    op="HEARTBEAT",
    seq=None,
    event_ts=ms(1605339953629),
    source=Source("seed_heartbeat.json", 0),
    meta={
        "op": "MHEARTBEAT",
        "timestamp": {"eventTime": 1605339953629, "checkpointTime": 1605339953629},
        "version": "0.0.1",
    },
)
SEED_DDL_META = json.loads((FIXTURES / "seed_ddl.json").read_text())["payload"]["ddl"]["ddlMeta"]
SEED_DDL = ChangeEvent(
    table="example_db.example_table_nopk",
    op="DDL",
    seq=SEQ_PAD + "1605339516000000035",
    event_ts=ms(1605342109000),
    source=Source("seed_ddl.json", 0),
    ddl={"text": "alter table example_table_nopk add column holo text"},
    meta={
        "op": "ALTER",
        "sequenceId": "1605339516000000035",
        "timestamp": {"eventTime": 1605342109000, "systemTime": 1605342109259, "checkpointTime": 1605342109000},
        "source": {"dbName": "example_db", "dbType": "MySQL", "tableName": "example_table_nopk"},
        "version": "0.0.1",
        "ddlMeta": SEED_DDL_META,
    },
)
SINGLE_SEEDS = {
    "seed_insert.json": SEED_INSERT,
    "seed_delete.json": SEED_DELETE,
    "seed_heartbeat.json": SEED_HEARTBEAT,
    "seed_ddl.json": SEED_DDL,
}
FIELDS = ("table", "op", "seq", "event_ts", "tx_id", "tx_pos", "tx_last", "keys", "before", "after", "ddl", "meta")


def assert_event(actual: ChangeEvent | Rejected, expected: ChangeEvent) -> None:
    assert isinstance(actual, ChangeEvent), actual
    for name in (*FIELDS, "source"):
        assert getattr(actual, name) == getattr(expected, name), name
    assert actual == expected


def test_registered():
    assert type(get_decoder("datahub-blob")) is DataHubBlobDecoder
    assert DataHubBlobDecoder.format_id == "datahub-blob"


@pytest.mark.parametrize("name", sorted(SINGLE_SEEDS))
def test_seed_sample_every_field(name):
    [event] = decode((FIXTURES / name).read_bytes(), name)
    assert_event(event, SINGLE_SEEDS[name])
    if event.event_ts is not None:
        assert event.event_ts.utcoffset() == dt.timedelta(0)


def test_seed_update_halves_pair_into_one_update():
    before = (FIXTURES / "seed_update_before.json").read_bytes()
    after = (FIXTURES / "seed_update_after.json").read_bytes()
    assert len(before) == 549
    [event] = decode(before + after, "seed_update.json")
    assert_event(event, SEED_UPDATE)
    # the other order: same update, the after half first
    [swapped] = decode(after + before, "seed_update.json")
    assert swapped.source.offset == 0
    assert swapped.meta["pair"] == {
        "before": {"op": "UPDATE_BEFOR", "offset": len(after)},
        "after": {"op": "UPDATE_AFTER", "offset": 0},
    }
    for name in FIELDS:
        if name != "meta":
            assert getattr(swapped, name) == getattr(event, name), name


@pytest.mark.parametrize(
    ("name", "side", "missing"),
    [("seed_update_before.json", "before", "after"), ("seed_update_after.json", "after", "before")],
)
def test_seed_update_half_alone_is_rejected_at_end_of_file(name, side, missing):
    data = (FIXTURES / name).read_bytes()
    [rejected] = decode(data, name)
    assert isinstance(rejected, Rejected)
    assert rejected.source == Source(name, 0)
    assert rejected.raw == data.rstrip(b"\n")
    assert f"is the {side} image of an update (sequenceId 1605339516000000005, table example_db.example_table_pk)" in (
        rejected.error
    )
    assert f"no row with its {missing} image is in this file" in rejected.error


def test_seed_all_one_per_line():
    data = (FIXTURES / "seed_all.jsonl").read_bytes()
    items = events(decode(data, "seed_all.jsonl"))
    assert [e.op for e in items] == ["INSERT", "UPDATE", "DELETE", "HEARTBEAT", "DDL"]
    starts = [0, *[i + 1 for i, b in enumerate(data) if b == ord("\n")][:-1]]
    # the update is reported at its first half; the halves are lines 2 and 3
    assert [e.source.offset for e in items] == [starts[0], starts[1], starts[3], starts[4], starts[5]]
    assert items[1].meta["pair"]["after"]["offset"] == starts[2]
    for event in items:
        assert data[event.source.offset : event.source.offset + 1] == b"{"
    row_seqs = [e.seq for e in items if e.seq]
    assert row_seqs == sorted(row_seqs)


def test_seed_ddl_meta_is_java_serialization_kept_as_text():
    [event] = decode((FIXTURES / "seed_ddl.json").read_bytes())
    assert base64.b64decode(SEED_DDL_META)[:4] == b"\xac\xed\x00\x05"  # what it is: never touched by the decoder
    assert event.meta["ddlMeta"] == SEED_DDL_META and isinstance(event.meta["ddlMeta"], str)
    assert event.ddl == {"text": "alter table example_table_nopk add column holo text"}


def test_ddl_meta_payload_is_never_decoded(monkeypatch):
    """A Java-serialization-looking ddlMeta (magic AC ED 00 05) stays opaque text, even if it is not base64."""
    java = base64.b64encode(b"\xac\xed\x00\x05sr\x00\x11java.util.HashMap\x05\x07\xda\xc1\xc3\x16`\xd1\x03").decode()

    class NoDecoding:
        def b64decode(self, *args: Any, **kwargs: Any) -> bytes:
            raise AssertionError("ddlMeta must not be decoded")

    monkeypatch.setattr(datahub_blob, "base64", NoDecoding())
    ddl = {"text": "create table t (id bigint)", "ddlMeta": java}
    junk = {"text": "drop index i on t", "ddlMeta": "rO0ABX not base64 at all !!"}
    items = events(decode(lines(msg("CREATE", ddl=ddl), msg("DINDEX", ddl=junk))))
    assert [e.op for e in items] == ["DDL", "DDL"]
    assert items[0].meta["ddlMeta"] == java and java.startswith("rO0ABX")
    assert items[1].meta["ddlMeta"] == "rO0ABX not base64 at all !!"
    assert items[0].ddl == {"text": "create table t (id bigint)"} and items[1].ddl == {"text": "drop index i on t"}
    assert '"ddlMeta":"rO0ABX' in to_json(items[0].to_dict())


# --- real samples (Apache Paimon "aliyun-json"; see fixtures/datahub_blob/SOURCES.md) ------------

PAIMON_SCHEMA_META = {
    "version": "0.0.1",
    "column_types": {"id": "bigint", "val": "double", "name": "string", "create_time": "timestamp"},
}
PAIMON_SOURCE = {"dbType": "MySQL", "dbName": "bigdata_test", "tableName": "sync_test_table"}


def paimon(name: str) -> tuple[bytes, list[ChangeEvent | Rejected]]:
    data = (PAIMON / name).read_bytes()
    return data, decode(data, name)


@pytest.mark.parametrize("name", ["event-insert.txt", "event-update-in-one.txt", "event-delete.txt"])
def test_paimon_license_header_is_one_rejected_record(name):
    data, items = paimon(name)
    rejected, event = items
    assert isinstance(rejected, Rejected) and isinstance(event, ChangeEvent)
    assert rejected.source == Source(name, 0)
    assert rejected.error.startswith("invalid JSON at line 1 column 1: Expecting value")
    assert "starts with '/'" in rejected.error and "up to the next line starting with '{'" in rejected.error
    assert rejected.raw.startswith(b"/*") and rejected.raw.endswith(b"*/")
    assert event.source == Source(name, data.index(b"{"))


def test_paimon_insert_is_a_full_load_upsert():
    data, [_, event] = paimon("event-insert.txt")
    assert_event(
        event,
        ChangeEvent(
            table="bigdata_test.sync_test_table",
            op="UPSERT",
            seq="-1",
            event_ts=None,
            source=Source("event-insert.txt", data.index(b"{")),
            keys=["id"],
            before=None,
            after={"create_time": "2024-11-15T08:58:34.000000Z", "id": 2, "name": "a", "val": Decimal("1.100000")},
            meta={
                "op": "INSERT",
                "sequenceId": "-1",
                "timestamp": {"checkpointTime": -1, "eventTime": -1, "systemTime": 1731661820245},
                "source": {"dbName": "bigdata_test", "dbType": "MySQL", "tableName": "sync_test_table"},
                **PAIMON_SCHEMA_META,
            },
        ),
    )
    assert str(event.after["val"]) == "1.100000"
    assert event.seq < SEQ_PAD + "0" * 19  # a full-load row sorts before every change


def test_paimon_update_in_one_message():
    data, [_, event] = paimon("event-update-in-one.txt")
    assert data[event.source.offset - 1 : event.source.offset] == b" "  # the record line starts with a blank
    assert_event(
        event,
        ChangeEvent(
            table="bigdata_test.sync_test_table",
            op="UPDATE",
            seq=SEQ_PAD + "1731663842292000001",
            event_ts=ms(1731662097000),
            source=Source("event-update-in-one.txt", data.index(b"{")),
            keys=["id"],
            before={"id": 2, "val": Decimal("1.100000"), "name": "a", "create_time": "2024-11-15T08:58:34.000000Z"},
            after={"id": 2, "val": Decimal("2.200000"), "name": "a", "create_time": "2024-11-15T08:58:34.000000Z"},
            meta={
                "op": "UPDATE_AFTER",
                "sequenceId": "1731663842292000001",
                "timestamp": {"eventTime": 1731662097000, "systemTime": 1731663848979, "checkpointTime": 1731662097000},
                "source": PAIMON_SOURCE,
                **PAIMON_SCHEMA_META,
            },
        ),
    )


def test_paimon_delete():
    data, [_, event] = paimon("event-delete.txt")
    assert_event(
        event,
        ChangeEvent(
            table="bigdata_test.sync_test_table",
            op="DELETE",
            seq=SEQ_PAD + "1731663842292000000",
            event_ts=ms(1731662085000),
            source=Source("event-delete.txt", data.index(b"{")),
            keys=["id"],
            before={"id": 1, "val": Decimal("1.100000"), "name": "a", "create_time": "2024-11-15T08:58:34.000000Z"},
            after=None,
            meta={
                "op": "DELETE",
                "sequenceId": "1731663842292000000",
                "timestamp": {"eventTime": 1731662085000, "systemTime": 1731663848953, "checkpointTime": 1731662085000},
                "source": PAIMON_SOURCE,
                **PAIMON_SCHEMA_META,
            },
        ),
    )


def test_paimon_files_concatenated():
    data = b"\n".join(
        (PAIMON / n).read_bytes() for n in ("event-insert.txt", "event-update-in-one.txt", "event-delete.txt")
    )
    ok, bad = split(decode(data))
    assert [e.op for e in ok] == ["UPSERT", "UPDATE", "DELETE"]
    assert len(bad) == 3 and all(r.raw.startswith(b"/*") for r in bad)
    # sorted by seq: the full-load row first, then the delete (…000) and the update (…001) in commit order
    assert [e.op for e in sorted(ok, key=lambda e: e.seq)] == ["UPSERT", "DELETE", "UPDATE"]


# --- types -----------------------------------------------------------------------------------


def test_every_streamx_type():
    columns = {"b": "BOOLEAN", "d": "DOUBLE", "t": "DATE", "y": "BYTES", "l": "LONG", "s": "STRING"}
    after = {
        "b": True,
        "d": "-0.5e3",
        "t": 1590315269000,
        "y": base64.b64encode(b"\x00\xffbin").decode(),
        "l": 7,
        "s": "x",
    }
    nulls = dict.fromkeys(columns)
    strings = {"b": "false", "d": 2, "t": "1590315269000", "l": "-12", "s": ""}
    specials = {"d": "NaN", "l": 9223372036854775807}
    items = events(
        decode(
            lines(
                msg(after=after, columns=columns),
                msg(after=nulls, columns=columns),
                msg(after=strings, columns=columns),
                msg(after=specials, columns=columns),
            )
        )
    )
    typed, null, from_strings, special = (e.after for e in items)
    assert typed == {
        "b": True,
        "d": Decimal("-0.5e3"),
        "t": "2020-05-24T10:14:29.000000Z",
        "y": b"\x00\xffbin",
        "l": 7,
        "s": "x",
    }
    assert null == nulls  # NULL stays a present key with None
    assert from_strings == {"b": False, "d": Decimal(2), "t": "2020-05-24T10:14:29.000000Z", "l": -12, "s": ""}
    assert special["d"].is_nan() and special["l"] == 2**63 - 1
    assert items[0].meta["column_types"] == {
        "b": "boolean",
        "d": "double",
        "t": "timestamp",
        "y": "binary",
        "l": "bigint",
        "s": "string",
    }


def test_missing_column_stays_absent_and_undeclared_columns_pass():
    [event] = events(
        decode(lines(msg(after={"id": 1, "extra": {"nested": [1]}}, columns={"id": "LONG", "x": "FLOAT"})))
    )
    assert event.after == {"id": 1, "extra": {"nested": [1]}}
    assert "name" not in event.after
    assert event.meta["column_types"] == {"id": "bigint"}  # FLOAT is not a StreamX type: no hint, value unchanged


def test_table_name_forms():
    def with_source(source: dict[str, Any]) -> dict[str, Any]:
        m = msg(after={"id": 1})
        m["schema"]["source"] = source
        return m

    items = events(
        decode(
            lines(
                with_source({"dbName": "db", "schemaName": "sch", "tableName": "t"}),
                with_source({"dbName": "db", "tableName": "t"}),
                with_source({"tableName": "t"}),
                with_source({"dbName": "", "schemaName": "", "tableName": "t"}),
            )
        )
    )
    assert [e.table for e in items] == ["sch.t", "db.t", "t", "t"]
    assert {e.table for e in events(decode(lines(msg(after={"id": 1})), table="OTHER.T"))} == {"OTHER.T"}


def test_keys_option_overrides_primary_key():
    [event] = events(decode(lines(msg(after={"id": 1})), keys="name"))
    assert event.keys == ["name"]
    m = msg(after={"id": 1})
    m["schema"]["primaryKey"] = []
    [keyless] = events(decode(lines(m)))
    assert keyless.keys is None


def test_all_ops():
    ddl = {"text": "x"}
    messages = [
        msg("INSERT", "1", after={"id": 1}),
        msg("UPDATE", "2", before={"id": 1}, after={"id": 1, "name": "a"}),
        msg("UPDATE_BEFORE", "3", before={"id": 1}),
        msg("UPDATE_AFTER", "3", after={"id": 2}),
        msg("UPDATE_BEFOR", "4", before={"id": 2}, after={"id": 3}),
        msg("DELETE", "5", before={"id": 3}),
        msg("TRUNCATE", "6"),
        *(msg(op, "7", ddl=ddl) for op in ("CREATE", "ALTER", "RENAME", "CINDEX", "DINDEX", "QUERY", "ERASE")),
        msg("TRANSACTION_BEGIN", None),
        msg("TRANSACTION_END", None),
        msg("XACOMMIT", None),
        msg("MHEARTBEAT", None),
        msg("GTID", None),
    ]
    items = events(decode(lines(*messages)))
    assert [e.op for e in items] == [
        "INSERT",
        "UPDATE",
        "UPDATE",
        "UPDATE",
        "DELETE",
        "TRUNCATE",
        *["DDL"] * 7,
        "TX_BEGIN",
        "TX_END",
        "TX_END",
        "HEARTBEAT",
        "HEARTBEAT",
    ]
    assert [e.meta.get("op") for e in items][5:] == [
        "TRUNCATE",
        "CREATE",
        "ALTER",
        "RENAME",
        "CINDEX",
        "DINDEX",
        "QUERY",
        "ERASE",
        "TRANSACTION_BEGIN",
        "TRANSACTION_END",
        "XACOMMIT",
        "MHEARTBEAT",
        "GTID",
    ]
    assert items[2].before == {"id": 1} and items[2].after == {"id": 2}
    assert items[3].before == {"id": 2} and items[3].after == {"id": 3}
    assert items[5].before is None and items[5].after is None and items[5].table == "db.t"
    assert all(e.ddl == {"text": "x"} for e in items[6:13])
    assert all(e.seq is None for e in items[13:])


def test_markers_without_table():
    m = {"schema": {}, "payload": {"op": "TRANSACTION_BEGIN"}}
    [event] = events(decode(lines(m)))
    assert (event.table, event.op, event.seq, event.event_ts, event.meta) == (
        NO_TABLE,
        "TX_BEGIN",
        None,
        None,
        {"op": "TRANSACTION_BEGIN"},
    )


def test_unknown_members_kept_in_meta():
    m = msg(after={"id": 1}, shardId="3")
    m["extraTop"] = 1
    [event] = events(decode(lines(m)))
    assert event.meta["extra"] == {"shardId": "3", "extraTop": 1}


# --- pairing ------------------------------------------------------------------------------------


def test_non_adjacent_halves_pair_and_duplicates_are_rejected():
    data = lines(
        msg("UPDATE_BEFOR", "10", before={"id": 1, "name": "a"}),
        msg("INSERT", "11", after={"id": 5}),
        msg("UPDATE_BEFOR", "10", before={"id": 1, "name": "dup"}),
        msg("UPDATE_AFTER", "10", after={"id": 1, "name": "b"}),
        msg("UPDATE_AFTER", "12", after={"id": 2, "name": "c"}),
    )
    starts = [0, *[i + 1 for i, b in enumerate(data) if b == ord("\n")][:-1]]
    items = decode(data)
    insert, duplicate, update, lonely = items
    assert insert.op == "INSERT"
    assert isinstance(duplicate, Rejected) and duplicate.source.offset == starts[2]
    assert duplicate.error.startswith(
        "second before image (UPDATE_BEFOR) for the update with sequenceId 10 of table db.t"
    )
    assert f"the first one at offset {starts[0]} is kept" in duplicate.error
    assert update.op == "UPDATE" and update.before == {"id": 1, "name": "a"} and update.after == {"id": 1, "name": "b"}
    assert update.source.offset == starts[0]
    assert isinstance(lonely, Rejected) and lonely.source.offset == starts[4]
    assert "UPDATE_AFTER row is the after image of an update (sequenceId 12, table db.t)" in lonely.error


def test_halves_of_different_tables_do_not_pair():
    other = msg("UPDATE_AFTER", "10", after={"id": 1})
    other["schema"]["source"]["tableName"] = "u"
    items = decode(lines(msg("UPDATE_BEFOR", "10", before={"id": 1}), other))
    assert [type(i) for i in items] == [Rejected, Rejected]


_values = st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1))
_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=6)


@settings(max_examples=50, deadline=None)
@given(
    st.dictionaries(_names, _values, max_size=4),
    st.dictionaries(_names, _values, max_size=4),
    st.lists(st.integers(0, 10**6), max_size=4),
    st.integers(0, 4),
    st.booleans(),
    st.sampled_from(["UPDATE_BEFOR", "UPDATE_BEFORE"]),
)
def test_property_pairing_independent_of_order(before, after, others, cut, swap, before_op):
    columns = dict.fromkeys({*before, *after}, "LONG")
    halves = [
        msg(before_op, "99999999", before=before, columns=columns),
        msg("UPDATE_AFTER", "99999999", after=after, columns=columns),
    ]
    fillers = [msg("INSERT", str(n), after={"id": n}) for n in others]
    first, second = halves[::-1] if swap else halves
    stream = [*fillers[:cut], first, *fillers[cut:], second]
    items = events(decode(lines(*stream)))
    [update] = [e for e in items if e.op == "UPDATE"]
    assert update.before == before and update.after == after
    assert update.meta["pair"]["before"]["op"] == before_op and update.meta["pair"]["after"]["op"] == "UPDATE_AFTER"
    reference = events(decode(lines(*halves)))[0]
    for name in FIELDS:
        if name != "meta":
            assert getattr(update, name) == getattr(reference, name), name
    assert {k: v for k, v in update.meta.items() if k != "pair"} == {
        k: v for k, v in reference.meta.items() if k != "pair"
    }
    assert len(items) == len(others) + 1


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=300))
def test_property_any_bytes_terminate(data):
    good = lines(msg(after={"id": 1}))
    items = decode(data + b"\n" + good)
    assert all(isinstance(i, (ChangeEvent, Rejected)) for i in items)
    assert isinstance(items[-1], ChangeEvent) and items[-1].after == {"id": 1}
    offsets = [i.source.offset for i in items]
    assert offsets == sorted(set(offsets))


# --- bad input -------------------------------------------------------------------------------------


def test_malformed_records_rejected_neighbours_decode():
    cases = {
        "bad base64": (
            msg(after={"id": 1, "b": "@@@"}, columns={"id": "LONG", "b": "BYTES"}),
            "column 'b' of the after image is declared BYTES but holds string '@@@': not valid base64",
        ),
        "long as text": (
            msg(after={"id": "abc"}),
            "column 'id' of the after image is declared LONG but holds string 'abc': expected an integer",
        ),
        "long as bool": (
            msg(after={"id": True}),
            "column 'id' of the after image is declared LONG but holds boolean True",
        ),
        "string as number": (
            msg(after={"id": 1, "name": 5}),
            "column 'name' of the after image is declared STRING but holds number 5",
        ),
        "double as words": (
            msg(after={"d": "one"}, columns={"d": "DOUBLE"}),
            "column 'd' of the after image is declared DOUBLE but holds string 'one'",
        ),
        "boolean as yes": (
            msg(after={"f": "yes"}, columns={"f": "BOOLEAN"}),
            "column 'f' of the after image is declared BOOLEAN",
        ),
        "date as text": (
            msg(after={"t": "2020-01-01"}, columns={"t": "DATE"}),
            "column 't' of the after image is declared DATE but holds string '2020-01-01': expected epoch milliseconds",
        ),
        "date out of range": (msg(after={"t": 10**20}, columns={"t": "DATE"}), "is outside the years 1-9999"),
        "unknown op": (msg("UPSERT"), "unknown op 'UPSERT'; DataHub BLOB ops are"),
        "lower-case op": (msg("insert"), "unknown op 'insert'"),
        "xa rollback": (msg("XAROLLBACK"), "XAROLLBACK: the changes of a rolled-back XA transaction"),
        "no sequenceId": (
            msg(seq=None, after={"id": 1}),
            "INSERT message has no sequenceId: DataHub rows need it for ordering",
        ),
        "bad sequenceId": (
            msg(seq="12a", after={"id": 1}),
            "sequenceId '12a' is not a string of digits (or -1 for a full-load row)",
        ),
        "long sequenceId": (msg(seq="1" * 33, after={"id": 1}), "has more than 32 digits"),
        "sequenceId object": (msg(seq={"a": 1}, after={"id": 1}), "sequenceId must be a string of digits, not object"),
        "no after": (msg("INSERT"), "INSERT message has no after image (payload.after.dataColumn)"),
        "no before": (msg("DELETE"), "DELETE message has no before image"),
        "half without image": (msg("UPDATE_BEFOR"), "UPDATE_BEFOR message has no before image"),
        "snapshot half": (msg("UPDATE_AFTER", "-1", after={"id": 1}), "UPDATE_AFTER message has sequenceId -1"),
        "ddl without text": (
            msg("ALTER", ddl={"ddlMeta": "rO0ABQ=="}),
            "ALTER message has no DDL statement (payload.ddl.text is None)",
        ),
        "payload missing": ({"schema": {}}, 'record has no "payload" object'),
        "payload a list": ({"payload": [1]}, "payload must be a JSON object, not a JSON array"),
        "array record": ([1, 2], "record is a JSON array, not an object"),
        "dataColumn not list": (
            msg(after={"id": 1}, columns=None) | {"schema": {"dataColumn": {"id": "LONG"}}},
            "schema.dataColumn must be a list",
        ),
        "dataColumn item": (
            msg(after={"id": 1}) | {"schema": {"dataColumn": [{"name": 1}]}},
            "schema.dataColumn[0] is not a {name, type} object",
        ),
        "primaryKey": (
            msg(after={"id": 1}) | {"schema": {"primaryKey": "id"}},
            "schema.primaryKey must be a list of column names",
        ),
        "image not object": (
            msg("DELETE", before=None) | {"payload": {"op": "DELETE", "sequenceId": "1", "before": "x"}},
            "payload.before must be a JSON object, not a JSON string",
        ),
        "dataColumn not object": (
            msg("DELETE", before=None)
            | {"payload": {"op": "DELETE", "sequenceId": "1", "before": {"dataColumn": [1]}}},
            "payload.before.dataColumn must be a JSON object",
        ),
        "eventTime text": (
            msg(after={"id": 1}, timestamp={"eventTime": "noon"}),
            "timestamp.eventTime 'noon' is not epoch milliseconds",
        ),
        "no table": (
            msg(after={"id": 1}) | {"schema": {"source": {"dbName": "db"}}},
            "INSERT message names no table (schema.source has no tableName); set --option table=NAME",
        ),
    }
    good = [msg("INSERT", str(i), after={"id": i}) for i in range(len(cases) + 1)]
    stream: list[Any] = [good[0]]
    for i, (record, _) in enumerate(cases.values()):
        stream += [record, good[i + 1]]
    data = "".join(to_json(m) + "\n" for m in stream).encode() + b'{"schema": oops}\n' + lines(good[0])
    starts = [0, *[i + 1 for i, b in enumerate(data) if b == ord("\n")][:-1]]
    items = decode(data, "bad.json")
    assert len(items) == len(starts)
    for index, (item, start) in enumerate(zip(items, starts, strict=True)):
        assert item.source == Source("bad.json", start)
        if index % 2 == 0 and index < 2 * len(cases) + 1:
            assert isinstance(item, ChangeEvent), item
    for (name, (record, message)), item in zip(cases.items(), items[1::2], strict=False):
        assert isinstance(item, Rejected), name
        assert message in item.error, (name, item.error)
        assert item.raw == to_json(record).encode(), name
    bad_json = items[-2]
    assert isinstance(bad_json, Rejected) and bad_json.error.startswith("invalid JSON at line")
    assert bad_json.raw == b'{"schema": oops}'
    assert isinstance(items[-1], ChangeEvent)


def test_invalid_utf8_rejects_only_its_record():
    good = lines(msg(after={"id": 1}))
    bad = to_json(msg(after={"id": 2, "name": "x"})).encode().replace(b'"x"', b'"\xff\xfe"') + b"\n"
    items = decode(good + bad + good)
    assert [type(i) for i in items] == [ChangeEvent, Rejected, ChangeEvent]
    assert items[1].error.startswith("bytes that are not valid UTF-8 at line 2 (first bad byte 0xff)")
    assert items[1].source.offset == len(good) and items[2].source.offset == len(good) + len(bad)


def test_bom_and_limits(monkeypatch):
    data = b"\xef\xbb\xbf" + lines(msg(after={"id": 1}))
    [event] = events(decode(data))
    assert event.source.offset == 3
    from cdclake.formats import _datahub

    monkeypatch.setattr(_datahub, "MAX_RECORD_BYTES", 50)
    [rejected] = decode(lines(msg(after={"id": 1})))
    assert "larger than the limit of 50" in rejected.error
    monkeypatch.setattr(_datahub, "MAX_RECORD_BYTES", 64 * 1024**2)
    deep = b'{"schema":{},"payload":{"op":"MHEARTBEAT","x":' + b"[" * 600 + b"]" * 600 + b"}}\n"
    [too_deep] = decode(deep)
    assert isinstance(too_deep, Rejected) and "deeper than 512 levels" in too_deep.error


def test_no_vendor_options():
    with pytest.raises(OptionError, match="unknown option"):
        get_decoder("datahub-blob", Options({"nullValue": "x"}))
