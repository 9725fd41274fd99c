"""DataHub BLOB's columnar path gives the decode task exactly the files of the reference decoder.

As for CDL JSON (``test_cdl_json_columns.py``): every test decodes the same bytes through the decode task
with and without the columnar path and compares the files and counts; the tests that need the fast path to
have run say that it did. Update halves get their own tests: a span is read only up to where no update is
split, so a pair across a span's end is read by the next span.
"""

from __future__ import annotations

import json
from pathlib import Path
from unittest import mock

import columns_check
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cdclake.formats.columnar as json_columns
from cdclake.bench.generate import generate
from cdclake.formats.columnar import spans
from cdclake.options import Options
from cdclake.registry import columnar_reader, get_decoder

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "datahub_blob"


def assert_same_files(data: bytes, options: dict[str, str] | None = None) -> int:
    return columns_check.assert_same_files("datahub-blob", data, options)


def _record(
    seq: int | str,
    op: str = "INSERT",
    after: str | None = '{"ID":1,"V":"a"}',
    before: str | None = None,
    columns: dict[str, str] | None = None,
    table: str = "T",
    sort: bool = False,
    **members: str,
) -> str:
    """One compact BLOB message as DataHub writes it (texts spliced as given; ``members`` replace or add
    payload members; ``version=None`` drops the message's version)."""
    columns = {"V": "STRING"} if columns is None else columns
    data_columns = [{"name": "ID", "type": "LONG"}] + [{"name": c, "type": t} for c, t in columns.items()]
    schema = {
        "dataColumn": data_columns,
        "source": {"dbName": "DB", "dbType": "MySQL", "tableName": table},
        "primaryKey": ["ID"],
    }
    version = members.pop("version", '"0.0.1"')
    payload: dict[str, str] = {"op": json.dumps(op)}
    if before is not None:
        payload["before"] = '{"dataColumn":' + before + "}"
    if after is not None:
        payload["after"] = '{"dataColumn":' + after + "}"
    payload["sequenceId"] = json.dumps(str(seq)) if isinstance(seq, int) else seq
    millis = 1717200000000 + (int(seq) if isinstance(seq, int) else 0)
    payload["timestamp"] = f'{{"eventTime":{millis},"systemTime":{millis + 300},"checkpointTime":{millis}}}'
    payload |= members
    tail = "" if version is None else f',"version":{version}'
    if sort:  # as real messages come (Apache Paimon's samples): members by name, nulls written
        payload = {"before": "null", "after": "null", "ddl": "null"} | payload
        body = ",".join(f'"{name}":{payload[name]}' for name in sorted(payload))
        schema_text = json.dumps(schema, separators=(",", ":"), sort_keys=True)
        return f'{{"payload":{{{body}}},"schema":{schema_text}{tail}}}'
    body = ",".join(f'"{name}":{text}' for name, text in payload.items())
    return f'{{"schema":{json.dumps(schema, separators=(",", ":"))},"payload":{{{body}}}{tail}}}'


def _halves(seq: int, first: str = "before", before: str = '{"ID":1,"V":"a"}', after: str = '{"ID":1,"V":"b"}'):
    b = _record(seq, op="UPDATE_BEFOR", before=before, after=None)
    a = _record(seq, op="UPDATE_AFTER", after=after, timestamp=f'{{"eventTime":{1717300000000 + seq}}}')
    return [b, a] if first == "before" else [a, b]


