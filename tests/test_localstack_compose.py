"""The stack test's reading of docker-compose.yaml: variables as compose substitutes them, and only
hosts, ports and container paths moved (the settings themselves are the compose file's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from local_stack.compose import Placement, interpolate, load_services, read_env_file
from local_stack.stack import minio_buckets

from cdclake.runtime.settings import REPO_ROOT

PORTS = {
    ("postgres", 5432): 15432,
    ("minio", 9000): 19000,
    ("spark-master", 7077): 17077,
    ("spark-master", 8080): 18080,
    ("spark-worker", 8081): 18081,
    ("airflow-apiserver", 8080): 18088,
}
PATHS = {"/opt/cdclake": str(REPO_ROOT), "/data/cdclake": "/tmp/h/data", "/opt/airflow": "/tmp/h/airflow"}


def test_interpolate_follows_compose_rules() -> None:
    env = {"SET": "x", "EMPTY": ""}
    assert interpolate("${SET} ${SET:-d} ${EMPTY:-d} ${EMPTY-d} ${UNSET-d} $$HOME $SET", env) == "x x d  d $HOME x"
    with pytest.raises(ValueError, match="UNSET"):
        interpolate("${UNSET:?set it}", env)
    with pytest.raises(ValueError, match="EMPTY"):
        interpolate("${EMPTY:?set it}", env)


@pytest.fixture(scope="module")
def services() -> dict:
    return load_services({**read_env_file(), "AIRFLOW_JWT_SECRET": "jwt", "AIRFLOW_API_SECRET_KEY": "key"})


def test_settings_are_the_compose_files_with_local_hosts_ports_and_paths(services: dict) -> None:
    env = Placement(PORTS, PATHS).environment(services["airflow-scheduler"])
    assert json.loads(env["AIRFLOW_CONN_SPARK_DEFAULT"]) == {
        "conn_type": "spark",
        "host": "spark://127.0.0.1",
        "port": 17077,
    }
    aws = json.loads(env["AIRFLOW_CONN_AWS_DEFAULT"])
    assert aws["extra"]["endpoint_url"] == "http://127.0.0.1:19000" and aws["login"] == "minioadmin"
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] == "postgresql+psycopg2://airflow:airflow@127.0.0.1:15432/airflow"
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://127.0.0.1:18088/execution/"
    assert env["CDCLAKE_CATALOG_URI"] == "jdbc:postgresql://127.0.0.1:15432/iceberg"
    assert env["AWS_ENDPOINT_URL_S3"] == "http://127.0.0.1:19000"
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == f"{REPO_ROOT}/dags"
    assert env["CDCLAKE_HOME"] == "/tmp/h/data"
    assert env["CDCLAKE_WAREHOUSE"] == "s3://warehouse/lake"  # a bucket, not a host: unchanged
    assert env["AIRFLOW__API_AUTH__JWT_SECRET"] == "jwt"


def test_commands_are_the_compose_files_with_local_ports(services: dict) -> None:
    placement = Placement(PORTS, PATHS)
    master = placement.command("spark-master", services["spark-master"])
    assert master == [
        "spark-class",
        "org.apache.spark.deploy.master.Master",
        "--host",
        "127.0.0.1",
        "--port",
        "17077",
        "--webui-port",
        "18080",
    ]
    worker = placement.command("spark-worker", services["spark-worker"])
    assert worker[-3:] == ["--webui-port", "18081", "spark://127.0.0.1:17077"]
    api = placement.command("airflow-apiserver", services["airflow-apiserver"])
    assert f"python {REPO_ROOT}/docker/airflow_users.py" in api[-1] and "airflow api-server" in api[-1]
    assert minio_buckets(services["minio-init"]) == ["landing", "warehouse"]


def test_workers_each_get_their_own_ui_port_and_work_folder(tmp_path) -> None:
    """``workers=N`` (``--scale spark-worker=N``): the compose worker N times, apart only in UI port and folder."""
    from local_stack.stack import LocalStack, compose_variables

    one = LocalStack(tmp_path / "one")
    assert len(one.worker_ports) == 1 and one.worker_ports[0] == one.placement.port("spark-worker", 8081)
    assert one.worker_command(0) == one.placement.command("spark-worker", one.services["spark-worker"])
    assert one.worker_env(0)["SPARK_WORKER_DIR"] == str((tmp_path / "one" / "spark-worker").resolve())

    two = LocalStack(tmp_path / "two", variables={**compose_variables(), "SPARK_WORKER_CORES": "1"}, workers=2)
    commands = [two.worker_command(i) for i in range(2)]
    ports = [c[c.index("--webui-port") + 1] for c in commands]
    assert ports == [str(p) for p in two.worker_ports] and len(set(ports)) == 2
    assert commands[0][:-2] == commands[1][:-2] and commands[0][-1] == commands[1][-1]  # same master
    envs = [two.worker_env(i) for i in range(2)]
    assert [Path(e["SPARK_WORKER_DIR"]).name for e in envs] == ["spark-worker", "spark-worker-2"]
    assert all(e["SPARK_WORKER_CORES"] == "1" for e in envs)
    assert [two.worker_name(i) for i in range(2)] == ["spark-worker", "spark-worker-2"]
    with pytest.raises(ValueError, match="at least one"):
        LocalStack(tmp_path / "none", workers=0)
