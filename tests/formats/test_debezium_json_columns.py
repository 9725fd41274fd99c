"""Debezium JSON's columnar path gives the decode task exactly the files of the reference decoder.

Every test decodes the same bytes twice through the decode task (``decode_to_files``), with and without
the columnar path, and compares the event and quarantine files and the counts; the tests that need the
fast path to have run also say that it did (``decode_columns`` gave record batches), so none passes by
falling back.
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

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "debezium_json"
PLACEHOLDER = "__debezium_unavailable_value"


def assert_same_files(data: bytes, options: dict[str, str] | None = None) -> int:
    return columns_check.assert_same_files("debezium-json", data, options)


def fast_after(data: bytes) -> int:
    """Spans the fast path reads after the odd record's: its two records' when the reference reads the odd span
    alone (it rejects nothing there), none when it reads on to the end (``columnar.reference_window``)."""
    decoder = get_decoder("debezium-json", Options({}))
    return 0 if any(isinstance(item, Rejected) for item in decoder.decode(data, "x")) else 2


_DECIMAL = {
    "type": "bytes",
    "name": "org.apache.kafka.connect.data.Decimal",
    "version": 1,
    "parameters": {"scale": "2"},
}
_FIELDS = {
    "int64": {"type": "int64"},
    "double": {"type": "double"},
    "string": {"type": "string"},
    "boolean": {"type": "boolean"},
    "bytes": {"type": "bytes"},
    "decimal": _DECIMAL,
    "micros": {"type": "int64", "name": "io.debezium.time.MicroTimestamp", "version": 1},
    "date": {"type": "int32", "name": "io.debezium.time.Date", "version": 1},
    "millis": {"type": "int64", "name": "org.apache.kafka.connect.data.Timestamp", "version": 1},
    "nanos": {"type": "int64", "name": "io.debezium.time.NanoTimestamp", "version": 1},
}


def _struct(name: str, columns: dict[str, str]) -> dict:
    fields = [{"type": "int64", "optional": False, "field": "ID"}]
    fields += [{**_FIELDS[kind], "optional": True, "field": column} for column, kind in columns.items()]
    return {"type": "struct", "fields": fields, "optional": True, "name": "srv.S.T.Value", "field": name}


def _record(
    lsn: int,
    op: str = "c",
    after: str | None = '{"ID":1,"V":"a"}',
    before: str | None = None,
    columns: dict[str, str] | None = None,
    source: str | None = None,
    **extra: str,
) -> str:
    """One compact envelope line as Kafka Connect's JsonConverter writes it (texts spliced as given)."""
    columns = {"V": "string"} if columns is None else columns
    schema = {
        "type": "struct",
        "fields": [_struct("before", columns), _struct("after", columns), {"type": "struct", "field": "source"}],
        "optional": False,
        "name": "srv.S.T.Envelope",
    }
    source = (
        source
        or f'{{"connector":"postgresql","ts_ms":1717200000{lsn % 1000:03d},"schema":"S","table":"T","lsn":{lsn}}}'
    )
    payload = (
        f'"before":{before or "null"},"after":{after or "null"},"source":{source},"op":"{op}","ts_ms":1717200001000'
    )
    payload += "".join(f',"{name}":{text}' for name, text in extra.items())
    return f'{{"schema":{json.dumps(schema, separators=(",", ":"))},"payload":{{{payload}}}}}'


def test_the_bench_stream_is_read_as_columns_span_by_span(tmp_path: Path):
    gens, _ = generate(["debezium-json"], tmp_path / "files", 400, seed=5, file_events=400)
    data = gens["debezium-json"].files[0].read_bytes()
    assert PLACEHOLDER.encode() in data  # the stream has unavailable values: they are dropped as the reference does
    with mock.patch.object(json_columns, "SPAN_BYTES", 20_000):
        read = assert_same_files(data)
        assert read == len(list(spans(data))) > 5


@pytest.mark.parametrize(
    "path",
    sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.rglob("*") if p.suffix in (".json", ".txt")),
)
def test_real_samples_give_the_reference_files(path: str):
    assert_same_files((FIXTURES / path).read_bytes())


def test_the_flink_sample_is_read_as_columns():
    data = (FIXTURES / "flink_json" / "debezium-data-schema-include.txt").read_bytes()
    assert assert_same_files(data) == 1


