"""goldengate-delimited decoder: the vendor doc's samples (§6.2), every Table 6-1 option, bad input."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.cli import main as cli_main
from cdclake.events.change import ChangeEvent, Rejected, Source
from cdclake.formats import goldengate_delimited
from cdclake.formats.goldengate_delimited import GoldenGateDelimitedDecoder
from cdclake.options import OptionError, Options
from cdclake.registry import get_decoder
from cdclake.staging.reading import maybe_gunzip

FIXTURES = Path(__file__).parents[1] / "fixtures" / "goldengate_delimited"
UTC = dt.UTC
SEED_COLUMNS = (
    "GG.TCUSTORD(CUST_CODE,ORDER_DATE:timestamp,PRODUCT_CODE,ORDER_ID,PRODUCT_PRICE:decimal(10,2),"
    "PRODUCT_AMOUNT:bigint,TRANSACTION_ID)"
)
SEED_TYPES = {
    "CUST_CODE": "string",
    "ORDER_DATE": "timestamp",
    "PRODUCT_CODE": "string",
    "ORDER_ID": "string",
    "PRODUCT_PRICE": "decimal(10,2)",
    "PRODUCT_AMOUNT": "bigint",
    "TRANSACTION_ID": "string",
}
#: The doc's samples use "|" (§6.2.2) and include tokens.
SEED_OPTIONS = {"fieldDelimiter": "|", "includeTokens": "true", "columns": SEED_COLUMNS}


def decoder(**options: str) -> GoldenGateDelimitedDecoder:
    dec = get_decoder("goldengate-delimited", Options(options))
    assert isinstance(dec, GoldenGateDelimitedDecoder)
    return dec


def decode(data: bytes, file: str = "f.txt", **options: str) -> list[ChangeEvent | Rejected]:
    return list(decoder(**options).decode(data, file))


def rows(items: list[ChangeEvent | Rejected]) -> list[ChangeEvent]:
    """Row events (no SCHEMA); fails when something was rejected."""
    assert all(isinstance(i, ChangeEvent) for i in items), [i for i in items if isinstance(i, Rejected)]
    return [i for i in items if isinstance(i, ChangeEvent) and i.op != "SCHEMA"]


def split(items: list[ChangeEvent | Rejected]) -> tuple[list[ChangeEvent], list[Rejected]]:
    return (
        [i for i in items if isinstance(i, ChangeEvent) and i.op != "SCHEMA"],
        [i for i in items if isinstance(i, Rejected)],
    )


def schemas(items: list[ChangeEvent | Rejected]) -> list[ChangeEvent]:
    return [i for i in items if isinstance(i, ChangeEvent) and i.op == "SCHEMA"]


def without_offsets(items: list[ChangeEvent]) -> list[dict[str, Any]]:
    out = []
    for event in items:
        d = event.to_dict()
        d.pop("source")
        out.append(d)
    return out


T = "GG.T"
BASE = "2024-01-02 03:04:05.123456|2024-01-02T03:04:06.000000"


def line(op: str, pos: int, *values: str, table: str = T, sep: str = "|", tokens: str | None = None) -> str:
    fields = [op, table, *BASE.split("|"), f"{pos:020d}"]
    if tokens is not None:
        fields.append(tokens)
    return sep.join([*fields, *values]) + "\n"


# --- the vendor doc's sample messages (§6.2.2) -----------------------------------------------


def meta(pos: str, op_ts: str, current_ts: str, tokens: dict[str, str]) -> dict[str, Any]:
    return {"pos": pos, "op_ts": op_ts, "current_ts": current_ts, "tokens": tokens, "column_types": SEED_TYPES}


SEED_INSERT = ChangeEvent(
    table="GG.TCUSTORD",
    op="INSERT",
    seq="00000000000000000000000000001444",
    event_ts=dt.datetime(2013, 6, 2, 22, 14, 36, tzinfo=UTC),
    source=Source("seed_insert.txt", 0),
    after={
        "CUST_CODE": "WILL",
        "ORDER_DATE": "1994-09-30:15:33:00",
        "PRODUCT_CODE": "CAR",
        "ORDER_ID": "144",
        "PRODUCT_PRICE": Decimal("17520.00"),
        "PRODUCT_AMOUNT": 3,
        "TRANSACTION_ID": "100",
    },
    meta=meta(
        "00000000000000001444", "2013-06-02 22:14:36.000000", "2015-09-18T13:23:01.612001", {"R": "AADPkvAAEAAEqL2AAA"}
    ),
)
SEED_UPDATE = ChangeEvent(
    table="GG.TCUSTORD",
    op="UPDATE",
    seq="00000000000000000000000000002891",
    event_ts=dt.datetime(2013, 6, 2, 22, 14, 41, tzinfo=UTC),
    source=Source("seed_update.txt", 0),
    before=None,  # a row formatter writes the after image only (§6.1.2)
    after={
        "CUST_CODE": "BILL",
        "ORDER_DATE": "1995-12-31:15:00:00",
        "PRODUCT_CODE": "CAR",
        "ORDER_ID": "765",
        "PRODUCT_PRICE": Decimal("14000.00"),
        "PRODUCT_AMOUNT": 3,
        "TRANSACTION_ID": "100",
    },
    meta=meta(
        "00000000000000002891", "2013-06-02 22:14:41.000000", "2015-09-18T13:23:01.987000", {"R": "AADPkvAAEAAEqLzAAA"}
    ),
)
SEED_DELETE = ChangeEvent(
    table="GG.TCUSTORD",
    op="DELETE",
    seq="00000000000000000000000000004338",
    event_ts=dt.datetime(2013, 6, 2, 22, 14, 41, tzinfo=UTC),
    source=Source("seed_delete.txt", 0),
    # the last three fields are empty: the missing representation (default "") -> absent keys
    before={"CUST_CODE": "DAVE", "ORDER_DATE": "1993-11-03:07:51:35", "PRODUCT_CODE": "PLANE", "ORDER_ID": "600"},
    meta=meta(
        "00000000000000004338",
        "2013-06-02 22:14:41.000000",
        "2015-09-18T13:23:02.000000",
        {"L": "206080450", "6": "9.0.80330", "R": "AADPkvAAEAAEqLzAAC"},
    ),
)
SEED_TRUNCATE = ChangeEvent(
    table="GG.TCUSTORD",
    op="TRUNCATE",
    seq="00000000000000000000000000004515",
    event_ts=dt.datetime(2013, 6, 2, 22, 14, 41, tzinfo=UTC),
    source=Source("seed_truncate.txt", 0),
    meta=meta(
        "00000000000000004515", "2013-06-02 22:14:41.000000", "2015-09-18T13:23:02.001000", {"R": "AADPkvAAEAAEqL2AAB"}
    ),
)
SEEDS_EXPECTED = {
    "seed_insert.txt": SEED_INSERT,
    "seed_update.txt": SEED_UPDATE,
    "seed_delete.txt": SEED_DELETE,
    "seed_truncate.txt": SEED_TRUNCATE,
}


def test_registered_decoder_is_this_module():
    assert type(get_decoder("goldengate-delimited")) is GoldenGateDelimitedDecoder
    assert GoldenGateDelimitedDecoder.format_id == "goldengate-delimited"


@pytest.mark.parametrize("name", sorted(SEEDS_EXPECTED))
def test_fixture_is_the_printed_sample_unwrapped(name):
    """The doc prints each one-line record wrapped over three lines (see SOURCES.md)."""
    printed = (FIXTURES / name.replace(".txt", "_printed.txt")).read_text()
    first, second, third = printed.split("\n")[:3]
    assert first.endswith("|2013-06-02") and second[:2].isdigit()  # the break replaced the space of op_ts
    assert (FIXTURES / name).read_text() == f"{first} {second}{third}\n"


@pytest.mark.parametrize("name", sorted(SEEDS_EXPECTED))
def test_seed_sample_every_field(name):
    items = decode((FIXTURES / name).read_bytes(), name, **SEED_OPTIONS)
    schema, event = items
    expected = SEEDS_EXPECTED[name]
    assert event == expected
    for field in ("table", "op", "seq", "event_ts", "tx_id", "tx_pos", "tx_last", "keys", "before", "after", "meta"):
        assert getattr(event, field) == getattr(expected, field), field
    assert event.ddl is None and event.tx_id is None and event.keys is None
    assert event.event_ts.utcoffset() == dt.timedelta(0) and len(event.seq) == 32
    # the table's layout is announced first, at the same place
    assert schema == ChangeEvent(
        table="GG.TCUSTORD",
        op="SCHEMA",
        seq=expected.seq,
        event_ts=expected.event_ts,
        source=Source(name, 0),
        keys=None,
        ddl={"columns": [{"name": n, "type": t} for n, t in SEED_TYPES.items()], "keys": []},
        meta={"column_source": "columns option (GG.TCUSTORD)"},
    )


def test_seed_all_offsets_and_one_schema_event():
    data = (FIXTURES / "seed_all.txt").read_bytes()
    items = decode(data, "seed_all.txt", **SEED_OPTIONS)
    assert [i.op for i in items] == ["SCHEMA", "INSERT", "UPDATE", "DELETE", "TRUNCATE"]
    starts = [0] + [i + 1 for i, b in enumerate(data[:-1]) if b == ord("\n")]
    assert [i.source.offset for i in items[1:]] == starts
    expected = [SEED_INSERT, SEED_UPDATE, SEED_DELETE, SEED_TRUNCATE]
    assert without_offsets(items[1:]) == without_offsets(expected)


def test_seed_numbers_are_exact_and_equal_the_json_formatter_values():
    [_, insert] = decode((FIXTURES / "seed_insert.txt").read_bytes(), **SEED_OPTIONS)
    price = insert.after["PRODUCT_PRICE"]
    assert isinstance(price, Decimal) and str(price) == "17520.00"
    assert type(insert.after["PRODUCT_AMOUNT"]) is int


def test_seed_with_the_default_hive_delimiter():
    """The samples were printed with '|' in place of the default \\u0001 (§6.2.2)."""
    data = (FIXTURES / "seed_all.txt").read_bytes().replace(b"|", b"\x01")
    options = {k: v for k, v in SEED_OPTIONS.items() if k != "fieldDelimiter"}
    items = rows(decode(data, **options))
    assert without_offsets(items) == without_offsets([SEED_INSERT, SEED_UPDATE, SEED_DELETE, SEED_TRUNCATE])


def sample_configuration() -> dict[str, str]:
    """§6.2.6, as a user pastes it: the prefix dropped, the formatter name line skipped."""
    options = {}
    for text in (FIXTURES / "sample_configuration.properties").read_text().splitlines():
        key, _, value = text.partition("=")
        if key.startswith("gg.handler.hdfs.format."):
            options[key.removeprefix("gg.handler.hdfs.format.")] = value
    return options


def test_sample_configuration_options():
    options = sample_configuration()
    assert options["fieldDelimiter"] == "CDATA[\\u0001]" and options["kevValuePairDelimiter"] == "CDATA[,]"
    dec = decoder(**options, includeTokens="true", columns=SEED_COLUMNS)
    assert dec.field_delimiter == "\x01" and dec.line_delimiter == "\n" and dec.missing_repr == ""
    assert dec.pair_delimiter == "," and dec.kv_delimiter == "=" and dec.null_repr == "NULL"
    assert dec.pk_mode == "abend" and dec.codec == "utf-8" and not dec.include_names
    data = (FIXTURES / "seed_all.txt").read_bytes().replace(b"|", b"\x01")
    items = rows(list(dec.decode(data, "f")))
    assert without_offsets(items) == without_offsets([SEED_INSERT, SEED_UPDATE, SEED_DELETE, SEED_TRUNCATE])


def test_seed_with_avro_schema_from_schema_dir():
    """§6.4.3's schema of the same table: types string/double, metadata fields skipped."""
    data = (FIXTURES / "seed_all.txt").read_bytes()
    for option in ("schemaDir", "schemaDirectory"):
        items = decode(data, fieldDelimiter="|", includeTokens="true", **{option: str(FIXTURES / "schemas")})
        schema, insert, update, delete, truncate = items
        assert schema.ddl == {
            "columns": [
                {"name": "CUST_CODE", "type": "string"},
                {"name": "ORDER_DATE", "type": "string"},
                {"name": "PRODUCT_CODE", "type": "string"},
                {"name": "ORDER_ID", "type": "string"},
                {"name": "PRODUCT_PRICE", "type": "double"},
                {"name": "PRODUCT_AMOUNT", "type": "double"},
                {"name": "TRANSACTION_ID", "type": "string"},
            ],
            "keys": [],
            "version": "GG.TCUSTORD.avsc",
        }
        assert schema.meta == {"column_source": "Avro schema GG.TCUSTORD.avsc"}
        assert insert.after == SEED_INSERT.after and update.after == SEED_UPDATE.after
        assert delete.before == SEED_DELETE.before and truncate.before is None
        assert insert.meta["column_types"]["PRODUCT_PRICE"] == "double"


