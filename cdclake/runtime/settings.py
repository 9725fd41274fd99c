"""Runtime settings in one typed place (environment first, then defaults).

The embedded defaults keep everything under ``<repo>/var``: landing folders,
staging batches, the Iceberg warehouse with its SQLite catalog, and Airflow's
home, so that ``make demo`` works on a fresh clone with no configuration.

At scale (docker-compose.yaml) the warehouse may be an ``s3://`` / ``s3a://``
URI and the catalog a PostgreSQL database (``CDCLAKE_CATALOG_URI``); S3
endpoint and credentials then come from the usual AWS environment variables.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

REPO_ROOT = Path(__file__).resolve().parents[2]

#: Name of the Iceberg catalog inside Spark and pyiceberg (both must agree).
CATALOG_NAME = "lake"

#: Warehouse URI schemes served by Iceberg's S3FileIO (Spark) and pyarrow's S3 filesystem (pyiceberg).
S3_SCHEMES = ("s3", "s3a", "s3n")

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_uri(location: str | Path) -> bool:
    """True for ``scheme://...`` locations (S3), false for local paths."""
    return isinstance(location, str) and bool(_URI.match(location))


def is_s3(location: str | Path) -> bool:
    return is_uri(location) and urlsplit(str(location)).scheme.lower() in S3_SCHEMES


def warehouse_location(value: str | Path) -> Path | str:
    """A local warehouse as a resolved Path; an S3 URI kept as given (without a trailing slash)."""
    if is_uri(value):
        if not is_s3(value):
            raise ValueError(f"warehouse {value!r}: only local folders and s3:// / s3a:// URIs are supported")
        return str(value).rstrip("/")
    return Path(value).resolve()


@dataclass(frozen=True)
class CatalogSettings:
    """Where the Iceberg JDBC catalog lives and how S3 is reached; every field comes from the environment.

    ``uri`` None means the embedded default: a SQLite file ``catalog.db`` inside a local warehouse.
    Secrets (``password``, a SQLAlchemy URI that may embed one) are excluded from ``repr``.
    """

    uri: str | None = None
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    sqlalchemy_uri: str | None = field(default=None, repr=False)
    s3_endpoint: str | None = None
    s3_region: str | None = None
    s3_path_style: bool = True

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> CatalogSettings:
        env = dict(os.environ if env is None else env)
        endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or None
        return cls(
            uri=env.get("CDCLAKE_CATALOG_URI") or None,
            user=env.get("CDCLAKE_CATALOG_USER") or None,
            password=env.get("CDCLAKE_CATALOG_PASSWORD") or None,
            sqlalchemy_uri=env.get("CDCLAKE_CATALOG_SQLALCHEMY_URI") or None,
            s3_endpoint=endpoint,
            # A custom endpoint (MinIO) still needs a region: the SDKs would otherwise look it up on AWS.
            s3_region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or ("us-east-1" if endpoint else None),
            s3_path_style=env.get("CDCLAKE_S3_PATH_STYLE", "true").strip().lower() not in ("0", "false", "no"),
        )

    def jdbc_uri(self, warehouse: str | Path) -> str:
        """The catalog's JDBC URI: ``CDCLAKE_CATALOG_URI`` or the SQLite file in a local warehouse."""
        if self.uri:
            return self.uri
        if is_uri(warehouse):
            raise ValueError(
                f"warehouse {warehouse} is not a local folder: set CDCLAKE_CATALOG_URI (e.g. a PostgreSQL JDBC URI)"
            )
        return f"jdbc:sqlite:{Path(warehouse) / 'catalog.db'}"

    def sqlalchemy_url(self, warehouse: str | Path) -> str:
        """The same catalog for pyiceberg's SqlCatalog (an SQLAlchemy URL, credentials included)."""
        if self.sqlalchemy_uri:
            return self.sqlalchemy_uri
        return jdbc_to_sqlalchemy(self.jdbc_uri(warehouse), self.user, self.password)


