"""goldengate-json decoder: the vendor doc's samples (§6.3.2), real OGG samples, framing and bad input."""

from __future__ import annotations

import datetime as dt
import gzip
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.events.change import ChangeEvent, Rejected, Source, to_json
from cdclake.formats import goldengate_json
from cdclake.formats.goldengate_json import GoldenGateJsonDecoder
from cdclake.options import OptionError, Options
from cdclake.registry import get_decoder
from cdclake.staging.reading import maybe_gunzip

FIXTURES = Path(__file__).parents[1] / "fixtures"
SEEDS = FIXTURES / "goldengate_json"
OGG = FIXTURES / "ogg"
UTC = dt.UTC


def decoder(**options: str) -> GoldenGateJsonDecoder:
    dec = get_decoder("goldengate-json", Options(options))
    assert isinstance(dec, GoldenGateJsonDecoder)
    return dec


def decode(data: bytes, file: str = "f.json", **options: str) -> list[ChangeEvent | Rejected]:
    return list(decoder(**options).decode(data, file))


def events(items: list[ChangeEvent | Rejected]) -> list[ChangeEvent]:
    assert all(isinstance(i, ChangeEvent) for i in items), [i for i in items if isinstance(i, Rejected)]
    return items  # type: ignore[return-value]


def split(items: list[ChangeEvent | Rejected]) -> tuple[list[ChangeEvent], list[Rejected]]:
    return [i for i in items if isinstance(i, ChangeEvent)], [i for i in items if isinstance(i, Rejected)]


def line(record: dict[str, Any]) -> str:
    return to_json(record)


def rec(op: str = "I", pos: str = "00000000000000000001", **members: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"table": "GG.T", "op_type": op, "op_ts": "2024-01-02 03:04:05.123456", "pos": pos}
    if op != "D" and "after" not in members:
        base["after"] = {"ID": 1, "NAME": "a"}
    base.update(members)
    return base


def without_offsets(items: list[ChangeEvent]) -> list[dict[str, Any]]:
    out = []
    for event in items:
        d = event.to_dict()
        d.pop("source")
        out.append(d)
    return out


# --- the vendor doc's sample messages (§6.3.2) ----------------------------------------

SEED_INSERT = ChangeEvent(
    table="GG.TCUSTORD",
    op="INSERT",
    seq="00000000000000000000000000001444",
    event_ts=dt.datetime(2013, 6, 2, 22, 14, 36, tzinfo=UTC),
    source=Source("seed_insert.json", 0),
    keys=None,
    before=None,
    after={
        "CUST_CODE": "WILL",
        "ORDER_DATE": "1994-09-30:15:33:00",
        "PRODUCT_CODE": "CAR",
        "ORDER_ID": "144",
        "PRODUCT_PRICE": Decimal("17520.00"),
        "PRODUCT_AMOUNT": 3,
        "TRANSACTION_ID": "100",
    },
    meta={
        "pos": "00000000000000001444",
        "op_ts": "2013-06-02 22:14:36.000000",
        "current_ts": "2015-09-18T13:39:35.447000",
        "tokens": {"R": "AADPkvAAEAAEqL2AAA"},
    },
)
SEED_UPDATE = ChangeEvent(
    table="GG.TCUSTORD",
    op="UPDATE",
    seq="00000000000000000000000000002891",
    event_ts=dt.datetime(2013, 6, 2, 22, 14, 41, tzinfo=UTC),
    source=Source("seed_update.json", 0),
    before={
        "CUST_CODE": "BILL",
        "ORDER_DATE": "1995-12-31:15:00:00",
        "PRODUCT_CODE": "CAR",
        "ORDER_ID": "765",
        "PRODUCT_PRICE": Decimal("15000.00"),
        "PRODUCT_AMOUNT": 3,
        "TRANSACTION_ID": "100",
    },
    after={
        "CUST_CODE": "BILL",
        "ORDER_DATE": "1995-12-31:15:00:00",
        "PRODUCT_CODE": "CAR",
        "ORDER_ID": "765",
        "PRODUCT_PRICE": Decimal("14000.00"),
        "PRODUCT_AMOUNT": 3,
        "TRANSACTION_ID": "100",
    },
    meta={
        "pos": "00000000000000002891",
        "op_ts": "2013-06-02 22:14:41.000000",
        "current_ts": "2015-09-18T13:39:35.748000",
        "tokens": {"R": "AADPkvAAEAAEqLzAAA"},
    },
)
SEED_DELETE = ChangeEvent(
    table="GG.TCUSTORD",
    op="DELETE",
    seq="00000000000000000000000000004338",
    event_ts=dt.datetime(2013, 6, 2, 22, 14, 41, tzinfo=UTC),
    source=Source("seed_delete.json", 0),
    before={"CUST_CODE": "DAVE", "ORDER_DATE": "1993-11-03:07:51:35", "PRODUCT_CODE": "PLANE", "ORDER_ID": "600"},
    after=None,
    meta={
        "pos": "00000000000000004338",
        "op_ts": "2013-06-02 22:14:41.000000",
        "current_ts": "2015-09-18T13:39:35.766000",
        "tokens": {"L": "206080450", "6": "9.0.80330", "R": "AADPkvAAEAAEqLzAAC"},
    },
)
SEED_TRUNCATE = ChangeEvent(
    table="GG.TCUSTORD",
    op="TRUNCATE",
    seq="00000000000000000000000000004515",
    event_ts=dt.datetime(2013, 6, 2, 22, 14, 41, tzinfo=UTC),
    source=Source("seed_truncate.json", 0),
    meta={
        "pos": "00000000000000004515",
        "op_ts": "2013-06-02 22:14:41.000000",
        "current_ts": "2015-09-18T13:39:35.767000",
        "tokens": {"R": "AADPkvAAEAAEqL2AAB"},
    },
)
SEEDS_EXPECTED = {
    "seed_insert.json": SEED_INSERT,
    "seed_update.json": SEED_UPDATE,
    "seed_delete.json": SEED_DELETE,
    "seed_truncate.json": SEED_TRUNCATE,
}