def test_gzip_input():
    plain = (FIXTURES / "seed_all.txt").read_bytes()
    data = maybe_gunzip(gzip.compress(plain), "seed_all.txt.gz")
    assert [e.op for e in rows(decode(data, **SEED_OPTIONS))] == ["INSERT", "UPDATE", "DELETE", "TRUNCATE"]


def test_cli_decode(tmp_path, capsys):
    path = tmp_path / "seed_all.txt"
    path.write_bytes(
        (FIXTURES / "seed_all.txt").read_bytes() + b"X|GG.TCUSTORD|2013-06-02 22:14:36|x|1|R=1|a|b|c|d|e|f|g\n"
    )
    args = ["decode", "--format", "goldengate-delimited", str(path)]
    args += [f"--option={k}={v}" for k, v in SEED_OPTIONS.items()]
    assert cli_main(args) == 1
    out, err = capsys.readouterr()
    events = [json.loads(x, parse_float=Decimal) for x in out.splitlines()]
    assert [e["op"] for e in events] == ["SCHEMA", "INSERT", "UPDATE", "DELETE", "TRUNCATE"]
    assert '"PRODUCT_PRICE":17520.00' in out.splitlines()[1]
    [rejected] = [json.loads(x) for x in err.splitlines()]
    assert rejected["source"] == {"file": str(path), "offset": len((FIXTURES / "seed_all.txt").read_bytes())}
    assert "unknown op type 'X'" in rejected["error"]
    assert cli_main(["decode", "--format", "goldengate-delimited", "--option", "includeTokens=maybe", str(path)]) == 2


