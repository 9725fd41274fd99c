"""The corpus is complete: every format id has every case of issue 7 (or a reason it cannot),
the limits live in one place, and the command line treats hostile input as the job does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cdclake.formats import (
    _datahub,
    _gg_avro,
    _gg_common,
    debezium_json,
    goldengate_delimited,
    goldengate_json,
    goldengate_xml,
    kafka_connect,
    qlik_avro,
)
from cdclake.registry import format_ids
from cdclake.runtime import limits

from . import test_hostile_avro, test_hostile_json, test_hostile_text
from ._corpus import COMMON_CASES, MAPPED, NOT_APPLICABLE

ROOT = Path(__file__).parents[2]
DOC = ROOT / "docs" / "reliability.md"

#: Formats whose "truncated file" case is the cut sweep (test functions named after them).
SWEPT = {
    *test_hostile_json.PROFILES,
    "goldengate-delimited",
    "goldengate-xml",
    "datahub-tuple:csv",
    "goldengate-avro-row",
    "goldengate-avro-op",
    "qlik-avro",
}


def covered() -> dict[str, set[str]]:
    cases: dict[str, set[str]] = {}
    for label, case in test_hostile_json.ALL + test_hostile_avro.ALL:
        cases.setdefault(label, set()).add(case.name)
    for label, case, _ in test_hostile_text.ALL:
        cases.setdefault(label, set()).add(case.name)
    for label in SWEPT:
        cases.setdefault(label, set()).add("truncated-file")
    return cases


def test_every_format_has_every_case_or_a_reason() -> None:
    cases = covered()
    labels = set(format_ids()) | {"datahub-tuple:csv"}
    assert set(cases) == labels
    missing = [
        (label, name)
        for label in sorted(labels)
        for name in COMMON_CASES
        if name not in cases[label] and (label, name) not in NOT_APPLICABLE
    ]
    assert not missing, f"cases neither written nor marked not applicable: {missing}"
    overlap = [key for key in NOT_APPLICABLE if key[1] in cases.get(key[0], set())]
    assert not overlap, f"marked not applicable but tested: {overlap}"


def test_issue_specific_cases_exist() -> None:
    cases = covered()
    assert {"billion-laughs"} <= cases["goldengate-xml"]
    for label in ("goldengate-avro-row", "goldengate-avro-op", "qlik-avro"):
        assert {
            "corrupted-block",
            "wrong-sync-marker",
            "unknown-codec",
            "recursive-schema",
            "decompression-bomb",
        } <= cases[label], label
    assert "generic-wrapper-unknown-hash" in cases["goldengate-avro-row"] & cases["goldengate-avro-op"]
    assert "data-before-metadata" in cases["qlik-avro"]
    # XXE and ddlMeta have their own test functions
    assert hasattr(test_hostile_text, "test_xxe_never_reads_the_local_file")
    assert hasattr(test_hostile_json, "test_ddl_meta_java_payload_is_never_deserialized")


def test_mapped_cases_decode_instead_of_rejecting() -> None:
    by_key = {(label, c.name): c for label, c in test_hostile_json.ALL + test_hostile_avro.ALL}
    by_key |= {(label, c.name): c for label, c, _ in test_hostile_text.ALL}
    for key in MAPPED:
        assert key in by_key and by_key[key].reasons == [], key


def test_the_document_lists_the_matrix() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "## Hostile input" in text
    for label in sorted(set(format_ids()) | {"datahub-tuple:csv"}):
        assert f"`{label}`" in text, label
    for name in COMMON_CASES:
        assert name in text, name
    for name in dir(limits):
        if name.startswith("MAX_"):
            assert f"`{name}`" in text, f"limit {name} is not documented"


def test_limits_come_from_one_place() -> None:
    """Each decoder's limit names are the shared constants (tests patch the module names)."""
    for module in (goldengate_json, debezium_json, _datahub, _gg_avro, qlik_avro, goldengate_delimited, goldengate_xml):
        assert module.MAX_RECORD_BYTES == limits.MAX_RECORD_BYTES, module.__name__
    for module in (goldengate_json, debezium_json, _datahub, _gg_avro, qlik_avro, _gg_common):
        assert module.MAX_RAW_BYTES == limits.MAX_RAW_BYTES, module.__name__
    assert goldengate_json.MAX_DEPTH == debezium_json.MAX_DEPTH == _datahub.MAX_DEPTH == limits.MAX_JSON_DEPTH
    assert goldengate_xml.MAX_DEPTH == limits.MAX_XML_DEPTH
    assert _gg_avro.MAX_BLOCK_BYTES == qlik_avro.MAX_BLOCK_BYTES == limits.MAX_BLOCK_BYTES
    assert _gg_avro.MAX_TYPE_DEPTH == limits.MAX_AVRO_TYPE_DEPTH
    assert qlik_avro.MAX_TYPE_DEPTH == limits.MAX_QLIK_TYPE_DEPTH
    assert kafka_connect.MAX_DECIMAL_BYTES == limits.MAX_DECIMAL_BYTES
    assert kafka_connect.MAX_DECIMAL_CHARS == limits.MAX_DECIMAL_CHARS


def test_command_line_exit_codes_on_hostile_input(tmp_path: Path) -> None:
    """``decode`` prints good events, one JSON line per rejection, and exits 1 (not a traceback)."""
    bomb = tmp_path / "bomb.xml"
    bomb.write_bytes(test_hostile_text.xml(1) + test_hostile_text.BILLION_LAUGHS + test_hostile_text.xml(3))
    empty = tmp_path / "empty.xml"
    empty.write_bytes(b"")
    result = subprocess.run(
        [sys.executable, "-m", "cdclake", "decode", "--format", "goldengate-xml", str(empty), str(bomb)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["after"]["ID"] for e in events if e["op"] == "INSERT"] == ["1", "3"]
    [rejected] = [json.loads(line) for line in result.stderr.splitlines()]
    assert "entity expansion" in rejected["error"] and rejected["source"]["file"] == str(bomb)
