"""The decode job (cdclake.jobs.decode.run): a small batch decodes in the driver, a larger one in local mode
in a pool of local processes, by the task function the Spark job runs, and each writes what the job writes."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cdclake.events.batch import decoded_files, read_events
from cdclake.jobs import decode
from cdclake.jobs.decode_pool import run_tasks
from cdclake.staging.batch import Manifest
from cdclake.staging.stage import stage_files


def gg(op: str, pos: int, after: dict) -> str:
    return json.dumps(
        {"table": "DEC.T", "op_type": op, "op_ts": "2024-01-01 00:00:00.000000", "pos": f"{pos:020d}", "after": after}
    )


def staged_batch(root: Path, files: list[Path]) -> Path:
    manifest = Manifest(source="dec", batch_id="b1", format="goldengate-json", options={}, keys={"*": ["id"]})
    stage_files([str(f) for f in files], root, manifest)
    return root / "b1"


def decoded_rows(batch_dir: Path) -> list[dict]:
    events = read_events(decoded_files(batch_dir / "decoded" / "kind=event")).to_pylist()
    rejected = pq.read_table(batch_dir / "decoded" / "kind=rejected").to_pylist()
    rows = [{"kind": "event", **r} for r in events] + [{"kind": "rejected", **r} for r in rejected]
    return sorted(rows, key=lambda r: (r["kind"], r["source_file"], r["source_offset"]))


@pytest.mark.spark
def test_every_runner_decodes_a_batch_as_the_spark_job_would(spark, tmp_path, monkeypatch):
    first = tmp_path / "f1.json"
    first.write_text("\n".join([gg("I", 1, {"id": 1, "v": "a"}), "{not json", gg("U", 2, {"id": 1, "v": "b"})]) + "\n")
    second = tmp_path / "f2.json"
    second.write_text(gg("I", 3, {"id": 2, "v": "c"}) + "\n")
    reports, rows = {}, {}
    # (runner, driver bound, local decode)
    for runner, limit, local in (("driver", str(4 * 2**20), "1"), ("processes", "0", "1"), ("spark", "0", "0")):
        monkeypatch.setenv("CDCLAKE_DRIVER_DECODE_BYTES", limit)
        monkeypatch.setenv("CDCLAKE_LOCAL_DECODE", local)
        monkeypatch.setattr(decode, "PROCESS_TASK_MIN_BYTES", 1)  # a task per file, as the job's
        batch_dir = staged_batch(tmp_path / runner, [first, second])
        reports[runner] = decode.run(spark, batch_dir)
        rows[runner] = decoded_rows(batch_dir)
    assert {r: report["runner"] for r, report in reports.items()} == {r: r for r in reports}
    assert reports["driver"]["tasks"] == 0  # in the driver, no Spark job
    assert reports["processes"]["tasks"] == reports["spark"]["tasks"] == 2  # one file per task
    same = [{k: v for k, v in report.items() if k not in ("tasks", "runner")} for report in reports.values()]
    assert same[0] == same[1] == same[2]
    assert (reports["driver"]["events"], reports["driver"]["rejected"]) == (3, 1)
    assert rows["driver"] == rows["spark"] and rows["processes"] == rows["spark"]
    # the events in the change log's files, per table (decoded_tables): one file of each task
    assert len(list((tmp_path / "processes" / "b1" / "decoded" / "kind=event" / "table=DEC.T").glob("part-*"))) == 2
    rejected = [r for r in rows["driver"] if str(r["kind"]) == "rejected"]
    assert rejected[0]["source_file"].endswith("f1.json") and rejected[0]["source_offset"] > 0
    assert rejected[0]["error"]  # quarantined with its place and why


def test_byte_slices_are_contiguous_runs_of_even_bytes():
    sizes = {0: 68, 1: 68, 2: 10}
    pieces = [(0, 0, "a", "a", 64), (0, 64, "a", "a", None), (1, 0, "b", "b", 64), (1, 64, "b", "b", None)]
    pieces.append((2, 0, "c", "c", None))
    runs = decode.byte_slices(pieces, sizes, 4, 1)  # 146 bytes: about 36 per run, a piece never split
    assert [p for run in runs for p in run] == pieces  # in order, each once
    # a file's small tail (4 bytes: under a quarter of a run) stays with the piece before it
    assert [[p[:2] for p in run] for run in runs] == [[(0, 0), (0, 64)], [(1, 0), (1, 64)], [(2, 0)]]
    halves = [(0, 0, "a", "a", 34), (0, 34, "a", "a", None), (1, 0, "b", "b", None)]
    assert [[p[:2] for p in run] for run in decode.byte_slices(halves, sizes, 4, 1)] == [[(0, 0)], [(0, 34)], [(1, 0)]]
    assert decode.byte_slices(pieces, sizes, 4, 200) == [pieces]  # the minimum keeps small batches whole
    assert decode.byte_slices([], sizes, 4, 1) == []


def test_a_batch_smaller_than_a_piece_per_core_is_cut_for_every_core():
    mb = 2**20
    assert decode.even_piece_bytes(68 * mb, 2) == 34 * mb  # one 68 MB file: a piece for each core
    assert decode.even_piece_bytes(684 * mb, 2) == decode.PIECE_BYTES  # ten of them: the usual pieces
    assert decode.even_piece_bytes(5 * mb, 8) == decode.PROCESS_TASK_MIN_BYTES  # never tiny pieces
    assert decode.even_piece_bytes(0, 0) == decode.PROCESS_TASK_MIN_BYTES


def test_a_task_that_fails_in_its_local_process_fails_the_call_with_its_traceback(tmp_path):
    args = {"format_id": "no-such-format", "options": {}, "state_path": None, "out": str(tmp_path)}
    with pytest.raises(RuntimeError, match=r"(?s)failed in its local process.*no-such-format"):
        run_tasks(args, [[(0, 0, "f", str(tmp_path / "f"), None)]], 2)


def test_local_processes_answer_in_slice_order(tmp_path):
    files = []
    for i in range(5):
        path = tmp_path / f"f{i}.json"
        path.write_text("\n".join(gg("I", i * 10 + j, {"id": i * 10 + j}) for j in range(i + 1)) + "\n")
        files.append((i, 0, path.name, str(path), None))
    args = {"format_id": "goldengate-json", "options": {}, "state_path": None, "out": str(tmp_path / "out")}
    counts = run_tasks(args, [[f] for f in files], 2)
    assert [c["event"] for c in counts] == [1, 2, 3, 4, 5]


def test_a_decode_process_converts_values_without_importing_pandas():
    """pyarrow's first conversion of Python values imports pandas (0.4 s) unless the import is refused, as a
    decode process refuses it; the values convert the same."""
    import subprocess
    import sys

    script = (
        "import sys, datetime as dt\n"
        "from cdclake.jobs.decode_processes import _NoPandas\n"
        "sys.meta_path.insert(0, _NoPandas())\n"
        "import pyarrow as pa\n"
        "a = pa.array([dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC), None], pa.timestamp('us', tz='UTC'))\n"
        "print(a[0].as_py().isoformat(), pa.array([1, None]).null_count, 'pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["2024-01-02T03:04:05.000006+00:00", "1", "False"]