# --- columns ------------------------------------------------------------------------------------

COLS = "ID:bigint:key,NAME,PRICE:decimal(10,2),OK:boolean"


def test_columns_option_for_all_tables_types_and_keys():
    data = line("I", 1, "7", "Ann", "12.50", "true", table="A.X") + line("I", 2, "8", "Bob", "3", "0", table="B.Y")
    a, b = rows(decode(data.encode(), columns=COLS, fieldDelimiter="|"))
    assert a.table == "A.X" and b.table == "B.Y"
    assert a.after == {"ID": 7, "NAME": "Ann", "PRICE": Decimal("12.50"), "OK": True}
    assert b.after == {"ID": 8, "NAME": "Bob", "PRICE": 3, "OK": False}
    assert a.keys == ["ID"] and b.keys == ["ID"]
    assert a.meta["column_types"] == {"ID": "bigint", "NAME": "string", "PRICE": "decimal(10,2)", "OK": "boolean"}
    # the keys option overrides the marks
    [c] = rows(decode(line("I", 1, "7", "Ann", "1", "true").encode(), columns=COLS, fieldDelimiter="|", keys="NAME"))
    assert c.keys == ["NAME"]


def test_columns_option_per_table_wins_over_all_tables():
    options = {"columns": "A.X(K:bigint:key,V);ID,NAME", "fieldDelimiter": "|"}
    data = line("I", 1, "1", "v", table="A.X") + line("I", 2, "2", "n", table="B.Y")
    a, b = rows(decode(data.encode(), **options))
    assert a.after == {"K": 1, "V": "v"} and a.keys == ["K"]
    assert b.after == {"ID": "2", "NAME": "n"} and b.keys is None


def test_value_not_fitting_its_type_rejected_naming_the_column():
    data = (
        line("I", 1, "x7", "Ann", "1", "true")
        + line("I", 2, "7", "Ann", "1", "maybe")
        + line("I", 3, "7", "A", "1", "1")
    )
    ok, bad = split(decode(data.encode(), columns=COLS, fieldDelimiter="|"))
    assert [e.seq[-1] for e in ok] == ["3"]
    assert bad[0].error == "record 1 at byte 0: column ID: value 'x7' is not a valid bigint (not an integer)"
    assert "column OK: value 'maybe' is not a valid boolean" in bad[1].error
    assert bad[1].source.offset == len(line("I", 1, "x7", "Ann", "1", "true"))


def test_no_column_source_rejected_with_how_to_fix():
    data = line("I", 1, "a", "b") + line("T", 2)
    items = decode(data.encode(), fieldDelimiter="|")
    [rejected] = [i for i in items if isinstance(i, Rejected)]
    assert rejected.error.startswith("record 1 at byte 0: no columns known for table GG.T")
    for fragment in ("columns=GG.T(COL:type,...)", "schemaDir=DIR holding GG.T.avsc", "includeColumnNames=true"):
        assert fragment in rejected.error
    # a truncate needs no columns
    [truncate] = rows([i for i in items if isinstance(i, ChangeEvent)])
    assert truncate.op == "TRUNCATE" and truncate.before is None and truncate.after is None


