"""Staging from a local folder and from S3 (moto's server over real HTTP): each landing file in exactly one
batch, across re-runs, crashes, concurrent runs and hostile keys, without leaking credentials."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
import traceback
import uuid
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from cdclake.staging import stage as staging
from cdclake.staging.batch import Manifest, read_manifest, safe_batch_id
from cdclake.staging.reading import STAGED_SUFFIX, read_staged_raw
from cdclake.staging.stage import (
    StagingError,
    batch_id_for_run,
    s3_client_from_connection,
    safe_relative,
    stage_local,
    stage_source,
)


def new_manifest(batch_id: str) -> Manifest:
    return Manifest(source="src", batch_id=batch_id, format="goldengate-json", options={})


def names(manifest: Manifest) -> list[str]:
    return sorted(f.name for f in manifest.files)


def claims(staging_root: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(staging_root / "ledger.db") as conn:
        return sorted(conn.execute("SELECT key, version, batch_id FROM claims").fetchall())


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def s3(s3_server: str, monkeypatch: pytest.MonkeyPatch):
    """A boto3 client for the moto server, built from dummy environment credentials."""
    for var in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3_server)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    return boto3.session.Session().client("s3")


@pytest.fixture
def bucket(s3) -> str:
    name = f"landing-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


def downloads(client) -> list[str]:
    """Keys of every GetObject the client sends from now on."""
    keys: list[str] = []
    client.meta.events.register("provide-client-params.s3.GetObject", lambda params, **_: keys.append(params["Key"]))
    return keys


def authorizations(client) -> list[str]:
    """Authorization headers of every S3 request the client sends from now on (they name the access key)."""
    headers: list[str] = []
    client.meta.events.register(
        "before-send.s3.*", lambda request, **_: headers.append(request.headers["Authorization"].decode())
    )
    return headers


class FailingGets:
    """A client whose n-th GetObject fails, like a crash or a dropped connection mid-run."""

    def __init__(self, client, fail_on: int) -> None:
        self.client, self.fail_on, self.calls = client, fail_on, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    def get_object(self, **kwargs: Any) -> Any:
        self.calls += 1
        if self.calls == self.fail_on:
            raise ConnectionError("simulated crash during download")
        return self.client.get_object(**kwargs)


# --------------------------------------------------------------------------- names and batch ids


@pytest.mark.parametrize(
    "name",
    ["../x", "a/../../etc/passwd", "/etc/passwd", "a//b", "a/./b", "a/", "", "a\x00b", "a\\..\\b", ".."],
)
def test_safe_relative_refuses_names_that_escape_or_collide(name: str) -> None:
    with pytest.raises(StagingError) as info:
        safe_relative(name)
    assert repr(name) in str(info.value)


def test_safe_relative_keeps_ordinary_names() -> None:
    assert str(safe_relative("2024/01/gg_0001.json")) == "2024/01/gg_0001.json"
    assert str(safe_relative("x..y.json")) == "x..y.json"


def test_batch_id_for_run_shares_interval_batches_and_keeps_manual_runs_apart() -> None:
    start, end = datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 1, 2, tzinfo=UTC)
    scheduled = batch_id_for_run("scheduled__2024-01-01T00:00:00+00:00", start, end, "scheduled")
    assert scheduled == "interval_20240101T000000_20240102T000000"
    # a backfill of the same interval (other run id, other time zone) shares the batch
    cet = timezone(timedelta(hours=1))
    backfill = batch_id_for_run("backfill__x", start.astimezone(cet), end.astimezone(cet), "backfill")
    assert backfill == scheduled

    class RunType:  # Airflow's DagRunType is a str enum
        value = "scheduled"

    assert batch_id_for_run("r", "2024-01-01T00:00:00+00:00", "2024-01-02T00:00:00", RunType()) == scheduled
    manual = "manual__2024-05-01T10:00:00.123+00:00"
    assert batch_id_for_run(manual, start, end, "manual") == safe_batch_id(manual)
    assert batch_id_for_run("scheduled__x", None, None, "scheduled") == "scheduled__x"


# --------------------------------------------------------------------------- local landing


def test_local_staging_copies_hashes_and_writes_the_manifest(tmp_path: Path) -> None:
    landing, root = tmp_path / "landing", tmp_path / "staging"
    (landing / "sub").mkdir(parents=True)
    (landing / "a.json").write_bytes(b"alpha")
    (landing / "sub" / "b.json").write_bytes(b"beta")
    for skipped in (".hidden", "_SUCCESS", "c.json.tmp", "d.json.part"):
        (landing / skipped).write_bytes(b"x")

    manifest = stage_source(landing, root, new_manifest("b1"))

    assert names(manifest) == ["a.json", "sub/b.json"]
    for item, data in zip(sorted(manifest.files, key=lambda f: f.name), (b"alpha", b"beta"), strict=True):
        assert read_staged_raw(item.path) == data
        assert Path(item.path).is_relative_to(root / "b1" / "files")
        assert (item.sha256, item.size, item.etag) == (sha(data), len(data), None)
    assert read_manifest(root / "b1") == manifest
    assert manifest.rejected == []


def test_local_rerun_of_a_batch_reuses_its_manifest_and_copies_nothing(tmp_path: Path) -> None:
    landing, root = tmp_path / "landing", tmp_path / "staging"
    landing.mkdir()
    (landing / "a.json").write_bytes(b"alpha")
    first = stage_local(landing, root, new_manifest("b1"))
    mtimes = {f.path: os.stat(f.path).st_mtime_ns for f in first.files}
    (landing / "b.json").write_bytes(b"beta")

    again = stage_local(landing, root, new_manifest("b1"))

    assert again == first  # the new file is not added to a complete batch
    assert {f.path: os.stat(f.path).st_mtime_ns for f in again.files} == mtimes
    assert names(stage_local(landing, root, new_manifest("b2"))) == ["b.json"]
    assert stage_local(landing, root, new_manifest("b3")).files == []


def test_local_file_with_new_content_is_staged_again(tmp_path: Path) -> None:
    landing, root = tmp_path / "landing", tmp_path / "staging"
    landing.mkdir()
    (landing / "a.json").write_bytes(b"v1")
    stage_local(landing, root, new_manifest("b1"))
    (landing / "a.json").write_bytes(b"v2")

    second = stage_local(landing, root, new_manifest("b2"))

    assert [(f.name, f.sha256) for f in second.files] == [("a.json", sha(b"v2"))]
    assert read_staged_raw(read_manifest(root / "b1").files[0].path) == b"v1"


def test_local_interval_end_takes_older_files_and_late_files_are_not_missed(tmp_path: Path) -> None:
    landing, root = tmp_path / "landing", tmp_path / "staging"
    landing.mkdir()

    def land(name: str, when: datetime) -> None:
        (landing / name).write_bytes(name.encode())
        os.utime(landing / name, (when.timestamp(), when.timestamp()))

    land("day1.json", datetime(2024, 1, 1, 12, tzinfo=UTC))
    land("day2.json", datetime(2024, 1, 2, 12, tzinfo=UTC))
    first = stage_source(landing, root, new_manifest("d1"), interval_end=datetime(2024, 1, 2, tzinfo=UTC))
    assert names(first) == ["day1.json"]
    land("late_day1.json", datetime(2024, 1, 1, 23, tzinfo=UTC))  # arrives after its interval's run
    second = stage_source(landing, root, new_manifest("d2"), interval_end=datetime(2024, 1, 3, tzinfo=UTC))
    assert names(second) == ["day2.json", "late_day1.json"]


def test_a_version_one_ledger_is_migrated(tmp_path: Path) -> None:
    landing, root = tmp_path / "landing", tmp_path / "staging"
    landing.mkdir()
    root.mkdir()
    (landing / "old.json").write_bytes(b"old")
    (landing / "new.json").write_bytes(b"new")
    with sqlite3.connect(root / "ledger.db") as conn:
        conn.execute(
            "CREATE TABLE staged (name TEXT NOT NULL, sha256 TEXT NOT NULL, size INTEGER NOT NULL,"
            " batch_id TEXT NOT NULL, staged_at REAL NOT NULL, PRIMARY KEY (name, sha256))"
        )
        conn.execute("INSERT INTO staged VALUES ('old.json', ?, 3, 'legacy', 1.0)", (sha(b"old"),))
    conn.close()

    assert names(stage_local(landing, root, new_manifest("b1"))) == ["new.json"]
    assert ("old.json", sha(b"old"), "legacy") in claims(root)


# --------------------------------------------------------------------------- S3 landing


def test_s3_staging_copies_hashes_and_writes_the_manifest(s3, bucket: str, tmp_path: Path) -> None:
    objects = {"land/a.json": b"alpha", "land/sub/b.json": b"beta"}
    for key, data in objects.items():
        s3.put_object(Bucket=bucket, Key=key, Body=data)
    for key in ("land/_SUCCESS", "land/c.json.part", "land/dir/", "land2/x.json", "other/y.json"):
        s3.put_object(Bucket=bucket, Key=key, Body=b"not staged")
    root = tmp_path / "staging"

    manifest = stage_source(f"s3://{bucket}/land", root, new_manifest("b1"), s3_client=s3)

    assert names(manifest) == ["a.json", "sub/b.json"]
    for item in manifest.files:
        data = objects[f"land/{item.name}"]
        assert read_staged_raw(item.path) == data
        assert (item.sha256, item.size) == (sha(data), len(data))
        assert item.etag == s3.head_object(Bucket=bucket, Key=f"land/{item.name}")["ETag"].strip('"')
    assert read_manifest(root / "b1") == manifest
    assert {key for key, _, _ in claims(root)} == set(objects)


def test_s3_interval_end_takes_objects_modified_before_it(s3, bucket: str, tmp_path: Path) -> None:
    for key in ("land/a.json", "land/b.json"):
        s3.put_object(Bucket=bucket, Key=key, Body=key.encode())
    # LastModified has whole seconds: the boundary is the next second, uploads after it are newer
    boundary = datetime.fromtimestamp(int(time.time()) + 1, UTC)
    time.sleep(max(0.0, boundary.timestamp() - time.time()) + 0.05)
    s3.put_object(Bucket=bucket, Key="land/c.json", Body=b"c")
    landing, root = f"s3://{bucket}/land", tmp_path / "staging"

    first = stage_source(landing, root, new_manifest("i1"), interval_end=boundary, s3_client=s3)
    second = stage_source(
        landing, root, new_manifest("i2"), interval_end=datetime.now(UTC) + timedelta(minutes=1), s3_client=s3
    )

    assert names(first) == ["a.json", "b.json"]
    assert names(second) == ["c.json"]


def test_s3_rerun_of_a_batch_downloads_nothing_and_adds_nothing(s3, bucket: str, tmp_path: Path) -> None:
    for key in ("land/a.json", "land/b.json"):
        s3.put_object(Bucket=bucket, Key=key, Body=key.encode())
    landing, root = f"s3://{bucket}/land", tmp_path / "staging"
    got = downloads(s3)
    first = stage_source(landing, root, new_manifest("b1"), s3_client=s3)
    assert sorted(got) == ["land/a.json", "land/b.json"]
    s3.put_object(Bucket=bucket, Key="land/c.json", Body=b"c")
    got.clear()

    again = stage_source(landing, root, new_manifest("b1"), s3_client=s3)

    assert again == first and got == []
    assert names(stage_source(landing, root, new_manifest("b2"), s3_client=s3)) == ["c.json"]
    assert got == ["land/c.json"]


def test_s3_object_uploaded_again_with_new_content_is_staged_again(s3, bucket: str, tmp_path: Path) -> None:
    landing, root = f"s3://{bucket}/land", tmp_path / "staging"
    s3.put_object(Bucket=bucket, Key="land/a.json", Body=b"v1")
    first = stage_source(landing, root, new_manifest("b1"), s3_client=s3)
    s3.put_object(Bucket=bucket, Key="land/a.json", Body=b"v2")

    second = stage_source(landing, root, new_manifest("b2"), s3_client=s3)
    s3.put_object(Bucket=bucket, Key="land/a.json", Body=b"v2")  # same bytes, same ETag: not new
    third = stage_source(landing, root, new_manifest("b3"), s3_client=s3)

    assert [(f.name, f.sha256) for f in second.files] == [("a.json", sha(b"v2"))]
    assert second.files[0].etag != first.files[0].etag
    assert read_staged_raw(first.files[0].path) == b"v1"
    assert third.files == []


def test_s3_crash_after_the_claim_is_repaired_by_the_retry(s3, bucket: str, tmp_path: Path) -> None:
    keys = ["land/a.json", "land/b.json", "land/c.json"]
    for key in keys:
        s3.put_object(Bucket=bucket, Key=key, Body=key.encode())
    landing, root = f"s3://{bucket}/land", tmp_path / "staging"

    with pytest.raises(ConnectionError):  # a.json copied and recorded, crash on b.json
        stage_source(landing, root, new_manifest("b1"), s3_client=FailingGets(s3, fail_on=2))
    assert not (root / "b1" / "manifest.json").exists()
    assert [(k, b) for k, _, b in claims(root)] == [(k, "b1") for k in keys]
    assert not any(p.name.endswith(".staging") for p in root.rglob("*"))  # no half-written temp file

    got = downloads(s3)
    retried = stage_source(landing, root, new_manifest("b1"), s3_client=s3)

    assert names(retried) == ["a.json", "b.json", "c.json"]
    assert sorted(got) == ["land/b.json", "land/c.json"]  # a.json was verified by its hash, not fetched
    assert stage_source(landing, root, new_manifest("b2"), s3_client=s3).files == []


def test_s3_object_overwritten_between_claim_and_copy_goes_to_a_later_batch(s3, bucket: str, tmp_path: Path) -> None:
    s3.put_object(Bucket=bucket, Key="land/a.json", Body=b"v1")
    s3.put_object(Bucket=bucket, Key="land/gone.json", Body=b"x")
    landing, root = f"s3://{bucket}/land", tmp_path / "staging"
    with pytest.raises(ConnectionError):
        stage_source(landing, root, new_manifest("b1"), s3_client=FailingGets(s3, fail_on=1))
    s3.put_object(Bucket=bucket, Key="land/a.json", Body=b"v2")
    s3.delete_object(Bucket=bucket, Key="land/gone.json")

    retried = stage_source(landing, root, new_manifest("b1"), s3_client=s3)
    later = stage_source(landing, root, new_manifest("b2"), s3_client=s3)

    # the claimed v1 no longer exists (If-Match fails): b1 releases it and stages nothing stale
    assert retried.files == []
    assert [(f.name, read_staged_raw(f.path)) for f in later.files] == [("a.json", b"v2")]


def test_an_abandoned_batch_is_taken_over_and_its_late_retry_stages_nothing(s3, bucket: str, tmp_path: Path) -> None:
    keys = ["land/a.json", "land/b.json"]
    for key in keys:
        s3.put_object(Bucket=bucket, Key=key, Body=key.encode())
    landing, root = f"s3://{bucket}/land", tmp_path / "staging"
    with pytest.raises(ConnectionError):
        stage_source(landing, root, new_manifest("b1"), s3_client=FailingGets(s3, fail_on=1))

    with staging._batch_lock(root, "b1"):  # b1 still running (e.g. its retry): its claims stay with it
        assert stage_source(landing, root, new_manifest("b2"), s3_client=s3).files == []
    taken = stage_source(landing, root, new_manifest("b3"), s3_client=s3)  # b1 gave up: nothing is missed
    late = stage_source(landing, root, new_manifest("b1"), s3_client=s3)

    assert names(taken) == ["a.json", "b.json"]
    assert late.files == []
    assert [b for _, _, b in claims(root)] == ["b3", "b3"]


def test_a_batch_with_a_manifest_but_no_seal_is_not_taken_over(
    s3, bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s3.put_object(Bucket=bucket, Key="land/a.json", Body=b"a")
    landing, root = f"s3://{bucket}/land", tmp_path / "staging"
    seal = staging._seal

    def crash(conn, batch_id):
        raise ConnectionError("simulated crash after the manifest")

    monkeypatch.setattr(staging, "_seal", crash)
    with pytest.raises(ConnectionError):
        stage_source(landing, root, new_manifest("b1"), s3_client=s3)
    monkeypatch.setattr(staging, "_seal", seal)
    assert (root / "b1" / "manifest.json").exists()

    assert stage_source(landing, root, new_manifest("b2"), s3_client=s3).files == []
    assert names(stage_source(landing, root, new_manifest("b1"), s3_client=s3)) == ["a.json"]
    with sqlite3.connect(root / "ledger.db") as conn:
        assert conn.execute("SELECT state FROM batches WHERE batch_id='b1'").fetchone() == ("sealed",)
    conn.close()


def test_concurrent_batches_stage_every_object_exactly_once(s3, bucket: str, tmp_path: Path) -> None:
    keys = [f"land/f{i:03d}.json" for i in range(40)]
    for key in keys:
        s3.put_object(Bucket=bucket, Key=key, Body=key.encode())
    landing, root = f"s3://{bucket}/land", tmp_path / "staging"
    start = threading.Barrier(4)
    results: dict[str, Manifest] = {}
    errors: list[BaseException] = []

    def run(batch_id: str) -> None:
        try:
            start.wait()
            results[batch_id] = stage_source(landing, root, new_manifest(batch_id), s3_client=s3)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(f"c{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    staged = sorted(f"land/{f.name}" for m in results.values() for f in m.files)
    assert staged == keys  # all of them, none twice
    owners = {key: batch for key, _, batch in claims(root)}
    assert all(owners[f"land/{f.name}"] == b for b, m in results.items() for f in m.files)


def test_concurrent_runs_of_one_batch_download_once(s3, bucket: str, tmp_path: Path) -> None:
    keys = [f"land/f{i}.json" for i in range(5)]
    for key in keys:
        s3.put_object(Bucket=bucket, Key=key, Body=key.encode())
    landing, root = f"s3://{bucket}/land", tmp_path / "staging"
    got = downloads(s3)
    results: list[Manifest] = []
    threads = [
        threading.Thread(target=lambda: results.append(stage_source(landing, root, new_manifest("same"), s3_client=s3)))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(results) == 2 and results[0] == results[1]
    assert sorted(got) == keys


def test_keys_escaping_the_staging_root_are_rejected_and_the_rest_staged(s3, bucket: str, tmp_path: Path) -> None:
    bad = {
        "land/../../etc/passwd": "'..' part",
        "land//etc/passwd": "is absolute",
        "land/a//b.json": "empty part",
        "land/x\\..\\..\\y.json": "backslash",
        "land/./c.json": "'.' part",
    }
    for key in [*bad, "land/ok.json"]:
        s3.put_object(Bucket=bucket, Key=key, Body=b"data")
    landing, root = f"s3://{bucket}/land", tmp_path / "staging"

    manifest = stage_source(landing, root, new_manifest("b1"), s3_client=s3)

    assert names(manifest) == ["ok.json"]
    reasons = {item["key"]: item["reason"] for item in manifest.rejected}
    assert set(reasons) == set(bad)
    for key, why in bad.items():
        assert why in reasons[key] and repr(key[len("land/") :]) in reasons[key]
    assert read_manifest(root / "b1").rejected == manifest.rejected
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert all(p.is_relative_to(root) for p in written)
    assert not any(p.name in ("passwd", "y.json", "b.json", "c.json") for p in written)
    later = stage_source(landing, root, new_manifest("b2"), s3_client=s3)  # reported once, in one batch
    assert later.files == [] and later.rejected == []


@pytest.fixture
def airflow_logging() -> None:
    """Importing Airflow replaces the root log handlers; do it before the test's log capture starts."""
    import airflow.sdk  # noqa: F401


