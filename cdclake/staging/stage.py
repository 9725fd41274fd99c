"""Staging landing files (a local folder or ``s3://bucket/prefix``) into a batch, each file exactly once.

A ledger (SQLite ``<staging_root>/ledger.db``, one per source) holds a *claim* per object version: S3 objects
by (key, ETag), local files by (name, sha256); each claim names the batch that owns it. ``stage_source`` runs,
under an exclusive per-batch file lock (``<staging_root>/.locks/<batch_id>.lock``, released by the OS when
the process dies), in this order:

1. ``<batch>/manifest.json`` exists -> return it: the batch is complete (it is written last, atomically), so
   a retry, re-run or backfill of the same interval stages nothing twice and adds nothing to it.
2. List complete objects modified before ``interval_end``. In one ``BEGIN IMMEDIATE`` transaction claim the
   unclaimed ones; objects owned by another batch are skipped (unless that batch is *abandoned*, below).
3. Copy every object this batch owns -- including claims of an earlier, crashed attempt -- to a temp file
   (hashing it) and rename it into ``<batch>/files/``; then record its sha256 and size on the claim. A copy is
   compressed in zstd's seekable format (``<name>.staged.zst``, ``staging.seekable_zstd``): 15-33x smaller for
   CDC JSON, decode still reads any piece of it by offset, and ``zstd -d`` reads it back.
4. Write the manifest from the claims (atomic rename), then mark the batch ``sealed`` in the ledger.

Why claim before copy: a concurrent run cannot claim the same object (the primary key and the serialised
transaction give every object version one owner), so objects are downloaded once. Crash repair by the retry
of the same batch id: before/inside the claim -> rolled back, nothing owned; after the claim or mid-copy ->
the claims still name this batch, so the retry copies them (temp files never have the final name); after a
copy but before its ledger update -> copied again, same bytes, same path; after the ledger update -> the
copy is verified by its hash and kept; after the manifest but before the seal -> the manifest is returned
and the seal completed. A claimed object that disappeared or changed before its copy (S3 ``If-Match`` fails,
a local hash differs) is released: the new version is a new (key, version) that a later run claims.

Abandoned batches: if a crashed batch never comes back (its retries exhausted), its claims would hide
objects forever. A batch is abandoned when it is ``open`` in the ledger, has no manifest and nobody holds its
lock (with ``max_active_runs=1`` another run only starts once its run has failed); the next run takes over its
claims for the objects it lists, so nothing is missed, and a late retry of the abandoned batch finds them
owned by another batch and skips them, so nothing is staged twice. A manifest without the seal (a crash in
between) counts as complete: that batch is sealed, never taken over.

Rejected keys (``..``, absolute, empty parts, NUL, backslashes) are claimed too, never copied, and reported
once in ``manifest.rejected`` of the batch that met them. Credentials never appear in logs, exceptions,
manifests or the ledger: only bucket, prefix and key names are logged.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import logging
import os
import sqlite3
import tempfile
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, Protocol
from urllib.parse import urlsplit

from cdclake.runtime.faults import fault_point
from cdclake.staging import seekable_zstd
from cdclake.staging.batch import Manifest, StagedFile, read_manifest, safe_batch_id, write_json_atomic
from cdclake.staging.reading import STAGED_SUFFIX, open_staged

log = logging.getLogger(__name__)

#: Files that writers leave while uploading; never staged.
_PARTIAL_SUFFIXES = (".tmp", ".part", ".partial", "._COPYING_", ".inprogress")
#: Run types whose batch id is derived from the data interval (see ``batch_id_for_run``).
_INTERVAL_RUN_TYPES = frozenset({"scheduled", "backfill"})
#: How long a run waits for another process staging the same batch (a zombie of a retried task).
LOCK_TIMEOUT_S = 900.0
_CHUNK = 1 << 20
#: Named files (``stage_files``) copied side by side, and a local landing's files hashed side by side when listed:
#: sha256 and zstd release the GIL (plain copies: the 100k Debezium bench's 507 MB staged in 0.31-0.35 s against
#: 0.57-1.35 s one file at a time). A landing's claims are still fetched one at a time (each compressed on two
#: threads): the crash tests pin which claim a failed fetch leaves unrecorded.
COPY_THREADS = 4


class StagingError(ValueError):
    pass


class _Gone(Exception):
    """The claimed object version no longer exists (deleted or overwritten since it was listed)."""


# --------------------------------------------------------------------------- names and hashes


def safe_relative(name: str) -> PurePosixPath:
    """A landing-relative name that cannot escape the staging folder nor collide with another name.

    Parts are split by hand because ``PurePosixPath`` silently folds ``a//b`` and ``a/./b`` into ``a/b``
    (two keys, one file). Backslashes are refused rather than translated for the same reason.
    """
    problem = None
    if not name:
        problem = "is empty"
    elif "\x00" in name:
        problem = "contains NUL"
    elif "\\" in name:
        problem = "contains a backslash"
    elif name.startswith("/"):
        problem = "is absolute"
    elif "" in name.split("/"):
        problem = "has an empty part"
    elif ".." in name.split("/"):
        problem = "has a '..' part"
    elif "." in name.split("/"):
        problem = "has a '.' part"
    if problem:
        raise StagingError(f"landing key {name!r} {problem}: refused, it could escape the staging root or collide")
    return PurePosixPath(name)


def _skipped(name: str) -> bool:
    """Directory markers, hidden/underscore files and partial uploads are not landing files."""
    base = name.rsplit("/", 1)[-1]
    if name.endswith("/") or base.endswith(_PARTIAL_SUFFIXES):
        return True
    return base.startswith((".", "_")) and base not in (".", "..")


def list_landing(landing_dir: Path) -> list[str]:
    """Landing-relative names of complete files, in name order."""
    landing_dir = Path(landing_dir)
    if not landing_dir.is_dir():
        return []
    names = []
    for path in landing_dir.rglob("*"):
        if path.is_file() and not _skipped(path.relative_to(landing_dir).as_posix()):
            names.append(path.relative_to(landing_dir).as_posix())
    return sorted(names)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _utc(value: datetime | str) -> datetime:
    value = datetime.fromisoformat(value) if isinstance(value, str) else value
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def batch_id_for_run(
    run_id: str,
    data_interval_start: datetime | str | None,
    data_interval_end: datetime | str | None,
    run_type: Any,
) -> str:
    """Scheduled and backfill runs of one interval share a batch id (so a retry, re-run or backfill of an
    interval reuses its batch instead of staging new files into a second one); other runs use the run id."""
    kind = str(getattr(run_type, "value", run_type) or "").lower()
    if kind in _INTERVAL_RUN_TYPES and data_interval_start is not None and data_interval_end is not None:

        def stamp(value: datetime | str) -> str:
            moment = _utc(value)
            return moment.strftime("%Y%m%dT%H%M%S") + (f".{moment.microsecond:06d}" if moment.microsecond else "")

        return f"interval_{stamp(data_interval_start)}_{stamp(data_interval_end)}"
    return safe_batch_id(run_id)


# --------------------------------------------------------------------------- landings


@dataclass(frozen=True)
class _Candidate:
    key: str  # ledger key: full S3 object key, or the local landing-relative name
    name: str  # relative to the landing folder / prefix
    version: str  # ETag (S3) or sha256 (local)
    rejected: str | None = None


class _Landing(Protocol):
    etags: bool

    def describe(self) -> str: ...

    def list(self, interval_end: datetime | None) -> list[_Candidate]: ...

    def chunks(self, key: str, version: str) -> Iterator[bytes]: ...


def _candidate(key: str, name: str, version: str) -> _Candidate:
    try:
        safe_relative(name)
    except StagingError as exc:
        return _Candidate(key, name, version, rejected=str(exc))
    return _Candidate(key, name, version)


class _LocalLanding:
    etags = False

    def __init__(self, root: Path) -> None:
        self.root = root

    def describe(self) -> str:
        return str(self.root)

    def list(self, interval_end: datetime | None) -> list[_Candidate]:
        """The complete files, each versioned by its content's sha256, hashed side by side (sha256 releases the
        GIL: one thread hashes 1.8 GB/s here, and a large landing was hashed file after file)."""

        def version(name: str) -> _Candidate | None:
            path = self.root / name
            try:
                if interval_end is not None and datetime.fromtimestamp(path.stat().st_mtime, UTC) >= interval_end:
                    return None
                return _candidate(name, name, sha256_of(path))
            except FileNotFoundError:  # removed while listing: nothing to stage
                return None

        with ThreadPoolExecutor(max_workers=COPY_THREADS) as pool:  # in order
            return [c for c in pool.map(version, list_landing(self.root)) if c is not None]

    def chunks(self, key: str, version: str) -> Iterator[bytes]:
        try:
            handle = open(self.root / key, "rb")  # closed by the ``with`` below
        except (FileNotFoundError, NotADirectoryError):
            raise _Gone(key) from None
        with handle:
            yield from iter(lambda: handle.read(_CHUNK), b"")


class _S3Landing:
    etags = True

    def __init__(self, client: Any, url: str) -> None:
        parts = urlsplit(url)
        if not parts.netloc:
            raise StagingError(f"landing {url!r} names no bucket (expected s3://bucket/prefix)")
        self.client, self.bucket = client, parts.netloc
        prefix = parts.path.lstrip("/")
        self.prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"

    def describe(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"

    def list(self, interval_end: datetime | None) -> list[_Candidate]:
        out = []
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self.prefix):
            for obj in page.get("Contents", []):
                key = obj["Key"]
                name = key[len(self.prefix) :]
                if _skipped(name) or (interval_end is not None and _utc(obj["LastModified"]) >= interval_end):
                    continue
                out.append(_candidate(key, name, obj["ETag"].strip('"')))
        return sorted(out, key=lambda c: c.key)

    def chunks(self, key: str, version: str) -> Iterator[bytes]:
        from botocore.exceptions import ClientError

        try:
            response = self.client.get_object(Bucket=self.bucket, Key=key, IfMatch=f'"{version}"')
        except ClientError as exc:
            error = exc.response.get("Error", {})
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if error.get("Code") in ("NoSuchKey", "PreconditionFailed", "404", "412") or status in (404, 412):
                raise _Gone(key) from None
            raise
        body = response["Body"]
        try:
            yield from body.iter_chunks(_CHUNK)
        finally:
            body.close()


def _open_landing(landing: str | Path, s3_client: Any) -> _Landing:
    text = str(landing)
    if text.startswith(("s3://", "s3a://")):
        return _S3Landing(s3_client if s3_client is not None else s3_client_from_connection(), text)
    return _LocalLanding(Path(landing))


def _redacted(url: str | None) -> str | None:
    """An endpoint URL without user info, for logs."""
    if not url:
        return url
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}{parts.path}"


def s3_client_from_connection(conn_id: str | None = "aws_default") -> Any:
    """A boto3 S3 client from an Airflow connection if it exists, else from boto3's own credential chain.

    Connection: login = access key id, password = secret (or extra ``aws_access_key_id`` /
    ``aws_secret_access_key`` / ``aws_session_token``), extra ``endpoint_url``, ``region_name`` and
    ``addressing_style`` (default ``path`` when an endpoint is set: MinIO, Ceph and moto expect it). Without
    one, boto3 reads the environment, profiles or instance role, and honours ``AWS_ENDPOINT_URL_S3``. The
    Amazon provider is not needed: the connection is read through ``airflow.sdk.BaseHook``.
    """
    import boto3
    from botocore.config import Config

    kwargs: dict[str, Any] = {}
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    style = None
    conn = _airflow_connection(conn_id) if conn_id else None
    if conn is not None:
        extra = conn.extra_dejson or {}
        access = conn.login or extra.get("aws_access_key_id")
        secret = conn.password or extra.get("aws_secret_access_key")
        if access and secret:
            kwargs.update(aws_access_key_id=access, aws_secret_access_key=secret)
            if extra.get("aws_session_token"):
                kwargs["aws_session_token"] = extra["aws_session_token"]
        if extra.get("endpoint_url"):
            endpoint = kwargs["endpoint_url"] = extra["endpoint_url"]
        if extra.get("region_name"):
            kwargs["region_name"] = extra["region_name"]
        style = extra.get("addressing_style")
        log.info(
            "S3 client from Airflow connection %r (endpoint %s, region %s, %s credentials)",
            conn_id,
            _redacted(endpoint) or "AWS",
            kwargs.get("region_name", "default"),
            "explicit" if "aws_access_key_id" in kwargs else "environment",
        )
    else:
        log.info("S3 client from the environment's credential chain (endpoint %s)", _redacted(endpoint) or "AWS")
    config = Config(
        retries={"mode": "standard", "max_attempts": 5},
        s3={"addressing_style": style or ("path" if endpoint else "auto")},
    )
    return boto3.session.Session().client("s3", config=config, **kwargs)


def _airflow_connection(conn_id: str) -> Any | None:
    try:
        from airflow.sdk import BaseHook

        return BaseHook.get_connection(conn_id)
    except Exception as exc:  # not found, no Airflow, no task context: fall back to the environment
        log.info("no Airflow connection %r (%s); using the environment", conn_id, type(exc).__name__)
        return None


# --------------------------------------------------------------------------- ledger and locks


def _ledger(staging_root: Path) -> sqlite3.Connection:
    """Open the ledger, creating it or migrating the v1 ``staged`` table (name, sha256 -> batch)."""
    staging_root.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(staging_root / "ledger.db", timeout=60, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS claims (key TEXT NOT NULL, version TEXT NOT NULL, name TEXT NOT NULL,"
            " batch_id TEXT NOT NULL, claimed_at REAL NOT NULL, size INTEGER, sha256 TEXT, rejected TEXT,"
            " PRIMARY KEY (key, version))"
        )
        conn.execute("CREATE INDEX IF NOT EXISTS claims_by_batch ON claims (batch_id)")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS batches (batch_id TEXT PRIMARY KEY, state TEXT NOT NULL,"
            " opened_at REAL NOT NULL, sealed_at REAL)"
        )
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='staged'").fetchone():
            conn.execute(
                "INSERT OR IGNORE INTO claims (key, version, name, batch_id, claimed_at, size, sha256)"
                " SELECT name, sha256, name, batch_id, staged_at, size, sha256 FROM staged"
            )
            conn.execute(
                "INSERT OR IGNORE INTO batches (batch_id, state, opened_at, sealed_at)"
                " SELECT batch_id, 'sealed', MIN(staged_at), MAX(staged_at) FROM staged GROUP BY batch_id"
            )
            conn.execute("DROP TABLE staged")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        conn.close()
        raise
    return conn


def _lock_path(staging_root: Path, batch_id: str) -> Path:
    return staging_root / ".locks" / f"{batch_id}.lock"


@contextlib.contextmanager
def _batch_lock(staging_root: Path, batch_id: str, *, wait: bool = True) -> Iterator[bool]:
    """An exclusive lock per batch; yields whether it was taken. ``flock`` locks belong to the open file, so
    threads conflict like processes do, and a crashed process releases its lock."""
    path = _lock_path(staging_root, batch_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = True
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
                if not wait:
                    held = False
                    break
                if time.monotonic() > deadline:
                    raise StagingError(f"batch {batch_id} is being staged by another process") from None
                time.sleep(0.1)
        yield held
    finally:
        os.close(fd)


def _abandoned(conn: sqlite3.Connection, staging_root: Path, batch_id: str) -> bool:
    """Open in the ledger, no manifest and no live process holding its lock (see the module docstring)."""
    row = conn.execute("SELECT state FROM batches WHERE batch_id=?", (batch_id,)).fetchone()
    if row is None or row[0] != "open":
        return False
    with _batch_lock(staging_root, batch_id, wait=False) as free:
        if not free:
            return False
        if (staging_root / batch_id / "manifest.json").exists():  # crashed between manifest and seal
            _seal(conn, batch_id)
            return False
        return True


def _seal(conn: sqlite3.Connection, batch_id: str) -> None:
    conn.execute("UPDATE batches SET state='sealed', sealed_at=? WHERE batch_id=?", (time.time(), batch_id))


@dataclass(frozen=True)
class _Claim:
    key: str
    version: str
    name: str
    size: int | None
    sha256: str | None
    rejected: str | None


def _claim(conn: sqlite3.Connection, staging_root: Path, batch_id: str, candidates: list[_Candidate]) -> list[_Claim]:
    """Claim the unowned candidates (and those of abandoned batches); return every claim of this batch."""
    now = time.time()
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("INSERT OR IGNORE INTO batches (batch_id, state, opened_at) VALUES (?,'open',?)", (batch_id, now))
        (state,) = conn.execute("SELECT state FROM batches WHERE batch_id=?", (batch_id,)).fetchone()
        abandoned: dict[str, bool] = {}
        # a sealed batch whose manifest went missing only re-copies its own claims: it never grows
        for cand in candidates if state == "open" else ():
            if conn.execute(  # an older version of this key is already ours: the newer one waits for the next batch
                "SELECT 1 FROM claims WHERE batch_id=? AND key=? AND version<>?", (batch_id, cand.key, cand.version)
            ).fetchone():
                continue
            conn.execute(
                "INSERT OR IGNORE INTO claims (key, version, name, batch_id, claimed_at, rejected)"
                " VALUES (?,?,?,?,?,?)",
                (cand.key, cand.version, cand.name, batch_id, now, cand.rejected),
            )
            (owner,) = conn.execute(
                "SELECT batch_id FROM claims WHERE key=? AND version=?", (cand.key, cand.version)
            ).fetchone()
            if owner == batch_id:
                continue
            if owner not in abandoned:
                abandoned[owner] = _abandoned(conn, staging_root, owner)
            if abandoned[owner]:
                log.warning("batch %s takes over %s from abandoned batch %s", batch_id, cand.key, owner)
                conn.execute(
                    "UPDATE claims SET batch_id=?, claimed_at=?, size=NULL, sha256=NULL WHERE key=? AND version=?",
                    (batch_id, now, cand.key, cand.version),
                )
        rows = conn.execute(
            "SELECT key, version, name, size, sha256, rejected FROM claims WHERE batch_id=? ORDER BY name, key",
            (batch_id,),
        ).fetchall()
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return [_Claim(*row) for row in rows]


# --------------------------------------------------------------------------- copying


def _copy(chunks: Iterable[bytes], dest: Path, expect_sha: str | None = None, workers: int = 2) -> tuple[int, str]:
    """Stream into a temp file next to ``dest`` in the seekable zstd format (``seekable_zstd``) while hashing,
    then rename: ``dest`` is whole or absent. Returns the landing file's size and sha256."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".staging", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            size, sha = seekable_zstd.write(chunks, out, workers)
            out.flush()
            os.fsync(out.fileno())
        if expect_sha is not None and sha != expect_sha:
            raise _Gone(str(dest))  # the local file changed since it was hashed and claimed
        os.replace(tmp, dest)
        return size, sha
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def staged_path(files_dir: Path, name: str) -> Path:
    """Where a landing file's staged copy goes: its safe relative name, with :data:`STAGED_SUFFIX`."""
    relative = safe_relative(name)
    return files_dir / relative.with_name(relative.name + STAGED_SUFFIX)