def test_field_count_mismatch_rejected_with_hints():
    good = line("I", 1, "1", "a", "1", "true")
    data = [
        good,
        line("I", 2, "1", "a", "1"),  # one column short
        line("I", 3, "R=x", "1", "a", "1", "true"),  # tokens present but not announced
        line("I", 4, "ID", "1", "NAME", "a", "PRICE", "1", "OK", "true"),  # column names present
        good,
    ]
    items = decode("".join(data).encode(), columns=COLS, fieldDelimiter="|")
    ok, bad = split(items)
    assert len(ok) == 2 and len(bad) == 3
    assert bad[0].error == (
        f"record 2 at byte {len(good)}: record has 3 column fields but table GG.T has 4 columns (from the columns"
        " option); a record must have exactly one field per column"
    )
    assert bad[1].error.endswith("if the writer included tokens, set includeTokens=true")
    assert bad[2].error.endswith("if the writer set includeColumnNames=true, set it here too")
    assert [b.raw for b in bad] == [d.rstrip("\n").encode() for d in data[1:4]]
    # with tokens announced but absent
    [rejected] = decode(good.encode(), columns=COLS, fieldDelimiter="|", includeTokens="true")
    assert "if the writer did not include tokens, set includeTokens=false" in rejected.error


def test_too_few_fields_for_metadata():
    [rejected] = decode(b"I|GG.T|2024-01-01 00:00:00\n", fieldDelimiter="|", columns="A")
    assert rejected.error == (
        "record 1 at byte 0: record has 3 fields, fewer than the 5 metadata fields the options announce (op type,"
        " table name, op timestamp, current timestamp, position); check fieldDelimiter='|'"
    )


def write_avsc(directory: Path, name: str, columns: list[tuple[str, Any]]) -> None:
    fields = [{"name": "table", "type": "string"}, {"name": "op_type", "type": "string"}]
    fields += [{"name": n, "type": t, "default": None} for n, t in columns]
    (directory / name).write_text(json.dumps({"type": "record", "name": "T", "namespace": "GG", "fields": fields}))


def test_versioned_avsc_newest_applies_and_a_new_version_is_announced(tmp_path):
    write_avsc(tmp_path, "GG.T.avsc", [("A", ["null", "string"])])
    write_avsc(tmp_path, "GG.T_20240101120000.avsc", [("A", ["null", "string"]), ("B", ["null", "long"])])
    write_avsc(tmp_path, "GG.T_20231231000000.avsc", [("OLD", "string")])
    write_avsc(tmp_path, "GG.T_X.avsc", [("OTHER", "string")])  # table GG.T_X, not a version
    dec = decoder(schemaDir=str(tmp_path), fieldDelimiter="|")
    first = list(dec.decode((line("I", 1, "a", "5") + line("I", 2, "b", "6")).encode(), "one"))
    assert [i.op for i in first] == ["SCHEMA", "INSERT", "INSERT"]
    assert first[0].ddl["version"] == "GG.T_20240101120000.avsc"
    assert first[1].after == {"A": "a", "B": 5} and first[1].meta["column_types"] == {"A": "string", "B": "bigint"}
    # a newer version appears (metadata change event, §6.2.7): it applies from the next file on
    write_avsc(tmp_path, "GG.T_20240201000000.avsc", [("A", "string"), ("B", "long"), ("C", {"type": "int"})])
    second = list(dec.decode((line("I", 3, "a", "5", "7") + line("I", 4, "a", "5")).encode(), "two"))
    assert [type(i).__name__ + ":" + getattr(i, "op", "") for i in second] == [
        "ChangeEvent:SCHEMA",
        "ChangeEvent:INSERT",
        "Rejected:",
    ]
    assert second[0].source == Source("two", 0) and second[0].seq == second[1].seq
    assert [c["name"] for c in second[0].ddl["columns"]] == ["A", "B", "C"]
    assert second[1].after == {"A": "a", "B": 5, "C": 7}
    assert "has 3 columns (from the Avro schema GG.T_20240201000000.avsc)" in second[2].error
    # same layout in a further file: no new announcement
    third = list(dec.decode(line("I", 5, "a", "5", "7").encode(), "three"))
    assert [i.op for i in third] == ["INSERT"]


def test_avro_operation_schema_and_types(tmp_path):
    image = {
        "type": "record",
        "name": "columns",
        "fields": [
            {"name": "ID", "type": ["null", "long"]},
            {"name": "ID_isMissing", "type": "boolean"},
            {"name": "AMT", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}]},
            {"name": "AMT_isMissing", "type": "boolean"},
            {"name": "D", "type": {"type": "int", "logicalType": "date"}},
            {"name": "TS", "type": {"type": "long", "logicalType": "timestamp-micros"}},
            {"name": "F", "type": "float"},
            {"name": "B", "type": "bytes"},
            {"name": "U", "type": ["null", "string", "long"]},
        ],
    }
    schema = {
        "type": "record",
        "name": "T",
        "fields": [
            {"name": "table", "type": "string"},
            {"name": "before", "type": ["null", image]},
            {"name": "after", "type": ["null", "columns"]},
        ],
    }
    (tmp_path / "GG.T.avsc").write_text(json.dumps(schema))
    data = line("I", 1, "1", "2.50", "2024-01-01", "2024-01-01 00:00:00", "1.5E3", "AAE=", "x").encode()
    schema_event, event = decode(data, schemaDir=str(tmp_path), fieldDelimiter="|")
    assert [(c["name"], c["type"]) for c in schema_event.ddl["columns"]] == [
        ("ID", "bigint"),
        ("AMT", "decimal(9,2)"),
        ("D", "date"),
        ("TS", "timestamp"),
        ("F", "double"),
        ("B", "binary"),
        ("U", "string"),
    ]
    assert event.after == {
        "ID": 1,
        "AMT": Decimal("2.50"),
        "D": "2024-01-01",
        "TS": "2024-01-01 00:00:00",
        "F": Decimal("1.5E3"),
        "B": "AAE=",
        "U": "x",
    }


def test_unreadable_schema_file_rejected(tmp_path):
    (tmp_path / "GG.T.avsc").write_text("{not json")
    [rejected] = decode(line("I", 1, "a").encode(), schemaDir=str(tmp_path), fieldDelimiter="|")
    assert "GG.T.avsc is not a readable record schema" in rejected.error and "fix or remove it" in rejected.error


