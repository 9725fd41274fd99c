"""Replay framing without Spark: quarantined records -> landing files that decode to the same records.

Each case decodes a landing file with a decoder that rejects some records, turns the rejects
into a replay plan, decodes the replay files with the fixed decoder (a corrected option), and
checks that exactly the rejected records come back, at their original file and offset.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cdclake import replay
from cdclake.events.change import ChangeEvent, Rejected
from cdclake.options import Options
from cdclake.registry import get_decoder
from cdclake.runtime.limits import MAX_RAW_BYTES
from cdclake.staging.batch import Manifest, StagedFile

SEED = Path(__file__).parent / "fixtures" / "goldengate_avro" / "seed" / "row"


def manifest_for(fmt: str, files: dict[str, Path], **options: str) -> Manifest:
    staged = [StagedFile(name, str(path), path.stat().st_size, "") for name, path in files.items()]
    return Manifest(source="s", batch_id="b1", format=fmt, options=dict(options), files=staged)


def records_of(items) -> list[replay.Record]:
    return [
        replay.Record("decode", r.error, r.source.file, r.source.offset, r.raw)
        for r in items
        if isinstance(r, Rejected)
    ]


def replayed(plan: replay.Plan, fmt: str, **options: str) -> list[tuple[str, str, int]]:
    """Decode the plan's files with the fixed options: (op, original file, original offset) of each row event."""
    decoder = get_decoder(fmt, Options(options))
    out = []
    for item in plan.files:
        spans = sorted(item.spans)
        starts = [s[0] for s in spans]
        for decoded in decoder.decode(item.data, item.name):
            assert not isinstance(decoded, Rejected), decoded.error
            if decoded.op in ("INSERT", "UPDATE", "DELETE"):
                out.append((decoded.op, *replay.original_position(spans, starts, decoded.source.offset)))
    return out


def gg(op: str, pos: int, **after) -> bytes:
    return json.dumps(
        {"table": "S.T", "op_type": op, "op_ts": "2024-01-01 00:00:00", "pos": str(pos), "after": after}
    ).encode()


def test_line_format_rejects_come_back_at_their_original_offsets(tmp_path):
    lines = [gg("I", 1, id=1), gg("C", 2, id=2), gg("I", 3, id=3), gg("C", 4, id=4)]
    landing = tmp_path / "a.json"
    landing.write_bytes(b"\n".join(lines) + b"\n")
    items = list(get_decoder("goldengate-json").decode(landing.read_bytes(), "land/a.json"))
    records = records_of(items)
    assert len(records) == 2 and all("op" in r.error for r in records)
    plan = replay.plan_replay(tmp_path, manifest_for("goldengate-json", {"land/a.json": landing}), records)
    assert (plan.records, len(plan.files), plan.not_replayable) == (2, 1, [])
    offsets = [landing.read_bytes().index(line) for line in lines]
    assert replayed(plan, "goldengate-json", insertOpKey="C") == [
        ("INSERT", "land/a.json", offsets[1]),
        ("INSERT", "land/a.json", offsets[3]),
    ]


def test_records_without_bytes_or_with_capped_bytes_are_not_replayable(tmp_path):
    landing = tmp_path / "a.json"
    landing.write_bytes(b"{}\n")
    records = [
        replay.Record("decode", "x", "a.json", 5, b""),
        replay.Record("decode", "y", "a.json", 9, b"{" * MAX_RAW_BYTES),
        replay.Record("ddl", "DDL statement not understood", "a.json", 12, None),
    ]
    plan = replay.plan_replay(tmp_path, manifest_for("goldengate-json", {"a.json": landing}), records)
    assert plan.files == [] and plan.records == 0
    whys = [item["why"] for item in plan.not_replayable]
    assert "no bytes were kept" in whys[0]
    assert f"only the first {MAX_RAW_BYTES} bytes" in whys[1]
    assert "schema change is not replayed" in whys[2]