def _lines(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def test_the_bench_stream_is_read_as_columns_span_by_span(tmp_path: Path):
    gens, _ = generate(["datahub-blob"], tmp_path / "files", 400, seed=5, file_events=400)
    data = gens["datahub-blob"].files[0].read_bytes()
    assert b'"UPDATE_BEFOR"' in data and b'"UPDATE_AFTER"' in data
    with mock.patch.object(json_columns, "SPAN_BYTES", 20_000):
        read = assert_same_files(data)
        assert read >= len(list(spans(data))) > 5


@pytest.mark.parametrize(
    "name",
    [
        "seed_insert.json",
        "seed_delete.json",
        "paimon_aliyun/event-insert.txt",
        "paimon_aliyun/event-delete.txt",
        "paimon_aliyun/event-update-in-one.txt",
    ],
)
def test_the_vendor_samples_compacted_are_read_as_columns(name: str):
    message = json.loads((FIXTURES / name).read_text().rpartition("*/")[2])  # past a licence header
    data = (json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
    assert assert_same_files(data) == 1


def test_the_vendor_samples_as_written_give_the_reference_files():
    assert_same_files((FIXTURES / "seed_all.jsonl").read_bytes())  # blanks: the reference reads them


def test_the_vendor_update_halves_compacted_are_joined_as_columns():
    halves = [json.loads((FIXTURES / f"seed_update_{side}.json").read_text()) for side in ("before", "after")]
    for pair in (halves, halves[::-1]):
        data = _lines([json.dumps(m, separators=(",", ":")) for m in pair])
        assert assert_same_files(data) == 1


@pytest.mark.parametrize("first", ["before", "after"])
def test_update_halves_join_in_either_order_and_apart(first: str):
    b, a = _halves(7, first)
    lines = [
        _record(1),
        b,
        _record(2, after='{"ID":2,"V":"x"}'),
        _record(3, op="DELETE", after=None, before='{"ID":5}'),
        a,
    ]
    assert assert_same_files(_lines(lines)) == 1


@pytest.mark.parametrize("first", ["before", "after"])
@pytest.mark.parametrize(
    ("before_kw", "after_kw"),
    [
        ({"columns": {"V": "STRING"}}, {"columns": {"V": "STRING", "W": "DOUBLE"}}),  # two schema blocks
        ({"version": '"0.0.1"'}, {"version": '"0.0.2"'}),  # two versions
        ({"version": "None"}, {"version": '{"v":1}'}),  # none, and one that is not text
    ],
)
def test_halves_of_two_schema_blocks_or_versions_join_as_the_reference_joins_them(first, before_kw, after_kw):
    """The join's meta when its halves' shared members differ: each half's whole meta, as the reference holds it."""
    kw = [{k: (None if v == "None" else v) for k, v in side.items()} for side in (before_kw, after_kw)]
    b = _record(9, op="UPDATE_BEFOR", before='{"ID":1,"V":"a"}', after=None, **kw[0])
    a = _record(9, op="UPDATE_AFTER", after='{"ID":1,"V":"b"}', **kw[1])
    lines = [_record(1), *([b, a] if first == "before" else [a, b]), _record(2, after='{"ID":2,"V":"x"}')]
    assert assert_same_files(_lines(lines)) == 1


@pytest.mark.parametrize("span_bytes", [10, 700, 1500, 2600])
def test_a_pair_across_a_span_end_is_read_by_the_next_span(span_bytes: int):
    lines = [_record(1), *_halves(2), _record(3), *_halves(4, "after"), *_halves(5), _record(6)]
    with mock.patch.object(json_columns, "SPAN_BYTES", span_bytes):
        assert assert_same_files(_lines(lines)) >= 1


@pytest.mark.parametrize(
    ("lines", "rows", "read"),
    [
        pytest.param([_record(1), _halves(2)[0]], 1, 1, id="a half at the end"),
        pytest.param([_record(1), *_halves(2), _record(3), _halves(4)[1]], 3, 4, id="after a whole pair"),
        pytest.param([_record(1), _halves(2)[0], _halves(3)[0], _halves(2)[1]], 1, 1, id="a pair around a half"),
        pytest.param([_record(1), *_halves(2)], 2, 3, id="no pair split"),
    ],
)
def test_a_span_is_read_up_to_the_first_split_update(lines: list[str], rows: int, read: int):
    data = _lines(lines)
    got = columnar_reader(get_decoder("datahub-blob", Options({}))).span(data, "f", 0)
    batch, used = got if isinstance(got, tuple) else (got, len(data))  # a batch alone: the whole span read
    assert (batch.num_rows, used) == (rows, sum(len(line) + 1 for line in lines[:read]))
    assert batch.column("source_offset").to_pylist()[-1] < used


def test_interleaved_pairs_are_read_whole_or_by_the_next_span():
    b1, a1 = _halves(1)
    b2, a2 = _halves(2)
    lines = [b1, b2, a1, _record(3), a2, _record(4)]
    assert assert_same_files(_lines(lines)) == 1
    for span_bytes in (10, 700, 1500):  # spans too short for a pair: from there the reference reads
        with mock.patch.object(json_columns, "SPAN_BYTES", span_bytes):
            assert_same_files(_lines(lines))


def test_messages_with_members_sorted_by_name_are_read_as_columns():
    lines = [
        _record(1, sort=True),
        *(
            _record(2, op=op, sort=True, before=b, after=a)
            for op, b, a in [("UPDATE_BEFOR", '{"ID":1,"V":"a"}', None), ("UPDATE_AFTER", None, '{"ID":1,"V":"b"}')]
        ),
    ]
    lines += [_record(3, op="DELETE", before='{"ID":1,"V":"b"}', after=None, sort=True)]
    assert b'"before":null' in _lines(lines)
    assert assert_same_files(_lines(lines)) == 1


@pytest.mark.parametrize(
    "lines",
    [
        pytest.param([_record(1), _halves(2)[0]], id="a before half alone at the end"),
        pytest.param([_halves(2)[1], _record(3)], id="an after half alone at the start"),
        pytest.param([*_halves(2)[:1], *_halves(2)[:1], _halves(2)[1]], id="two before halves"),
        pytest.param([_record(1), _record("-1", op="UPDATE_AFTER")], id="a half of a full-load row"),
    ],
)
def test_halves_the_reference_rejects_give_its_files(lines: list[str]):
    assert_same_files(_lines(lines))


def test_the_same_sequence_id_in_two_tables_makes_two_updates():
    b1, a1 = (line.replace('"tableName":"T"', '"tableName":"U"') for line in _halves(9))
    assert assert_same_files(_lines([*_halves(9)[:1], b1, _halves(9)[1], a1])) == 1


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("LONG", "-0"),
        ("LONG", "7"),
        ("LONG", '"42"'),
        ("LONG", "1.5"),
        ("LONG", "true"),
        ("DOUBLE", '"2305304.19"'),
        ("DOUBLE", '"1.100000"'),
        ("DOUBLE", '" 1.5 "'),
        ("DOUBLE", '"NaN"'),
        ("DOUBLE", '"-Infinity"'),
        ("DOUBLE", '"+3"'),
        ("DOUBLE", '"1e5"'),
        ("DOUBLE", '"0.0000001"'),
        ("DOUBLE", '"abc"'),
        ("DOUBLE", "2"),
        ("DOUBLE", "30.25"),
        ("DOUBLE", "1e2"),
        ("DOUBLE", "false"),
        ("DATE", "1716795714544"),
        ("DATE", '"1716795714544"'),
        ("DATE", "-1"),
        ("DATE", "253402300800000"),
        ("DATE", "-30610224000001"),
        ("DATE", "9999999999999999"),
        ("DATE", "1.5"),
        ("BYTES", '"AAEC"'),
        ("BYTES", '"!"'),
        ("BOOLEAN", "false"),
        ("BOOLEAN", '" TRUE "'),
        ("BOOLEAN", "0"),
        ("STRING", '"quote \\" and \\\\ backslash"'),
        ("STRING", '"é ü 😀"'),
        ("STRING", "12"),
        ("STRING", '{"nested":[1,2]}'),
        ("STRING", "null"),
        ("TIMESTAMP", '"2024-01-01"'),  # a type cdclake does not decode: kept
    ],
)
def test_each_value_is_written_as_the_reference_and_the_builder_write_it(kind: str, value: str):
    image = '{"ID":1,"V":' + value + "}"
    lines = [
        _record(1, after=image, columns={"V": kind}),
        _record(2, op="DELETE", after=None, before=image, columns={"V": kind}),
        _record(3, op="UPDATE", before=image, after='{"ID":1}', columns={"V": kind}),
        _record(4, after='{"ID":3,"W":' + value + "}", columns={"V": kind}),  # a column the schema does not name
    ]
    assert_same_files(_lines(lines))


