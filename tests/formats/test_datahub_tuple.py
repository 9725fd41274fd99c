"""datahub-tuple decoder: the vendor doc's example table, CSV and JSON-lines framing, pairing, bad input."""

from __future__ import annotations

import csv
import datetime as dt
import io
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.events.change import ChangeEvent, Rejected, Source, to_json
from cdclake.formats import _datahub
from cdclake.formats.datahub_tuple import DataHubTupleDecoder
from cdclake.options import Options
from cdclake.registry import get_decoder

FIXTURES = Path(__file__).parents[1] / "fixtures" / "datahub_tuple"
UTC = dt.UTC
PAD = "0" * 13
TABLE = "example_db.example_table"
META = ("_sequence_id_", "_operation_type_", "_excute_time_", "_before_image_", "_after_image_")


def decode(data: bytes, file: str = "f.csv", **options: str) -> list[ChangeEvent | Rejected]:
    dec = get_decoder("datahub-tuple", Options(options))
    assert isinstance(dec, DataHubTupleDecoder)
    return list(dec.decode(data, file))


def events(items: list[ChangeEvent | Rejected]) -> list[ChangeEvent]:
    assert all(isinstance(i, ChangeEvent) for i in items), [i for i in items if isinstance(i, Rejected)]
    return items  # type: ignore[return-value]


def ms(value: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=value)