def test_include_column_names_and_metadata_change():
    data = (
        line("I", 1, "ID", "1", "NAME", "a")
        + line("U", 2, "ID", "1", "NAME", "b")
        + line("I", 3, "ID", "2", "NAME", "c", "EXTRA", "NULL")  # a column added (§6.2.7)
        + line("I", 4, "ID", "3", "NAME", "d", "EXTRA", "x")
    )
    items = decode(data.encode(), includeColumnNames="true", fieldDelimiter="|", columns="ID:bigint:key")
    assert [i.op for i in items] == ["SCHEMA", "INSERT", "UPDATE", "SCHEMA", "INSERT", "INSERT"]
    first, second = schemas(items)
    assert first.ddl == {
        "columns": [{"name": "ID", "type": "bigint"}, {"name": "NAME", "type": "string"}],
        "keys": ["ID"],
    }
    assert first.meta == {"column_source": "record's column names"}
    assert second.ddl["columns"][-1] == {"name": "EXTRA", "type": "string"}
    assert second.source == items[4].source and second.seq == items[4].seq
    assert items[1].after == {"ID": 1, "NAME": "a"} and items[1].keys == ["ID"]
    assert items[4].after == {"ID": 2, "NAME": "c", "EXTRA": None}
    assert items[4].meta["column_types"] == {"ID": "bigint"}  # only what a schema gave
    # without any type source all values stay text and no column_types are claimed
    [_, event] = decode(line("I", 1, "ID", "1").encode(), includeColumnNames="true", fieldDelimiter="|")
    assert event.after == {"ID": "1"} and "column_types" not in event.meta


def test_include_column_names_bad_records():
    data = line("I", 1, "ID", "1", "NAME") + line("I", 2, "ID", "1", "ID", "2") + line("I", 3, "", "1")
    bad = decode(data.encode(), includeColumnNames="true", fieldDelimiter="|")
    assert all(isinstance(b, Rejected) for b in bad) and len(bad) == 3
    assert "odd number (3) of column fields" in bad[0].error
    assert "column ID appears twice in the record" in bad[1].error
    assert "a column name field is empty" in bad[2].error


# --- NULL, missing, values ----------------------------------------------------------------------------


def test_null_missing_and_value_default_representations():
    data = line("U", 1, "1", "NULL", "", "true")
    [event] = rows(decode(data.encode(), columns=COLS, fieldDelimiter="|"))
    assert event.after == {"ID": 1, "NAME": None, "OK": True}
    assert "NAME" in event.after and "PRICE" not in event.after


def test_default_representations_cannot_carry_empty_or_null_text():
    """With the defaults an empty string is written as "" (missing) and the text NULL as NULL (§6.2)."""
    [event] = rows(decode(line("I", 1, "1", "", "NULL", "").encode(), columns="ID:bigint,A,B,C", fieldDelimiter="|"))
    assert event.after == {"ID": 1, "B": None}


def test_custom_representations_with_cdata():
    options = {
        "columns": "ID:bigint,A,B,C",
        "fieldDelimiter": "|",
        "nullValueRepresentation": "CDATA[\\\\N]",  # Options resolve escapes: \\N is \N
        "missingValueRepresentation": "CDATA[<missing>]",
    }
    [event] = rows(decode(line("I", 1, "1", "", "NULL", "\\N").encode(), **options))
    assert event.after == {"ID": 1, "A": "", "B": "NULL", "C": None}
    [event] = rows(decode(line("U", 2, "1", "<missing>", "x", "<missing>").encode(), **options))
    assert event.after == {"ID": 1, "B": "x"}


def test_null_representation_may_be_empty():
    options = {"columns": "A,B", "fieldDelimiter": "|", "nullValueRepresentation": "CDATA[]"}
    with pytest.raises(OptionError, match="NULL and missing values could not be told apart"):
        decoder(**options)
    [event] = rows(decode(line("U", 1, "", "-").encode(), **options, missingValueRepresentation="-"))
    assert event.after == {"A": None}


def test_whitespace_in_values_is_kept():
    [event] = rows(decode(line("I", 1, " a ", "b\tc").encode(), columns="A,B", fieldDelimiter="|"))
    assert event.after == {"A": " a ", "B": "b\tc"}


# --- op keys, suppressed fields, delimiters, tokens ---------------------------------------------------


def test_custom_op_keys():
    data = line("ins", 1, "1") + line("upd", 2, "1") + line("del", 3, "1") + line("trunc", 4, "") + line("I", 5, "1")
    options = {"insertOpKey": "ins", "updateOpKey": "upd", "deleteOpKey": "CDATA[del]", "truncateOpKey": "trunc"}
    ok, [rejected] = split(decode(data.encode(), columns="ID", fieldDelimiter="|", **options))
    assert [e.op for e in ok] == ["INSERT", "UPDATE", "DELETE", "TRUNCATE"]
    assert [e.before for e in ok] == [None, None, {"ID": "1"}, None]
    assert rejected.error.startswith("record 5 at byte ")
    assert "unknown op type 'I' in field 1; the configured op keys are insertOpKey='ins', updateOpKey='upd'" in (
        rejected.error
    )


