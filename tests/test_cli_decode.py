"""The decode command of the contract (DESIGN.md section 3), run as a user runs it."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).parents[1]
SEEDS = ROOT / "tests" / "fixtures" / "goldengate_json"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cdclake", *args], capture_output=True, text=True, check=False, cwd=ROOT, timeout=120
    )


def test_decode_seed_file():
    path = str(SEEDS / "seed_all.json")
    result = run("decode", "--format", "goldengate-json", path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert len(lines) == 4
    assert '"PRODUCT_PRICE":17520.00' in lines[0]  # exact, not 17520.0
    assert '"PRODUCT_PRICE":15000.00' in lines[1] and '"PRODUCT_PRICE":14000.00' in lines[1]
    events = [json.loads(line, parse_float=Decimal) for line in lines]
    assert [e["op"] for e in events] == ["INSERT", "UPDATE", "DELETE", "TRUNCATE"]
    assert [e["seq"] for e in events] == [f"{n:032d}" for n in (1444, 2891, 4338, 4515)]
    assert [e["source"] for e in events] == [{"file": path, "offset": o} for o in (0, 469, 1181, 1609)]
    insert = events[0]
    assert set(insert) == {
        "table",
        "op",
        "seq",
        "event_ts",
        "tx_id",
        "tx_pos",
        "tx_last",
        "keys",
        "before",
        "after",
        "ddl",
        "meta",
        "source",
    }
    assert insert["table"] == "GG.TCUSTORD"
    assert insert["event_ts"] == "2013-06-02T22:14:36.000000Z"
    assert insert["before"] is None and insert["keys"] is None and insert["tx_id"] is None
    assert insert["after"]["PRODUCT_PRICE"] == Decimal("17520.00") and insert["after"]["PRODUCT_AMOUNT"] == 3
    assert insert["meta"] == {
        "pos": "00000000000000001444",
        "op_ts": "2013-06-02 22:14:36.000000",
        "current_ts": "2015-09-18T13:39:35.447000",
        "tokens": {"R": "AADPkvAAEAAEqL2AAA"},
    }
    assert events[2]["after"] is None and events[2]["before"]["CUST_CODE"] == "DAVE"
    assert events[3]["before"] is None and events[3]["after"] is None


def test_decode_options_and_gzip(tmp_path):
    gz = tmp_path / "landing.json.gz"
    gz.write_bytes(gzip.compress((SEEDS / "seed_insert.json").read_bytes()))
    result = run("decode", "--format", "goldengate-json", "--option", "keys=ORDER_ID", "--option", "table=X.Y", str(gz))
    assert result.returncode == 0, result.stderr
    [event] = [json.loads(line) for line in result.stdout.splitlines()]
    assert event["keys"] == ["ORDER_ID"] and event["table"] == "X.Y"


def test_decode_with_bad_record(tmp_path):
    good1 = (SEEDS / "seed_insert.json").read_bytes()
    bad = b'{"table":"GG.TCUSTORD", "op_type":"I" "pos":"1"}\n'
    good2 = (SEEDS / "seed_delete.json").read_bytes()
    path = tmp_path / "bad.json"
    path.write_bytes(good1 + bad + good2)
    result = run("decode", "--format", "goldengate-json", str(path))
    assert result.returncode == 1
    assert [json.loads(line)["op"] for line in result.stdout.splitlines()] == ["INSERT", "DELETE"]
    [error] = [json.loads(line) for line in result.stderr.splitlines()]
    assert set(error) == {"error", "source"}
    assert error["source"] == {"file": str(path), "offset": len(good1)}
    assert error["error"].startswith("invalid JSON at line 20 column 39: Expecting ',' delimiter")


def test_unknown_format_is_usage_error():
    result = run("decode", "--format", "no-such-format", str(SEEDS / "seed_insert.json"))
    assert result.returncode == 2
    assert "unknown format 'no-such-format'" in result.stderr and "goldengate-json" in result.stderr
    assert result.stdout == ""


def test_unknown_option_is_usage_error():
    result = run(
        "decode", "--format", "goldengate-json", "--option", "fieldDelimiter=|", str(SEEDS / "seed_insert.json")
    )
    assert result.returncode == 2
    assert "unknown option(s) fieldDelimiter" in result.stderr
    assert result.stdout == ""


def test_option_without_value_is_usage_error():
    result = run("decode", "--format", "goldengate-json", "--option", "prettyPrint", str(SEEDS / "seed_insert.json"))
    assert result.returncode == 2 and "not KEY=VALUE" in result.stderr


def test_missing_file_is_usage_error(tmp_path):
    result = run("decode", "--format", "goldengate-json", str(tmp_path / "absent.json"))
    assert result.returncode == 2 and "no such file" in result.stderr


def test_no_arguments_is_usage_error():
    assert run().returncode == 2
    result = run("decode")
    assert result.returncode == 2 and "usage:" in result.stderr
