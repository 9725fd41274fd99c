"""GoldenGate JSON's columnar path gives the decode task exactly the files of the reference decoder.

Every test decodes the same bytes twice through the decode task (``decode_to_files``), with and without
the columnar path, and compares the event and quarantine files; the tests that need the fast path to
have run also say that it did (``decode_columns`` gave record batches), so none passes by falling back.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from unittest import mock

import columns_check
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cdclake.formats.columnar as json_columns
import cdclake.formats.goldengate_json as gg
from cdclake import native
from cdclake.bench.generate import generate
from cdclake.events.change import Rejected
from cdclake.formats.columnar import spans
from cdclake.options import Options
from cdclake.registry import get_decoder

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def assert_same_files(data: bytes, options: dict[str, str] | None = None) -> int:
    return columns_check.assert_same_files("goldengate-json", data, options)


def fast_after(data: bytes) -> int:
    """Spans the fast path reads after the odd record's: its two records' when the reference reads the odd span
    alone (it rejects nothing there), none when it reads on to the end (``columnar.reference_window``)."""
    decoder = get_decoder("goldengate-json", Options({}))
    return 0 if any(isinstance(item, Rejected) for item in decoder.decode(data, "x")) else 2


def _line(members: list[tuple[str, str]]) -> str:
    return "{" + ",".join(f"{json.dumps(name)}:{text}" for name, text in members) + "}"


def _record(pos: int, op: str = "I", after: str | None = '{"ID":1,"NAME":"a"}', **extra: str) -> str:
    members = [("table", '"S.T"'), ("op_type", json.dumps(op)), ("op_ts", '"2024-06-01 00:00:00.000001"')]
    members += [("current_ts", '"2024-06-01T00:00:01.000000"'), ("pos", json.dumps(f"{pos:020d}"))]
    members += [("primary_keys", '["ID"]')]
    if after is not None:
        members.append(("after", after))
    members += list(extra.items())
    return _line(members)


def test_the_bench_stream_is_read_as_columns_span_by_span(tmp_path: Path):
    gens, _ = generate(["goldengate-json"], tmp_path / "files", 400, seed=5, file_events=400)
    data = gens["goldengate-json"].files[0].read_bytes()
    with mock.patch.object(json_columns, "SPAN_BYTES", 5000):
        read = assert_same_files(data)
        assert read == len(list(spans(data))) > 5


@pytest.mark.skipif(not native.available("json_objects"), reason="the C splitter is not built")
def test_the_images_are_split_in_c_and_each_meta_joined_a_column_at_a_time(tmp_path: Path):
    gens, _ = generate(["goldengate-json"], tmp_path / "files", 400, seed=5, file_events=400)
    data = gens["goldengate-json"].files[0].read_bytes()
    split = mock.Mock(wraps=json_columns.split_images)
    one_by_one = mock.Mock(wraps=gg._meta_text)
    with mock.patch.object(json_columns, "split_images", split), mock.patch.object(gg, "_meta_text", one_by_one):
        assert assert_same_files(data) == 1
    assert split.call_count == 4  # before and after, once by the task and once by the count of spans read
    one_by_one.assert_not_called()


@pytest.mark.parametrize(
    ("position", "current"),
    [('"A\\"1"', '"2024-06-01T00:00:01"'), ('"1"', '"2024-06-01\\\\T00"'), ('"1"', '"tab\\t"')],
)
def test_a_meta_whose_texts_json_escapes_is_written_record_by_record(position: str, current: str):
    odd = _record(2).replace('"00000000000000000002"', position).replace('"2024-06-01T00:00:01.000000"', current)
    data = (_record(1) + "\n" + odd + "\n").encode()
    assert assert_same_files(data) == 1


@pytest.mark.parametrize(
    "value",
    [
        "-0",
        "1e5",
        "1E-7",
        "0.0000001",
        "0.00000012",
        "-0.0000000",
        "12.500",
        "123456789012345678901234567890",
        '"quote \\" and \\\\ backslash"',
        '"caf\\u00e9"',
        '"tab\\t"',
        '"\\/"',
        "true",
        "null",
        '"é ü 😀"',
    ],
)
def test_values_the_builder_spells_otherwise_are_rewritten_its_way(value: str):
    data = (_record(1, after='{"ID":1,"V":' + value + "}") + "\n" + _record(2, after='{"ID":2}') + "\n").encode()
    assert assert_same_files(data) == 1


@pytest.mark.parametrize(
    ("odd", "read"),
    [
        (_record(3, after='{"ID":3,"V":{"nested":1}}'), 2),  # a nested value
        (_record(3, after='{"ID":3,"ID":4}'), 2),  # a column twice: the reference rejects the record
        (_record(3, op="X"), 2),  # an unknown op_type: rejected
        (_record(3, extra='"member"'), 2),  # a member the formatter does not write: kept in meta
        (_record(3).replace('"2024-06-01 00:00:00.000001"', '"2024-02-30 00:00:00.000000"'), 2),  # no such day
        (_record(3).replace(":", ": ", 1), 2),  # blanks
        (_record(3, after='{"ID":3, "V":1}'), 2),  # a blank in an image: not split, and not the same text written back
        (_record(3, before='{"ID":3}', after='{"\\u0049D":3}'), 2),  # an escape in a column name
        (_record(3, after='{"ID":3,"V":"\\ud800"}'), 2),  # a lone surrogate
        (_record(3, op="T", after='{"ID":3,"ID":4}'), 2),  # a truncate's image with a column twice: rejected
        (_record(3, op="T", after="5"), 2),  # a truncate's image that is not an object: rejected
        (_record(3, op="T"), 2),  # a truncate's image: checked by the reference, then dropped
        pytest.param('{"table":"S.T","op_type":"I"', 2, id="cut short"),
        # not a record line: no cut before it, so its span starts at the record before it
        pytest.param("[1, 2]", 1, id="an array"),
    ],
)
def test_a_span_outside_the_shape_is_the_reference_s(odd: str, read: int):
    lines = [_record(1), _record(2), odd, _record(4), _record(5)]
    data = "\n".join(lines).encode()
    with mock.patch.object(json_columns, "SPAN_BYTES", 10):  # a span per record
        assert assert_same_files(data) == read + fast_after(data)


@pytest.mark.parametrize("span_bytes", [10, 1 << 20])
def test_a_column_first_seen_mid_file_is_announced_as_the_reference_does(span_bytes: int):
    # a piece that starts with a partial update: its later full images add columns, each announced by a
    # SCHEMA event just before the record
    lines = [
        _record(1, op="U", after='{"ID":1,"NAME":"b"}'),
        _record(2, after='{"ID":2,"NAME":"c","QTY":3}'),
        _record(3, op="D", after=None, before='{"ID":3,"NOTE":"x","QTY":1}'),
        _record(4, after='{"ID":4,"NAME":"d","QTY":4,"NOTE":"y"}'),
    ]
    data = ("\n".join(lines) + "\n").encode()
    with mock.patch.object(json_columns, "SPAN_BYTES", span_bytes):
        assert assert_same_files(data) == len(list(spans(data)))
        with tempfile.TemporaryDirectory() as work:
            _, files = columns_check._task("goldengate-json", data, Path(work), True, {})
    ops = files["event"]["op"].to_pylist()
    assert ops == ["UPDATE", "SCHEMA", "INSERT", "SCHEMA", "DELETE", "INSERT"]


def test_the_formatter_s_other_members_and_orders_are_read_as_columns():
    tokens = _record(1, after=None, before='{"ID":1}', tokens='{"R":"AAD"}').replace('"op_type":"I"', '"op_type":"D"')
    flink_order = (
        '{"table":"S.T","pos":"2","primary_keys":["ID"],"after":{"ID":2},"op_type":"I",'
        '"op_ts":"2020-05-13 15:40:07.000000"}'
    )
    truncate = '{"table":"S.T","op_type":"T","op_ts":"2024-06-01 00:00:00.000002","pos":"3"}'
    for text in (tokens, flink_order, truncate):
        assert assert_same_files((text + "\n").encode()) == 1


@pytest.mark.parametrize(
    "path", ["ogg/flink_json/ogg-data.txt", "goldengate_json/seed_all.json", "goldengate_json/seed_update.json"]
)
def test_real_samples_give_the_reference_files(path: str):
    assert_same_files((FIXTURES / path).read_bytes())


def test_options_that_change_the_reading_leave_it_to_the_reference():
    data = (_record(1) + "\n" + _record(2) + "\n").encode()
    assert assert_same_files(data, {"table": "OTHER", "keys": "NAME"}) == 1
    assert assert_same_files(data, {"jsonDelimiter": "|"}) == 0
    assert assert_same_files(data, {"encoding": "ISO-8859-1"}) == 0


_TS = st.sampled_from(
    [
        "2024-06-01 00:00:00.000001",
        "2024-06-01 23:59:59.999999",
        "2024-02-30 00:00:00.000000",
        "0000-01-01 00:00:00.000000",
        "2024-06-01T01:02:03Z",
        "2024-06-01 01:02:03.1234567",
        "2024-06-01",
        "bad",
    ]
)
_VALUE = st.one_of(
    st.sampled_from(
        [
            "-0",
            "0",
            "1e5",
            "0.0000001",
            "0.000001",
            "1.50",
            "true",
            "false",
            "null",
            "[1]",
            '{"a":1}',
            '"\\u00e9"',
            '"\\ud83d\\ude00"',
            '"\\ud800"',
            '"a\\"b"',
        ]
    ),
    st.integers(-(2**70), 2**70).map(str),
    st.decimals(allow_nan=False, allow_infinity=False, places=3).map(str),
    st.text(max_size=6).map(lambda t: json.dumps(t, ensure_ascii=False)),
)
_IMAGE = st.lists(st.tuples(st.sampled_from(["ID", "A", "B", "é"]), _VALUE), max_size=4).map(
    lambda pairs: "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{v}" for k, v in pairs) + "}"
)


@st.composite
def _records(draw) -> str:
    members = [
        ("table", json.dumps(draw(st.sampled_from(["S.A", "S.B", ""])))),
        ("op_type", json.dumps(draw(st.sampled_from(["I", "U", "D", "T", "X"])))),
        ("op_ts", json.dumps(draw(_TS))),
        ("current_ts", draw(st.sampled_from(['"2024-06-01T00:00:00"', "null"]))),
        ("pos", json.dumps(draw(st.sampled_from(["1", "00000000000000000042", "", "A1"])))),
        ("primary_keys", draw(st.sampled_from(['["ID"]', "[]", '["ID","A"]']))),
        ("before", draw(st.one_of(_IMAGE, st.just("null")))),
        ("after", draw(st.one_of(_IMAGE, st.just("null")))),
    ]
    kept = [m for m in members if m[0] in ("table", "op_type", "op_ts", "pos") or draw(st.booleans())]
    return _line(kept)


@settings(max_examples=150, deadline=None)
@given(st.lists(_records(), min_size=1, max_size=8), st.sampled_from(["\n", "\r\n"]), st.booleans())
def test_any_stream_gives_the_reference_files(records: list[str], newline: str, last_newline: bool):
    data = (newline.join(records) + (newline if last_newline else "")).encode()
    with mock.patch.object(json_columns, "SPAN_BYTES", 150):
        assert_same_files(data)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["{", "}", "{}", '{"a":1}', "  {", "x}"]), max_size=30), st.integers(1, 40))
def test_spans_cover_the_data_and_cut_only_before_a_record_line(lines: list[str], span_bytes: int):
    data = "\n".join(lines).encode()
    with mock.patch.object(json_columns, "SPAN_BYTES", span_bytes):
        cuts = list(spans(data))
    assert b"".join(data[a:b] for a, b in cuts) == data
    assert all(b > a for a, b in cuts)
    for _, end in cuts[:-1]:
        assert data[end : end + 1] == b"{"
        previous = data[: end - 1].rsplit(b"\n", 1)[-1]
        assert previous.rstrip().endswith(b"}")
