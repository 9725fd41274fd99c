"""Hostile input for the JSON decoders: goldengate-json, debezium-json, cdl-json, datahub-blob and
datahub-tuple (JSON lines). Each format is a :class:`JsonProfile` (a good record with an ``ID``,
and how to spoil one); every case is built from it the same way (see :mod:`._corpus`)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from cdclake.runtime.limits import MAX_JSON_DEPTH, MAX_RECORD_BYTES

from ._corpus import DEEP, HUGE, Case, check, deep_json, huge_text
from ._truncation import sweep_truncations

Record = dict[str, Any]


@dataclass
class JsonProfile:
    """A JSON format: its good record and the spoilt variants the cases need."""

    format_id: str
    good: Callable[[int], Record]
    #: The record with an unknown op, without a table, with a value of the wrong type.
    unknown_op: Callable[[Record], Record]
    no_table: Callable[[Record], Record]
    wrong_type: Callable[[Record], Record]
    #: Where a column value goes: the record's column dict.
    columns: Callable[[Record], dict[str, Any]]
    reasons: dict[str, str]
    #: A top-level member repeated with another value (the duplicate-keys case).
    duplicate: tuple[str, Any]
    #: The wrong-encoding case: options and how the file is spoilt (see :func:`cases`).
    encoding_option: str | None = None
    options: dict[str, str] = field(default_factory=dict)


def _gg(i: int) -> Record:
    return {
        "table": "GG.T",
        "op_type": "I",
        "op_ts": "2024-01-01 00:00:00.000000",
        "pos": f"{i:020d}",
        "after": {"ID": i, "NAME": "n"},
    }


def _debezium(i: int) -> Record:
    return {
        "op": "c",
        "ts_ms": 1700000000000,
        "source": {"db": "shop", "schema": "public", "table": "t", "lsn": 1000 + i, "ts_ms": 1700000000000},
        "before": None,
        "after": {"ID": i, "NAME": "n"},
    }


def _debezium_typed(record: Record) -> Record:
    fields = [{"field": "ID", "type": "int32"}, {"field": "NAME", "type": "string"}]
    schema = {
        "type": "struct",
        "fields": [
            {"field": "before", "type": "struct", "optional": True, "fields": fields},
            {"field": "after", "type": "struct", "optional": True, "fields": fields},
        ],
    }
    record["after"]["ID"] = "abc"
    return {"schema": schema, "payload": record}


def _cdl(i: int) -> Record:
    return {
        "DATA_STORE": "POSTGRESQL",
        "SEG_OWNER": "S",
        "TABLE_NAME": "T",
        "TIMESTAMP": 1700000000000,
        "OPERATION": "INSERT",
        "data": {"ID": i, "NAME": "n"},
        "transaction": {"properties": [{"name": "lsn", "value": 1000 + i}, {"name": "txId", "value": 7}]},
        "message_version": "1.0",
    }


def _cdl_typed(record: Record) -> Record:
    schema = {"type": "struct", "fields": [{"field": "data", "fields": [{"field": "ID", "type": "int64"}]}]}
    record["data"]["ID"] = "abc"
    return {"schema": schema, "payload": record}


def _blob(i: int) -> Record:
    return {
        "schema": {
            "dataColumn": [{"name": "ID", "type": "LONG"}, {"name": "NAME", "type": "STRING"}],
            "primaryKey": ["ID"],
            "source": {"dbType": "MySQL", "dbName": "shop", "tableName": "t"},
        },
        "payload": {
            "op": "INSERT",
            "sequenceId": str(1000 + i),
            "timestamp": {"eventTime": 1700000000000},
            "after": {"dataColumn": {"ID": i, "NAME": "n"}},
        },
    }


def _tuple(i: int) -> Record:
    return {
        "_sequence_id_": str(1000 + i),
        "_operation_type_": "I",
        "_source_table_": "shop.t",
        "_excute_time_": 1700000000000,
        "ID": i,
        "NAME": "n",
    }


def _set(record: Record, path: str, value: Any) -> Record:
    """``record`` with the member at ``a.b.c`` set (``value`` None with ``DELETE``: removed)."""
    *parents, last = path.split(".")
    holder = record
    for name in parents:
        holder = holder[name]
    if value is _DELETE:
        del holder[last]
    else:
        holder[last] = value
    return record


_DELETE = object()

PROFILES = {
    "goldengate-json": JsonProfile(
        "goldengate-json",
        _gg,
        unknown_op=lambda r: _set(r, "op_type", "X"),
        no_table=lambda r: _set(r, "table", _DELETE),
        wrong_type=lambda r: _set(r, "after", [1, 2]),
        columns=lambda r: r["after"],
        reasons={"unknown-op": "unknown op_type", "missing-table": "no table name", "wrong-type": "after must be"},
        duplicate=("op_type", "D"),
        encoding_option="US-ASCII",
    ),
    "debezium-json": JsonProfile(
        "debezium-json",
        _debezium,
        unknown_op=lambda r: _set(r, "op", "x"),
        no_table=lambda r: _set(r, "source.table", _DELETE),
        wrong_type=_debezium_typed,
        columns=lambda r: r["after"],
        reasons={"unknown-op": "unknown op", "missing-table": "no table name", "wrong-type": "column ID"},
        duplicate=("op", "d"),
    ),
    "cdl-json": JsonProfile(
        "cdl-json",
        _cdl,
        unknown_op=lambda r: _set(r, "OPERATION", "MERGE"),
        no_table=lambda r: _set(r, "TABLE_NAME", _DELETE),
        wrong_type=_cdl_typed,
        columns=lambda r: r["data"],
        reasons={
            "unknown-op": "unknown OPERATION",
            "missing-table": "names no table",
            "wrong-type": "expected an integer",
        },
        duplicate=("OPERATION", "DELETE"),
    ),
    "datahub-blob": JsonProfile(
        "datahub-blob",
        _blob,
        unknown_op=lambda r: _set(r, "payload.op", "MERGE"),
        no_table=lambda r: _set(r, "schema.source.tableName", _DELETE),
        wrong_type=lambda r: _set(r, "payload.after.dataColumn.ID", "abc"),
        columns=lambda r: r["payload"]["after"]["dataColumn"],
        reasons={"unknown-op": "unknown op", "missing-table": "names no table", "wrong-type": "declared LONG"},
        duplicate=("payload", {"op": "DELETE"}),
    ),
    "datahub-tuple": JsonProfile(
        "datahub-tuple",
        _tuple,
        unknown_op=lambda r: _set(r, "_operation_type_", "X"),
        no_table=lambda r: _set(r, "_source_table_", _DELETE),
        wrong_type=lambda r: _set(r, "_sequence_id_", {"id": 1}),
        columns=lambda r: r,
        reasons={
            "unknown-op": "unknown _operation_type_",
            "missing-table": "no _source_table_",
            "wrong-type": "must be a string of digits",
        },
        duplicate=("_operation_type_", "D"),
    ),
}


def line(record: Record) -> bytes:
    return json.dumps(record, ensure_ascii=False).encode() + b"\n"


def around(profile: JsonProfile, bad: bytes) -> bytes:
    """Good record 1, the bad record, good record 3."""
    return line(profile.good(1)) + bad + line(profile.good(3))


def with_column(profile: JsonProfile, name: str, value: Any) -> Record:
    record = profile.good(2)
    profile.columns(record)[name] = value
    return record


def cases(profile: JsonProfile) -> list[Case]:
    good = profile.good
    spoilt = [
        ("unknown-op", profile.unknown_op(good(2)), profile.reasons["unknown-op"]),
        ("missing-table", profile.no_table(good(2)), profile.reasons["missing-table"]),
        ("wrong-value-types", profile.wrong_type(good(2)), profile.reasons["wrong-type"]),
    ]
    key, other = profile.duplicate
    text = json.dumps(good(2))
    duplicated = ("{" + json.dumps(key) + ": " + json.dumps(other) + ", " + text[1:] + "\n").encode()
    marker = with_column(profile, "NAME", "@@BAD@@")
    invalid = line(marker).replace(b"@@BAD@@", b"\xff\xfe bad")
    deep = deep_json().encode()
    out = [
        Case("empty-file", [("f.json", b"")], [], []),
        Case(
            "truncated-last-record",
            [("f.json", line(good(1)) + line(good(2)) + line(good(3))[:-12])],
            [1, 2],
            ["truncated"],
        ),
        Case("invalid-utf8", [("f.json", around(profile, invalid))], [1, 3], ["not valid UTF-8"]),
        Case(
            "record-64mib",
            [("f.json", around(profile, line(with_column(profile, "NAME", huge_text()))))],
            [1, 3],
            ["larger than the limit"],
            big=True,
        ),
        Case(
            "deeply-nested",
            [("f.json", around(profile, line(with_column(profile, "DEEP", "@@DEEP@@")).replace(b'"@@DEEP@@"', deep)))],
            [1, 3],
            ["nests JSON deeper"],
        ),
        Case("duplicate-keys", [("f.json", around(profile, duplicated))], [1, 3], ["duplicate key"]),
    ]
    out += [
        Case(name, [("f.json", around(profile, line(record)))], [1, 3], [reason]) for name, record, reason in spoilt
    ]
    if profile.encoding_option:
        # The encoding option declares US-ASCII; record 2 carries UTF-8 text.
        accented = line(with_column(profile, "NAME", "café"))
        out.append(
            Case(
                "wrong-encoding-declaration",
                [("f.json", around(profile, accented))],
                [1, 3],
                [f"not valid {profile.encoding_option}"],
                options={"encoding": profile.encoding_option},
            )
        )
    else:
        # A UTF-16 byte order mark on UTF-8 text: the first record carries the bad bytes.
        data = b"\xff\xfe" + line(good(1)) + line(good(2)) + line(good(3))
        out.append(Case("wrong-encoding-declaration", [("f.json", data)], [2, 3], ["not valid UTF-8"]))
    return out


ALL = [(fid, case) for fid, profile in PROFILES.items() for case in cases(profile)]


@pytest.mark.parametrize(("format_id", "case"), ALL, ids=[f"{fid}:{c.name}" for fid, c in ALL])
def test_hostile_json(format_id: str, case: Case, tmp_path) -> None:
    check(format_id, case, tmp_path)


@pytest.mark.parametrize("format_id", sorted(PROFILES))
def test_truncated_file_at_every_kind_of_cut(format_id: str, tmp_path) -> None:
    """The file cut anywhere: records wholly before the cut decode, a cut record is rejected."""
    profile = PROFILES[format_id]
    records = [line(profile.good(i)) for i in range(1, 5)]
    # a record is complete once its closing brace is there (the line end is not part of it)
    sweep_truncations(format_id, records, tmp_path, complete_at=lambda r: len(r) - 1)


def test_ddl_meta_java_payload_is_never_deserialized(tmp_path) -> None:
    """DataHub ``ddlMeta``: a Java serialization stream (``AC ED 00 05``) stays opaque text."""
    gadget = b"\xac\xed\x00\x05sr\x00\x17java.util.PriorityQueue\x94\xda0\xb4\xfb?\x82\xb1\x03\x00\x02I\x00\x04size"
    gadget += b"CANARY-JAVA-GADGET" + bytes(range(256))
    text = base64.b64encode(gadget).decode()
    ddl = _blob(2)
    ddl["payload"] = {
        "op": "CREATE",
        "sequenceId": "1002",
        "timestamp": {"eventTime": 1700000000000},
        "ddl": {"text": "CREATE TABLE t (ID BIGINT)", "ddlMeta": text},
    }

    def opaque(outcome) -> None:
        [event] = [e for e in outcome.events if e.op == "DDL"]
        meta = json.loads(event.text)["meta"]
        assert meta["ddlMeta"] == text, "ddlMeta must be carried exactly as the text it came as"

    case = Case(
        "ddlmeta-java-serialization",
        [("f.json", line(_blob(1)) + line(ddl) + line(_blob(3)))],
        [1, "DDL", 3],
        [],
        # the decoded gadget must never show up (it would if the base64 were decoded into an event)
        forbidden=("CANARY-JAVA-GADGET", "java.util.PriorityQueue"),
        extra=opaque,
    )
    outcome = check("datahub-blob", case, tmp_path)
    assert not outcome.audit  # no pickle/marshal/javaobj/jpype import, no unpickling (audit hooks)


def test_generated_sizes_are_the_issue_sizes() -> None:
    """10,000 levels (beyond the nesting limit) and just over 64 MiB (beyond the record limit)."""
    assert deep_json().count("[") == DEEP == 10_000 > MAX_JSON_DEPTH
    assert len(huge_text()) == HUGE > MAX_RECORD_BYTES == 64 * 1024**2
