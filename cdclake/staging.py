"""Staging landing files into a batch, each file exactly once.

A ledger (SQLite, one per source) records every staged file by its
landing-relative name and content hash. Claiming files and recording them is
one SQLite transaction, so a retried run re-finds the files it had claimed and
a concurrent run cannot claim them again. Copies are written before the claim
and the manifest last (write-then-rename): a crash at any point leaves either
nothing claimed or a claim that the retry of the same batch completes.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import time
from pathlib import Path, PurePosixPath

from cdclake.batch import Manifest, StagedFile, write_json_atomic

#: Files that writers leave while uploading; never staged.
_PARTIAL_SUFFIXES = (".tmp", ".part", ".partial", "._COPYING_", ".inprogress")


class StagingError(ValueError):
    pass


def _ledger(staging_root: Path) -> sqlite3.Connection:
    staging_root.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(staging_root / "ledger.db", timeout=60, isolation_level=None)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS staged (name TEXT NOT NULL, sha256 TEXT NOT NULL, size INTEGER NOT NULL,"
        " batch_id TEXT NOT NULL, staged_at REAL NOT NULL, PRIMARY KEY (name, sha256))"
    )
    return conn


def safe_relative(name: str) -> PurePosixPath:
    """A landing-relative name that cannot escape the staging folder."""
    rel = PurePosixPath(name.replace("\\", "/"))
    if rel.is_absolute() or not rel.parts or any(part in ("..", "") for part in rel.parts):
        raise StagingError(f"landing file name {name!r} is absolute or escapes the staging root")
    return rel


def list_landing(landing_dir: Path) -> list[str]:
    """Landing-relative names of complete files, in name order."""
    if not landing_dir.is_dir():
        return []
    names = []
    for path in landing_dir.rglob("*"):
        if not path.is_file() or path.name.startswith((".", "_")) or path.name.endswith(_PARTIAL_SUFFIXES):
            continue
        names.append(path.relative_to(landing_dir).as_posix())
    return sorted(names)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def stage_local(
    landing_dir: str | Path,
    staging_root: str | Path,
    manifest: Manifest,
) -> Manifest:
    """Stage new files of ``landing_dir`` into ``<staging_root>/<batch_id>``.

    ``manifest`` carries source, batch id, format and options; its ``files`` are
    filled in. Files already claimed by this batch id (a retry) are kept;
    files claimed by other batches are skipped.
    """
    landing_dir, staging_root = Path(landing_dir), Path(staging_root)
    batch_dir = staging_root / manifest.batch_id
    files_dir = batch_dir / "files"
    conn = _ledger(staging_root)
    claimed = {(name, sha): batch for name, sha, batch in conn.execute("SELECT name, sha256, batch_id FROM staged")}
    candidates: list[StagedFile] = []
    for name in list_landing(landing_dir):
        rel = safe_relative(name)
        src = landing_dir / rel
        sha = sha256_of(src)
        owner = claimed.get((name, sha))
        if owner is not None and owner != manifest.batch_id:
            continue
        dest = files_dir / rel
        if not dest.exists() or sha256_of(dest) != sha:
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.with_name(dest.name + ".staging")
            shutil.copyfile(src, tmp)
            tmp.replace(dest)
        candidates.append(StagedFile(name=name, path=str(dest), size=dest.stat().st_size, sha256=sha))

    staged: list[StagedFile] = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        for item in candidates:
            conn.execute(
                "INSERT OR IGNORE INTO staged (name, sha256, size, batch_id, staged_at) VALUES (?,?,?,?,?)",
                (item.name, item.sha256, item.size, manifest.batch_id, time.time()),
            )
            (owner,) = conn.execute(
                "SELECT batch_id FROM staged WHERE name=? AND sha256=?", (item.name, item.sha256)
            ).fetchone()
            if owner == manifest.batch_id:
                staged.append(item)
            else:  # a concurrent run claimed it first
                Path(item.path).unlink(missing_ok=True)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    finally:
        conn.close()
    manifest.files = staged
    write_json_atomic(batch_dir / "manifest.json", manifest.to_json())
    return manifest


def stage_files(paths: list[str | Path], staging_root: str | Path, manifest: Manifest) -> Manifest:
    """Stage explicitly named files (the local ``apply`` command); no ledger needed
    because the batch id is derived from the files' content."""
    batch_dir = Path(staging_root) / manifest.batch_id
    staged = []
    for index, path in enumerate(paths):
        src = Path(path)
        dest = batch_dir / "files" / f"{index:05d}-{src.name}"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        staged.append(StagedFile(name=str(path), path=str(dest), size=dest.stat().st_size, sha256=sha256_of(dest)))
    manifest.files = staged
    write_json_atomic(batch_dir / "manifest.json", manifest.to_json())
    return manifest


def content_batch_id(paths: list[str | Path], format_id: str, options: dict[str, str]) -> str:
    """Same files, format and options -> same batch id (re-applying is a no-op)."""
    digest = hashlib.sha256(format_id.encode())
    for key in sorted(options):
        digest.update(f"{key}={options[key]}".encode())
    for path in paths:
        digest.update(sha256_of(Path(path)).encode())
    return "apply-" + digest.hexdigest()[:20]