def jdbc_to_sqlalchemy(jdbc_uri: str, user: str | None = None, password: str | None = None) -> str:
    """``jdbc:postgresql://host[:port]/db`` -> ``postgresql+psycopg2://user:password@host:port/db``;
    ``jdbc:sqlite:PATH`` -> ``sqlite:///PATH``. Anything else needs ``CDCLAKE_CATALOG_SQLALCHEMY_URI``."""
    from sqlalchemy.engine import URL

    if jdbc_uri.startswith("jdbc:sqlite:"):
        return "sqlite:///" + jdbc_uri.removeprefix("jdbc:sqlite:")
    if jdbc_uri.startswith("jdbc:postgresql://"):
        parts = urlsplit(jdbc_uri.removeprefix("jdbc:"))
        if not parts.query and not parts.fragment and parts.hostname and parts.path.strip("/"):
            url = URL.create(
                "postgresql+psycopg2",
                username=user,
                password=password,
                host=parts.hostname,
                port=parts.port,
                database=parts.path.strip("/"),
            )
            return url.render_as_string(hide_password=False)
    raise ValueError(
        "cannot derive an SQLAlchemy URI from CDCLAKE_CATALOG_URI (only jdbc:postgresql://host[:port]/db"
        " without parameters, and jdbc:sqlite:PATH): set CDCLAKE_CATALOG_SQLALCHEMY_URI"
    )


def _jvm_archive(env: dict[str, str]) -> Path | None:
    """``CDCLAKE_JVM_ARCHIVE``: the archive's path, ``off`` for none; default ``<jars>/spark-driver.jsa``."""
    value = env.get("CDCLAKE_JVM_ARCHIVE")
    if value is not None and value.strip().lower() in ("", "0", "off", "false", "no"):
        return None
    default = Path(env.get("CDCLAKE_JARS", REPO_ROOT / ".jars")) / "spark-driver.jsa"
    return Path(value or default).resolve()


_MEMORY = re.compile(r"^[1-9][0-9]*[kmgt]?$", re.IGNORECASE)


def _driver_memory(value: str) -> str | None:
    """``CDCLAKE_DRIVER_MEMORY``: a JVM size such as ``4g`` or ``2048m``; ``spark`` (or empty): Spark decides."""
    value = value.strip()
    if value.lower() in ("", "spark", "default"):
        return None
    if not _MEMORY.match(value):
        raise ValueError(f"CDCLAKE_DRIVER_MEMORY={value!r}: expected a JVM size such as 4g or 2048m, or 'spark'")
    return value.lower()


#: The bulk path's byte bound per share of the driver's budget, unset in the environment: at least this ...
BULK_BYTES_FLOOR = 192 * 2**20
#: ... at most this (above it the 1M batch's merge gained nothing more: docs/decisions.md, "Takes without joining
#: chunks; the bulk budget follows the memory available") ...
BULK_BYTES_CAP = 384 * 2**20
#: ... and between, this fraction of the memory available: the budget's four shares are then a twelfth of it,
#: and the driver's peak (about three times its budget in events) a quarter.
BULK_BYTES_PART = 48