def _b64(unscaled: int, size: int = 4) -> str:
    return json.dumps(base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode())


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("int64", "-0"),
        ("int64", "12345678901234567890123"),
        ("int64", "1.5"),  # a decimal in an integer field: converted (or refused) by the reference
        ("int64", '"7"'),
        ("double", "1e5"),
        ("double", "-0"),
        ("double", "0.0000001"),
        ("double", "2.50"),
        ("double", '"NaN"'),
        ("string", '"quote \\" and \\\\ backslash"'),
        ("string", '"caf\\u00e9"'),
        ("string", '"é ü 😀"'),
        ("string", "12"),
        ("boolean", "true"),
        ("boolean", "1"),
        ("bytes", '"AAEC"'),
        ("decimal", _b64(12345)),
        ("decimal", _b64(-5, 1)),
        ("decimal", _b64(0, 1)),
        ("decimal", '"AAE\\u0043"'),  # an escape in the base64 text
        ("decimal", "12.5"),  # a number, not base64 text
        ("micros", "1711728455400000"),
        ("micros", "-1"),
        ("micros", "0"),
        ("date", "19000"),
        ("date", "-719162"),
        ("millis", "1717200010001"),
        ("millis", "-1"),
        ("millis", "253402300799999"),  # the last millisecond of 9999
        ("millis", "253402300800000"),  # year 10000: refused
        ("millis", "9999999999999999"),  # would overflow as microseconds
        ("micros", "-30610224000000000"),  # 1000-01-01, the first of the years converted at once
        ("micros", "-30610224000000001"),  # 0999-12-31: one at a time
        ("micros", "-62135596800000001"),  # before year 1: refused
        ("nanos", "-1"),  # floor: 1969-12-31T23:59:59.999999
        ("nanos", "1711728455400000999"),
        ("date", "-354285"),  # 1000-01-01
        ("date", "-354286"),
        ("date", "2932896"),  # 9999-12-31
        ("date", "2932897"),
        ("date", "4000001"),
        ("date", "213503983"),  # its microseconds wrap around 64 bits to a 1970 instant
        ("date", "1e3"),
        ("string", json.dumps(PLACEHOLDER)),
        ("string", json.dumps([PLACEHOLDER])),
        ("bytes", json.dumps(base64.b64encode(PLACEHOLDER.encode()).decode())),
        ("string", json.dumps("x" + PLACEHOLDER)),
        ("string", '"__debezium_unavailable_valu\\u0065"'),  # an escape spelling the placeholder
        ("string", '{"nested":[1,2]}'),
        ("string", "null"),
    ],
)
def test_each_value_is_written_as_the_reference_and_the_builder_write_it(kind: str, value: str):
    records = [
        _record(1, after='{"ID":1,"V":' + value + "}", columns={"V": kind}),
        _record(2, op="u", before='{"ID":2,"V":' + value + "}", after='{"ID":2}', columns={"V": kind}),
        _record(3, after='{"ID":3,"W":' + value + "}", columns={"V": kind}),  # a column the schema does not name
    ]
    assert_same_files(("\n".join(records) + "\n").encode())


def test_typed_values_are_read_as_columns():
    columns = {"A": "decimal", "B": "micros", "C": "date", "D": "double", "E": "boolean", "F": "int64", "G": "nanos"}
    after = f'{{"ID":1,"A":{_b64(199)},"B":1711728455400000,"C":19000,"D":30.25,"E":false,"F":-3,"G":-1}}'
    data = (
        _record(1, after=after, columns=columns)
        + "\n"
        + _record(2, op="d", before=after, after=None, columns=columns)
        + "\n"
    ).encode()
    assert assert_same_files(data) == 1


