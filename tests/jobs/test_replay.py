"""Replaying decode rejects after a fix, through Spark: late, in their original place.

The fix here is a corrected option (the writer used ``C`` for inserts); the replayed events
carry the seq, file and offset of their first attempt, so the change log's lineage points at the
original landing file and the merge orders them as if they had come on time.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cdclake import replay
from cdclake.lake.tables import read_rows
from cdclake.pipeline import run_batch
from cdclake.staging.batch import Manifest
from cdclake.staging.stage import stage_files

pytestmark = pytest.mark.spark


def gg(op: str, pos: int, **after) -> str:
    record = {"table": "S.T", "op_type": op, "op_ts": f"2024-01-01 00:00:0{pos}", "pos": f"{pos:020d}", "after": after}
    return json.dumps(record)


def test_decode_rejects_replayed_after_an_option_fix_keep_their_lineage(spark, warehouse, tmp_path):
    ns, src = "replay_gg", tmp_path / "staging" / "gg"
    lines = [gg("I", 1, id=1, v="a"), gg("C", 2, id=2, v="b"), gg("C", 3, id=1, v="a3"), gg("U", 4, id=3, v="c")]
    landing = tmp_path / "landing.json"
    landing.write_text("\n".join(lines) + "\n")
    manifest = Manifest("gg", "b1", "goldengate-json", {}, keys={"*": ["id"]}, namespace=ns)
    stage_files([str(landing)], src, manifest)
    first = run_batch(spark, src / "b1", buckets=4)
    assert (first["read"], first["applied"], first["quarantined"], first["balanced"]) == (4, 2, 2, True), first
    rejected = replay.quarantined_records(src / "b1")
    assert all("op" in r.error for r in rejected)

    result = replay.replay_batch(spark, src / "b1", options={"insertOpKey": "C"}, buckets=4)
    report = result["report"]
    assert (report["read"], report["applied"], report["quarantined"], report["balanced"]) == (2, 2, 0, True), report
    # the late insert of id 1 (pos 3) is newer than the row from pos 1: it wins although it came last
    assert read_rows(warehouse, "S.T", namespace=ns) == [
        {"id": 1, "v": "a3"},
        {"id": 2, "v": "b"},
        {"id": 3, "v": "c"},
    ]
    text = landing.read_bytes()
    logged = spark.table(f"lake.{ns}.t__changes").where("_cdc_batch = 'replay-b1-1'").collect()
    lineage = sorted((r["seq"][-1], r["source_file"], r["source_offset"]) for r in logged)
    assert lineage == [
        ("2", str(landing), text.index(lines[1].encode())),
        ("3", str(landing), text.index(lines[2].encode())),
    ]
    assert Path(src / "replay-b1-1" / replay.ORIGIN_FILE).exists()
    assert replay.replay_batch(spark, src / "b1", options={"insertOpKey": "C"})["status"] == "already-replayed"