def test_typed_values_are_read_as_columns():
    columns = {"A": "DOUBLE", "B": "DATE", "C": "BOOLEAN", "D": "LONG", "E": "STRING"}
    image = '{"ID":1,"A":"199.50","B":1716795714544,"C":false,"D":-3,"E":"é"}'
    lines = [
        _record(1, after=image, columns=columns),
        _record(2, op="DELETE", after=None, before=image, columns=columns),
    ]
    lines += _halves(3, before=image, after=image.replace("199.50", "200"))
    assert assert_same_files(_lines(lines)) == 1


@pytest.mark.parametrize(
    "odd",
    [
        pytest.param(_record(3, op="MERGE"), id="an unknown operation"),
        pytest.param(_record(3, op="TRANSACTION_BEGIN", after=None), id="a marker"),
        pytest.param(_record(3, op="CREATE", after=None, ddl='{"text":"CREATE TABLE T (ID INT)"}'), id="DDL"),
        pytest.param(_record(3, op="TRUNCATE", after=None), id="a truncate"),
        pytest.param(_record(3, op="INSERT", after=None), id="an insert without an image"),
        pytest.param(_record(3, op="INSERT", before='{"ID":3}'), id="an insert with a before image"),
        pytest.param(_record(3, op="DELETE", before='{"ID":3}'), id="a delete with an after image"),
        pytest.param(_record(3, op="UPDATE", after=None, before='{"ID":3}'), id="an update without an after image"),
        pytest.param(_record(3, sequenceId="null"), id="no sequence id"),
        pytest.param(_record(3, sequenceId='"12a"'), id="a bad sequence id"),
        pytest.param(_record(3, timestamp='{"eventTime":"x"}'), id="a bad event time"),
        pytest.param(_record(3, timestamp="[]"), id="a time that is not an object"),
        pytest.param(_record(3, table=""), id="no table"),
        pytest.param(_record(3, after='{"ID":3,"ID":4}'), id="a column twice"),
        pytest.param(_record(3, extra='"member"'), id="a member DataHub does not write"),
        pytest.param(_record(3).replace(":", ": ", 1), id="blanks"),
        pytest.param(_record(3, after='{"ID":3,"V":"\\ud800"}'), id="a lone surrogate"),
        pytest.param(_record(3, columns={"V": "LONG"}, after='{"ID":3,"V":"x"}'), id="a value its type refuses"),
        pytest.param('{"payload":{"op":"INSERT","after":{"dataColumn":{"ID":3}},"sequenceId":"3"}}', id="no schema"),
        pytest.param(_record(3)[:40], id="cut short"),
        pytest.param("null", id="null"),
    ],
)
def test_from_the_first_span_outside_the_shape_the_reference_reads_the_rest(odd: str):
    lines = [_record(1), _record(2), odd, _record(4), _record(5)]
    with mock.patch.object(json_columns, "SPAN_BYTES", 10):  # a span per record
        read = assert_same_files(_lines(lines))
    assert read == (2 if odd.startswith("{") else 1)