def test_a_record_that_was_the_whole_file_is_replayed_as_a_file(tmp_path):
    landing = tmp_path / "x.xml"
    landing.write_bytes(b"<not closed")
    records = [replay.Record("decode", "document at byte 0: not closed", "x.xml", 0, landing.read_bytes())]
    plan = replay.plan_replay(tmp_path, manifest_for("goldengate-xml", {"x.xml": landing}), records)
    assert [(f.data, f.spans) for f in plan.files] == [(b"<not closed", [(0, "x.xml", 0, True)])]


def test_datahub_csv_rows_get_their_header_back(tmp_path):
    header = "_operation_type_,_sequence_id_,_source_table_,id,v\n"
    rows = ["I,1,db.t,1,a\n", "X,2,db.t,2,b\n", "I,3,db.t,3,c\n"]
    landing = tmp_path / "t.csv"
    landing.write_text(header + "".join(rows))
    items = list(get_decoder("datahub-tuple").decode(landing.read_bytes(), "t.csv"))
    records = records_of(items)
    assert len(records) == 1 and "X" in records[0].error
    plan = replay.plan_replay(tmp_path, manifest_for("datahub-tuple", {"t.csv": landing}), records)
    assert plan.files[0].data == (header + rows[1]).encode()
    assert plan.files[0].spans == [(len(header), "t.csv", len(header) + len(rows[0]), False)]


def test_xml_documents_are_concatenated(tmp_path):
    docs = [
        f'<operation table="S.T" type="{op}" ts="2024-01-01 00:00:00" pos="{i}"></operation>'
        for i, op in enumerate("IQ")
    ]
    records = [replay.Record("decode", "bad", "x.xml", 10 * i, d.encode()) for i, d in enumerate(docs)]
    landing = tmp_path / "x.xml"
    landing.write_text("".join(docs))
    plan = replay.plan_replay(tmp_path, manifest_for("goldengate-xml", {"x.xml": landing}), records)
    assert plan.files[0].data == ("\n".join(docs) + "\n").encode()
    assert [s[:3] for s in plan.files[0].spans] == [(0, "x.xml", 0), (len(docs[0]) + 1, "x.xml", 10)]


def avro_records() -> tuple[dict, list[dict]]:
    schema = json.loads((SEED / "GG.TCUSTORD.avsc").read_text())
    good = json.loads((SEED / "sample_insert.json").read_text())
    bad = {**good, "op_type": "C", "pos": "00000000000000001445", "ORDER_ID": "145"}
    return schema, [good, bad, {**bad, "pos": "00000000000000001446", "ORDER_ID": "146"}]


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_avro_ocf_records_are_reframed_under_the_original_header(tmp_path, codec):
    schema, records = avro_records()
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, codec=codec)
    landing = tmp_path / "t.avro"
    landing.write_bytes(out.getvalue())
    items = list(get_decoder("goldengate-avro-row").decode(landing.read_bytes(), "t.avro"))
    rejected = records_of(items)
    assert len(rejected) == 2
    plan = replay.plan_replay(tmp_path, manifest_for("goldengate-avro-row", {"t.avro": landing}), rejected)
    assert plan.not_replayable == [] and plan.records == 2
    assert replayed(plan, "goldengate-avro-row", insertOpKey="C") == [
        ("INSERT", "t.avro", rejected[0].source_offset),
        ("INSERT", "t.avro", rejected[1].source_offset),
    ]


def test_avro_messages_are_concatenated(tmp_path):
    schema, records = avro_records()
    parsed = fastavro.parse_schema(schema)

    def message(record: dict) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, record)
        return out.getvalue()

    schemas = tmp_path / "schemas"
    schemas.mkdir()
    (schemas / "GG.TCUSTORD.avsc").write_text(json.dumps(schema))
    landing = tmp_path / "t.bin"
    landing.write_bytes(b"".join(message(r) for r in records))
    options = {"schemaDir": str(schemas)}
    items = list(get_decoder("goldengate-avro-row", Options(options)).decode(landing.read_bytes(), "t.bin"))
    rejected = records_of(items)
    assert len(rejected) == 2 and all(isinstance(i, (ChangeEvent, Rejected)) for i in items)
    plan = replay.plan_replay(tmp_path, manifest_for("goldengate-avro-row", {"t.bin": landing}, **options), rejected)
    assert replayed(plan, "goldengate-avro-row", insertOpKey="C", **options) == [
        ("INSERT", "t.bin", r.source_offset) for r in rejected
    ]