@pytest.mark.parametrize(
    "odd",
    [
        pytest.param("null", id="a tombstone"),
        pytest.param(_record(3, op="x"), id="an unknown op"),
        pytest.param(_record(3, op="t", after=None), id="a truncate"),
        pytest.param(_record(3, op="d", after=None), id="a delete without before"),
        pytest.param(_record(3, after='{"ID":3,"ID":4}'), id="a column twice"),
        pytest.param(_record(3, unique='{"ID":3}'), id="a member the path does not read"),
        pytest.param(_record(3).replace(":", ": ", 1), id="blanks"),
        pytest.param(_record(3, after='{"ID":3,"V":"\\ud800"}'), id="a lone surrogate"),
        pytest.param(_record(3, columns={"V": "decimal"}, after='{"ID":3,"V":"!!"}'), id="a value its field refuses"),
        pytest.param(_record(3, source='{"namespace":"ns","table":"T","ts_ms":1717200000001}'), id="a Lindorm record"),
        pytest.param(_record(3, source='{"table":"T"}'), id="no position"),
        pytest.param('{"payload":{"op":"c","after":{"ID":3},"source":{"table":"T","lsn":3}}}', id="no schema"),
        pytest.param('{"schema":{"type":"struct","name":"srv.S.T.Key"},"payload":{"ID":3}}', id="a key record"),
        pytest.param(_record(3)[:40], id="cut short"),
    ],
)
def test_a_span_outside_the_shape_is_the_reference_s(odd: str):
    lines = [_record(1), _record(2), odd, _record(4), _record(5)]
    data = "\n".join(lines).encode()
    with mock.patch.object(json_columns, "SPAN_BYTES", 10):  # a span per record
        read = assert_same_files(data)
    # the spans after the odd one are the fast path's where the reference read the odd span alone; how many
    # depends on where spans are cut after it (a tombstone line is no cut), and a key record waits for its value
    # record, so the reference reads on to the end there
    first = 2 if odd.startswith("{") else 1
    assert read == first if fast_after(data) == 0 else read >= first


@pytest.mark.parametrize("span_bytes", [10, 1 << 20])
def test_a_changed_schema_is_announced_as_the_reference_does(span_bytes: int):
    lines = [
        _record(1),
        _record(2, after='{"ID":2,"V":"b","W":1.5}', columns={"V": "string", "W": "double"}),
        _record(3, after='{"ID":3,"V":"c"}'),
        _record(4, after='{"ID":4,"V":"d","X":1}'),  # a column the schema does not list: no SCHEMA event
    ]
    data = ("\n".join(lines) + "\n").encode()
    with mock.patch.object(json_columns, "SPAN_BYTES", span_bytes):
        assert assert_same_files(data) == len(list(spans(data)))


def test_options_the_reference_reads_give_the_same_files():
    data = ("\n".join(_record(i, after=f'{{"ID":{i},"V":"{PLACEHOLDER}"}}') for i in range(1, 4)) + "\n").encode()
    assert assert_same_files(data, {"table": "lake.t", "keys": "ID"}) == 1
    assert assert_same_files(data, {"unavailableValuePlaceholder": "none"}) == 1
    assert assert_same_files(data, {"hbase": "true"}) == 0  # HBase tables: the reference, whole


_VALUES = {
    "int64": st.sampled_from(["0", "-0", "7", "1.5", '"x"', "null"]),
    "double": st.sampled_from(["1", "1.0", "1e3", "-0.0", "0.0000001", '"y"', "null"]),
    "string": st.sampled_from(['"a"', '"b\\"c"', json.dumps(PLACEHOLDER), "3", "null"]),
    "decimal": st.sampled_from([_b64(1), _b64(-1234), '"!!"', '""', "null"]),
    "micros": st.sampled_from(["0", "1711728455400000", "-5", '"z"', "null"]),
}


@st.composite
def _streams(draw) -> bytes:
    lines = []
    for lsn in range(1, draw(st.integers(1, 12)) + 1):
        columns = draw(st.dictionaries(st.sampled_from(["A", "B", "C"]), st.sampled_from(sorted(_VALUES)), max_size=3))
        image = {"ID": str(lsn % 4)} | {c: draw(_VALUES[k]) for c, k in columns.items() if draw(st.booleans())}
        text = "{" + ",".join(f'"{c}":{v}' for c, v in image.items()) + "}"
        op = draw(st.sampled_from(["c", "u", "d", "r"]))
        if op == "d":
            lines.append(_record(lsn, op=op, before=text, after=None, columns=columns))
        else:
            lines.append(_record(lsn, op=op, after=text, columns=columns))
    return ("\n".join(lines) + "\n").encode()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=_streams(), span_bytes=st.sampled_from([10, 3000, 1 << 20]))
def test_any_mix_of_records_gives_the_reference_files(data: bytes, span_bytes: int):
    with mock.patch.object(json_columns, "SPAN_BYTES", span_bytes):
        assert_same_files(data)
