"""The decode task's own Parquet files (no Spark): the column builder gives exactly the rows of
``event_to_row`` / ``rejected_to_row``, and a task's files and counts add up to what it decoded."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cdclake.bench.generate import generate
from cdclake.events.arrow import DECODED_FILE_SCHEMA, DecodedBuilder
from cdclake.events.change import (
    ChangeEvent,
    Rejected,
    Source,
    event_to_row,
    from_json,
    meta_text,
    rejected_to_row,
    to_json,
)
from cdclake.jobs.decode import MAX_RAW_BYTES, decode_items, decode_to_files
from cdclake.registry import format_ids

AWARE = dt.datetime(2024, 6, 1, 2, 30, tzinfo=dt.timezone(dt.timedelta(hours=2)))
ODD_VALUES = {
    "s": 'quote " backslash \\ newline \n é \u2028 \x00',
    "i": 2**70,
    "neg": -5,
    "d": Decimal("17520.00"),
    "dnan": Decimal("NaN"),
    "f": 1.5e-7,
    "fnan": float("nan"),
    "finf": float("-inf"),
    "t": True,
    "no": False,
    "null": None,
    "b": b"\x00\xff",
    "nested": {"a": [1, Decimal("2.50"), {"x": None}]},
    "when": dt.datetime(2024, 1, 2, 3, 4, 5, 6),
}


def _events() -> list[ChangeEvent | Rejected]:
    return [
        ChangeEvent("S.T", "INSERT", "1", dt.datetime(2024, 6, 1), Source("a.json", 0), after=dict(ODD_VALUES)),
        ChangeEvent("S.T", "UPDATE", "2", AWARE, Source("a.json", 10), before={}, after={"k": 1}, keys=["k"]),
        Rejected("bad record: reason", Source("a.json", 20), b"x" * (MAX_RAW_BYTES + 5)),
        ChangeEvent("S.T", "DELETE", None, None, Source("a.json", 30), before={"k": 1}, tx_id="7", tx_pos=3),
        ChangeEvent(
            "S.T",
            "SCHEMA",
            "3",
            None,
            Source("a.json", 40),
            ddl={"columns": [{"name": "k", "type": "bigint"}]},
            meta={"column_types": {"k": "bigint"}, "scn": Decimal("1.0"), 1: "non-string key"},
            tx_last=True,
        ),
        ChangeEvent("S.T", "HEARTBEAT", "4", AWARE, Source("a.json", 50)),
    ]


def _expected(items: list[ChangeEvent | Rejected], base: int) -> pa.Table:
    rows = []
    for item in items:
        row = rejected_to_row(item) if isinstance(item, Rejected) else event_to_row(item)
        row["source_offset"] += base
        if isinstance(item, Rejected):
            row["raw"] = row["raw"][:MAX_RAW_BYTES]
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=DECODED_FILE_SCHEMA)


def test_the_column_builder_gives_the_rows_of_event_to_row():
    items = _events()
    builder = DecodedBuilder(MAX_RAW_BYTES)
    for item in items:
        if isinstance(item, Rejected):
            builder.add_rejected(item, 1000)
        else:
            builder.add_event(item, 1000)
    batch = builder.flush()
    assert builder.flush() is None  # flushed: nothing is returned twice
    got = pa.Table.from_batches([batch])
    assert got.equals(_expected(items, 1000), check_metadata=True), got.to_pylist()


def test_meta_text_writes_the_values_of_to_json():
    for value in [
        ODD_VALUES,
        {"a": 1, "b": [Decimal("1.10"), "x"]},
        {"column_types": {"K": "bigint"}},
        {"s": "\ud800"},
    ]:
        assert meta_text(value) == to_json(value)


def test_lone_surrogates_are_escaped_in_values_and_quarantined_in_names():
    """A JSON ``\\ud800`` escape decodes to text Arrow cannot store; it used to fail the whole task."""
    builder = DecodedBuilder(MAX_RAW_BYTES)
    good = ChangeEvent("S.T", "INSERT", "1", None, Source("a.json", 0), after={"k": 1, "v": "x\ud800y"})
    bad_name = ChangeEvent("S.T", "INSERT", "2", None, Source("a.json", 50), after={"k": 2, "col\udc00": 1})
    plain = ChangeEvent("S.T", "INSERT", "3", None, Source("a.json", 90), after={"k": 3}, meta={"m": "\udfff"})
    for event in (good, bad_name, plain):
        builder.add_event(event)
    rows = builder.flush().to_pylist()
    assert [r["seq"] for r in rows] == ["1", None, "3"]
    assert from_json(dict(rows[0]["after"])["v"]) == "x\ud800y"  # the same value when read back
    assert from_json(rows[2]["meta"]) == {"m": "\udfff"}
    assert rows[1]["source_offset"] == 50 and "key or column name is not valid Unicode" in rows[1]["error"]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory):
    gens, _ = generate(format_ids(), tmp_path_factory.mktemp("decode-task"), 300, file_events=150)
    return gens


@pytest.mark.parametrize("format_id", format_ids())
def test_a_task_writes_every_decoded_record_once(generated, format_id, tmp_path: Path):
    gen = generated[format_id]
    pieces = [(p.name, str(p), 0, None) for p in gen.files]
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"\x00\x01 not a landing file of any format \xff")
    pieces.append(("bad.bin", str(bad), 0, None))
    out = tmp_path / "decoded"
    counts = decode_to_files(gen.format_id, gen.options, pieces, None, str(out), "000000-000000000000")

    items = list(decode_items(gen.format_id, gen.options, pieces))
    events = [(i, b) for k, i, b in items if k == "event"]
    rejected = [(i, b) for k, i, b in items if k == "rejected"]
    assert counts["event"] == len(events) > 0 and counts["rejected"] == len(rejected) > 0
    for kind, expected in (("event", events), ("rejected", rejected)):
        [path] = sorted((out / f"kind={kind}").iterdir())  # no temporary file is left behind
        assert path.name == "part-000000-000000000000.parquet"
        table = pq.read_table(path)
        assert table.schema.equals(DECODED_FILE_SCHEMA)
        want = pa.concat_tables([_expected([i], b) for i, b in expected])
        assert table.equals(want)

    again = decode_to_files(gen.format_id, gen.options, pieces, None, str(out), "000000-000000000000")
    assert again == counts  # a retried task replaces its files, it does not add to them
    assert sum(pq.read_table(p).num_rows for p in out.glob("kind=*/*")) == (counts["event"] + counts["rejected"])


def test_a_corrupt_staged_copy_is_quarantined_once_with_where_and_the_other_files_decode(tmp_path: Path):
    from cdclake.jobs.decode import file_pieces, piece_test
    from cdclake.staging import seekable_zstd
    from cdclake.staging.reading import STAGED_SUFFIX

    line = b'{"table":"S.T","op_type":"I","op_ts":"2024-01-01 00:00:00.000000","pos":"%d","after":{"A":%d}}\n'
    data = b"".join(line % (i, i) for i in range(40_000))
    good, bad = tmp_path / ("good" + STAGED_SUFFIX), tmp_path / ("bad" + STAGED_SUFFIX)
    for path in (good, bad):
        with open(path, "wb") as out:
            seekable_zstd.write([data], out)
    broken = bytearray(bad.read_bytes())
    broken[100] ^= 0xFF  # inside the first frame: its checksum no longer matches
    bad.write_bytes(bytes(broken))
    starts = piece_test("goldengate-json", {})
    assert file_pieces(str(bad), starts, piece_bytes=len(data) // 3) == [(0, None)]  # read whole: rejected once
    pieces = file_pieces(str(good), starts, piece_bytes=len(data) // 3)
    assert len(pieces) >= 3
    items = [("bad", str(bad), 0, None), *(("good", str(good), s, e) for s, e in pieces)]

    found = list(decode_items("goldengate-json", {}, items))
    events = [item for kind, item, _ in found if kind == "event"]
    rejected = [item for kind, item, _ in found if kind == "rejected"]
    assert len(rejected) == 1 and rejected[0].source.file == "bad"
    assert "cannot read landing file" in rejected[0].error and "bad.staged.zst: frame 0 at byte" in rejected[0].error
    assert len(events) == 40_000 and all(e.source.file == "good" for e in events)


@pytest.mark.parametrize("format_id", format_ids())
def test_per_table_files_hold_the_flat_events_and_their_surveys_merge_into_the_drivers(
    generated, format_id, tmp_path: Path
):
    """The change log's per-table files (decoded_tables) hold exactly the events of the flat layout, and the
    tasks' surveys, merged, are the survey normalize makes of those events in the driver."""
    from cdclake.events.batch import DriverEvents, decoded_files, merged_surveys, read_events

    gen = generated[format_id]
    pieces = [(p.name, str(p), 0, None) for p in gen.files]
    half = max(1, len(pieces) // 2)
    tasks = {"000000-000000000000": pieces[:half], "000001-000000000000": pieces[half:]}
    flat, per_table = tmp_path / "flat", tmp_path / "tables"
    for part, task_pieces in tasks.items():  # two tasks each way: a stateful decoder starts over in each
        decode_to_files(gen.format_id, gen.options, task_pieces, None, str(flat), part)
        decode_to_files(gen.format_id, gen.options, task_pieces, None, str(per_table), part, batch_id="b")

    flat_files = decoded_files(flat / "kind=event")
    table_files = decoded_files(per_table / "kind=event")
    assert all(f.parent.name.startswith("table=") for f in table_files)
    rows = sorted(map(repr, read_events(table_files).to_pylist()))
    assert rows == sorted(map(repr, read_events(flat_files).to_pylist())) and rows

    grouped, kinds, schema_rows = DriverEvents(flat_files, len(rows), 10**9, 2**40).survey()
    merged = merged_surveys(per_table, set(tasks))
    assert merged is not None
    m_grouped, m_kinds, m_schema_rows = merged

    def by_group(summary):
        return sorted(summary, key=lambda r: (str(r["table"]), r["op"]))

    assert by_group(m_grouped) == by_group(grouped)
    assert [{**r, "kinds": set(r["kinds"])} for r in m_kinds] == [{**r, "kinds": set(r["kinds"])} for r in kinds]
    assert sorted(map(repr, m_schema_rows)) == sorted(map(repr, schema_rows))
    assert merged_surveys(per_table, {*tasks, "000002-000000000000"}) is None  # a task without its survey