@pytest.mark.parametrize(
    ("suppressed", "expected_meta"),
    [
        ({}, {"pos", "op_ts", "current_ts"}),
        ({"includeCurrentTimestamp": "false"}, {"pos", "op_ts"}),
        ({"includeOpTimestamp": "false"}, {"pos", "current_ts"}),
        ({"includePosition": "false"}, {"seq_from", "op_ts", "current_ts"}),
        ({"includeTableName": "false", "table": "OTHER.T"}, {"pos", "op_ts", "current_ts"}),
        ({"includeOpType": "false"}, {"pos", "op_ts", "current_ts"}),
        ({"includeTokens": "true"}, {"pos", "op_ts", "current_ts", "tokens"}),
        (
            {
                "includeOpType": "false",
                "includeTableName": "false",
                "includeOpTimestamp": "false",
                "includeCurrentTimestamp": "false",
                "includePosition": "false",
                "table": "OTHER.T",
            },
            set(),
        ),
    ],
)
def test_suppressed_metadata_fields(suppressed, expected_meta):
    fields = []
    if suppressed.get("includeOpType") != "false":
        fields.append("U")
    if suppressed.get("includeTableName") != "false":
        fields.append("GG.T")
    if suppressed.get("includeOpTimestamp") != "false":
        fields.append("2024-01-02 03:04:05.123456")
    if suppressed.get("includeCurrentTimestamp") != "false":
        fields.append("2024-01-02 03:04:06.000000")  # iso8601Format=false spelling: kept as written
    if suppressed.get("includePosition") != "false":
        fields.append("00000000000000000042")
    if suppressed.get("includeTokens") == "true":
        fields.append("K=V")
    data = ("|".join([*fields, "7", "x"]) + "\n").encode()
    [event] = rows(decode(data, columns="ID:bigint,NAME", fieldDelimiter="|", iso8601Format="false", **suppressed))
    assert set(event.meta) == expected_meta | {"column_types"}
    assert event.after == {"ID": 7, "NAME": "x"}
    assert event.table == ("OTHER.T" if "table" in suppressed else "GG.T")
    assert event.op == ("UPSERT" if suppressed.get("includeOpType") == "false" else "UPDATE")
    ts = dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
    assert event.event_ts == (None if suppressed.get("includeOpTimestamp") == "false" else ts)
    if "pos" in expected_meta:
        assert event.seq == "0" * 30 + "42"
    elif "op_ts" in expected_meta:
        assert event.seq == "2024-01-02T03:04:05.123456Z" and event.meta["seq_from"] == "op_ts"
    else:
        assert event.seq is None
    if "current_ts" in expected_meta:
        assert event.meta["current_ts"] == "2024-01-02 03:04:06.000000"
    if "tokens" in expected_meta:
        assert event.meta["tokens"] == {"K": "V"}


def test_table_name_suppressed_needs_table_option():
    with pytest.raises(OptionError, match="includeTableName=false: records carry no table name"):
        decoder(includeTableName="false")


def test_table_option_overrides_the_field():
    [event] = rows(decode(line("I", 1, "1").encode(), columns="ID", fieldDelimiter="|", table="X.Y"))
    assert event.table == "X.Y"


@pytest.mark.parametrize(
    ("field_delimiter", "line_delimiter"),
    [
        ("\x01", "\n"),
        (",", "\n"),
        ("CDATA[ | ]", "CDATA[\\n]"),
        ("CDATA[\\t]", "CDATA[\\r\\n]"),
        ("CDATA[::]", "CDATA[<EOR>\\n]"),
        ("CDATA[\\u00a7]", "CDATA[\\u00b6]"),
    ],
)
def test_delimiters(field_delimiter, line_delimiter):
    options = Options({"fieldDelimiter": field_delimiter, "lineDelimiter": line_delimiter})
    fd, ld = options.str("fieldDelimiter"), options.str("lineDelimiter")
    records = [
        [*"I GG.T".split(), "2024-01-02 03:04:05.000000", "2024-01-02T03:04:06.000000", f"{i:020d}", str(i), "ä x"]
        for i in (1, 2, 3)
    ]
    data = "".join(fd.join(r) + ld for r in records).encode()
    items = rows(decode(data, columns="ID:bigint,NAME", fieldDelimiter=field_delimiter, lineDelimiter=line_delimiter))
    assert [e.after for e in items] == [{"ID": i, "NAME": "ä x"} for i in (1, 2, 3)]
    starts = [0]
    for r in records[:-1]:
        starts.append(starts[-1] + len((fd.join(r) + ld).encode()))
    assert [e.source.offset for e in items] == starts


def test_crlf_line_ends_with_the_default_delimiter_and_blank_lines():
    data = (line("I", 1, "1") + "\n" + line("I", 2, "2")).replace("\n", "\r\n").encode()
    items = rows(decode(data, columns="ID:bigint", fieldDelimiter="|"))
    assert [e.after for e in items] == [{"ID": 1}, {"ID": 2}]
    assert items[1].source.offset == len(line("I", 1, "1")) + 1 + 2


def test_tokens_delimiters():
    data = line("I", 1, "1", tokens="L:206080450;6:9.0.80330;R:AADP").encode()
    options = {"columns": "ID", "fieldDelimiter": "|", "includeTokens": "true"}
    [event] = rows(decode(data, **options, keyValueDelimiter="CDATA[:]", keyValuePairDelimiter="CDATA[;]"))
    assert event.meta["tokens"] == {"L": "206080450", "6": "9.0.80330", "R": "AADP"}
    # the vendor doc's misspelled key from §6.2.6 is accepted too
    [event] = rows(decode(data, **options, keyValueDelimiter=":", kevValuePairDelimiter=";"))
    assert event.meta["tokens"] == {"L": "206080450", "6": "9.0.80330", "R": "AADP"}


def test_token_value_containing_the_pair_delimiter_and_empty_tokens():
    data = line("I", 1, "1", tokens="A=1,2,B=x=y") + line("I", 2, "1", tokens="")
    a, b = rows(decode(data.encode(), columns="ID", fieldDelimiter="|", includeTokens="true"))
    assert a.meta["tokens"] == {"A": "1,2", "B": "x=y"} and b.meta["tokens"] == {}


def test_bad_tokens_field_rejected():
    [rejected] = decode(
        line("I", 1, "1", tokens="nope").encode(), columns="ID", fieldDelimiter="|", includeTokens="true"
    )
    assert "tokens field 'nope' is not key=value pairs separated by ','" in rejected.error


# --- primary-key updates (§6.2.8.1) ------------------------------------------------------------------------


def key_update_file() -> bytes:
    return (
        line("I", 1, "1", "a")
        + line("D", 5, "1", "a")  # the before image...
        + line("I", 5, "2", "a")  # ...and the after image of one key update: same pos
        + line("D", 6, "2", "")
        + line("I", 7, "3", "c")
    ).encode()


