"""The sources configuration: validated on load, errors name the source, the field and the problem."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cdclake.runtime.settings import REPO_ROOT
from cdclake.runtime.sources import ConfigError, load_sources


def write(tmp_path: Path, sources: dict) -> Path:
    path = tmp_path / "sources.yaml"
    path.write_text(yaml.safe_dump({"sources": sources}))
    return path


GOOD = {"format": "goldengate-json", "landing": "landing/gg"}


def test_full_source_loads_with_defaults_and_overrides(tmp_path):
    path = write(
        tmp_path,
        {
            "gg": GOOD,
            "s3src": {
                "format": "debezium-json",
                "landing": "s3://bucket/prefix/",
                "options": {"table": "inv.products"},
                "keys": {"inv.products": ["id"]},
                "namespace": "raw_inv",
                "schedule": "@hourly",
                "scd2": ["inv.products"],
                "schema_policy": "fail",
                "table_schema_policy": {"inv.products": "ignore"},
                "max_quarantined": 10,
                "aws_conn_id": "aws_landing",
                "health": {"max_lag": "90m", "max_quarantined_share": 0.01},
            },
        },
    )
    sources = load_sources(path)
    assert sources["gg"].schema_policy == "evolve" and sources["gg"].max_quarantined is None
    s3 = sources["s3src"]
    assert (s3.landing, s3.namespace, s3.schedule, s3.aws_conn_id) == (
        "s3://bucket/prefix/",
        "raw_inv",
        "@hourly",
        "aws_landing",
    )
    assert s3.table_schema_policy == {"inv.products": "ignore"} and s3.max_quarantined == 10
    assert (s3.health.max_lag_seconds, s3.health.max_quarantined_share) == (5400.0, 0.01)
    assert (sources["gg"].health.max_lag_seconds, sources["gg"].health.max_quarantined_share) == (86400.0, 0.0)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({**GOOD, "format": "nope"}, "field 'format' is 'nope'; expected one of"),
        ({**GOOD, "landing": ""}, "field 'landing' must be a folder path or s3:// URI"),
        ({**GOOD, "landing": "gs://bucket/x"}, "only local paths and s3:// URIs"),
        ({**GOOD, "landing": "s3://"}, "names no bucket"),
        ({**GOOD, "keys": {"T": []}}, "field 'keys' must map table name"),
        ({**GOOD, "scd2": "T"}, "field 'scd2' must be a list"),
        ({**GOOD, "schema_policy": "maybe"}, "field 'schema_policy' is 'maybe'; expected one of evolve, fail, ignore"),
        ({**GOOD, "table_schema_policy": {"T": "x"}}, "field 'table_schema_policy' must map"),
        ({**GOOD, "max_quarantined": -1}, "field 'max_quarantined' must be a whole number"),
        ({**GOOD, "health": {"max_lag": "soon"}}, "field 'health.max_lag' must be seconds > 0"),
        ({**GOOD, "health": {"max_lag": 0}}, "field 'health.max_lag' must be seconds > 0"),
        ({**GOOD, "health": {"max_quarantined_share": 2}}, "'health.max_quarantined_share' must be a number from 0"),
        ({**GOOD, "health": {"freshness": 1}}, "field 'health' must be a mapping with max_lag"),
        ({**GOOD, "schedule": 5}, "field 'schedule' must be a cron expression"),
        ({**GOOD, "namespace": "a.b; drop"}, "field 'namespace' must be letters"),
        ({**GOOD, "options": {"noSuchOption": "x"}}, "field 'options'"),
        ({**GOOD, "colour": "blue"}, "unknown field(s) colour"),
    ],
)
def test_bad_field_is_named_with_the_problem(tmp_path, body, message):
    with pytest.raises(ConfigError) as err:
        load_sources(write(tmp_path, {"src": body}))
    assert "source 'src'" in str(err.value) and message in str(err.value)


def test_file_level_errors(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_sources(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("sources: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_sources(bad)
    empty = tmp_path / "empty.yaml"
    empty.write_text("other: 1\n")
    with pytest.raises(ConfigError, match="top-level 'sources' must be a non-empty mapping"):
        load_sources(empty)


def test_shipped_configs_are_valid():
    assert load_sources(REPO_ROOT / "config" / "sources.yaml")
    assert load_sources(REPO_ROOT / "config" / "sources.compose.yaml")