def to_csv(header: list[str], rows: list[list[Any]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode()


def to_jsonl(header: list[str], rows: list[list[Any]]) -> bytes:
    return "".join(to_json(dict(zip(header, row, strict=True))) + "\n" for row in rows).encode()


def line_starts(data: bytes) -> list[int]:
    return [0, *[i + 1 for i, b in enumerate(data) if b == ord("\n")][:-1]]


HEADER = ["_sequence_id_", "_operation_type_", "_excute_time_", "_source_table_", "_before_image_", "_after_image_"]
HEADER += ["id", "name"]


def row(
    seq: str, op: str, flags: str | tuple[str, str], id_: str = "1", name: str = "a", table: str = "db.t"
) -> list[str]:
    return [seq, op, "1649991726000", table, flags[0], flags[1], id_, name]


# --- the vendor doc's example table --------------------------------------------------------------


def seed_events(file: str, offsets: list[int]) -> list[ChangeEvent]:
    meta = [
        dict(zip(META, ("1649991610688000000", "I", "1649991726000", "N", "Y"), strict=True)),
        {
            "_sequence_id_": "1649991610688000001",
            "_operation_type_": "U",
            "_excute_time_": "1649991756000",
            "pair": {
                "before": {"op": "U", "offset": offsets[1], "_before_image_": "Y", "_after_image_": "N"},
                "after": {"op": "U", "offset": offsets[2], "_before_image_": "N", "_after_image_": "Y"},
            },
        },
        dict(zip(META, ("1649991610688000002", "D", "1649991774000", "Y", "N"), strict=True)),
    ]
    return [
        ChangeEvent(
            TABLE,
            "INSERT",
            PAD + "1649991610688000000",
            ms(1649991726000),
            Source(file, offsets[0]),
            after={},
            meta=meta[0],
        ),
        ChangeEvent(
            TABLE,
            "UPDATE",
            PAD + "1649991610688000001",
            ms(1649991756000),
            Source(file, offsets[1]),
            before={},
            after={},
            meta=meta[1],
        ),
        ChangeEvent(
            TABLE,
            "DELETE",
            PAD + "1649991610688000002",
            ms(1649991774000),
            Source(file, offsets[3]),
            before={},
            meta=meta[2],
        ),
    ]


FIELDS = (
    "table",
    "op",
    "seq",
    "event_ts",
    "tx_id",
    "tx_pos",
    "tx_last",
    "keys",
    "before",
    "after",
    "ddl",
    "meta",
    "source",
)


@pytest.mark.parametrize("name", ["seed_example.csv", "seed_example.jsonl"])
def test_seed_example_table_every_field(name):
    data = (FIXTURES / name).read_bytes()
    starts = line_starts(data)
    offsets = starts[1:] if name.endswith(".csv") else starts
    items = events(decode(data, name, table=TABLE))
    expected = seed_events(name, offsets)
    assert len(items) == 3
    for event, want in zip(items, expected, strict=True):
        for field in FIELDS:
            assert getattr(event, field) == getattr(want, field), (event.op, field)
    assert items == expected


def test_seed_without_source_table_needs_the_table_option():
    items = decode((FIXTURES / "seed_example.csv").read_bytes())
    assert all(isinstance(i, Rejected) for i in items) and len(items) == 4
    assert items[0].error == "no _source_table_ in the record; set --option table=NAME"
    assert items[0].raw == b"1649991610688000000,I,1649991726000,N,Y"


def test_registered():
    assert type(get_decoder("datahub-tuple")) is DataHubTupleDecoder


# --- CSV -----------------------------------------------------------------------------------------


def test_csv_values_stay_strings_and_quoting():
    rows = [
        row("5", "I", "NY", "1", 'quoted, "comma"'),
        row("6", "I", "NY", "2", "two\nlines"),
        row("7", "I", "NY", "3", ""),
    ]
    data = to_csv(HEADER, rows)
    items = events(decode(data, keys="id"))
    assert [e.after for e in items] == [
        {"id": "1", "name": 'quoted, "comma"'},
        {"id": "2", "name": "two\nlines"},
        {"id": "3", "name": ""},
    ]
    assert [e.source.offset for e in items] == [data.index(b"5,I"), data.index(b"6,I"), data.index(b"7,I")]
    assert all(e.table == "db.t" and e.keys == ["id"] for e in items)
    assert items[0].meta["_source_table_"] == "db.t"


def test_csv_null_value_option():
    data = to_csv(HEADER, [row("5", "I", "NY", "1", "\\N"), row("6", "I", "NY", "2", "")])
    a, b = events(decode(data))
    assert a.after["name"] == "\\N" and b.after["name"] == ""
    a, b = events(decode(data, nullValue="CDATA[\\\\N]"))
    assert a.after == {"id": "1", "name": None} and b.after["name"] == ""
    a, b = events(decode(data, nullValue=""))
    assert a.after["name"] == "\\N" and b.after == {"id": "2", "name": None}


def test_csv_crlf_bom_and_junk_before_header():
    body = to_csv(HEADER, [row("5", "I", "NY")]).replace(b"\n", b"\r\n")
    junk = b"exported by tool X\r\n# comment\r\n"
    data = b"\xef\xbb\xbf" + junk + body
    rejected, event = decode(data)
    assert isinstance(rejected, Rejected) and rejected.source.offset == 3
    assert rejected.error == "lines before the CSV header (the first line naming _operation_type_)"
    assert rejected.raw == b"exported by tool X\r\n# comment"
    assert isinstance(event, ChangeEvent) and event.after == {"id": "1", "name": "a"}
    assert event.source.offset == data.index(b"5,I")


def test_execute_time_spelling_and_time_forms():
    header = [h if h != "_excute_time_" else "_execute_time_" for h in HEADER]
    times = [
        "1649991726",
        "1649991726000",
        "1649991726000000",
        "1649991726000000000",
        "2022-04-15 03:02:06",
        "2022-04-15T05:02:06+02:00",
        "",
        "-1",
    ]
    rows = [[str(i), "I", t, "db.t", "N", "Y", str(i), "x"] for i, t in enumerate(times)]
    items = events(decode(to_csv(header, rows)))
    expected = dt.datetime(2022, 4, 15, 3, 2, 6, tzinfo=UTC)
    assert [e.event_ts for e in items] == [expected] * 6 + [None, None]
    assert items[0].meta["_execute_time_"] == "1649991726"


def test_snapshot_rows_are_upserts_sorting_first():
    data = to_csv(HEADER, [row("-1", "I", "NY"), row("1649991610688000000", "I", "NY", "2")])
    snapshot, change = events(decode(data))
    assert (snapshot.op, snapshot.seq) == ("UPSERT", "-1")
    assert change.op == "INSERT" and snapshot.seq < change.seq


def test_update_halves_pair_in_either_order_and_long_op_names():
    rows = [
        row("10", "U", "NY", "1", "new"),
        row("11", "I", "NY", "9", "x"),
        row("10", "U", "YN", "1", "old"),
        row("12", "UPDATE_BEFOR", ("", ""), "2", "b"),
        row("12", "UPDATE_AFTER", ("", ""), "2", "c"),
        row("13", "UPDATE_BEFORE", "YN", "3", "d"),
        row("13", "U", "NY", "3", "e"),
    ]
    data = to_csv(HEADER, rows)
    starts = line_starts(data)
    insert, first, second, third = events(decode(data))
    assert insert.op == "INSERT"
    assert (first.before, first.after) == ({"id": "1", "name": "old"}, {"id": "1", "name": "new"})
    assert first.source.offset == starts[1]
    assert first.meta["pair"]["before"]["offset"] == starts[3] and first.meta["pair"]["after"]["offset"] == starts[1]
    assert (second.before, second.after) == ({"id": "2", "name": "b"}, {"id": "2", "name": "c"})
    assert second.meta["pair"]["before"]["op"] == "UPDATE_BEFOR"
    assert (third.before["name"], third.after["name"]) == ("d", "e")


def test_unpaired_and_duplicate_halves_rejected():
    rows = [row("10", "U", "YN", "1", "old"), row("11", "U", "NY"), row("10", "U", "YN", "1", "again")]
    data = to_csv(HEADER, rows)
    starts = line_starts(data)
    duplicate, lonely_before, lonely_after = decode(data, "t.csv")
    assert isinstance(duplicate, Rejected) and duplicate.source == Source("t.csv", starts[3])
    assert duplicate.error.startswith("second before image (U) for the update with _sequence_id_ 10 of table db.t")
    assert lonely_before.source.offset == starts[1] and lonely_after.source.offset == starts[2]
    assert "U row is the before image of an update (_sequence_id_ 10, table db.t)" in lonely_before.error
    assert "no row with its after image is in this file" in lonely_before.error
    assert lonely_before.raw == b"10,U,1649991726000,db.t,Y,N,1,old"
    assert "U row is the after image of an update (_sequence_id_ 11" in lonely_after.error


def test_csv_malformed_records_rejected_neighbours_decode():
    good = to_csv(HEADER, [row("1", "I", "NY")]).split(b"\n")[1]
    bad_lines = {
        b"2,I,1649991726000,db.t,N,Y,1": "CSV record at line 3 has 7 fields but the header has 8",
        b'3,I,1649991726000,db.t,N,Y,1,"a"b': "invalid CSV at line 5: ',' expected after '\"'; skipped this line",
        b"4,X,1649991726000,db.t,N,Y,1,a": "unknown _operation_type_ 'X'; expected I, U or D",
        b"5,I,noon,db.t,N,Y,1,a": "_excute_time_ 'noon' is not epoch milliseconds nor a 'YYYY-MM-DD HH:MM:SS' time",
        b"6a,I,1649991726000,db.t,N,Y,1,a": "_sequence_id_ '6a' is not a string of digits",
        b",I,1649991726000,db.t,N,Y,1,a": "no _sequence_id_: DataHub rows need it for ordering",
        b"7,I,1649991726000,db.t,Y,N,1,a": "_before_image_='Y' contradicts _operation_type_ 'I'",
        b"8,D,1649991726000,db.t,N,N,1,a": "_before_image_='N' contradicts _operation_type_ 'D'",
        b"8,D,1649991726000,db.t,Y,Y,1,a": "_after_image_='Y' contradicts _operation_type_ 'D'",
        b"9,U,1649991726000,db.t,Y,Y,1,a": "update row with _before_image_='Y' and _after_image_='Y': cannot tell",
        b"9,U,1649991726000,db.t,,,1,a": "update row with _before_image_='' and _after_image_=''",
        b"9,I,1649991726000,db.t,maybe,Y,1,a": "_before_image_ must be Y or N, not 'maybe'",
        b"9,I,1649991726000,,N,Y,1,a": "no _source_table_ in the record",
        b"10,I,1649991726000,db.t,N,Y,1,\xff\xfe": "bytes that are not valid UTF-8 at line 29 (first bad byte 0xff)",
        b"-1,U,1649991726000,db.t,N,Y,1,a": "update row with _sequence_id_ -1: a half of an update cannot be paired",
    }
    header = to_csv(HEADER, []).rstrip(b"\n")
    data = b"\n".join([header, good, *[x for bad in bad_lines for x in (bad, good)]]) + b"\n"
    starts = line_starts(data)
    items = decode(data, "bad.csv")
    assert len(items) == 1 + 2 * len(bad_lines)
    assert [i.source.offset for i in items] == starts[1:]
    assert all(isinstance(i, ChangeEvent) for i in items[0::2])
    for (raw, message), item in zip(bad_lines.items(), items[1::2], strict=True):
        assert isinstance(item, Rejected), raw
        assert message in item.error, (raw, item.error)
        assert item.raw == raw
        assert item.source.file == "bad.csv"


def test_unterminated_quote_rejects_one_line():
    header = to_csv(HEADER, []).rstrip(b"\n")
    data = header + b'\n1,I,1649991726000,db.t,N,Y,1,"open\n2,I,1649991726000,db.t,N,Y,2,b\n'
    rejected, event = decode(data)
    assert isinstance(rejected, Rejected) and rejected.error.startswith("invalid CSV at line 2: unexpected end of data")
    assert rejected.raw == b'1,I,1649991726000,db.t,N,Y,1,"open'
    assert isinstance(event, ChangeEvent) and event.after == {"id": "2", "name": "b"}


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (b"_sequence_id_,_operation_type_,id,id", "the CSV header names column(s) id more than once"),
        (b"_operation_type_,id", "the CSV header lacks the metadata column(s) _sequence_id_"),
    ],
)
def test_bad_header_rejects_header_and_rows(header, message):
    data = header + b"\n1,I,1\n2,I,2\n"
    items = decode(data)
    assert len(items) == 3 and all(isinstance(i, Rejected) for i in items)
    assert items[0].error == message and items[0].source.offset == 0
    assert items[1].error == f"no usable CSV header (see the record at line 1): {message}"
    assert [i.source.offset for i in items] == [0, len(header) + 1, len(header) + 7]