def test_registered_decoder_is_this_module():
    assert type(get_decoder("goldengate-json")) is GoldenGateJsonDecoder
    assert GoldenGateJsonDecoder.format_id == "goldengate-json"


@pytest.mark.parametrize("name", sorted(SEEDS_EXPECTED))
def test_seed_sample_every_field(name):
    [event] = events(decode((SEEDS / name).read_bytes(), name))
    expected = SEEDS_EXPECTED[name]
    assert event == expected
    # field by field as well, so that a failure says which one
    for field in ("table", "op", "seq", "event_ts", "tx_id", "tx_pos", "tx_last", "keys", "before", "after", "meta"):
        assert getattr(event, field) == getattr(expected, field), field
    assert event.tx_id is None and event.tx_pos is None and event.tx_last is None and event.ddl is None
    assert event.event_ts.tzinfo is not None and event.event_ts.utcoffset() == dt.timedelta(0)
    assert event.source == Source(name, 0)
    assert len(event.seq) == 32


def test_seed_numbers_are_exact():
    [insert] = decode((SEEDS / "seed_insert.json").read_bytes())
    price = insert.after["PRODUCT_PRICE"]
    assert isinstance(price, Decimal) and str(price) == "17520.00"
    assert type(insert.after["PRODUCT_AMOUNT"]) is int
    assert '"PRODUCT_PRICE":17520.00' in to_json(insert.to_dict())
    [update] = decode((SEEDS / "seed_update.json").read_bytes())
    assert str(update.before["PRODUCT_PRICE"]) == "15000.00" and str(update.after["PRODUCT_PRICE"]) == "14000.00"


def test_seed_all_concatenated_pretty_printed_offsets():
    data = (SEEDS / "seed_all.json").read_bytes()
    items = events(decode(data, "seed_all.json"))
    assert [e.op for e in items] == ["INSERT", "UPDATE", "DELETE", "TRUNCATE"]
    assert [e.source.offset for e in items] == [0, 469, 1181, 1609]
    for event in items:
        assert data[event.source.offset : event.source.offset + 1] == b"{"
    expected = [SEED_INSERT, SEED_UPDATE, SEED_DELETE, SEED_TRUNCATE]
    assert without_offsets(items) == without_offsets(expected)
    assert [e.seq for e in items] == sorted(e.seq for e in items)


def test_truncate_has_no_images_even_if_written():
    [event] = events(decode(line(rec("T", before={"ID": 1}, after={"ID": 2})).encode()))
    assert event.op == "TRUNCATE" and event.before is None and event.after is None


# --- framing -------------------------------------------------------------------------


def seed_records() -> list[dict[str, Any]]:
    return [json.loads(p.read_text(), parse_float=Decimal) for p in map(SEEDS.joinpath, SEEDS_EXPECTED)]


def test_framings_give_identical_events():
    records = seed_records()
    one_per_line = "".join(line(r) + "\n" for r in records).encode()
    crlf = "".join(line(r) + "\r\n" for r in records).encode()
    concatenated = "".join(line(r) for r in records).encode()
    spaced = "  ".join(line(r) for r in records).encode() + b"\n\n\n"
    pretty = (SEEDS / "seed_all.json").read_bytes()
    results = [events(decode(data)) for data in (one_per_line, crlf, concatenated, spaced, pretty)]
    assert all(len(r) == 4 for r in results)
    first = without_offsets(results[0])
    for other in results[1:]:
        assert without_offsets(other) == first
    # offsets point at each record's first byte
    for data, result in zip((one_per_line, crlf, concatenated, spaced, pretty), results, strict=True):
        assert all(data[e.source.offset : e.source.offset + 1] == b"{" for e in result)
    starts = [0]
    for r in records[:-1]:
        starts.append(starts[-1] + len(line(r).encode()))
    assert [e.source.offset for e in results[2]] == starts


_names = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)
_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.decimals(allow_nan=False, allow_infinity=False, places=3),
    st.text(max_size=12),
)
_records = st.builds(
    lambda op, pos, after, before: {
        "table": "S.T",
        "op_type": op,
        "op_ts": "2020-01-01 00:00:00.000001",
        "pos": str(pos),
        **({"before": before} if before is not None else {}),
        "after": after,
    },
    st.sampled_from("IUD"),
    st.integers(min_value=0, max_value=10**23),
    st.dictionaries(_names, _values, max_size=5),
    st.one_of(st.none(), st.dictionaries(_names, _values, max_size=5)),
)


