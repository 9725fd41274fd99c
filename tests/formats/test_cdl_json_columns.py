"""CDL JSON's columnar path gives the decode task exactly the files of the reference decoder.

As for Debezium JSON (``test_debezium_json_columns.py``): every test decodes the same bytes through the
decode task with and without the columnar path and compares the files and counts; the tests that need
the fast path to have run say that it did.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from unittest import mock

import columns_check
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cdclake.formats.columnar as json_columns
from cdclake.bench.generate import generate
from cdclake.events.change import Rejected
from cdclake.formats.columnar import spans
from cdclake.options import Options
from cdclake.registry import get_decoder

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "cdl_json"


def assert_same_files(data: bytes, options: dict[str, str] | None = None) -> int:
    return columns_check.assert_same_files("cdl-json", data, options)


def fast_after(data: bytes) -> int:
    """Spans the fast path reads after the odd record's: its two records' when the reference reads the odd span
    alone (it rejects nothing there), none when it reads on to the end (``columnar.reference_window``)."""
    decoder = get_decoder("cdl-json", Options({}))
    return 0 if any(isinstance(item, Rejected) for item in decoder.decode(data, "x")) else 2


_FIELDS = {
    "int64": {"type": "int64"},
    "double": {"type": "double"},
    "string": {"type": "string"},
    "boolean": {"type": "boolean"},
    "bytes": {"type": "bytes"},
    "decimal": {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}},
    "text_decimal": {"type": "string", "name": "com.xxx.cdc.data.Decimal"},
    "timestamp": {"type": "int64", "name": "org.apache.kafka.connect.data.Timestamp", "version": 1},
    "date": {"type": "int32", "name": "org.apache.kafka.connect.data.Date", "version": 1},
    "time": {"type": "int32", "name": "org.apache.kafka.connect.data.Time", "version": 1},
}


def _struct(name: str, columns: dict[str, str]) -> dict:
    fields = [{"type": "int64", "optional": False, "field": "ID"}]
    fields += [{**_FIELDS[kind], "optional": True, "field": column} for column, kind in columns.items()]
    return {"type": "struct", "fields": fields, "optional": True, "name": name, "field": name}


def _record(
    lsn: int,
    op: str = "INSERT",
    data: str | None = '{"ID":1,"V":"a"}',
    before: str | None = None,
    columns: dict[str, str] | None = None,
    unique: str = '{"ID":1}',
    **members: str,
) -> str:
    """One compact CDL message as CDL writes it (texts spliced as given; ``members`` replace or add)."""
    columns = {"V": "string"} if columns is None else columns
    schema = {"type": "struct", "fields": [_struct("data", columns), _struct("before", columns)], "optional": False}
    payload = {
        "DATA_STORE": '"ORACLE"',
        "SEG_OWNER": '"S"',
        "TABLE_NAME": '"T"',
        "TIMESTAMP": f"17172000{lsn:05d}",
        "OPERATION": json.dumps(op),
        "LOB_COLUMNS": "null",
        "transaction": f'{{"properties":[{{"name":"lsn","value":{lsn}}},{{"name":"txId","value":{lsn // 2}}}]}}',
        "unique": unique,
        "data": data or "null",
        "before": before or "null",
        "message_version": '"1.0"',
        "message_type": '"DML"',
        "HEARTBEAT_IDENTIFIER": "null",
    } | members
    body = ",".join(f'"{name}":{text}' for name, text in payload.items())
    return f'{{"schema":{json.dumps(schema, separators=(",", ":"))},"payload":{{{body}}}}}'


def test_the_bench_stream_is_read_as_columns_span_by_span(tmp_path: Path):
    gens, _ = generate(["cdl-json"], tmp_path / "files", 400, seed=5, file_events=400)
    data = gens["cdl-json"].files[0].read_bytes()
    with mock.patch.object(json_columns, "SPAN_BYTES", 20_000):
        read = assert_same_files(data)
        assert read == len(list(spans(data))) > 5


@pytest.mark.parametrize("name", ["seed_cdl_insert.json", "seed_debezium_insert.json"])
def test_the_vendor_samples_give_the_reference_files(name: str):
    assert_same_files((FIXTURES / name).read_bytes())


def _b64(unscaled: int, size: int = 4) -> str:
    return json.dumps(base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode())


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("int64", "-0"),
        ("int64", "1.5"),
        ("int64", "true"),
        ("double", "1e5"),
        ("double", "0.0000001"),
        ("double", '"2.5"'),
        ("string", '"quote \\" and \\\\ backslash"'),
        ("string", '"é ü 😀"'),
        ("string", "12"),
        ("boolean", "false"),
        ("boolean", "0"),
        ("bytes", '"AAEC"'),
        ("bytes", '"!"'),
        ("decimal", _b64(12345)),
        ("decimal", '"12.50"'),
        ("decimal", "3"),
        ("text_decimal", '"2305304.19"'),
        ("text_decimal", '" 1.5 "'),
        ("text_decimal", '"0.0000001"'),
        ("text_decimal", '"abc"'),
        ("text_decimal", "2"),  # a JSON number: kept as it is written
        ("text_decimal", "1e2"),
        ("text_decimal", '"-0"'),
        ("text_decimal", '"007"'),
        ("text_decimal", '"-0.000000"'),
        ("timestamp", "1716795714544"),
        ("timestamp", "-1"),
        ("timestamp", "253402300800000"),  # year 10000: refused
        ("timestamp", "-30610224000001"),  # 0999-12-31: one at a time
        ("timestamp", "9999999999999999"),
        ("date", "-354286"),
        ("date", "2932897"),
        ("timestamp", '"1716795714544"'),
        ("date", "19000"),
        ("time", "3723000"),
        ("string", '{"nested":[1,2]}'),
        ("string", "null"),
    ],
)
def test_each_value_is_written_as_the_reference_and_the_builder_write_it(kind: str, value: str):
    records = [
        _record(1, data='{"ID":1,"V":' + value + "}", columns={"V": kind}),
        _record(2, op="UPDATE", data='{"ID":2}', before='{"ID":2,"V":' + value + "}", columns={"V": kind}),
        _record(3, data='{"ID":3,"W":' + value + "}", columns={"V": kind}),  # a column the schema does not name
    ]
    assert_same_files(("\n".join(records) + "\n").encode())


def test_typed_values_are_read_as_columns():
    columns = {"A": "text_decimal", "B": "timestamp", "C": "date", "D": "double", "E": "boolean", "F": "int64"}
    data = '{"ID":1,"A":"199.50","B":1716795714544,"C":19000,"D":30.25,"E":false,"F":-3}'
    lines = [_record(1, data=data, columns=columns), _record(2, op="DELETE", data=None, before=data, columns=columns)]
    assert assert_same_files(("\n".join(lines) + "\n").encode()) == 1


@pytest.mark.parametrize(
    "odd",
    [
        pytest.param(_record(3, op="MERGE"), id="an unknown operation"),
        pytest.param(_record(3, op="HEARTBEAT"), id="a heartbeat"),
        pytest.param(_record(3, SEG_OWNER='"cdc_cdl"', TABLE_NAME='"cdc_heartbeat"'), id="the heartbeat table"),
        pytest.param(_record(3, op="DELETE", data=None, before=None), id="a delete from unique"),
        pytest.param(_record(3, op="DELETE", before='{"ID":3}'), id="a delete with data"),
        pytest.param(_record(3, op="UPDATE", data=None), id="an update without data"),
        pytest.param(_record(3, message_version='"2.0"'), id="Debezium JSON"),
        pytest.param(_record(3, TIMESTAMP='"yesterday"'), id="no time"),
        pytest.param(_record(3, transaction='{"properties":[{"name":"lsn","value":"x"}]}'), id="a bad lsn"),
        pytest.param(_record(3, unique="[1]"), id="unique not an object"),
        pytest.param(_record(3, data='{"ID":3,"ID":4}'), id="a column twice"),
        pytest.param(_record(3, extra='"member"'), id="a member CDL does not write"),
        pytest.param(_record(3).replace(":", ": ", 1), id="blanks"),
        pytest.param(_record(3, data='{"ID":3,"V":"\\ud800"}'), id="a lone surrogate"),
        pytest.param(_record(3, columns={"V": "timestamp"}, data='{"ID":3,"V":"x"}'), id="a value its field refuses"),
        pytest.param('{"OPERATION":"INSERT","SEG_OWNER":"S","TABLE_NAME":"T","data":{"ID":3}}', id="a bare payload"),
        pytest.param(_record(3)[:40], id="cut short"),
        pytest.param("null", id="null"),
    ],
)
def test_a_span_outside_the_shape_is_the_reference_s(odd: str):
    lines = [_record(1), _record(2), odd, _record(4), _record(5)]
    data = "\n".join(lines).encode()
    with mock.patch.object(json_columns, "SPAN_BYTES", 10):  # a span per record
        read = assert_same_files(data)
    assert read == (2 if odd.startswith("{") else 1) + fast_after(data)


def test_options_the_reference_reads_give_the_same_files():
    data = ("\n".join(_record(i) for i in range(1, 4)) + "\n").encode()
    assert assert_same_files(data, {"table": "lake.t", "keys": "ID,V"}) == 1  # not unique's names
    assert assert_same_files(data, {"heartbeatTable": "s.t"}) == 0  # every message is a heartbeat: the reference


_VALUES = {
    "int64": st.sampled_from(["0", "-0", "7", "1.5", '"x"', "null"]),
    "double": st.sampled_from(["1", "1.0", "1e3", "-0.0", "0.0000001", '"y"', "null"]),
    "string": st.sampled_from(['"a"', '"b\\"c"', "3", "null"]),
    "text_decimal": st.sampled_from(['"1.50"', '"-0"', '"1e2"', '"x"', "2", "null"]),
    "timestamp": st.sampled_from(["0", "1716795714544", "-5", '"z"', "null"]),
}


@st.composite
def _streams(draw) -> bytes:
    lines = []
    for lsn in range(1, draw(st.integers(1, 12)) + 1):
        columns = draw(st.dictionaries(st.sampled_from(["A", "B", "C"]), st.sampled_from(sorted(_VALUES)), max_size=3))
        image = {"ID": str(lsn % 4)} | {c: draw(_VALUES[k]) for c, k in columns.items() if draw(st.booleans())}
        text = "{" + ",".join(f'"{c}":{v}' for c, v in image.items()) + "}"
        op = draw(st.sampled_from(["INSERT", "UPDATE", "DELETE"]))
        if op == "DELETE":
            lines.append(_record(lsn, op=op, data=None, before=text, columns=columns))
        else:
            lines.append(_record(lsn, op=op, data=text, columns=columns))
    return ("\n".join(lines) + "\n").encode()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=_streams(), span_bytes=st.sampled_from([10, 3000, 1 << 20]))
def test_any_mix_of_records_gives_the_reference_files(data: bytes, span_bytes: int):
    with mock.patch.object(json_columns, "SPAN_BYTES", span_bytes):
        assert_same_files(data)
