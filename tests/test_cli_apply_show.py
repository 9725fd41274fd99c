"""The local apply / show commands of the contract, as a user runs them (own JVM)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cdclake import samples

pytestmark = pytest.mark.spark


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cdclake", *args], capture_output=True, text=True, check=False)


def test_apply_then_show(tmp_path):
    files = [str(samples.write_goldengate_json_batch(tmp_path / "landing", n)) for n in (1, 2)]
    wh = str(tmp_path / "wh")
    keys = "keys=" + ",".join(samples.KEYS)
    first = run("apply", "--format", "goldengate-json", "--option", keys, "--warehouse", wh, files[0])
    assert first.returncode == 0, first.stderr[-3000:]
    report = json.loads(first.stdout)
    assert report["applied"] == 4 and report["balanced"]
    # the second file in its own batch, then show prints the rows of the history
    second = run("apply", "--format", "goldengate-json", "--option", keys, "--warehouse", wh, files[1])
    assert second.returncode == 0, second.stderr[-3000:]
    shown = run("show", "--warehouse", wh, samples.TABLE)
    assert shown.returncode == 0, shown.stderr
    assert [json.loads(line) for line in shown.stdout.splitlines()] == samples.EXPECTED_ROWS
    with_meta = run("show", "--warehouse", wh, samples.TABLE, "--meta")
    rows = [json.loads(line) for line in with_meta.stdout.splitlines()]
    assert {r["_cdc_op"] for r in rows} == {"INSERT", "UPDATE"} and all(r["_cdc_batch"] for r in rows)


def test_show_unknown_table_is_a_usage_error(tmp_path):
    result = run("show", "--warehouse", str(tmp_path), "NO.SUCH")
    assert result.returncode == 2 and "error" in result.stderr