def row_events(items):
    """Events without the SCHEMA announcements of new columns."""
    return [e for e in events(items) if e.op != "SCHEMA"]


@settings(max_examples=50, deadline=None)
@given(st.lists(_records, min_size=1, max_size=6), st.sampled_from(["", " ", "\n", "\r\n\t"]))
def test_property_one_per_line_equals_concatenated(records, gap):
    per_line = "\n".join(line(r) for r in records).encode()
    concatenated = gap.join(line(r) for r in records).encode()
    pretty = "\n".join(
        json.dumps(json.loads(line(r), parse_float=Decimal), indent=4, default=str) for r in records
    ).encode()
    a, b = row_events(decode(per_line)), row_events(decode(concatenated))
    assert without_offsets(a) == without_offsets(b)
    assert len(row_events(decode(pretty))) == len(records)
    for data, result in ((per_line, a), (concatenated, b)):
        offsets = [e.source.offset for e in result]
        assert offsets == sorted(set(offsets))
        for e, r in zip(result, records, strict=True):
            assert data[e.source.offset :].startswith(line(r).encode())
            assert e.after == r["after"] and e.before == r.get("before")


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=300), st.sampled_from([{}, {"jsonDelimiter": "CDATA[|]"}, {"encoding": "UTF-16"}]))
def test_property_any_bytes_terminate_with_increasing_offsets(data, options):
    good = line(rec()).encode("utf-16-be" if options.get("encoding") else "utf-8")
    items = decode(data + b"\n" + good if not options.get("encoding") else data, **options)
    offsets = [i.source.offset for i in items]
    assert offsets == sorted(set(offsets))
    assert all(0 <= o <= len(data) + len(good) + 1 for o in offsets)


def test_missing_vs_null_column():
    with_null = rec(after={"CUST_CODE": "BILL", "NAME": "BILL'S USED CARS", "CITY": "DENVER", "STATE": None})
    missing = rec(after={"CUST_CODE": "BILL", "NAME": "BILL'S USED CARS", "CITY": "DENVER"})
    null_event, missing_event = events(decode((line(with_null) + "\n" + line(missing)).encode()))
    assert "STATE" in null_event.after and null_event.after["STATE"] is None
    assert "STATE" not in missing_event.after
    assert null_event.after["STATE"] is None and missing_event.after == {
        "CUST_CODE": "BILL",
        "NAME": "BILL'S USED CARS",
        "CITY": "DENVER",
    }


def test_after_null_or_absent_is_no_image():
    a, b = events(decode((line(rec("D", before={"ID": 1}, after=None)) + line(rec("D", before={"ID": 1}))).encode()))
    assert a.after is None and b.after is None and a.before == {"ID": 1}


def test_json_delimiter_cdata_single_char():
    records = [rec(pos=str(i), after={"ID": i, "NAME": "a|b"}) for i in (1, 2, 3)]
    data = "|".join(line(r) for r in records).encode() + b"|"
    items = events(decode(data, jsonDelimiter="CDATA[|]"))
    assert [e.after["ID"] for e in items] == [1, 2, 3]
    assert all(e.after["NAME"] == "a|b" for e in items)
    assert [e.source.offset for e in items] == [0, len(line(records[0])) + 1, 2 * (len(line(records[0])) + 1)]


def test_json_delimiter_multi_char_with_escapes():
    records = [rec(pos=str(i), after={"ID": i}) for i in (1, 2)]
    data = ("\n##END##\n".join(line(r) for r in records) + "\n##END##\n").encode()
    items = events(decode(data, jsonDelimiter="CDATA[\\n##END##\\n]"))
    assert [e.after["ID"] for e in items] == [1, 2]
    assert items[1].source.offset == data.index(b'{"table"', 1)
    # the same delimiter written with Windows line ends, and blanks around it
    crlf = data.replace(b"\n", b"\r\n").replace(b"##END##", b" ##END## ")
    assert without_offsets(events(decode(crlf, jsonDelimiter="CDATA[\\n##END##\\n]"))) == without_offsets(items)


def test_json_delimiter_resync_after_bad_record():
    good1, good2 = line(rec(pos="1")), line(rec(pos="3"))
    bad = '{"table":"GG.T", "op_type": oops}\n{"still":"the bad record"}'
    data = f"{good1}##{bad}##{good2}".encode()
    ok, bad_items = split(decode(data, jsonDelimiter="##"))
    assert [e.seq[-1] for e in ok] == ["1", "3"]
    [rejected] = bad_items
    assert rejected.source.offset == len(good1) + 2
    assert rejected.raw == bad.encode()
    assert "invalid JSON at line 1 column" in rejected.error and "'##' delimiter" in rejected.error


