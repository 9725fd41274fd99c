"""Parity of the GoldenGate Avro formats with goldengate-json: one logical history, written by small
writers of our own as JSON text (§6.3) and as Avro row (§6.4) and Avro operation (§6.5) messages in
every container (OCF with and without compression, raw messages with a schema directory, with and
without lineDelimiter, generic wrapper with schema_hash and with schema_fingerprint), decodes to the
same canonical events except source offsets and format meta.

What Avro row cannot carry is asserted as explicit differences (§6.1.2, §6.4.1.2, §6.4.7.2): a
missing column arrives as NULL; an update carries its after image only; a primary-key update is a
delete plus an insert at one pos (``pkUpdateHandling=delete-insert``).
"""

from __future__ import annotations

import copy
import datetime as dt
import io
import json
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pytest

from cdclake.events.change import ChangeEvent, Rejected, to_json
from cdclake.formats._gg_avro import avro_fingerprint, java_string_hash
from cdclake.merge import apply_events, prepare
from cdclake.options import Options
from cdclake.registry import get_decoder

CUST, ORDERS = "GG.CUSTOMER", "GG.ORDERS"
#: table -> (column, Avro type, column type, is key)
TABLES: dict[str, list[tuple[str, str, str, bool]]] = {
    CUST: [
        ("ID", "long", "bigint", True),
        ("NAME", "string", "string", False),
        ("CITY", "string", "string", False),
        ("BALANCE", "double", "double", False),
    ],
    ORDERS: [
        ("ORDER_ID", "string", "string", True),
        ("CUST_ID", "long", "bigint", False),
        ("AMOUNT", "double", "double", False),
        ("NOTE", "string", "string", False),
    ],
}
META_FIELDS = [
    {"name": "table", "type": "string"},
    {"name": "op_type", "type": "string"},
    {"name": "op_ts", "type": "string"},
    {"name": "current_ts", "type": "string"},
    {"name": "pos", "type": "string"},
    {"name": "primary_keys", "type": {"type": "array", "items": "string"}},
    {"name": "tokens", "type": {"type": "map", "values": "string"}, "default": {}},
]


@dataclass
class Change:
    """One trail operation; images map column -> value, a missing column is an absent key."""

    table: str
    op: str  # I U D T
    pos: int
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None

    @property
    def pos_text(self) -> str:
        return f"{self.pos:020d}"

    @property
    def op_ts(self) -> str:
        return (dt.datetime(2024, 3, 1, 12, 0) + dt.timedelta(seconds=self.pos)).strftime("%Y-%m-%d %H:%M:%S.%f")

    @property
    def keys(self) -> list[str]:
        return [n for n, _, _, k in TABLES[self.table] if k]


HISTORY = [
    Change(CUST, "I", 1, after={"ID": 1, "NAME": "Ann", "CITY": "Oslo", "BALANCE": 10.5}),
    Change(CUST, "I", 2, after={"ID": 2, "NAME": "Bob", "CITY": None, "BALANCE": 0.0}),
    Change(ORDERS, "I", 3, after={"ORDER_ID": "O1", "CUST_ID": 1, "AMOUNT": 99.95, "NOTE": None}),
    # an update of non-key columns; NAME is missing from both images (not logged), CITY changes
    Change(CUST, "U", 4, before={"ID": 1, "CITY": "Oslo"}, after={"ID": 1, "CITY": "Bergen", "BALANCE": 11.25}),
    # a primary-key update with full images
    Change(
        CUST,
        "U",
        5,
        before={"ID": 2, "NAME": "Bob", "CITY": None, "BALANCE": 0.0},
        after={"ID": 3, "NAME": "Bob", "CITY": None, "BALANCE": 0.0},
    ),
    Change(ORDERS, "I", 6, after={"ORDER_ID": "O2", "CUST_ID": 3, "AMOUNT": 5.0, "NOTE": "rush"}),
    Change(ORDERS, "D", 7, before={"ORDER_ID": "O1"}),  # a delete with only the key column
    Change(ORDERS, "T", 8),
    Change(ORDERS, "I", 9, after={"ORDER_ID": "O3", "CUST_ID": 1, "AMOUNT": 1.5, "NOTE": None}),
    Change(ORDERS, "U", 10, before={"ORDER_ID": "O3"}, after={"ORDER_ID": "O3", "NOTE": "late"}),
]