def test_full_load_rows_and_any_version_are_read_as_columns():
    lines = [_record("-1"), _record('"-1"', after='{"ID":2,"V":"b"}'), _record(3, version=None)]
    lines += [_record(4, version='{"v":1}'), _record(5, version="2")]
    assert assert_same_files(_lines(lines)) == 1


def test_options_the_reference_reads_give_the_same_files():
    data = _lines([_record(1), *_halves(2), _record(3, table="U")])
    assert assert_same_files(data, {"table": "lake.t", "keys": "ID,V"}) == 1


_VALUES = {
    "LONG": st.sampled_from(["0", "-0", "7", "1.5", '"8"', '"x"', "null"]),
    "DOUBLE": st.sampled_from(["1", "1.0", "1e3", '"1.50"', '"-0"', '"1e2"', '"x"', "null"]),
    "STRING": st.sampled_from(['"a"', '"b\\"c"', "3", "null"]),
    "DATE": st.sampled_from(["0", "1716795714544", "-5", '"17"', "null"]),
    "BOOLEAN": st.sampled_from(["true", '"false"', "1", "null"]),
}


@st.composite
def _streams(draw) -> bytes:
    lines: list[str] = []
    open_halves: list[str] = []
    for seq in range(1, draw(st.integers(1, 12)) + 1):
        columns = draw(st.dictionaries(st.sampled_from(["A", "B", "C"]), st.sampled_from(sorted(_VALUES)), max_size=3))
        image = {"ID": str(seq % 4)} | {c: draw(_VALUES[k]) for c, k in columns.items() if draw(st.booleans())}
        text = "{" + ",".join(f'"{c}":{v}' for c, v in image.items()) + "}"
        table = draw(st.sampled_from(["T", "U"]))
        op = draw(st.sampled_from(["INSERT", "UPDATE", "DELETE", "HALVES"]))
        if op == "DELETE":
            lines.append(_record(seq, op=op, after=None, before=text, columns=columns, table=table))
        elif op == "HALVES":
            pair = [
                _record(seq, op="UPDATE_BEFOR", after=None, before=text, columns=columns, table=table),
                _record(seq, op="UPDATE_AFTER", after=text, columns=columns, table=table),
            ]
            if draw(st.booleans()):
                pair.reverse()
            lines.append(pair[0])
            if draw(st.booleans()):  # the second half later, after other messages
                open_halves.append(pair[1])
            else:
                lines.append(pair[1])
        else:
            lines.append(_record(seq, op=op, after=text, columns=columns, table=table))
        if open_halves and draw(st.booleans()):
            lines.append(open_halves.pop(0))
    if draw(st.booleans()):
        lines += open_halves  # else: halves left alone at the end
    return _lines(lines)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=_streams(), span_bytes=st.sampled_from([10, 1500, 1 << 20]))
def test_any_mix_of_records_gives_the_reference_files(data: bytes, span_bytes: int):
    with mock.patch.object(json_columns, "SPAN_BYTES", span_bytes):
        assert_same_files(data)
