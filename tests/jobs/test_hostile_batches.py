"""A few corrupt records among thousands never stop a batch (issue 56), through the whole pipeline.

Each file is a generated change stream in the format's real encoding (``cdclake.bench.generate``; GoldenGate JSON
in the formatter's compact form, Debezium JSON, DataHub BLOB), with corrupt copies of some of its inserts put
right after the originals: invalid UTF-8 in a member name and in a value, a binary column holding a number (the
formats that type their columns), a record cut short. The copies add nothing the stream does not hold, so the
lake tables must equal the stream's own final state exactly, the copies, and only they, quarantined with a
reason at their offsets, and the batch balanced: through ``apply_files`` (what ``python -m cdclake apply`` runs)
for each format, and through the CLI itself for the issue's own case, GoldenGate JSON. The DAG run is in
``tests/test_dag_s3_e2e.py`` (the same damage in the files of its three sources).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from cdclake.batch import Manifest
from cdclake.bench.compare import compare_tables, expected_frame
from cdclake.bench.generate import generate
from cdclake.bench.model import TABLES
from cdclake.pipeline import run_batch
from cdclake.replay import quarantined_records
from cdclake.settings import Settings
from cdclake.staging import stage_files

pytestmark = pytest.mark.spark

FORMATS = ("goldengate-json", "debezium-json", "datahub-blob")
CHANGES = 3_000
#: Every this many inserts, one corrupt copy (about 15 in a file of 3,000 changes).
EVERY = 60
_INSERT = {"goldengate-json": b'"op_type":"I"', "debezium-json": b'"op":"c"', "datahub-blob": b'"op":"INSERT"'}
_STATUS_VALUE = re.compile(rb'"STATUS":"[^"]*"')


def bad_name(line: bytes) -> bytes:
    return line.replace(b'"STATUS":"', b'"STAT\xffUS":"', 1)


def bad_value(line: bytes) -> bytes:
    return line.replace(b'"STATUS":"', b'"STATUS":"\xe2\x82', 1)


def binary_number(line: bytes) -> bytes:
    """``STATUS`` typed binary by the record's own schema, holding a JSON number."""
    line = line.replace(
        b'{"type":"string","optional":true,"field":"STATUS"}', b'{"type":"bytes","optional":true,"field":"STATUS"}'
    )
    line = line.replace(b'{"name":"STATUS","type":"STRING"}', b'{"name":"STATUS","type":"BYTES"}')
    return _STATUS_VALUE.sub(b'"STATUS":1000000000000', line, count=1)


def cut_short(line: bytes) -> bytes:
    return line[: len(line) // 2]


DAMAGE = {
    "goldengate-json": (bad_name, bad_value, cut_short),
    "debezium-json": (bad_name, bad_value, binary_number),
    "datahub-blob": (bad_name, bad_value, binary_number),
}


@dataclass(frozen=True)
class Hostile:
    """A hostile landing file, the offsets of its corrupt records, and how to decode it."""

    path: Path
    corrupt: list[int]
    options: dict[str, str]
    keys: dict[str, list[str]]


def damage(data: bytes, format_id: str) -> tuple[bytes, list[int]]:
    """``data`` with a corrupt copy after every :data:`EVERY`-th insert whose image has a ``STATUS`` text."""
    out, corrupt, inserts = bytearray(), [], 0
    kinds = DAMAGE[format_id]
    for line in data.splitlines(keepends=True):
        out += line
        if _INSERT[format_id] not in line or not _STATUS_VALUE.search(line):
            continue
        inserts += 1
        if inserts % EVERY == 0:
            bad = kinds[(inserts // EVERY) % len(kinds)](line.rstrip(b"\n"))
            assert bad != line.rstrip(b"\n")
            corrupt.append(len(out))
            out += bad + b"\n"
    return bytes(out), corrupt


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory):
    work = tmp_path_factory.mktemp("hostile")
    generated, stream = generate(list(FORMATS), work / "clean", CHANGES, seed=56, file_events=CHANGES)
    files = {}
    for format_id, gen in generated.items():
        [path] = gen.files
        data, corrupt = damage(path.read_bytes(), format_id)
        target = work / "landing" / format_id / path.name
        target.parent.mkdir(parents=True)
        target.write_bytes(data)
        assert len(corrupt) >= 10
        files[format_id] = Hostile(target, corrupt, gen.options, gen.keys)
    return files, stream


def assert_exact(spark, report: dict, batch_dir: Path, case: Hostile, stream) -> None:
    """Balanced; exactly the corrupt records quarantined, each with a reason; every table as the stream left it."""
    assert report["balanced"], report
    assert report["quarantined"] == len(case.corrupt), report
    quarantined = quarantined_records(batch_dir)
    assert sorted(r.source_offset for r in quarantined) == case.corrupt
    assert {r.source_file for r in quarantined} == {str(case.path)}, quarantined[:1]
    assert all(r.error for r in quarantined)
    tables = {t.full_name: t for t in TABLES}
    expected = {name: expected_frame(spark, t, stream.rows[name]) for name, t in tables.items()}
    layouts = json.loads((batch_dir / "tables.json").read_text())
    names = {source: layout["spark_name"] for source, layout in layouts.items()}
    assert compare_tables(spark, tables, expected, names)["wrong"] == 0


@pytest.mark.parametrize("format_id", FORMATS)
def test_corrupt_records_are_quarantined_and_the_rest_applied(spark, warehouse, hostile, format_id):
    """The batch ``apply`` runs (``local_apply.apply_files``' staging and ``run_batch``), with the generator's
    per-table keys (Debezium's records carry none; ``apply`` takes one key list for every table)."""
    files, stream = hostile
    case = files[format_id]
    manifest = Manifest(
        source="hostile",
        batch_id=f"hostile-{format_id}",
        format=format_id,
        options=case.options,
        keys=case.keys,
        namespace="hostile_" + format_id.replace("-", "_"),
    )
    staging = warehouse / "_hostile_staging"
    stage_files([str(case.path)], staging, manifest)
    report = run_batch(spark, staging / manifest.batch_id, buckets=Settings.from_env().buckets)
    assert_exact(spark, report, staging / manifest.batch_id, case, stream)


def test_apply_command_quarantines_the_corrupt_goldengate_records(tmp_path, hostile):
    """``python -m cdclake apply`` as a user runs it (its own JVM): the batch applies and balances, and the exit
    status says that records were quarantined."""
    files, _ = hostile
    case = files["goldengate-json"]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "cdclake",
            "apply",
            "--format",
            "goldengate-json",
            "--warehouse",
            str(tmp_path),
            str(case.path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1, result.stderr[-3000:]  # the contract: 1 when some records were quarantined
    report = json.loads(result.stdout)
    assert report["balanced"] and report["quarantined"] == len(case.corrupt), report
    assert report["applied"] + report["stale"] > CHANGES * 0.9