def test_pk_update_delete_insert():
    items = decode(
        key_update_file(), columns="ID:bigint:key,NAME", fieldDelimiter="|", pkUpdateHandling="delete-insert"
    )
    ok = rows(items)
    assert [(e.op, e.seq[-1]) for e in ok] == [
        ("INSERT", "1"),
        ("DELETE", "5"),
        ("INSERT", "5"),
        ("DELETE", "6"),
        ("INSERT", "7"),
    ]
    assert ok[1].before == {"ID": 1, "NAME": "a"} and ok[2].after == {"ID": 2, "NAME": "a"}
    assert ok[1].meta["pk_update"] == ok[2].meta["pk_update"] == "delete-insert"
    assert "pk_update" not in ok[3].meta and ok[3].before == {"ID": 2}
    assert ok[1].source.offset < ok[2].source.offset  # same seq: file order decides


@pytest.mark.parametrize("mode", ["abend", "update", None])
def test_pk_update_not_expected_is_rejected(mode):
    options = {"columns": "ID:bigint:key,NAME", "fieldDelimiter": "|"}
    if mode:
        options["pkUpdateHandling"] = mode
    ok, bad = split(decode(key_update_file(), **options))
    assert [(e.op, e.seq[-1]) for e in ok] == [("INSERT", "1"), ("DELETE", "6"), ("INSERT", "7")]
    assert len(bad) == 2
    shown = mode or "abend"
    assert bad[0].error.startswith(
        "a DELETE and an INSERT of table GG.T share pos 00000000000000000005: that is a primary-key update written"
        f" with pkUpdateHandling=delete-insert, but this decoder has pkUpdateHandling={shown}"
    )
    assert bad[0].error.endswith("set pkUpdateHandling=delete-insert to read it (the DELETE half)")
    assert bad[1].error.endswith("(the INSERT half)")
    assert ("writer stops at a primary-key update" in bad[0].error) == (shown == "abend")
    first = len(line("I", 1, "1", "a"))
    assert [b.source.offset for b in bad] == [first, first + len(line("D", 5, "1", "a"))]
    assert bad[0].raw == line("D", 5, "1", "a").rstrip("\n").encode()


def test_pk_update_handling_update_is_a_plain_update():
    data = line("U", 5, "2", "a").encode()
    [event] = rows(decode(data, columns="ID:bigint:key,NAME", fieldDelimiter="|", pkUpdateHandling="update"))
    assert event.op == "UPDATE" and event.before is None and event.after == {"ID": 2, "NAME": "a"}


# --- bad input ------------------------------------------------------------------------------------------------


def test_truncated_last_record_rejected_rest_decodes():
    good = line("I", 1, "1", "abc")
    data = (good + good[:-3]).encode()
    ok, [rejected] = split(decode(data, columns="ID,NAME", fieldDelimiter="|"))
    assert len(ok) == 1
    assert rejected.source.offset == len(good) and rejected.raw == good[:-3].encode()
    assert rejected.error.startswith(f"record 2 at byte {len(good)}: the last record does not end with the line")
    assert "the file looks truncated" in rejected.error
    # blanks after the last record are not a record
    assert len(rows(decode((good + "  \n \t").encode(), columns="ID,NAME", fieldDelimiter="|"))) == 1


def test_bad_timestamp_and_empty_fields_rejected():
    data = (
        "I|GG.T|02/06/2013|x|00000000000000000001|1\n"
        "I||2024-01-01 00:00:00|x|00000000000000000002|1\n"
        "I|GG.T|2024-01-01 00:00:00|x||1\n"
        "I|GG.T|2024-01-01 00:00:00|x|00000000000000000004|1\n"
    )
    items = decode(data.encode(), columns="ID", fieldDelimiter="|")
    ok, bad = split(items)
    assert len(ok) == 1 and ok[0].seq.endswith("4")
    assert [b.error.split(": ", 1)[1] for b in bad] == [
        "op timestamp '02/06/2013' is not a timestamp like 'YYYY-MM-DD HH:MM:SS.ffffff'",
        "empty table name field",
        "empty position field: GoldenGate records need pos for ordering",
    ]


def test_invalid_bytes_reject_only_their_record():
    good = line("I", 1, "1", "ok").encode()
    bad = line("I", 2, "2", "XX").encode().replace(b"XX", b"\xff\xfe")
    data = good + bad + good
    items = decode(data, columns="ID,NAME", fieldDelimiter="|")
    assert [type(i).__name__ for i in items] == ["ChangeEvent", "ChangeEvent", "Rejected", "ChangeEvent"]
    rejected = items[2]
    assert rejected.source.offset == len(good) and rejected.raw == bad.rstrip(b"\n")
    bad_at = len(good) + bad.index(b"\xff")
    assert rejected.error == (
        f"record 2 at byte {len(good)}: bytes that are not valid UTF-8 (first bad byte 0xff at byte {bad_at});"
        " set the encoding option to the writer's encoding"
    )
    assert items[3].source.offset == len(good) + len(bad)


def test_iso_8859_1_encoding():
    data = (line("I", 1, "Café crème") + line("I", 2, "naïve")).encode("iso-8859-1")
    a, b = rows(decode(data, columns="NAME", fieldDelimiter="|", encoding="ISO-8859-1"))
    assert (a.after, b.after) == ({"NAME": "Café crème"}, {"NAME": "naïve"})
    assert b.source.offset == len(line("I", 1, "Café crème"))


def test_utf16_with_bom_offsets():
    text = line("I", 1, "é") + line("I", 2, "ü")
    data = b"\xff\xfe" + text.encode("utf-16-le")
    a, b = rows(decode(data, columns="N", fieldDelimiter="|", encoding="UTF-16"))
    assert a.source.offset == 2 and b.source.offset == 2 + 2 * len(line("I", 1, "é")) and b.after == {"N": "ü"}