def test_custom_op_keys():
    data = "\n".join(
        line(r)
        for r in (
            rec("ins", pos="1"),
            rec("upd", pos="2", before={"ID": 1}),
            rec("del", pos="3", before={"ID": 1}),
            rec("trunc", pos="4"),
            rec("I", pos="5"),
        )
    ).encode()
    options = {"insertOpKey": "ins", "updateOpKey": "upd", "deleteOpKey": "CDATA[del]", "truncateOpKey": "trunc"}
    ok, bad = split(decode(data, **options))
    assert [e.op for e in ok] == ["INSERT", "UPDATE", "DELETE", "TRUNCATE"]
    [rejected] = bad
    assert "unknown op_type 'I'" in rejected.error
    for fragment in ("insertOpKey='ins'", "updateOpKey='upd'", "deleteOpKey='del'", "truncateOpKey='trunc'"):
        assert fragment in rejected.error


def test_unknown_op_rejected():
    good = line(rec(pos="1"))
    data = f"{good}\n{line(rec('X', pos='2'))}\n".encode()
    ok, [rejected] = split(decode(data))
    assert len(ok) == 1
    assert rejected.error.startswith("unknown op_type 'X'; the configured op keys are insertOpKey='I', updateOpKey='U'")
    assert rejected.source.offset == len(good) + 1
    assert rejected.raw == line(rec("X", pos="2")).encode()


def test_gzip_input():
    plain = (SEEDS / "seed_all.json").read_bytes()
    data = maybe_gunzip(gzip.compress(plain), "seed_all.json.gz")
    assert [(e.op, e.source.offset) for e in events(decode(data))] == [
        ("INSERT", 0),
        ("UPDATE", 469),
        ("DELETE", 1181),
        ("TRUNCATE", 1609),
    ]


# --- bad input -----------------------------------------------------------------------


def test_bad_record_between_good_ones_one_per_line():
    good1, good2 = line(rec(pos="1")), line(rec(pos="3"))
    bad = '{"table":"GG.T","op_type":"I" "pos":"2"}'
    data = f"{good1}\n{bad}\n{good2}\n".encode()
    items = decode(data, "landing/a.json")
    assert [type(i) for i in items] == [ChangeEvent, Rejected, ChangeEvent]
    rejected = items[1]
    assert rejected.error.startswith("invalid JSON at line 2 column 31: Expecting ',' delimiter")
    assert rejected.source == Source("landing/a.json", len(good1) + 1)
    assert rejected.raw == bad.encode()
    assert items[2].source.offset == len(good1) + 1 + len(bad) + 1
    assert items[2].seq.endswith("3")


def test_bad_record_between_pretty_printed_ones():
    data = (SEEDS / "seed_insert.json").read_bytes()
    bad = b'{\n    "table":"GG.TCUSTORD",\n    "op_type":"I",\n    "after":{\n        "X":1,,\n    }\n}\n'
    tail = (SEEDS / "seed_delete.json").read_bytes()
    items = decode(data + bad + tail)
    assert [type(i) for i in items] == [ChangeEvent, Rejected, ChangeEvent]
    assert items[1].source.offset == len(data)
    assert items[1].error.startswith("invalid JSON at line 24 column 15: Expecting property name")
    assert items[1].raw == bad.rstrip()
    assert items[2].source.offset == len(data) + len(bad)
    assert items[2].before == SEED_DELETE.before


def test_truncated_last_record():
    good = line(rec(pos="1"))
    ok, [rejected] = split(decode(f"{good}\n{good[:40]}".encode()))
    assert len(ok) == 1 and rejected.source.offset == len(good) + 1
    assert "invalid JSON at line 2" in rejected.error and rejected.raw == good[:40].encode()


def test_non_object_records_rejected():
    good = line(rec(pos="1"))
    ok, bad = split(decode(f'[1, 2]\n{good}\n42\n"text"\nnull\n'.encode()))
    assert len(ok) == 1
    assert [r.error for r in bad] == [
        "record is a JSON array, not an object",
        "record is a JSON number, not an object",
        "record is a JSON string, not an object",
        "record is a JSON null, not an object",
    ]


def test_non_ascii_offsets():
    records = [
        rec(pos="1", after={"NAME": "Müller", "CITY": "Zürich"}),
        rec(pos="2", after={"NAME": "日本語テキスト"}),
        rec(pos="3", after={"NAME": "emoji 😀 ok"}),
    ]
    bad = '{"table":"GG.T","NAME":"é" oops}'
    data = (line(records[0]) + "\n" + line(records[1]) + "\n" + bad + "\n" + line(records[2]) + "\n").encode()
    items = decode(data)
    starts = [i for i in range(len(data)) if data[i : i + 9] == b'{"table":']
    assert [i.source.offset for i in items] == starts
    assert [i.after["NAME"] for i in items if isinstance(i, ChangeEvent)] == ["Müller", "日本語テキスト", "emoji 😀 ok"]
    rejected = items[2]
    assert isinstance(rejected, Rejected) and rejected.raw == bad.encode()
    assert "line 3 column 28" in rejected.error  # columns count characters, offsets count bytes


def test_utf8_bom_skipped():
    data = b"\xef\xbb\xbf" + (SEEDS / "seed_insert.json").read_bytes()
    [event] = events(decode(data))
    assert event.source.offset == 3 and event.after == SEED_INSERT.after