def _staged_sha256(path: Path) -> str | None:
    """The sha256 of the landing bytes a staged copy holds (None: it does not read whole)."""
    digest = hashlib.sha256()
    try:
        with open_staged(path) as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()


def _fetch_claims(
    conn: sqlite3.Connection, source: _Landing, batch_id: str, files_dir: Path, claims: list[_Claim]
) -> tuple[list[StagedFile], list[dict[str, str]]]:
    staged: list[StagedFile] = []
    rejected: list[dict[str, str]] = []
    for claim in claims:
        if claim.rejected:
            rejected.append({"key": claim.key, "reason": claim.rejected})
            continue
        dest = staged_path(files_dir, claim.name)
        etag = claim.version if source.etags else None
        # copied before a crash; or, plain, by a version before compressed copies (its landing file may be gone)
        kept = [p for p in (dest, files_dir / safe_relative(claim.name)) if claim.sha256 and p.is_file()]
        done = next((p for p in kept if _staged_sha256(p) == claim.sha256), None)
        if done is not None:
            staged.append(StagedFile(claim.name, str(done), claim.size, claim.sha256, etag))
            continue
        try:
            size, sha = _copy(source.chunks(claim.key, claim.version), dest, None if source.etags else claim.version)
            fault_point("stage:after-copy")  # crash tests: copied, not recorded
        except _Gone:
            log.warning("%s changed or vanished since it was listed; released for a later batch", claim.key)
            conn.execute(
                "DELETE FROM claims WHERE key=? AND version=? AND batch_id=?", (claim.key, claim.version, batch_id)
            )
            continue
        conn.execute(
            "UPDATE claims SET size=?, sha256=? WHERE key=? AND version=? AND batch_id=?",
            (size, sha, claim.key, claim.version, batch_id),
        )
        staged.append(StagedFile(claim.name, str(dest), size, sha, etag))
    return staged, rejected


