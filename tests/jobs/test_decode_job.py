"""The decode job (cdclake.jobs.decode.run): a small batch decodes in the driver, by the task function the
Spark job runs, and writes what the job writes."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cdclake.batch import Manifest
from cdclake.jobs import decode
from cdclake.staging import stage_files

pytestmark = pytest.mark.spark


def gg(op: str, pos: int, after: dict) -> str:
    return json.dumps(
        {"table": "DEC.T", "op_type": op, "op_ts": "2024-01-01 00:00:00.000000", "pos": f"{pos:020d}", "after": after}
    )


def staged_batch(root: Path, files: list[Path]) -> Path:
    manifest = Manifest(source="dec", batch_id="b1", format="goldengate-json", options={}, keys={"*": ["id"]})
    stage_files([str(f) for f in files], root, manifest)
    return root / "b1"


def decoded_rows(batch_dir: Path) -> list[dict]:
    table = pq.read_table(batch_dir / "decoded")
    return sorted(table.to_pylist(), key=lambda r: (str(r["kind"]), r["source_file"], r["source_offset"]))


def test_a_small_batch_decodes_in_the_driver_as_the_spark_job_would(spark, tmp_path, monkeypatch):
    first = tmp_path / "f1.json"
    first.write_text("\n".join([gg("I", 1, {"id": 1, "v": "a"}), "{not json", gg("U", 2, {"id": 1, "v": "b"})]) + "\n")
    second = tmp_path / "f2.json"
    second.write_text(gg("I", 3, {"id": 2, "v": "c"}) + "\n")
    reports, rows = {}, {}
    for path, limit in (("driver", str(4 * 2**20)), ("job", "0")):
        monkeypatch.setenv("CDCLAKE_DRIVER_DECODE_BYTES", limit)
        batch_dir = staged_batch(tmp_path / path, [first, second])
        reports[path] = decode.run(spark, batch_dir)
        rows[path] = decoded_rows(batch_dir)
    assert reports["driver"]["tasks"] == 0 and reports["job"]["tasks"] >= 1  # 0: in the driver, no Spark job
    assert {k: v for k, v in reports["driver"].items() if k != "tasks"} == {
        k: v for k, v in reports["job"].items() if k != "tasks"
    }
    assert (reports["driver"]["events"], reports["driver"]["rejected"]) == (3, 1)
    assert rows["driver"] == rows["job"]
    rejected = [r for r in rows["driver"] if str(r["kind"]) == "rejected"]
    assert rejected[0]["source_file"].endswith("f1.json") and rejected[0]["source_offset"] > 0
    assert rejected[0]["error"]  # quarantined with its place and why
