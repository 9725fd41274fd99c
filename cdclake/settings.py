"""Runtime settings in one typed place (environment first, then defaults).

The embedded defaults keep everything under ``<repo>/var``: landing folders,
staging batches, the Iceberg warehouse with its SQLite catalog, and Airflow's
home, so that ``make demo`` works on a fresh clone with no configuration.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

#: Name of the Iceberg catalog inside Spark and pyiceberg (both must agree).
CATALOG_NAME = "lake"


@dataclass(frozen=True)
class Settings:
    home: Path
    landing: Path
    staging: Path
    warehouse: Path
    jars_dir: Path
    sources_file: Path
    buckets: int

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        home = Path(env.get("CDCLAKE_HOME", REPO_ROOT / "var")).resolve()
        return cls(
            home=home,
            landing=Path(env.get("CDCLAKE_LANDING", home / "landing")).resolve(),
            staging=Path(env.get("CDCLAKE_STAGING", home / "staging")).resolve(),
            warehouse=Path(env.get("CDCLAKE_WAREHOUSE", home / "warehouse")).resolve(),
            jars_dir=Path(env.get("CDCLAKE_JARS", REPO_ROOT / ".jars")).resolve(),
            sources_file=Path(env.get("CDCLAKE_SOURCES", REPO_ROOT / "config" / "sources.yaml")).resolve(),
            buckets=int(env.get("CDCLAKE_BUCKETS", "16")),
        )

    def jars(self) -> list[str]:
        """The pinned JVM jars fetched by ``make setup`` (see jars/pom.xml)."""
        if not self.jars_dir.is_dir():
            return []
        return sorted(str(p) for p in self.jars_dir.glob("*.jar"))