def as_strings(changes: list[Change]) -> list[Change]:
    """The same history as written with treatAllColumnsAsStrings=true (values as text)."""

    def text(image: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if image is None else {k: (None if v is None else str(v)) for k, v in image.items()}

    return [Change(c.table, c.op, c.pos, text(c.before), text(c.after)) for c in changes]


# --- writers ---------------------------------------------------------------------------------------


def write_json(changes: list[Change]) -> bytes:
    """GoldenGate JSON formatter output (§6.3.1), one message per line."""
    lines = []
    for c in changes:
        record: dict[str, Any] = {
            "table": c.table,
            "op_type": c.op,
            "op_ts": c.op_ts,
            "current_ts": "2024-03-02T00:00:00.000000",
            "pos": c.pos_text,
            "primary_keys": c.keys,
            "tokens": {"R": f"row{c.pos}"},
        }
        if c.before is not None:
            record["before"] = c.before
        if c.after is not None:
            record["after"] = c.after
        lines.append(json.dumps(record))
    return ("\n".join(lines) + "\n").encode()


def column_type(avro_type: str, strings: bool) -> list[str]:
    return ["null", "string" if strings else avro_type]


def row_schema(table: str, strings: bool) -> dict[str, Any]:
    catalog, name = table.split(".")
    columns = [{"name": n, "type": column_type(t, strings), "default": None} for n, t, _, _ in TABLES[table]]
    return {"type": "record", "name": name, "namespace": catalog, "fields": META_FIELDS + columns}


def op_schema(table: str, strings: bool) -> dict[str, Any]:
    catalog, name = table.split(".")
    columns: list[dict[str, Any]] = []
    for n, t, _, _ in TABLES[table]:
        columns.append({"name": n, "type": column_type(t, strings), "default": None})
        columns.append({"name": f"{n}_isMissing", "type": "boolean"})
    images = [
        {"name": "before", "type": ["null", {"type": "record", "name": "columns", "fields": columns}], "default": None},
        {"name": "after", "type": ["null", "columns"], "default": None},
    ]
    return {"type": "record", "name": name, "namespace": catalog, "fields": META_FIELDS + images}


def schema_text(schema: dict[str, Any]) -> str:
    """Like Avro's Schema.toString(true) (what GoldenGate writes to FullyQualifiedTableName.avsc)."""
    return json.dumps(schema, indent=2).replace('": ', '" : ')


def meta_of(c: Change, op_type: str | None = None) -> dict[str, Any]:
    return {
        "table": c.table,
        "op_type": op_type or c.op,
        "op_ts": c.op_ts,
        "current_ts": "2024-03-02T00:00:00.000000",
        "pos": c.pos_text,
        "primary_keys": c.keys,
        "tokens": {"R": f"row{c.pos}"},
    }


def op_records(c: Change) -> list[dict[str, Any]]:
    def image(values: dict[str, Any] | None) -> dict[str, Any] | None:
        if values is None:
            return None
        out: dict[str, Any] = {}
        for n, _, _, _ in TABLES[c.table]:
            out[n] = values.get(n)
            out[f"{n}_isMissing"] = n not in values
        return out

    return [{**meta_of(c), "before": image(c.before), "after": image(c.after)}]


def row_records(c: Change) -> list[dict[str, Any]]:
    """Avro row messages of one change, pkUpdateHandling=delete-insert (§6.4.7.2)."""

    def row(values: dict[str, Any] | None) -> dict[str, Any]:
        values = values or {}
        return {n: values.get(n) for n, _, _, _ in TABLES[c.table]}  # missing is written as null

    if c.op == "U" and c.before is not None and any(c.before.get(k) != c.after.get(k) for k in c.keys):
        return [{**meta_of(c, "D"), **row(c.before)}, {**meta_of(c, "I"), **row(c.after)}]
    image = c.before if c.op == "D" else None if c.op == "T" else c.after
    return [{**meta_of(c), **row(image)}]


def message(schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


@dataclass
class Written:
    """Landing files of one container: (file name, bytes, options) decoded in order by one decoder."""

    files: list[tuple[str, bytes, dict[str, str]]]
    per_table: bool  # files hold one table each (OCF, raw): compare event order per table


def write_avro(kind: str, container: str, changes: list[Change], strings: bool, directory: Path) -> Written:
    make_schema = row_schema if kind == "row" else op_schema
    make_records = row_records if kind == "row" else op_records
    schemas = {t: make_schema(t, strings) for t in TABLES}
    texts = {t: schema_text(s) for t, s in schemas.items()}
    directory.mkdir(exist_ok=True)
    for table, text in texts.items():
        (directory / f"{table}.avsc").write_text(text)
    common = {"schemaDir": str(directory), "pkUpdateHandling": "delete-insert"}
    if strings:
        common["treatAllColumnsAsStrings"] = "true"
    if container.startswith("wrapper"):
        kind_field = "schema_fingerprint" if container == "wrapper-fingerprint" else "schema_hash"
        wrapper_schema = {
            "type": "record",
            "name": "generic_wrapper",
            "namespace": "oracle.goldengate",
            "fields": [
                {"name": "table_name", "type": "string"},
                {"name": kind_field, "type": "long" if kind_field == "schema_fingerprint" else "int"},
                {"name": "payload", "type": "bytes"},
            ],
        }
        (directory / "generic_wrapper.avsc").write_text(schema_text(wrapper_schema))
        data = b""
        for c in changes:
            value = (
                java_string_hash(texts[c.table]) if kind_field == "schema_hash" else avro_fingerprint(schemas[c.table])
            )
            for record in make_records(c):
                payload = message(schemas[c.table], record)
                data += message(wrapper_schema, {"table_name": c.table, kind_field: value, "payload": payload})
        return Written([("stream.bin", data, common)], per_table=False)
    files = []
    for table in TABLES:
        records = [r for c in changes if c.table == table for r in make_records(c)]
        if container.startswith("ocf"):
            out = io.BytesIO()
            codec = container.split("-")[1]
            fastavro.writer(out, fastavro.parse_schema(schemas[table]), records, codec=codec, sync_interval=200)
            files.append((f"{table}.avro", out.getvalue(), {}))
        else:
            delimiter = b"\r\n" if container == "raw-delimited" else b""
            data = b"".join(message(schemas[table], r) + delimiter for r in records)
            options = dict(common, table=table)
            if delimiter:
                options["lineDelimiter"] = "CDATA[\\r\\n]"
            files.append((f"{table}.bin", data, options))
    return Written(files, per_table=True)


CONTAINERS = ["ocf-null", "ocf-deflate", "raw", "raw-delimited", "wrapper-hash", "wrapper-fingerprint"]


# --- decoding ------------------------------------------------------------------------------------


def decode_json(changes: list[Change]) -> list[ChangeEvent]:
    items = list(get_decoder("goldengate-json").decode(write_json(changes), "history.json"))
    assert all(isinstance(i, ChangeEvent) for i in items)
    return items  # type: ignore[return-value]


def decode_written(format_id: str, written: Written) -> list[ChangeEvent]:
    """The row events of every file; each table's layout is announced once, before its first event
    (goldengate-json announces none: its SCHEMA events are the one difference left out here)."""
    out: list[ChangeEvent] = []
    announced: set[str] = set()
    for name, data, options in written.files:
        items = list(get_decoder(format_id, Options(options)).decode(data, name))
        assert not [i for i in items if isinstance(i, Rejected)], [i for i in items if isinstance(i, Rejected)]
        for item in items:
            assert isinstance(item, ChangeEvent)
            if item.op == "SCHEMA":
                assert item.table not in announced
                announced.add(item.table)
            else:
                assert item.table in announced
                out.append(item)
    return out


def portable(event: ChangeEvent) -> dict[str, Any]:
    """What must agree across formats: everything but the source and the format's meta."""
    d = event.to_dict()
    del d["source"], d["meta"]
    return d


def by_table(items: list[ChangeEvent]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES}
    for event in items:
        out[event.table].append(portable(event))
    return out


def as_compared(items: list[ChangeEvent], per_table: bool) -> Any:
    return by_table(items) if per_table else [portable(e) for e in items]


def row_view(event: ChangeEvent) -> list[dict[str, Any]]:
    """What Avro row can carry of a goldengate-json event (the differences, spelled out)."""
    d = portable(event)
    columns = [n for n, _, _, _ in TABLES[event.table]]

    def filled(image: dict[str, Any] | None) -> dict[str, Any]:
        return {n: (image or {}).get(n) for n in columns}  # missing -> NULL

    if event.op == "TRUNCATE":
        return [d]
    if event.op == "INSERT":
        return [dict(d, after=filled(event.after))]
    if event.op == "DELETE":
        return [dict(d, before=filled(event.before))]
    keys = event.keys or []
    if any(event.before.get(k) != event.after.get(k) for k in keys):  # key change: delete + insert
        return [
            dict(d, op="DELETE", before=filled(event.before), after=None),
            dict(d, op="INSERT", before=None, after=filled(event.after)),
        ]
    return [dict(d, before=None, after=filled(event.after))]  # an update carries its after image only


# --- tests ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("strings", [False, True], ids=["typed", "treatAllColumnsAsStrings"])
@pytest.mark.parametrize("container", CONTAINERS)
def test_avro_op_equals_json(tmp_path, container, strings):
    changes = as_strings(HISTORY) if strings else HISTORY
    expected = decode_json(changes)
    written = write_avro("op", container, changes, strings, tmp_path / "schemas")
    decoded = decode_written("goldengate-avro-op", written)
    assert as_compared(decoded, written.per_table) == as_compared(expected, written.per_table)
    # meta differs only in the format's own part (and column types, which JSON has no schema for here)
    for avro_event, json_event in zip(sorted(decoded, key=lambda e: e.seq), expected, strict=True):
        core = {k: v for k, v in avro_event.meta.items() if k not in ("avro", "column_types")}
        assert core == json_event.meta
        types = {n: ("string" if strings else t) for n, _, t, _ in TABLES[avro_event.table]}
        assert avro_event.meta["column_types"] == types


@pytest.mark.parametrize("strings", [False, True], ids=["typed", "treatAllColumnsAsStrings"])
@pytest.mark.parametrize("container", CONTAINERS)
def test_avro_row_equals_json_modulo_what_it_cannot_carry(tmp_path, container, strings):
    changes = as_strings(HISTORY) if strings else HISTORY
    json_events = decode_json(changes)
    written = write_avro("row", container, changes, strings, tmp_path / "schemas")
    decoded = decode_written("goldengate-avro-row", written)
    projected = [view for e in json_events for view in row_view(e)]
    actual = [portable(e) for e in decoded]
    if written.per_table:
        projected = [p for t in TABLES for p in projected if p["table"] == t]
    assert actual == projected


def test_avro_row_differences_spelled_out(tmp_path):
    json_events = {e.meta["pos"]: e for e in decode_json(HISTORY)}
    written = write_avro("row", "wrapper-hash", HISTORY, False, tmp_path / "s")
    row_events = decode_written("goldengate-avro-row", written)
    by_pos: dict[str, list[ChangeEvent]] = {}
    for e in row_events:
        by_pos.setdefault(e.meta["pos"], []).append(e)
    pos = "{:020d}".format

    # 1. a missing column is a NULL column: NAME was not in the update's images
    update_json, [update_row] = json_events[pos(4)], by_pos[pos(4)]
    assert "NAME" not in update_json.after and update_row.after["NAME"] is None
    # 2. an update carries its after image only
    assert update_json.before == {"ID": 1, "CITY": "Oslo"} and update_row.before is None
    # 3. a key-only delete has NULLs for every other column
    delete_json, [delete_row] = json_events[pos(7)], by_pos[pos(7)]
    assert delete_json.before == {"ORDER_ID": "O1"}
    assert delete_row.before == {"ORDER_ID": "O1", "CUST_ID": None, "AMOUNT": None, "NOTE": None}
    # 4. a primary-key update is a delete of the old key and an insert of the new one, at one pos
    pk_json, pk_row = json_events[pos(5)], by_pos[pos(5)]
    assert pk_json.op == "UPDATE" and pk_json.before["ID"] == 2 and pk_json.after["ID"] == 3
    assert [(e.op, e.seq) for e in pk_row] == [("DELETE", pk_json.seq), ("INSERT", pk_json.seq)]
    assert pk_row[0].before == pk_json.before and pk_row[1].after == pk_json.after
    assert pk_row[0].source.offset < pk_row[1].source.offset
    # NULL stays NULL in every format
    assert json_events[pos(2)].after["CITY"] is None and by_pos[pos(2)][0].after["CITY"] is None


# --- the tables the formats lead to ------------------------------------------------------------------


def fold(items: list[ChangeEvent]) -> dict[str, dict[str, dict[str, Any]]]:
    """Apply the events with the merge (DESIGN §4): table -> key -> column values."""
    events = [e for e in items if e.op != "SCHEMA"]
    out = {}
    for table, cols in TABLES.items():
        types = {n: t for n, _, t, _ in cols}
        mine = [e for e in events if e.table == table]
        truncates = [e.seq for e in mine if e.op == "TRUNCATE"]
        prepared = [
            prepare(e.op, e.seq, e.event_ts, e.before, e.after, (e.source.file, e.source.offset), e.keys, types)
            for e in mine
            if e.op != "TRUNCATE"
        ]
        state: dict[str, dict[str, Any]] = {}
        apply_events(state, prepared, list(types), "b1", max(truncates, default=None))
        out[table] = {k: {c: v for c, v in row.items() if not c.startswith("_cdc_")} for k, row in state.items()}
    return out


def test_same_tables_from_json_and_avro_op_and_the_row_difference(tmp_path):
    expected = fold(decode_json(HISTORY))
    assert expected[CUST] == {
        "[1]": {"ID": 1, "NAME": "Ann", "CITY": "Bergen", "BALANCE": 11.25},
        "[3]": {"ID": 3, "NAME": "Bob", "CITY": None, "BALANCE": 0.0},
    }
    assert expected[ORDERS] == {'["O3"]': {"ORDER_ID": "O3", "CUST_ID": 1, "AMOUNT": 1.5, "NOTE": "late"}}
    for container in CONTAINERS:
        written = write_avro("op", container, HISTORY, False, tmp_path / f"op-{container}")
        assert fold(decode_written("goldengate-avro-op", written)) == expected, container
        written = write_avro("row", container, HISTORY, False, tmp_path / f"row-{container}")
        row_tables = fold(decode_written("goldengate-avro-row", written))
        differences = copy.deepcopy(expected)
        differences[CUST]["[1]"]["NAME"] = None  # the partial update wrote NULL over "Ann"
        differences[ORDERS]['["O3"]'].update(CUST_ID=None, AMOUNT=None)  # likewise
        assert row_tables == differences, container


def test_json_and_avro_events_serialize_alike(tmp_path):
    """The decode CLI's JSON lines of the two formats agree too (exact numbers, no floats)."""
    json_lines = [to_json(portable(e)) for e in decode_json(HISTORY)]
    written = write_avro("op", "wrapper-hash", HISTORY, False, tmp_path / "s")
    avro_lines = [to_json(portable(e)) for e in decode_written("goldengate-avro-op", written)]
    assert avro_lines == json_lines
    assert '"AMOUNT":99.95' in avro_lines[2] and isinstance(
        decode_written("goldengate-avro-op", written)[2].after["AMOUNT"], Decimal
    )


def test_schema_change_mid_stream_gives_one_schema_event_per_container(tmp_path):
    """A column added to GG.CUSTOMER between two files: every container announces it once, before
    the first record that uses it, with the same column list."""
    wider = {CUST: [*TABLES[CUST], ("EMAIL", "string", "string", False)], ORDERS: TABLES[ORDERS]}
    first = [c for c in HISTORY if c.table == CUST and c.pos <= 2]
    later = [Change(CUST, "I", 11, after={"ID": 9, "NAME": "Zoe", "CITY": "Rome", "BALANCE": 1.0, "EMAIL": "z@x"})]
    ddl = None
    for container in CONTAINERS:
        directory = tmp_path / container
        before = write_avro("op", container, first, False, directory)
        dec = get_decoder("goldengate-avro-op", Options(before.files[0][2]))
        for name, data, _ in before.files:
            expected = ["SCHEMA", "INSERT", "INSERT"] if CUST in name or "stream" in name else []
            assert [e.op for e in dec.decode(data, name)] == expected, container
        saved = dict(TABLES)
        TABLES.update(wider)
        try:
            after = write_avro("op", container, later, False, directory)
        finally:
            TABLES.clear()
            TABLES.update(saved)
        items = [e for name, data, _ in after.files for e in dec.decode(data, name)]
        assert [e.op for e in items] == ["SCHEMA", "INSERT"], container
        assert items[0].table == CUST and items[0].seq == items[1].seq and "previous_version" in items[0].meta
        if ddl is None:
            ddl = items[0].ddl
        assert items[0].ddl == ddl, container
    assert ddl is not None and ddl["columns"][-1] == {"name": "EMAIL", "type": "string", "nullable": True}