def test_iso_8859_1_encoding_option():
    records = [rec(pos="1", after={"NAME": "Café crème"}), rec(pos="2", after={"NAME": "naïve"})]
    data = ("\n".join(line(r) for r in records) + "\n").encode("iso-8859-1")
    ok = events(decode(data, encoding="ISO-8859-1"))
    assert [e.after["NAME"] for e in ok] == ["Café crème", "naïve"]
    assert ok[1].source.offset == len(line(records[0])) + 1  # one byte per character
    # read as UTF-8 (the default) each record is rejected on its own, with a hint
    items = decode(data)
    assert [type(i) for i in items] == [Rejected, Rejected]
    assert "not valid UTF-8" in items[0].error and "encoding option" in items[0].error
    assert "first bad byte 0xe9" in items[0].error
    assert items[1].source.offset == ok[1].source.offset


def test_invalid_bytes_reject_only_their_record():
    good1, good2 = line(rec(pos="1")).encode(), line(rec(pos="3")).encode()
    bad_in_string = line(rec(pos="2", after={"NAME": "XX"})).encode().replace(b"XX", b"\xff\xfe")
    bad_outside = b'{"table":"GG.T",\xff"op_type":"I"}'
    data = b"\n".join([good1, bad_in_string, good2, bad_outside, good1]) + b"\n"
    items = decode(data)
    assert [type(i) for i in items] == [ChangeEvent, Rejected, ChangeEvent, Rejected, ChangeEvent]
    assert items[1].raw == bad_in_string and items[1].source.offset == len(good1) + 1
    assert items[3].raw == bad_outside and "not valid UTF-8" in items[3].error and "line 4" in items[3].error
    assert items[4].source.offset == len(data) - len(good1) - 1


def test_utf16_with_bom_offsets():
    text = "\n".join(line(r) for r in (rec(pos="1", after={"N": "é"}), rec(pos="2", after={"N": "ü"})))
    data = b"\xff\xfe" + text.encode("utf-16-le")
    first, second = events(decode(data, encoding="UTF-16"))
    assert first.source.offset == 2 and second.after == {"N": "ü"}
    assert second.source.offset == 2 + 2 * (len(line(rec(pos="1", after={"N": "é"}))) + 1)
    # without a BOM, UTF-16 is big-endian (as Java reads it)
    assert len(events(decode(text.encode("utf-16-be"), encoding="UTF-16"))) == 2


def test_deep_nesting_rejected():
    good = line(rec(pos="1"))
    deep = '{"table":"GG.T","op_type":"I","pos":"2","op_ts":"2020-01-01 00:00:00","after":{"X":' + "[" * 600
    deep += "]" * 600 + "}}"
    very_deep = '{"a":' + "[" * 100_000 + "]" * 100_000 + "}"
    data = "\n".join([good, deep, good, very_deep, good]).encode()
    items = decode(data)
    assert [type(i) for i in items] == [ChangeEvent, Rejected, ChangeEvent, Rejected, ChangeEvent]
    assert "deeper than 512 levels" in items[1].error and items[1].raw == deep.encode()
    assert "deeper than 512 levels" in items[3].error
    assert items[3].source.offset == 2 * len(good) + len(deep) + 3
    exactly_512 = '{"table":"GG.T","op_type":"I","pos":"2","op_ts":"2020-01-01 00:00:00","after":{"X":'
    exactly_512 += "[" * 510 + "]" * 510 + "}}"
    assert len(events(decode(exactly_512.encode()))) == 1


def test_record_size_limit(monkeypatch):
    monkeypatch.setattr(goldengate_json, "MAX_RECORD_BYTES", 200)
    small, big = line(rec(pos="1")), line(rec(pos="2", after={"NAME": "x" * 300}))
    ok, [rejected] = split(decode(f"{small}\n{big}\n{small}".encode()))
    assert len(ok) == 2
    assert rejected.error.startswith(f"record is {len(big)} bytes, larger than the limit of 200")


def test_rejected_raw_is_capped(monkeypatch):
    monkeypatch.setattr(goldengate_json, "MAX_RAW_BYTES", 10)
    [rejected] = decode(b'{"table": nope, "padding": "' + b"x" * 100 + b'"}')
    assert len(rejected.raw) == 10


def test_record_member_errors():
    cases = {
        "no table": ({k: v for k, v in rec().items() if k != "table"}, 'record has no table name (member "table"'),
        "table not a string": (rec(table=5), "record has no table name"),
        "no pos": ({k: v for k, v in rec().items() if k != "pos"}, "no pos: GoldenGate records need pos for ordering"),
        "pos object": (rec(pos={"a": 1}), "pos must be a string of digits, not object"),
        "bad op_ts": (rec(op_ts="02/06/2013 22:14"), "op_ts '02/06/2013 22:14' is not a timestamp"),
        "no op_ts": ({k: v for k, v in rec().items() if k != "op_ts"}, "op_ts None is not a timestamp"),
        "no op_type": ({k: v for k, v in rec().items() if k != "op_type"}, "unknown op_type None"),
        "after a list": (rec(after=[1, 2]), "after must be a JSON object of column values, not a JSON array"),
        "before a string": (rec("U", before="x"), "before must be a JSON object of column values, not a JSON string"),
        "bad primary_keys": (rec(primary_keys="ID"), "primary_keys must be a list of column names"),
    }
    data = "\n".join(line(record) for record, _ in cases.values()).encode()
    items = decode(data)
    assert all(isinstance(i, Rejected) for i in items) and len(items) == len(cases)
    for item, (name, (record, message)) in zip(items, cases.items(), strict=True):
        assert item.error.startswith(message), name
        assert item.raw == line(record).encode(), name