def test_quarantined_events_are_taken_whole_from_the_decoded_events(tmp_path):
    from cdclake.events.change import EVENT_SCHEMA

    events = tmp_path / "decoded" / "kind=event"
    events.mkdir(parents=True)
    row = {
        "table": "S.T",
        "op": "INSERT",
        "seq": "7",
        "tx_id": "tx1",
        "keys": None,
        "after": [("a", "1")],
        "meta": '{"x":1}',
        "source_file": "f",
        "source_offset": 3,
    }
    pq.write_table(pa.Table.from_pylist([row], schema=EVENT_SCHEMA), events / "part-0.parquet")
    text = json.dumps({"table": "S.T", "op": "INSERT", "seq": "7", "after": {"a": "1"}}).encode()
    gone = json.dumps({"op": "DELETE", "seq": "8", "before": {"a": "2"}}).encode()
    records = [
        replay.Record("normalize", "no key", "f", 3, text),
        replay.Record("compact", "cast", "held-earlier", 9, gone, table="S.T"),
    ]
    plan = replay.plan_replay(tmp_path, manifest_for("goldengate-json", {}), records)
    assert [(e["op"], e.get("meta"), e.get("tx_id")) for e in plan.events] == [
        ("INSERT", '{"x":1}', "tx1"),
        ("DELETE", None, None),
    ]
    assert plan.events[1]["before"] == [("a", "2")] and plan.rebuilt_from_text == 1


def test_digest_and_replay_id_are_stable(tmp_path):
    records = [replay.Record("decode", "e", "f", 1, b"x")]
    digest = replay.quarantine_digest("goldengate-json", records)
    assert digest == replay.quarantine_digest("goldengate-json", list(records))
    assert digest != replay.quarantine_digest("goldengate-json", [replay.Record("decode", "e", "f", 2, b"x")])
    batch = tmp_path / "b1"
    batch.mkdir()
    assert replay.replay_id_for(batch, digest) == "replay-b1-1"
    (tmp_path / "replay-b1-1").mkdir()
    (tmp_path / "replay-b1-1" / replay.ORIGIN_FILE).write_text(json.dumps({"of": "b1", "digest": digest}))
    assert replay.replay_id_for(batch, digest) == "replay-b1-1"  # a crashed replay is resumed
    assert replay.replay_id_for(batch, "other") == "replay-b1-2"
    again = tmp_path / "replay-b1-1"
    (again / replay.ORIGIN_FILE).write_text(json.dumps({"of": "b1", "root": "b1", "digest": digest}))
    assert replay.replay_id_for(again, "x") == "replay-b1-2"  # a replay of a replay keeps the root


def test_cli_usage_errors_need_no_spark(tmp_path, capsys):
    from cdclake.cli import main

    assert main(["replay", "--warehouse", str(tmp_path), "--batch-dir", str(tmp_path / "none")]) == 2
    assert "no such folder" in capsys.readouterr().err
    assert main(["replay", "--warehouse", str(tmp_path), "--batch-dir", str(tmp_path)]) == 2
    assert "not a staged batch" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["rebuild", "--warehouse", str(tmp_path), "--source-dir", str(tmp_path), "--from", "nowhere"])
    assert exc.value.code == 2
    assert main(["rebuild", "--warehouse", str(tmp_path), "--source-dir", str(tmp_path), "--from", "archive",
                 "--dry-run", "--run-id", "r1"]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out) == {"mode": "archive", "dry_run": True, "tables": [], "batches": []}