def test_credentials_never_reach_logs_errors_or_files(
    airflow_logging: None,
    s3_server: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    env_secret, conn_secret = "CANARY-ENV-" + uuid.uuid4().hex, "CANARY-CONN-" + uuid.uuid4().hex
    for var in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "envkey")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", env_secret)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3_server)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    connection = {
        "conn_type": "aws",
        "login": "connkey",
        "password": conn_secret,
        "extra": {"endpoint_url": s3_server, "region_name": "eu-west-1"},
    }
    monkeypatch.setenv("AIRFLOW_CONN_CDCLAKE_TEST_AWS", json.dumps(connection))
    caplog.set_level(logging.DEBUG)
    errors: list[str] = []

    for conn_id, access_key, region in (
        ("cdclake_test_aws", "connkey", "eu-west-1"),
        ("no_such_connection", "envkey", "us-east-1"),
    ):
        client = s3_client_from_connection(conn_id)
        assert client.meta.region_name == region
        signed = authorizations(client)
        name = f"creds-{uuid.uuid4().hex[:12]}"
        region = client.meta.region_name
        where = {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
        client.create_bucket(Bucket=name, **where)
        client.put_object(Bucket=name, Key="land/a.json", Body=b"a")
        root = tmp_path / conn_id
        assert names(stage_source(f"s3://{name}/land", root, new_manifest("b1"), s3_client=client)) == ["a.json"]
        assert signed and all(f"Credential={access_key}/" in header for header in signed)
        with pytest.raises(ClientError) as info:  # a failing run: its error must not carry secrets either
            stage_source(f"s3://no-such-{name}/land", root, new_manifest("b2"), s3_client=client)
        errors.append("".join(traceback.format_exception(info.value)) + repr(info.value))

    out, err = capfd.readouterr()
    files = "".join(p.read_bytes().decode("latin-1") for p in tmp_path.rglob("*") if p.is_file())
    for secret in (env_secret, conn_secret):
        assert secret not in caplog.text and secret not in out + err
        assert secret not in "".join(errors) and secret not in files
    assert "S3 client from Airflow connection 'cdclake_test_aws'" in caplog.text  # the logs were captured
    assert "S3 client from the environment's credential chain" in caplog.text


def test_named_files_are_staged_in_their_order_with_their_hashes(tmp_path: Path) -> None:
    from cdclake.staging.stage import stage_files

    paths = []
    for i in range(12):
        path = tmp_path / "in" / f"f{11 - i}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"x" * (i * 1000 + 1))
        paths.append(path)
    staged = stage_files(paths, tmp_path / "staging", new_manifest("named"))
    assert [f.name for f in staged.files] == [str(p) for p in paths]
    assert [Path(f.path).name for f in staged.files] == [f"{i:05d}-f{11 - i}.json{STAGED_SUFFIX}" for i in range(12)]
    assert [(f.size, f.sha256) for f in staged.files] == [(p.stat().st_size, sha(p.read_bytes())) for p in paths]
    assert [read_staged_raw(f.path) for f in staged.files] == [p.read_bytes() for p in paths]
    # compressed: the staged copies take a fraction of the landing files' bytes
    assert sum(Path(f.path).stat().st_size for f in staged.files) * 10 < sum(p.stat().st_size for p in paths)