def test_pos_forms():
    items = events(decode("\n".join(line(rec(pos=p)) for p in ("1444", 1444, "12:34", "0" * 40)).encode()))
    assert [e.seq for e in items] == ["0" * 28 + "1444", "0" * 28 + "1444", "12:34", "0" * 40]
    assert [e.meta["pos"] for e in items] == ["1444", 1444, "12:34", "0" * 40]


@pytest.mark.parametrize(
    ("op_ts", "expected"),
    [
        ("2013-06-02 22:14:36.000000", dt.datetime(2013, 6, 2, 22, 14, 36, tzinfo=UTC)),
        ("2013-06-02 22:14:36", dt.datetime(2013, 6, 2, 22, 14, 36, tzinfo=UTC)),
        ("2013-06-02T22:14:36.5", dt.datetime(2013, 6, 2, 22, 14, 36, 500000, tzinfo=UTC)),
        ("2013-06-02 22:14:36.123456789", dt.datetime(2013, 6, 2, 22, 14, 36, 123456, tzinfo=UTC)),
        ("2013-06-02T22:14:36Z", dt.datetime(2013, 6, 2, 22, 14, 36, tzinfo=UTC)),
        ("2013-06-03T00:14:36.000001+02:00", dt.datetime(2013, 6, 2, 22, 14, 36, 1, tzinfo=UTC)),
        ("2013-06-02 17:14:36-0500", dt.datetime(2013, 6, 2, 22, 14, 36, tzinfo=UTC)),
        ("2013-06-02", dt.datetime(2013, 6, 2, tzinfo=UTC)),
    ],
)
def test_op_ts_forms(op_ts, expected):
    [event] = events(decode(line(rec(op_ts=op_ts)).encode()))
    assert event.event_ts == expected and event.event_ts.tzinfo == UTC
    assert event.meta["op_ts"] == op_ts


def test_op_ts_impossible_date_rejected():
    [rejected] = decode(line(rec(op_ts="2013-13-02 22:14:36")).encode())
    assert isinstance(rejected, Rejected) and "'2013-13-02 22:14:36'" in rejected.error


def test_keys_sources():
    data = "\n".join(
        line(r)
        for r in (
            rec(pos="1", primary_keys=["ID"]),
            rec(pos="2", priamry_keys=["NAME"]),
            rec(pos="3"),
        )
    ).encode()
    a, b, c = events(decode(data))
    assert (a.keys, b.keys, c.keys) == (["ID"], ["NAME"], None)
    assert a.meta["primary_keys"] == ["ID"] and b.meta["primary_keys"] == ["NAME"] and "primary_keys" not in c.meta
    a, b, c = events(decode(data, keys="K1, K2"))
    # the keys option declares or overrides (DESIGN.md section 2); the record's list stays in meta
    assert (a.keys, b.keys, c.keys) == (["K1", "K2"], ["K1", "K2"], ["K1", "K2"])
    assert a.meta["primary_keys"] == ["ID"]


def test_table_option_overrides():
    data = (line(rec(pos="1")) + line({k: v for k, v in rec(pos="2").items() if k != "table"})).encode()
    assert [e.table for e in events(decode(data, table="OTHER.T"))] == ["OTHER.T", "OTHER.T"]


def test_meta_is_compact_and_keeps_unknown_members():
    [event] = events(decode(line(rec(current_ts=None, source={"db": "x"}, extra_flag=True)).encode()))
    assert event.meta == {
        "pos": "00000000000000000001",
        "op_ts": "2024-01-02 03:04:05.123456",
        "extra": {"source": {"db": "x"}, "extra_flag": True},
    }


def test_string_values_stay_strings():
    [event] = events(
        decode(line(rec(after={"ID": "144", "PRICE": "17520.00"})).encode(), treatAllColumnsAsStrings="true")
    )
    assert event.after == {"ID": "144", "PRICE": "17520.00"}


# --- options -------------------------------------------------------------------------


def test_all_table_6_4_options_accepted():
    options = {
        "insertOpKey": "I",
        "updateOpKey": "U",
        "deleteOpKey": "D",
        "truncateOpKey": "T",
        "prettyPrint": "false",
        "jsonDelimiter": "CDATA[]",
        "generateSchema": "true",
        "schemaDirectory": str(SEEDS / "schemas"),
        "treatAllColumnsAsStrings": "false",
        "encoding": "UTF-8",
        "versionSchemas": "false",
        "iso8601Format": "true",
        "includePrimaryKeys": "false",
        "keys": "ID",
        "table": "",
    }
    assert len(events(decode((SEEDS / "seed_all.json").read_bytes(), **options))) == 4


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"fieldDelimiter": "|"}, "unknown option(s) fieldDelimiter for format goldengate-json"),
        ({"prettyPrint": "ture"}, "option prettyPrint must be true or false"),
        ({"encoding": "KLINGON-1"}, "option encoding='KLINGON-1' is not a known character encoding"),
        ({"encoding": "base64"}, "is not a known character encoding"),
        ({"insertOpKey": "X", "deleteOpKey": "X"}, "op keys must differ"),
        ({"schemaDir": "/nonexistent/cdclake/schemas"}, "does not exist or is not a directory"),
    ],
)
def test_bad_options(options, message):
    with pytest.raises(OptionError, match=None) as info:
        get_decoder("goldengate-json", Options(options))
    assert message in str(info.value)


