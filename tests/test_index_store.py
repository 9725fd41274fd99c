"""The monitoring index in a local folder and in S3 (moto's server over real HTTP): same documents, same page."""

from __future__ import annotations

import uuid
from pathlib import Path

import boto3
import pytest
from monitoring_fixture import NOW, build_index, build_staging

from cdclake.monitoring import index as monitor_index
from cdclake.monitoring import views as monitoring_views
from cdclake.monitoring.index_store import LocalStore, open_store
from cdclake.runtime.settings import Settings


@pytest.fixture
def s3_env(s3_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Dummy credentials and the moto endpoint in the environment (as the api-server would have them)."""
    for var in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3_server)
    bucket = f"monitor-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_server).create_bucket(Bucket=bucket)
    return f"s3://{bucket}/cdclake/index"


def test_local_store_refuses_names_that_leave_it(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "index")
    store.write_many({"a/summary.json": b"{}"})
    assert store.read("a/summary.json") == b"{}" and store.read("b/summary.json") is None
    for name in ("../x.json", "a/../../x.json", "/etc/passwd", "a//b.json"):
        with pytest.raises(ValueError):
            store.read(name)
    assert store.folders() == ["a"]


def test_the_pages_read_the_same_index_from_s3(s3_env: str, tmp_path: Path) -> None:
    build_staging(tmp_path / "staging")
    env = {"CDCLAKE_HOME": str(tmp_path), "CDCLAKE_STAGING": str(tmp_path / "staging")}
    local = Settings.from_env(env)
    remote = Settings.from_env({**env, "CDCLAKE_MONITOR_INDEX": s3_env})
    assert remote.monitor_index == s3_env
    build_index(local)
    build_index(remote)
    store = open_store(remote.monitor_index, aws_conn_id=None)
    assert store.describe() == s3_env + "/" and store.folders() == ["billing", "orders"]
    assert monitor_index.summary(store, "orders")["tables"].keys() == {"SHOP.ORDERS", "SHOP.ITEMS"}

    def states(settings: Settings) -> list[tuple[str, str]]:
        return [(t["table"], t["state"]) for t in monitoring_views.overview_model(settings, now=NOW)["tables"]]

    assert states(remote) == states(local) and len(states(remote)) == 3
    detail = monitoring_views.table_model(remote, "orders", "SHOP.ORDERS", now=NOW)
    assert [e["batch_id"] for e in detail["history"]] == ["run_2", "run_1", "run_0"]
    assert monitoring_views.table_model(remote, "nope", "SHOP.ORDERS") is None
