"""The staging batch: one folder per run of a source, with a manifest.

Layout (every step writes only inside its own sub-folder and overwrites it on
retry, so any task can be re-run)::

    <staging>/<source>/<batch_id>/
        manifest.json        files of the batch (name, size, sha256), format, options
        files/               the staged copies of the landing files (<name>.staged.zst: seekable zstd)
        decoded/kind=event/table=T/  canonical events per table, in the change log's files (Parquet)  <- decode job
        decoded/_survey/     each decode task's survey of its events (JSON)  <- decode job
        decoded/kind=rejected/ quarantined records (Parquet)  <- decode job
        changelog/table=T/   row events per table (Parquet; decode's files, linked)  <- normalize job
        quarantine/<step>/   records rejected after decoding   <- normalize, compact
        tables.json          per table: identifier, keys, columns and types
        reports/<step>.json  counts of every step
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

_SAFE_ID = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_batch_id(text: str) -> str:
    """A batch id usable as a folder name (Airflow run ids contain ':' and '+')."""
    return _SAFE_ID.sub("_", text).strip("._") or "batch"


@dataclass
class StagedFile:
    name: str  # landing-relative name, shown in quarantine reasons and lineage
    path: str  # staged copy
    size: int
    sha256: str
    etag: str | None = None  # S3 ETag of the staged object version (None for local files)


@dataclass
class Manifest:
    source: str
    batch_id: str
    format: str
    options: dict[str, str]
    files: list[StagedFile] = field(default_factory=list)
    keys: dict[str, list[str]] = field(default_factory=dict)
    namespace: str | None = None
    scd2: list[str] = field(default_factory=list)  # tables (or "*") that keep SCD2 history
    rejected: list[dict[str, str]] = field(default_factory=list)  # landing keys refused by staging: key, reason
    schema_policy: str = "evolve"  # evolve | fail | ignore (cdclake.schema.evolution)
    table_policies: dict[str, str] = field(default_factory=dict)  # per source table overrides

    def policy_for(self, table: str) -> str:
        return self.table_policies.get(table, self.schema_policy)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Manifest:
        data = dict(data)
        data["files"] = [StagedFile(**f) for f in data.get("files", [])]
        return cls(**data)


def write_json_atomic(path: Path, payload: Any) -> None:
    """Write then rename: a reader never sees half a file, a crash leaves the old one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(payload if isinstance(payload, str) else json.dumps(payload, indent=2, sort_keys=True, default=str))
    os.replace(tmp, path)


def read_manifest(batch_dir: str | Path) -> Manifest:
    return Manifest.from_dict(json.loads((Path(batch_dir) / "manifest.json").read_text()))


def write_report(batch_dir: str | Path, step: str, report: dict[str, Any]) -> None:
    write_json_atomic(Path(batch_dir) / "reports" / f"{step}.json", report)


def read_report(batch_dir: str | Path, step: str) -> dict[str, Any] | None:
    path = Path(batch_dir) / "reports" / f"{step}.json"
    return json.loads(path.read_text()) if path.exists() else None