def test_neither_json_nor_csv():
    [rejected] = decode(b"hello\nworld\n")
    assert rejected.error.startswith("the file holds neither JSON records")
    assert rejected.raw == b"hello\nworld"
    assert decode(b"") == [] and decode(b"\n \n") == []


def test_csv_record_size_limit(monkeypatch):
    from cdclake.formats import datahub_tuple

    monkeypatch.setattr(datahub_tuple, "MAX_RECORD_BYTES", 120)
    data = to_csv(HEADER, [row("1", "I", "NY", "1", "x" * 200), row("2", "I", "NY")])
    rejected, event = decode(data)
    assert isinstance(rejected, Rejected) and "larger than 120 bytes" in rejected.error
    assert isinstance(event, ChangeEvent) and event.seq.endswith("2")


# --- JSON lines ----------------------------------------------------------------------------------


def test_json_lines_typed_values_and_junk():
    records = [
        {
            "_sequence_id_": 1649991610688000000,
            "_operation_type_": "I",
            "_execute_time_": 1649991726000,
            "_source_table_": "db.t",
            "_before_image_": "N",
            "_after_image_": "Y",
            "id": 1,
            "price": Decimal("17520.00"),
            "note": None,
        },
        {
            "_sequence_id_": "1649991610688000001",
            "_operation_type_": "D",
            "_excute_time_": "1649991756000",
            "_source_table_": "db.t",
            "_before_image_": True,
            "_after_image_": False,
            "id": 1,
        },
    ]
    junk = b"/* licence\n   header */\n"
    data = junk + b"".join(to_json(r).encode() + b"\n" for r in records) + b"[1]\n"
    rejected, insert, delete, array = decode(data, "t.jsonl")
    assert isinstance(rejected, Rejected) and rejected.source.offset == 0 and rejected.raw == junk.rstrip()
    assert insert.after == {"id": 1, "price": Decimal("17520.00"), "note": None}
    assert str(insert.after["price"]) == "17520.00"
    assert insert.event_ts == ms(1649991726000) and insert.seq == PAD + "1649991610688000000"
    assert insert.source.offset == len(junk)
    assert delete.op == "DELETE" and delete.before == {"id": 1} and delete.event_ts == ms(1649991756000)
    assert isinstance(array, Rejected) and array.error == "record is a JSON array, not an object"


