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
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_files import CHANGES, FORMATS, Hostile, write_hostile

from cdclake.bench.compare import compare_tables, expected_frame
from cdclake.bench.model import TABLES
from cdclake.pipeline import run_batch
from cdclake.replay import quarantined_records
from cdclake.runtime.settings import Settings
from cdclake.staging.batch import Manifest
from cdclake.staging.stage import stage_files

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory):
    return write_hostile(tmp_path_factory.mktemp("hostile"))


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
