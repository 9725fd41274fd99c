"""debezium-json SCHEMA events: the inline Kafka Connect value schema announced as a full column list
before the first row that uses it (issue 12), and what the normalize job's diff makes of them."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.events.change import ChangeEvent, Rejected, Source, event_to_row, to_json
from cdclake.formats.debezium_json import DebeziumJsonDecoder
from cdclake.options import Options
from cdclake.registry import get_decoder
from cdclake.schema.changes import ADD_COLUMN, CREATE_TABLE, DROP_COLUMN, MODIFY_COLUMN
from cdclake.schema.events import changes_from_events
from cdclake.schema.evolution import evolve_columns

FIXTURES = Path(__file__).parents[1] / "fixtures" / "debezium_json"

ID = {"type": "int32", "optional": False, "field": "id"}
NAME = {"type": "string", "optional": True, "field": "name"}


def decimal(field: str, precision: int, scale: int) -> dict[str, Any]:
    return {
        "type": "bytes",
        "optional": True,
        "name": "org.apache.kafka.connect.data.Decimal",
        "parameters": {"scale": str(scale), "connect.decimal.precision": str(precision)},
        "field": field,
    }


def decoder(**options: str) -> DebeziumJsonDecoder:
    dec = get_decoder("debezium-json", Options(options))
    assert isinstance(dec, DebeziumJsonDecoder)
    return dec


def record(
    fields: list[dict[str, Any]] | None,
    after: dict[str, Any] | None,
    *,
    op: str = "c",
    lsn: int = 100,
    table: str = "t",
    before: dict[str, Any] | None = None,
    **members: Any,
) -> dict[str, Any]:
    """A Debezium record with ``fields`` as its value schema (None: a bare payload, no schema)."""
    body: dict[str, Any] = {
        "op": op,
        "ts_ms": 1700000000999,
        "before": before,
        "after": after,
        "source": {"connector": "postgresql", "db": "shop", "schema": "public", "table": table, "lsn": lsn},
        **members,
    }
    if fields is None:
        return body
    value = {"type": "struct", "fields": fields, "optional": True, "name": f"srv.public.{table}.Value"}
    schema = {
        "type": "struct",
        "fields": [{**value, "field": "before"}, {**value, "field": "after"}],
        "name": f"srv.public.{table}.Envelope",
    }
    return {"schema": schema, "payload": body}


def data(*records: dict[str, Any]) -> bytes:
    return b"\n".join(to_json(r).encode() for r in records)


def decode(payload: bytes, dec: DebeziumJsonDecoder | None = None, file: str = "f.json") -> list[ChangeEvent]:
    items = list((dec or decoder()).decode(payload, file))
    assert all(isinstance(i, ChangeEvent) for i in items), [i for i in items if isinstance(i, Rejected)]
    return items  # type: ignore[return-value]


def schema_events(items: list[Any]) -> list[ChangeEvent]:
    return [i for i in items if isinstance(i, ChangeEvent) and i.op == "SCHEMA"]


def columns(event: ChangeEvent) -> list[tuple[str, str | None]]:
    return [(c["name"], c["type"]) for c in event.ddl["columns"]]


def as_rows(items: list[ChangeEvent]) -> list[dict[str, Any]]:
    """The SCHEMA events as the normalize job hands them to ``changes_from_events`` (through the decoded parquet)."""
    out = []
    for event in schema_events(items):
        row = event_to_row(event)
        row["ddl"] = json.loads(row["ddl"]) if row["ddl"] else None
        row["meta"] = json.loads(row["meta"]) if row["meta"] else {}
        out.append(row)
    return out


# --- when a SCHEMA event is emitted ----------------------------------------------------------------------------


def test_first_schema_announced_before_the_row():
    items = decode(data(record([ID, NAME, decimal("price", 10, 2)], {"id": 1, "name": "a", "price": "AdTA"})))
    announced, row = items
    assert announced == ChangeEvent(
        table="public.t",
        op="SCHEMA",
        seq=row.seq,
        event_ts=row.event_ts,
        source=Source("f.json", 0),
        keys=None,
        ddl={
            "columns": [
                {"name": "id", "type": "bigint"},
                {"name": "name", "type": "string"},
                {"name": "price", "type": "decimal(10,2)"},
            ],
            "keys": [],
        },
        meta={"column_source": "schema"},
    )
    assert row.op == "INSERT" and row.source == announced.source
    assert dict(columns(announced)) == row.meta["column_types"]


@pytest.mark.parametrize(
    ("options", "members", "keys"),
    [
        ({"keys": "id"}, {}, ["id"]),
        ({}, {"unique": {"id": 1}}, ["id"]),  # Huawei CDL
    ],
)
def test_announcement_carries_the_record_keys(options, members, keys):
    announced, row = decode(data(record([ID, NAME], {"id": 1, "name": "a"}, **members)), decoder(**options))
    assert announced.keys == row.keys == keys and announced.ddl["keys"] == keys


def test_key_record_keys_reach_the_announcement():
    key = {"schema": {"type": "struct", "fields": [ID], "name": "srv.public.t.Key"}, "payload": {"id": 1}}
    announced, row = decode(data(key, record([ID, NAME], {"id": 1, "name": "a"})))
    assert announced.keys == row.keys == ["id"] and announced.ddl["keys"] == ["id"]


def test_same_schema_again_is_not_announced():
    items = decode(data(*(record([ID, NAME], {"id": i, "name": "a"}, lsn=100 + i) for i in range(5))))
    assert [e.op for e in items] == ["SCHEMA"] + ["INSERT"] * 5


def test_new_optional_field_announced_before_the_first_row_using_it():
    email = {"type": "string", "optional": True, "field": "email"}
    items = decode(
        data(
            record([ID, NAME], {"id": 1, "name": "a"}, lsn=100),
            record([ID, NAME], {"id": 2, "name": "b"}, lsn=101),
            record([ID, NAME, email], {"id": 3, "name": "c", "email": "c@x"}, lsn=102),
            record([ID, NAME, email], {"id": 4, "name": "d", "email": None}, lsn=103),
        )
    )
    assert [e.op for e in items] == ["SCHEMA", "INSERT", "INSERT", "SCHEMA", "INSERT", "INSERT"]
    second, row = items[3], items[4]
    assert columns(second) == [("id", "bigint"), ("name", "string"), ("email", "string")]
    assert (second.seq, second.event_ts, second.source) == (row.seq, row.event_ts, row.source)
    assert second.meta == {"column_source": "schema"}


def test_dropped_field_announced_without_it():
    items = decode(
        data(
            record([ID, NAME], {"id": 1, "name": "a"}, lsn=100),
            record([ID], {"id": 2}, lsn=101),
        )
    )
    assert [columns(e) for e in schema_events(items)] == [[("id", "bigint"), ("name", "string")], [("id", "bigint")]]


@pytest.mark.parametrize(
    ("old", "new", "announced"),
    [
        ({"type": "int32"}, {"type": "int64"}, False),  # both bigint: nothing changes in the lake table
        ({"type": "int16"}, {"type": "int8"}, False),
        ({"type": "float"}, {"type": "double"}, False),
        ({"type": "int32", "name": "io.debezium.time.Date"}, {"type": "int32"}, True),  # date -> bigint
        ({"type": "string"}, {"type": "int64"}, True),
        ({"type": "int64"}, {"type": "string"}, True),
        (decimal("c", 10, 2), decimal("c", 12, 2), True),  # precision
        (decimal("c", 10, 2), decimal("c", 10, 3), True),  # scale
        (decimal("c", 10, 2), decimal("c", 10, 2), False),
        # optional-ness and documentation are no column type
        ({"type": "string", "optional": False}, {"type": "string", "optional": True, "doc": "x"}, False),
    ],
)
def test_type_changes(old, new, announced):
    value = {"int32": 7, "int64": 7, "int16": 7, "int8": 7, "float": 1, "double": 1, "string": "7", "bytes": "AA=="}
    items = decode(
        data(
            record([ID, {**old, "field": "c"}], {"id": 1, "c": value[old["type"]]}, lsn=100),
            record([ID, {**new, "field": "c"}], {"id": 2, "c": value[new["type"]]}, lsn=101),
        )
    )
    events = schema_events(items)
    assert len(events) == (2 if announced else 1)
    if announced:
        assert items[2] is events[1] and items[3].seq == events[1].seq


def test_reordered_fields_are_not_announced():
    items = decode(data(record([ID, NAME], {"id": 1, "name": "a"}), record([NAME, ID], {"id": 2, "name": "b"})))
    assert len(schema_events(items)) == 1


def test_tables_are_tracked_apart():
    items = decode(
        data(
            record([ID], {"id": 1}, table="a", lsn=100),
            record([ID, NAME], {"id": 1, "name": "x"}, table="b", lsn=101),
            record([ID], {"id": 2}, table="a", lsn=102),
            record([ID, NAME], {"id": 2, "name": "y"}, table="b", lsn=103),
        )
    )
    assert [(e.op, e.table) for e in items] == [
        ("SCHEMA", "public.a"),
        ("INSERT", "public.a"),
        ("SCHEMA", "public.b"),
        ("INSERT", "public.b"),
        ("INSERT", "public.a"),
        ("INSERT", "public.b"),
    ]


def test_state_is_per_decoder_instance():
    """Files of one decoder instance share it; a new instance (the next batch) announces again,
    which the diff downstream finds to be a no-op when the lake table matches."""
    file = data(record([ID, NAME], {"id": 1, "name": "a"}))
    dec = decoder()
    assert len(schema_events(decode(file, dec, "a.json"))) == 1
    assert len(schema_events(decode(file, dec, "b.json"))) == 0
    assert len(schema_events(decode(file, decoder(), "c.json"))) == 1


def test_update_and_delete_use_their_schema():
    items = decode(
        data(
            record([ID, NAME], {"id": 1, "name": "b"}, op="u", before={"id": 1, "name": "a"}),
            record([ID, NAME], None, op="d", before={"id": 1, "name": "b"}, lsn=101),
        )
    )
    assert [e.op for e in items] == ["SCHEMA", "UPDATE", "DELETE"]


def test_before_struct_when_the_schema_has_no_after_struct():
    item = record([ID, NAME], None, op="d", before={"id": 1, "name": "a"})
    item["schema"]["fields"] = [f for f in item["schema"]["fields"] if f["field"] == "before"]
    announced, row = decode(data(item))
    assert columns(announced) == [("id", "bigint"), ("name", "string")] and row.op == "DELETE"


# --- when none is emitted --------------------------------------------------------------------------------------


def test_bare_payloads_and_empty_schemas_announce_nothing():
    bare = record(None, {"id": 1, "name": "a"})
    empty = {"schema": {}, "payload": bare}
    null = {"schema": None, "payload": bare}
    no_image_structs = {"schema": {"type": "struct", "fields": [{"type": "string", "field": "op"}]}, "payload": bare}
    items = decode(data(bare, empty, null, no_image_structs))
    assert [e.op for e in items] == ["INSERT"] * 4


def test_rejected_record_announces_nothing_and_changes_nothing():
    bad = record([ID, NAME], {"id": "x", "name": "a"}, lsn=100)  # id is no integer
    good = record([ID, NAME], {"id": 1, "name": "a"}, lsn=101)
    items = list(decoder().decode(data(bad, good), "f.json"))
    assert [type(i) for i in items] == [Rejected, ChangeEvent, ChangeEvent]
    assert [i.op for i in items[1:]] == ["SCHEMA", "INSERT"] and items[1].source == items[2].source


def test_truncate_announces_nothing():
    items = decode(data(record([ID, NAME], None, op="t"), record([ID, NAME], {"id": 1, "name": "a"}, lsn=101)))
    assert [e.op for e in items] == ["TRUNCATE", "SCHEMA", "INSERT"]


def test_schema_missing_an_image_column_is_not_a_full_list():
    """A diff against a list that misses a column would drop that column from the lake table."""
    items = decode(data(record([ID], {"id": 1, "name": "a"})))
    assert [e.op for e in items] == ["INSERT"] and items[0].after == {"id": 1, "name": "a"}


@pytest.mark.parametrize("bad", ["", "a\x00b"])
def test_column_names_the_diff_refuses_announce_nothing(bad):
    items = decode(data(record([ID, {"type": "string", "field": bad}], {"id": 1, bad: "a"})))
    assert [e.op for e in items] == ["INSERT"]


def test_key_names_the_diff_refuses_are_left_out():
    announced, row = decode(data(record([ID, NAME], {"id": 1, "name": "a"}, unique={"": 1})))
    assert row.keys == [""] and announced.keys is None and announced.ddl["keys"] == []


def test_hbase_tables_announce_nothing():
    """Lindorm HBase tables have dynamic columns: no schema describes the table."""
    hbase = {"type": "struct", "fields": [{"type": "string", "field": "ROW"}, {"type": "string", "field": "f_a"}]}
    item = {
        "schema": {"type": "struct", "fields": [{**hbase, "field": "before"}, {**hbase, "field": "after"}]},
        "payload": {
            "op": "c",
            "after": {"ROW": "dXNlcjE=", "f_a": "bHVja3k="},
            "source": {"db": "ld", "namespace": "default", "table": "t", "ts_ms": 1},
        },
    }
    [row] = decode(data(item))
    assert row.op == "INSERT" and row.keys == ["ROW"]
    [forced] = decode(data(record([ID, NAME], {"id": "MQ==", "name": "YQ=="})), decoder(hbase="true"))
    assert forced.op == "INSERT"


# --- real samples ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "debezium_core_serde/serde-with-schema.json",
        "flink_json/debezium-data-schema-include.txt",
        "paimon/schema_alltype_flinkcdc/debezium-data-1.txt",
        "paimon/debezium24_decimal_string_keyvalue/debezium-avro-data-1.txt",
        "seed/huawei_debezium_json.json",
        "seed/lindorm_format_description.json",
    ],
)
def test_fixtures_with_schemas_announce_the_rows_column_types(path):
    items = [i for i in decoder().decode((FIXTURES / path).read_bytes(), path) if isinstance(i, ChangeEvent)]
    assert items[0].op == "SCHEMA"
    latest: dict[str, list[tuple[str, str | None]]] = {}
    for event in items:
        if event.op == "SCHEMA":
            latest[event.table] = columns(event)
            continue
        announced = latest[event.table]
        typed = {n: t for n, t in announced if t is not None}
        assert typed == event.meta["column_types"], path
        names = {n for n, _ in announced}
        assert set(event.before or {}) <= names and set(event.after or {}) <= names


@pytest.mark.parametrize(
    "path",
    [
        "debezium_core_serde/serde-without-schema.json",
        "debezium_core_serde/serde-update.json",
        "paimon/schemaless_nullvalue/debezium-data-1.txt",
        "seed/lindorm_sql_insert.json",
        "seed/lindorm_hbase_insert.json",
    ],
)
def test_fixtures_without_schemas_announce_nothing(path):
    items = list(decoder().decode((FIXTURES / path).read_bytes(), path))
    assert not schema_events(items) and any(isinstance(i, ChangeEvent) for i in items)


# --- what the normalize job's diff makes of them --------------------------------------------------------------


def test_diff_creates_a_new_table_and_ignores_a_matching_one():
    items = decode(data(record([ID, NAME], {"id": 1, "name": "a"})), decoder(keys="id"))
    created = changes_from_events(as_rows(items), {"public.t": None})
    [change] = created.changes["public.t"]
    assert change.kind == CREATE_TABLE and change.columns == (("id", "bigint"), ("name", "string"))
    assert change.keys == ("id",) and change.seq == items[1].seq
    same = changes_from_events(as_rows(items), {"public.t": [("id", "bigint"), ("name", "string")]})
    assert same.changes == {} and same.ignored == 1


def test_diff_of_schema_drift_within_a_batch():
    email = {"type": "string", "optional": True, "field": "email"}
    items = decode(
        data(
            record([ID, NAME, decimal("price", 10, 2)], {"id": 1, "name": "a", "price": "AdTA"}, lsn=100),
            record([ID, NAME, decimal("price", 12, 2), email], {"id": 2, "name": "b", "price": "AdTA"}, lsn=101),
            record([ID, decimal("price", 12, 2), email], {"id": 3, "price": "AdTA", "email": None}, lsn=102),
        )
    )
    lake = [("id", "bigint"), ("name", "string"), ("price", "decimal(10,2)")]
    result = changes_from_events(as_rows(items), {"public.t": lake})
    kinds = [(c.kind, c.column, c.type) for c in result.changes["public.t"]]
    assert kinds == [
        (ADD_COLUMN, "email", "string"),
        (MODIFY_COLUMN, "price", "decimal(12,2)"),
        (DROP_COLUMN, "name", None),
    ]
    assert result.ignored == 1  # the first announcement matches the lake table
    seqs = [e.seq for e in items if e.op != "SCHEMA"]
    assert [c.seq for c in result.changes["public.t"]] == [seqs[1], seqs[1], seqs[2]]


_FIELDS = {
    "a": {"type": "int32"},
    "b": {"type": "string"},
    "c": decimal("c", 10, 2),
    "d": {"type": "int64", "name": "io.debezium.time.MicroTimestamp"},
}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sets(st.sampled_from(sorted(_FIELDS)), min_size=1), min_size=1, max_size=8))
def test_property_replayed_announcements_end_at_the_last_schema(layouts):
    """Whatever the sequence of schemas, replaying the announcements leaves the last schema's columns."""
    records = [
        record([ID, *({**_FIELDS[n], "field": n} for n in sorted(names))], {"id": i}, lsn=100 + i)
        for i, names in enumerate(layouts)
    ]
    items = decode(data(*records))
    assert len(items) - len(records) == 1 + sum(1 for x, y in itertools.pairwise(layouts) if x != y)
    result = changes_from_events(as_rows(items), {"public.t": None})
    final = evolve_columns([], result.changes["public.t"])
    assert {n for n, _ in final} == {"id", *layouts[-1]}


def test_a_batch_of_schema_events_does_not_load_the_sql_parser():
    """The normalize step diffs SCHEMA events without sqlglot (0.3 s to import); only DDL text loads it."""
    import subprocess
    import sys

    script = (
        "import sys, json\n"
        "import cdclake.jobs.normalize\n"
        "from cdclake.schema.events import changes_from_events\n"
        "event = {'op': 'SCHEMA', 'table': 't', 'seq': '1', 'source_file': 'f', 'source_offset': 0,\n"
        "         'ddl': {'columns': [{'name': 'id', 'type': 'bigint'}], 'keys': ['id']}, 'meta': {}}\n"
        "result = changes_from_events([event], {'t': None})\n"
        "print(json.dumps([[c.kind for c in result.changes['t']], 'sqlglot' in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [[CREATE_TABLE], False]