def test_json_lines_bad_json_and_wrong_types():
    good = to_json({"_sequence_id_": "1", "_operation_type_": "I", "_source_table_": "db.t", "id": 1})
    bad = [
        '{"_sequence_id_": "2", oops}',
        '{"_sequence_id_": ["2"], "_operation_type_": "I", "_source_table_": "db.t"}',
        '{"_sequence_id_": "2", "_operation_type_": 1, "_source_table_": "db.t"}',
        '{"_sequence_id_": "2", "_operation_type_": "I", "_source_table_": 5}',
        '{"_sequence_id_": "2", "_operation_type_": "I", "_source_table_": "db.t", "_after_image_": 1}',
    ]
    messages = [
        "invalid JSON at line 2 column 24: Expecting property name",
        "_sequence_id_ must be a string of digits, not array",
        "unknown _operation_type_ 1",
        "no _source_table_ in the record",
        "_after_image_ must be Y or N, not 1",
    ]
    data = ("\n".join([good, *[x for b in bad for x in (b, good)]]) + "\n").encode()
    items = decode(data)
    assert [i.source.offset for i in items] == line_starts(data)
    for item, message, raw in zip(items[1::2], messages, bad, strict=True):
        assert isinstance(item, Rejected) and message in item.error, item
        assert item.raw == raw.encode()
    assert all(isinstance(i, ChangeEvent) for i in items[0::2])