# --------------------------------------------------------------------------- entry points


def stage_source(
    landing: str | Path,
    staging_root: str | Path,
    manifest: Manifest,
    *,
    interval_end: datetime | None = None,
    s3_client: Any = None,
) -> Manifest:
    """Stage the unstaged complete files of ``landing`` modified before ``interval_end`` into
    ``<staging_root>/<manifest.batch_id>`` and write its manifest; return the existing manifest if the batch
    is already complete. ``landing`` is a folder or ``s3://bucket/prefix``; ``s3_client`` defaults to
    ``s3_client_from_connection()``. ``manifest`` carries source, batch id, format and options."""
    staging_root = Path(staging_root)
    batch_id = manifest.batch_id
    if safe_batch_id(batch_id) != batch_id:
        raise StagingError(f"batch id {batch_id!r} is not a safe folder name")
    batch_dir = staging_root / batch_id
    end = None if interval_end is None else _utc(interval_end)
    with _batch_lock(staging_root, batch_id):
        conn = _ledger(staging_root)
        try:
            if (batch_dir / "manifest.json").exists():
                _seal(conn, batch_id)  # in case the previous attempt stopped between manifest and seal
                log.info("batch %s is already staged; reusing its manifest", batch_id)
                return read_manifest(batch_dir)
            source = _open_landing(landing, s3_client)
            candidates = source.list(end)
            claims = _claim(conn, staging_root, batch_id, candidates)
            fault_point("stage:after-claim")  # crash tests: claimed in the ledger, nothing copied
            staged, rejected = _fetch_claims(conn, source, batch_id, batch_dir / "files", claims)
            fault_point("stage:before-manifest")  # crash tests: copies recorded, no manifest
            manifest.files, manifest.rejected = staged, rejected
            write_json_atomic(batch_dir / "manifest.json", manifest.to_json())
            _seal(conn, batch_id)
        finally:
            conn.close()
    log.info(
        "staged %d file(s) from %s into batch %s (%d listed, %d rejected key(s))",
        len(staged),
        source.describe(),
        batch_id,
        len(candidates),
        len(rejected),
    )
    for item in rejected:
        log.warning("rejected landing key %r: %s", item["key"], item["reason"])
    return manifest


def stage_local(landing_dir: str | Path, staging_root: str | Path, manifest: Manifest) -> Manifest:
    """Stage every new file of a local landing folder (``stage_source`` without an interval)."""
    return stage_source(Path(landing_dir), staging_root, manifest)


def stage_files(paths: list[str | Path], staging_root: str | Path, manifest: Manifest) -> Manifest:
    """Stage explicitly named files (the local ``apply`` command); no ledger needed
    because the batch id is derived from the files' content."""
    batch_dir = Path(staging_root) / manifest.batch_id
    workers = 1 if len(paths) >= COPY_THREADS else 2

    def staged(item: tuple[int, str | Path]) -> StagedFile:
        index, path = item
        src = Path(path)
        dest = staged_path(batch_dir / "files", f"{index:05d}-{src.name}")
        with open(src, "rb") as handle:  # fewer files than threads: each compresses on two more
            size, sha = _copy(iter(lambda: handle.read(_CHUNK), b""), dest, workers=workers)
        return StagedFile(name=str(path), path=str(dest), size=size, sha256=sha)

    with ThreadPoolExecutor(max_workers=COPY_THREADS) as pool:  # in order; copies side by side
        manifest.files = list(pool.map(staged, enumerate(paths)))
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