def test_record_size_limit(monkeypatch):
    monkeypatch.setattr(goldengate_delimited, "MAX_RECORD_BYTES", 100)
    small, big = line("I", 1, "x"), line("I", 2, "x" * 200)
    ok, [rejected] = split(decode((small + big + small).encode(), columns="N", fieldDelimiter="|"))
    assert len(ok) == 2 and f"{len(big) - 1} bytes, larger than the limit of 100" in rejected.error


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"jsonDelimiter": "|"}, "unknown option(s) jsonDelimiter for format goldengate-delimited"),
        ({"includeColumnNames": "ture"}, "option includeColumnNames must be true or false"),
        ({"iso8601Format": "maybe"}, "option iso8601Format must be true or false"),
        ({"encoding": "KLINGON-1"}, "option encoding='KLINGON-1' is not a known character encoding"),
        ({"insertOpKey": "X", "deleteOpKey": "X"}, "op keys must differ"),
        ({"pkUpdateHandling": "ignore"}, "pkUpdateHandling must be one of abend, update, delete-insert"),
        ({"fieldDelimiter": "CDATA[]"}, "option fieldDelimiter must not be empty"),
        ({"lineDelimiter": "CDATA[]"}, "option lineDelimiter must not be empty"),
        ({"fieldDelimiter": "CDATA[\\n]"}, "contains lineDelimiter"),
        ({"keyValueDelimiter": ",", "keyValuePairDelimiter": ","}, "must differ"),
        ({"nullValueRepresentation": "X", "missingValueRepresentation": "X"}, "could not be told apart"),
        ({"keyValuePairDelimiter": ";", "kevValuePairDelimiter": ","}, "disagree"),
        ({"columns": "A:number(3)"}, "option columns: column A: unknown column type 'number(3)'"),
        ({"columns": "T(A);T(B)"}, "option columns names table T twice"),
        ({"columns": "A,A"}, "names a column twice"),
        ({"columns": "A,:bigint"}, "empty column name"),
        ({"schemaDir": "/nonexistent/cdclake/schemas"}, "does not exist or is not a directory"),
    ],
)
def test_bad_options(options, message):
    with pytest.raises(OptionError) as info:
        get_decoder("goldengate-delimited", Options(options))
    assert message in str(info.value)


def test_all_table_6_1_options_accepted():
    options = {
        "includeColumnNames": "false",
        "includeOpTimestamp": "true",
        "includeCurrentTimestamp": "true",
        "includeOpType": "true",
        "insertOpKey": "I",
        "updateOpKey": "U",
        "deleteOpKey": "D",
        "truncateOpKey": "T",
        "encoding": "UTF-8",
        "fieldDelimiter": "|",
        "lineDelimiter": "CDATA[\\n]",
        "includeTableName": "true",
        "keyValueDelimiter": "=",
        "keyValuePairDelimiter": ",",
        "pkUpdateHandling": "abend",
        "nullValueRepresentation": "NULL",
        "missingValueRepresentation": "CDATA[]",
        "includePosition": "true",
        "iso8601Format": "true",
        "iso8601Forma": "true",
        "includeTokens": "true",
        "columns": SEED_COLUMNS,
        "keys": "ORDER_ID",
    }
    items = rows(decode((FIXTURES / "seed_all.txt").read_bytes(), **options))
    assert len(items) == 4 and all(e.keys == ["ORDER_ID"] for e in items)


# --- properties -----------------------------------------------------------------------------------------------

_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="|§\r\n\x00\\"), max_size=8
)
_state = st.one_of(st.just(None), st.just("<missing>"), _text)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from("IUD"), st.integers(0, 10**12), st.lists(_state, min_size=3, max_size=3)), max_size=8
    ),
    st.sampled_from([("|", "\n"), ("§", "\n"), ("|", "§§\n")]),
    st.booleans(),
)
def test_property_write_decode_round_trip(records, delimiters, with_names):
    """Any values (not containing a delimiter), NULL and missing states, survive write -> decode."""
    fd, ld = delimiters
    null, missing = "\\N", "\x00m"
    names = ["A", "B", "C"]
    out = []
    for op, pos, values in records:
        texts = [missing if v == "<missing>" else null if v is None else v for v in values]
        cols = [x for n, t in zip(names, texts, strict=True) for x in (n, t)] if with_names else texts
        out.append(fd.join([op, "S.T", "2020-01-01 00:00:00", "2020-01-01T00:00:00", str(pos), *cols]) + ld)
    options = {
        "fieldDelimiter": fd,
        "lineDelimiter": ld.replace("\n", "\\n"),
        "nullValueRepresentation": "\\\\N",
        "missingValueRepresentation": "\\x00m",
        "includeColumnNames": str(with_names).lower(),
        "columns": "A,B,C",
        "pkUpdateHandling": "delete-insert",
    }
    items = rows(decode("".join(out).encode(), **options))
    assert len(items) == len(records)
    for event, (op, pos, values) in zip(items, records, strict=True):
        image = {n: v for n, v in zip(names, values, strict=True) if v != "<missing>"}
        assert (event.before if op == "D" else event.after) == image
        assert event.seq == str(pos).zfill(32)


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=300), st.sampled_from([{}, {"lineDelimiter": "CDATA[||]"}, {"encoding": "UTF-16"}]))
def test_property_any_bytes_terminate_with_increasing_offsets(data, options):
    items = decode(data + b"\n" + line("I", 1, "x").encode(), columns="A", fieldDelimiter="|", **options)
    offsets = [i.source.offset for i in items if not (isinstance(i, ChangeEvent) and i.op == "SCHEMA")]
    assert offsets == sorted(set(offsets))
    assert all(0 <= o <= len(data) + 200 for o in offsets)


def test_schema_dir_option_alias_listing_refreshed_per_file(tmp_path):
    dec = decoder(schemaDirectory=str(tmp_path), fieldDelimiter="|")
    [rejected] = list(dec.decode(line("I", 1, "a").encode(), "one"))
    assert "no columns known for table GG.T" in rejected.error
    write_avsc(tmp_path, "GG.T.avsc", [("A", "string")])
    assert [i.op for i in dec.decode(line("I", 2, "a").encode(), "two")] == ["SCHEMA", "INSERT"]
    assert os.path.exists(tmp_path / "GG.T.avsc")