def test_java_encoding_names():
    for name in ("UTF-8", "ISO-8859-1", "ISO8859_1", "US-ASCII", "Cp1252", "windows-1252", "UTF-16BE"):
        decoder(encoding=name)


# --- schema files ----------------------------------------------------------------------


def test_schema_dir_column_types():
    data = (SEEDS / "seed_all.json").read_bytes() + line(rec(pos="9")).encode()
    expected = {
        "CUST_CODE": "string",
        "ORDER_DATE": "string",
        "PRODUCT_CODE": "string",
        "ORDER_ID": "string",
        "PRODUCT_PRICE": "double",
        "PRODUCT_AMOUNT": "double",
        "TRANSACTION_ID": "string",
    }
    for option in ("schemaDir", "schemaDirectory"):
        items = events(decode(data, **{option: str(SEEDS / "schemas")}))
        assert [e.meta.get("column_types") for e in items] == [expected] * 4 + [None]  # no GG.T.schema.json


def test_schema_types_mapping_and_bad_schema(tmp_path):
    schema = {
        "definitions": {
            "row": {
                "properties": {
                    "A": {"type": ["integer", "null"]},
                    "B": {"type": "boolean"},
                    "C": {"type": ["integer", "number"]},
                    "D": {"type": ["string", "integer"]},
                    "E": {"type": "object"},
                    "F": {},
                }
            }
        }
    }
    (tmp_path / "GG.T.schema.json").write_text(json.dumps(schema))
    (tmp_path / "GG.BAD.schema.json").write_text("{not json")
    data = (line(rec(pos="1")) + "\n" + line(rec(pos="2", table="GG.BAD")) + "\n" + line(rec(pos="3"))).encode()
    dec = decoder(schemaDir=str(tmp_path))
    items = list(dec.decode(data, "f"))
    assert items[0].meta["column_types"] == {"A": "long", "B": "boolean", "C": "double", "D": "string"}
    assert isinstance(items[1], Rejected)
    assert "GG.BAD.schema.json has no readable definitions.row.properties" in items[1].error
    assert "fix or remove it" in items[1].error
    assert items[2].meta["column_types"] == items[0].meta["column_types"]
    # read once per table: changing the file does not change this decoder's view
    (tmp_path / "GG.T.schema.json").write_text("{}")
    [again] = dec.decode(line(rec()).encode(), "g")
    assert again.meta["column_types"]["A"] == "long"


def test_schema_file_size_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(goldengate_json, "MAX_SCHEMA_BYTES", 10)
    (tmp_path / "GG.T.schema.json").write_text(json.dumps({"definitions": {"row": {"properties": {}}}}))
    [rejected] = decode(line(rec()).encode(), schemaDir=str(tmp_path))
    assert "is larger than 10 bytes" in rejected.error


# --- real OGG samples (Apache Flink, Apache Paimon; see fixtures/ogg/SOURCES.md) ----------------


def test_flink_ogg_data_all_records():
    data = (OGG / "flink_json" / "ogg-data.txt").read_bytes()
    items = events(decode(data, "ogg-data.txt"))
    assert len(items) == 16
    counts: dict[str, int] = {}
    for e in items:
        counts[e.op] = counts.get(e.op, 0) + 1
    assert counts == {"INSERT": 11, "UPDATE": 4, "DELETE": 1}
    assert [e.source.offset for e in items] == [i for i in range(len(data)) if i == 0 or data[i - 1 : i] == b"\n"][:16]
    assert all(e.table == "OGG.TBL_TEST" and e.keys == ["id"] for e in items)
    assert [e.seq for e in items] == [f"{n:032d}" for n in range(143, 159)]

    first = items[0]
    assert first == ChangeEvent(
        table="OGG.TBL_TEST",
        op="INSERT",
        seq="00000000000000000000000000000143",
        event_ts=dt.datetime(2020, 5, 13, 15, 40, 6, tzinfo=UTC),
        source=Source("ogg-data.txt", 0),
        keys=["id"],
        before=None,
        after={
            "id": 101,
            "name": "scooter",
            "description": "Small 2-wheel scooter",
            "weight": Decimal("3.140000104904175"),
        },
        meta={
            "pos": "00000000000000000000143",
            "op_ts": "2020-05-13 15:40:06.000000",
            "current_ts": "2020-05-13T13:39:35.766000",
            "primary_keys": ["id"],
        },
    )
    assert len(first.meta["pos"]) == 23 and len(first.seq) == 32

    with_source = items[11]
    assert with_source.after["id"] == 110 and with_source.meta["extra"] == {
        "source": {
            "version": "1.1.1.Final",
            "connector": "mysql",
            "name": "dbserver1",
            "op_ts": 1589362210000,
            "snapshot": "false",
            "db": "inventory",
            "table": "products",
            "server_id": 223344,
            "gtid": None,
            "file": "mysql-bin.000003",
            "pos": 1068,
            "row": 0,
            "thread": 2,
            "query": None,
        }
    }
    assert with_source.table == "OGG.TBL_TEST" and with_source.seq.endswith("154")

    last = items[15]
    assert last == ChangeEvent(
        table="OGG.TBL_TEST",
        op="DELETE",
        seq="00000000000000000000000000000158",
        event_ts=dt.datetime(2020, 5, 13, 17, 32, 24, 455000, tzinfo=UTC),
        source=Source("ogg-data.txt", last.source.offset),
        keys=["id"],
        before={
            "id": 111,
            "name": "scooter",
            "description": "Big 2-wheel scooter ",
            "weight": Decimal("5.170000076293945"),
        },
        after=None,
        meta={"pos": "00000000000000000000158", "op_ts": "2020-05-13 17:32:24.455000", "primary_keys": ["id"]},
    )
    assert data[last.source.offset :].startswith(b'{"table":"OGG.TBL_TEST","pos":"00000000000000000000158"')
    assert items[5].after["weight"] == 1 and type(items[5].after["weight"]) is int