def bulk_bytes_for(available: int | None) -> int:
    """The bulk path's byte bound per share for a driver with ``available`` bytes of memory free to take (None:
    not known, the floor)."""
    if available is None:
        return BULK_BYTES_FLOOR
    return min(BULK_BYTES_CAP, max(BULK_BYTES_FLOOR, available // BULK_BYTES_PART))


def _available_memory() -> int | None:
    """The memory the system can give without swapping (``MemAvailable``), None where psutil cannot tell."""
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except (ImportError, OSError, RuntimeError):
        return None


@dataclass(frozen=True)
class Settings:
    home: Path
    landing: Path
    staging: Path
    warehouse: Path | str  # a local folder, or an s3:// / s3a:// URI
    jars_dir: Path
    sources_file: Path
    buckets: int
    catalog: CatalogSettings = field(default_factory=CatalogSettings)
    #: Tables one compact task (one Spark application) takes; a batch with more is split in groups.
    compact_group_size: int = 200
    #: Tables compacted at once inside one application (each in its own Spark session).
    compact_threads: int = 4
    #: A table's batch up to this many events (and logged events / current rows read by its fold) is
    #: routed and folded in the driver over Arrow; above, on Python workers (0: always on workers).
    driver_fold_rows: int = 5_000
    #: ... and up to this many when the native fold can take it (keys without key changes folded over
    #: Arrow and numpy in the driver, ``compaction/arrow_fold.py``): the bulk path, no Spark job per step.
    driver_bulk_rows: int = 200_000
    #: ... and at most this many uncompressed bytes of its events (their Parquet footers say), so wide rows
    #: do not slip under the count; each of ``compact_threads`` tables may hold its share at once. 192 MiB:
    #: 128k Kafka Connect events of about 1.5 KB (docs/decisions.md, "A share's bytes fit Kafka Connect events");
    #: unset in the environment, :func:`bulk_bytes_for` the memory available (192-384 MiB).
    driver_bulk_bytes: int = BULK_BYTES_FLOOR
    #: A batch whose staged files add up to at most this many bytes is decoded in the driver, by the same
    #: task function the Spark job runs, with no job and no Python worker to start (0: always a Spark job).
    driver_decode_bytes: int = 4 * 2**20
    #: In local mode a larger batch is decoded by a pool of local Python processes, one per core, with the
    #: Spark job's task function (off: a Spark job, as on a cluster, where its tasks spread over executors).
    local_decode: bool = True
    #: A batch's decoded events (none carried in from an earlier batch, no transaction marks) are
    #: normalized in the driver over Arrow, with no Spark job, in chunks of at most this many events
    #: (0: always Spark) ...
    driver_normalize_rows: int = 150_000
    #: ... and at most this many uncompressed bytes (their Parquet footers say, before anything is read), so
    #: wide rows do not slip under the event count: the Python driver peaks at about 7x this
    #: (100k Debezium JSON events, 129 MiB: 73 -> 964 MiB; GoldenGate JSON, 51 MiB: 73 -> 603 MiB) ...
    driver_normalize_bytes: int = 144 * 2**20
    #: ... up to this many events in all; a larger batch is normalized by Spark, which a cluster spreads
    #: over its executors (docs/decisions.md, "A large batch normalizes in the driver, chunk by chunk").
    driver_normalize_max_rows: int = 2_000_000
    #: Keys without key changes fold by the Arrow fold's closed form, in the driver and on the workers
    #: (docs/decisions/0074); off: every key through the Python reference fold (``cdclake.merge``).
    native_fold: bool = True
    #: Formats with a columnar path (GoldenGate JSON) read the spans in its shape as Arrow columns in the decode
    #: task (docs/decisions.md, "GoldenGate JSON read as columns"); off: every record through ``Decoder.decode``.
    columnar_decode: bool = True
    #: In-order keys of a driver-folded batch fold onto their current rows without reading their change log
    #: (docs/decisions.md, "Row state"); off: every key refolds from its log.
    row_state: bool = True
    #: A driver-folded batch writes its commits' files from the driver and commits them through Iceberg's Java
    #: API: the change-log append, and the merge-on-read rows and position deletes as one ``RowDelta``
    #: (docs/decisions.md, "The driver fold commits its own files"); off: Spark's append and ``MERGE INTO``.
    driver_commits: bool = True
    #: Attach Airflow deadline alerts to the ingest DAGs (off: Airflow 3.3.2 cannot clear a task of a DAG
    #: that has one, a 500 from clearTaskInstances, nor `dags test` it; cdc_health checks freshness anyway).
    deadline_alerts: bool = False
    #: The monitoring index the report task writes and the page reads: a folder or s3:// URI.
    monitor_index: Path | str = ""
    #: The spark-submit driver's class-data-sharing archive (``cdclake.runtime.jvm_archive``; None: not used).
    jvm_archive: Path | None = None
    #: An ingest run whose staged files add up to at most this many bytes runs its Spark steps with the
    #: quick (C1-only) JIT: their driver JVMs are short-lived (``cdclake.runtime.jvm_archive``; 0: never).
    quick_jit_max_bytes: int = 64 * 2**20
    #: Heap of each Spark step's driver JVM (``spark.driver.memory``; in local mode it also runs the
    #: tasks). Spark's own default of 1 GiB runs out on a 1M-change batch (docs/decisions.md, "The
    #: driver's heap"); None (``CDCLAKE_DRIVER_MEMORY=spark``) leaves it to Spark's or the cluster's config.
    driver_memory: str | None = "4g"

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        home = Path(env.get("CDCLAKE_HOME", REPO_ROOT / "var")).resolve()
        staging = Path(env.get("CDCLAKE_STAGING", home / "staging")).resolve()
        index = env.get("CDCLAKE_MONITOR_INDEX") or staging / "_monitor"
        return cls(
            home=home,
            landing=Path(env.get("CDCLAKE_LANDING", home / "landing")).resolve(),
            staging=staging,
            warehouse=warehouse_location(env.get("CDCLAKE_WAREHOUSE", home / "warehouse")),
            jars_dir=Path(env.get("CDCLAKE_JARS", REPO_ROOT / ".jars")).resolve(),
            sources_file=Path(env.get("CDCLAKE_SOURCES", REPO_ROOT / "config" / "sources.yaml")).resolve(),
            buckets=int(env.get("CDCLAKE_BUCKETS", "16")),
            catalog=CatalogSettings.from_env(env),
            compact_group_size=max(1, int(env.get("CDCLAKE_COMPACT_GROUP_SIZE", "200"))),
            compact_threads=max(1, int(env.get("CDCLAKE_COMPACT_THREADS", "4"))),
            driver_fold_rows=max(0, int(env.get("CDCLAKE_DRIVER_FOLD_ROWS", "5000"))),
            driver_bulk_rows=max(0, int(env.get("CDCLAKE_DRIVER_BULK_ROWS", "200000"))),
            driver_bulk_bytes=(
                max(0, int(env["CDCLAKE_DRIVER_BULK_BYTES"]))
                if env.get("CDCLAKE_DRIVER_BULK_BYTES", "").strip()
                else bulk_bytes_for(_available_memory())
            ),
            driver_decode_bytes=max(0, int(env.get("CDCLAKE_DRIVER_DECODE_BYTES", str(4 * 2**20)))),
            local_decode=env.get("CDCLAKE_LOCAL_DECODE", "1").strip().lower() not in ("0", "false", "no", "off"),
            driver_normalize_rows=max(0, int(env.get("CDCLAKE_DRIVER_NORMALIZE_ROWS", "150000"))),
            driver_normalize_bytes=max(0, int(env.get("CDCLAKE_DRIVER_NORMALIZE_BYTES", str(144 * 2**20)))),
            driver_normalize_max_rows=max(0, int(env.get("CDCLAKE_DRIVER_NORMALIZE_MAX_ROWS", "2000000"))),
            native_fold=env.get("CDCLAKE_NATIVE_FOLD", "1").strip().lower() not in ("0", "false", "no", "off"),
            columnar_decode=env.get("CDCLAKE_COLUMNAR_DECODE", "1").strip().lower() not in ("0", "false", "no", "off"),
            row_state=env.get("CDCLAKE_ROW_STATE", "1").strip().lower() not in ("0", "false", "no", "off"),
            driver_commits=env.get("CDCLAKE_DRIVER_COMMITS", "1").strip().lower() not in ("0", "false", "no", "off"),
            deadline_alerts=env.get("CDCLAKE_DEADLINE_ALERTS", "0").strip().lower() in ("1", "true", "yes", "on"),
            monitor_index=str(index) if is_uri(str(index)) else Path(index).resolve(),
            jvm_archive=_jvm_archive(env),
            quick_jit_max_bytes=max(0, int(env.get("CDCLAKE_QUICK_JIT_MAX_BYTES", str(64 * 2**20)))),
            driver_memory=_driver_memory(env.get("CDCLAKE_DRIVER_MEMORY", "4g")),
        )

    def jars(self) -> list[str]:
        """The pinned JVM jars fetched by ``make setup`` (see jars/pom.xml)."""
        if not self.jars_dir.is_dir():
            return []
        return sorted(str(p) for p in self.jars_dir.glob("*.jar"))