# --- laws ----------------------------------------------------------------------------------------

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=8)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["I", "D", "U"]), _text, _text), min_size=1, max_size=6))
def test_property_csv_and_json_lines_agree(rows):
    body: list[list[Any]] = []
    for n, (op, a, b) in enumerate(rows):
        if op == "U":
            body += [
                [str(n), "U", "1649991726000", "db.t", "Y", "N", a, b],
                [str(n), "U", "1649991726000", "db.t", "N", "Y", b, a],
            ]
        else:
            body.append([str(n), op, "1649991726000", "db.t", *(("N", "Y") if op == "I" else ("Y", "N")), a, b])
    from_csv, from_json = events(decode(to_csv(HEADER, body))), events(decode(to_jsonl(HEADER, body)))
    assert len(from_csv) == len(rows)

    def strip(items: list[ChangeEvent]) -> list[dict[str, Any]]:
        out = []
        for event in items:
            d = event.to_dict()
            d.pop("source")
            d["meta"].pop("pair", None)
            out.append(d)
        return out

    assert strip(from_csv) == strip(from_json)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(_text, min_size=2, max_size=2),
    st.lists(st.integers(100, 10**6), max_size=4),
    st.integers(0, 4),
    st.booleans(),
)
def test_property_pairing_independent_of_half_order(names, others, cut, swap):
    halves = [row("99", "U", "YN", "1", names[0]), row("99", "U", "NY", "1", names[1])]
    fillers = [row(str(n), "I", "NY", str(n)) for n in others]
    first, second = halves[::-1] if swap else halves
    items = events(decode(to_csv(HEADER, [*fillers[:cut], first, *fillers[cut:], second])))
    [update] = [e for e in items if e.op == "UPDATE"]
    [reference] = events(decode(to_csv(HEADER, halves)))
    assert update.before == {"id": "1", "name": names[0]} and update.after == {"id": "1", "name": names[1]}
    for field in ("table", "op", "seq", "event_ts", "keys", "before", "after"):
        assert getattr(update, field) == getattr(reference, field)
    assert {k: v for k, v in update.meta.items() if k != "pair"} == {
        k: v for k, v in reference.meta.items() if k != "pair"
    }


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=300))
def test_property_any_bytes_terminate(data):
    items = decode(data)
    assert all(isinstance(i, (ChangeEvent, Rejected)) for i in items)
    assert all(0 <= i.source.offset <= len(data) for i in items)


def test_shared_limits_are_the_guide_s():
    assert _datahub.MAX_RECORD_BYTES == 64 * 1024**2 and _datahub.MAX_DEPTH == 512 and _datahub.MAX_RAW_BYTES == 1024**2