@pytest.mark.parametrize(
    ("name", "ops"),
    [
        ("event-insert.txt", ["INSERT", "INSERT", "INSERT"]),
        ("event-update.txt", ["UPDATE"]),
        ("event-delete.txt", ["DELETE"]),
    ],
)
def test_paimon_license_header_is_one_rejected_record(name, ops):
    data = (OGG / "paimon_event" / name).read_bytes()
    items = decode(data, name)
    rejected, rest = items[0], items[1:]
    assert isinstance(rejected, Rejected)
    assert rejected.source == Source(name, 0)
    assert rejected.error.startswith("invalid JSON at line 1 column 1: Expecting value")
    assert "starts with '/'" in rejected.error and "up to the next line starting with '{'" in rejected.error
    assert rejected.raw.startswith(b"/*") and rejected.raw.endswith(b"*/")
    assert [e.op for e in events(rest)] == ops
    assert all(data[e.source.offset :].startswith(b'{"table":"OGG.EVENT"') for e in rest)
    assert all(e.table == "OGG.EVENT" and e.keys == ["id"] for e in rest)


def test_paimon_update_and_delete_images():
    [_, update] = decode((OGG / "paimon_event" / "event-update.txt").read_bytes())
    assert update.before["weight"] == Decimal("5.1") and update.after["weight"] == Decimal("8.1")
    [_, delete] = decode((OGG / "paimon_event" / "event-delete.txt").read_bytes())
    assert delete.after is None and delete.before["id"] == 103


def test_overlong_integer_and_nan():
    good = line(rec(pos="2", after={"X": 1}))
    huge = '{"table":"GG.T","op_type":"I","pos":"1","op_ts":"2020-01-01 00:00:00","after":{"X":' + "9" * 5000 + "}}"
    nan = '{"table":"GG.T","op_type":"I","pos":"3","op_ts":"2020-01-01 00:00:00","after":{"X":NaN}}'
    items = decode(f"{huge}\n{good}\n{nan}\n".encode())
    assert [type(i) for i in items] == [Rejected, ChangeEvent, ChangeEvent]
    assert items[0].error.startswith("cannot read the record at line 1: Exceeds the limit (4300 digits)")
    assert isinstance(items[2].after["X"], Decimal) and items[2].after["X"].is_nan()


def test_reject_reaching_end_of_file_says_so():
    [rejected] = decode(b'{"table": nope\n  "more": 1\n')
    assert rejected.error.endswith("skipped 26 bytes up to the end of the file")
    assert rejected.raw == b'{"table": nope\n  "more": 1'


def test_new_column_after_a_metadata_change_is_announced_by_a_schema_event():
    data = "\n".join(
        line(r)
        for r in (
            rec(pos="1", after={"ID": 1, "NAME": "a"}),
            rec(pos="2", op_type="U", before={"ID": 1}, after={"ID": 1, "NAME": "b"}),
            rec(pos="3", after={"ID": 2, "NAME": "c", "EMAIL": "c@x"}),  # the table gained EMAIL
            rec(pos="4", after={"ID": 3, "NAME": "d", "EMAIL": None}),
        )
    ).encode()
    items = events(decode(data))
    assert [e.op for e in items] == ["INSERT", "UPDATE", "SCHEMA", "INSERT", "INSERT"]
    schema = items[2]
    assert schema.ddl["added"] == ["EMAIL"] and [c["name"] for c in schema.ddl["columns"]] == ["ID", "NAME", "EMAIL"]
    assert schema.seq == items[3].seq and schema.source == items[3].source


def test_a_truncate_does_not_set_the_column_baseline():
    truncate = rec(op="T", pos="1")
    truncate.pop("after")
    data = "\n".join(line(r) for r in (truncate, rec(pos="2", after={"ID": 1, "NAME": "a"}))).encode()
    assert [e.op for e in events(decode(data))] == ["TRUNCATE", "INSERT"]
