"""The sources configuration: one YAML file, validated on load.

A bad file must fail DAG parsing with a message that names the source, the
field and what is wrong, so an operator fixes it from the Airflow UI's import
error without reading code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cdclake.options import OptionError, Options
from cdclake.registry import format_ids, get_decoder
from cdclake.schema.evolution import DEFAULT_POLICY, POLICIES


class ConfigError(ValueError):
    pass


FIELDS = {
    "format",
    "landing",
    "options",
    "keys",
    "namespace",
    "schedule",
    "scd2",
    "schema_policy",
    "table_schema_policy",
    "max_quarantined",
    "aws_conn_id",
    "health",
}

#: Default health thresholds (``health:`` of a source): late after a day, quarantining on any record.
DEFAULT_MAX_LAG_SECONDS = 86_400.0
DEFAULT_MAX_QUARANTINED_SHARE = 0.0


@dataclass(frozen=True)
class HealthThresholds:
    """When the monitoring page and the ``cdc_health`` checks call a table late or quarantining.

    ``max_lag_seconds``: lag now (lag at the end of the last batch + time since) above this is late;
    also the deadline of an ingest run (queued to finished). ``max_quarantined_share``: quarantined /
    read records of the table's last batch above this is quarantining. A failed last run is failing.
    """

    max_lag_seconds: float = DEFAULT_MAX_LAG_SECONDS
    max_quarantined_share: float = DEFAULT_MAX_QUARANTINED_SHARE


@dataclass(frozen=True)
class SourceConfig:
    name: str
    format: str
    landing: str
    options: dict[str, str] = field(default_factory=dict)
    keys: dict[str, list[str]] = field(default_factory=dict)
    namespace: str | None = None
    schedule: str | None = None
    scd2: list[str] = field(default_factory=list)
    schema_policy: str = "evolve"
    table_schema_policy: dict[str, str] = field(default_factory=dict)
    max_quarantined: int | None = None  # fail the run's report task above this many quarantined records
    aws_conn_id: str = "aws_default"  # Airflow connection for an s3:// landing (else environment credentials)
    health: HealthThresholds = field(default_factory=HealthThresholds)

    def landing_path(self, home: Path) -> Path:
        path = Path(self.landing)
        return path if path.is_absolute() else home / path


def load_sources(path: str | Path) -> dict[str, SourceConfig]:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError:
        raise ConfigError(f"sources config {path} does not exist (set CDCLAKE_SOURCES)") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"sources config {path} is not valid YAML: {exc}") from None
    raw_sources = data.get("sources")
    if not isinstance(raw_sources, dict) or not raw_sources:
        raise ConfigError(f"{path}: top-level 'sources' must be a non-empty mapping of source name -> settings")
    return {name: _source(path, str(name), body) for name, body in raw_sources.items()}


def _source(path: Path, name: str, body: Any) -> SourceConfig:
    where = f"{path}: source {name!r}"
    if not isinstance(body, dict):
        raise ConfigError(f"{where} must be a mapping")
    unknown = set(body) - FIELDS
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    fmt = body.get("format")
    if fmt not in format_ids():
        raise ConfigError(f"{where}: field 'format' is {fmt!r}; expected one of {', '.join(format_ids())}")
    landing = body.get("landing")
    if not isinstance(landing, str) or not landing:
        raise ConfigError(f"{where}: field 'landing' must be a folder path or s3:// URI")
    options = {str(k): str(v) for k, v in (body.get("options") or {}).items()}
    try:
        get_decoder(fmt, Options(options))
    except OptionError as exc:
        raise ConfigError(f"{where}: field 'options': {exc}") from None
    keys = body.get("keys") or {}
    if not isinstance(keys, dict) or not all(
        isinstance(v, list) and v and all(isinstance(c, str) for c in v) for v in keys.values()
    ):
        raise ConfigError(f"{where}: field 'keys' must map table name -> non-empty list of column names")
    scd2 = body.get("scd2") or []
    if not isinstance(scd2, list) or not all(isinstance(t, str) for t in scd2):
        raise ConfigError(f"{where}: field 'scd2' must be a list of table names (or [\"*\"] for all)")
    policy = body.get("schema_policy", DEFAULT_POLICY)
    if policy not in POLICIES:
        raise ConfigError(f"{where}: field 'schema_policy' is {policy!r}; expected one of {', '.join(POLICIES)}")
    table_policy = body.get("table_schema_policy") or {}
    if not isinstance(table_policy, dict) or any(v not in POLICIES for v in table_policy.values()):
        raise ConfigError(f"{where}: field 'table_schema_policy' must map table name -> one of {', '.join(POLICIES)}")
    max_quarantined = body.get("max_quarantined")
    if max_quarantined is not None and (not isinstance(max_quarantined, int) or max_quarantined < 0):
        raise ConfigError(f"{where}: field 'max_quarantined' must be a whole number >= 0 (or omitted: no limit)")
    landing_is_s3 = landing.startswith("s3://")
    if landing_is_s3 and len(landing) <= len("s3://"):
        raise ConfigError(f"{where}: field 'landing' {landing!r} names no bucket")
    if not landing_is_s3 and "://" in landing:
        raise ConfigError(f"{where}: field 'landing' {landing!r}: only local paths and s3:// URIs are supported")
    schedule = body.get("schedule")
    if schedule is not None and not isinstance(schedule, str):
        raise ConfigError(f"{where}: field 'schedule' must be a cron expression or preset like '@hourly' (or null)")
    namespace = body.get("namespace")
    if namespace is not None and (not isinstance(namespace, str) or not namespace.replace("_", "").isalnum()):
        raise ConfigError(f"{where}: field 'namespace' must be letters, digits and underscores")
    return SourceConfig(
        health=_health(where, body.get("health")),
        schema_policy=policy,
        table_schema_policy={str(k): str(v) for k, v in table_policy.items()},
        max_quarantined=max_quarantined,
        aws_conn_id=str(body.get("aws_conn_id") or "aws_default"),
        scd2=list(scd2),
        name=name,
        format=fmt,
        landing=landing,
        options=options,
        keys={str(k): list(v) for k, v in keys.items()},
        namespace=namespace,
        schedule=schedule,
    )


_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _health(where: str, body: Any) -> HealthThresholds:
    """``health: {max_lag: 2h, max_quarantined_share: 0.01}``; durations as seconds or ``90s/15m/2h/1d``."""
    if body is None:
        return HealthThresholds()
    if not isinstance(body, dict) or set(body) - {"max_lag", "max_quarantined_share"}:
        raise ConfigError(f"{where}: field 'health' must be a mapping with max_lag and/or max_quarantined_share")
    lag = body.get("max_lag", DEFAULT_MAX_LAG_SECONDS)
    if isinstance(lag, str) and lag[:-1].replace(".", "", 1).isdigit() and lag[-1:] in _DURATION_UNITS:
        lag = float(lag[:-1]) * _DURATION_UNITS[lag[-1]]
    if isinstance(lag, bool) or not isinstance(lag, int | float) or lag <= 0:
        raise ConfigError(f"{where}: field 'health.max_lag' must be seconds > 0 or a duration like 90m, 2h, 1d")
    share = body.get("max_quarantined_share", DEFAULT_MAX_QUARANTINED_SHARE)
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 1:
        raise ConfigError(f"{where}: field 'health.max_quarantined_share' must be a number from 0 to 1")
    return HealthThresholds(float(lag), float(share))
