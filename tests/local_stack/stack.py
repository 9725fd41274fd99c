"""Start and stop the compose topology as local processes (:class:`LocalStack`).

What each compose service becomes here (docs/docker.md, "The same stack without Docker"):

- ``postgres``: Debian's PostgreSQL server, a private cluster (:mod:`local_stack.postgres`);
- ``minio`` + ``minio-init``: moto's S3 server (``moto_server``) and the buckets ``mc mb`` creates;
- ``spark-master`` / ``spark-worker``: the compose commands (the pyspark wheel's ``spark-class``); the
  worker ``workers`` times (``docker compose up --scale spark-worker=N``), each with its own UI port
  and work folder;
- ``airflow-init``, ``airflow-apiserver``, ``airflow-scheduler``, ``airflow-dag-processor``: the
  compose commands and environments. ``airflow-triggerer`` is not started: no cdclake task defers.

Every process gets the environment the cdclake image gives a container (Dockerfile ``ENV``: the
jars, ``PYSPARK_PYTHON=python3`` found first on ``PATH`` in the venv, ``SPARK_HOME``) plus its
service's environment from the compose file, and nothing of the caller's AWS, Airflow, Spark or
cdclake variables. Only the local placement is added: loopback addresses and free ports.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdclake.runtime.settings import REPO_ROOT
from local_stack.compose import LOCALHOST, Placement, load_services, read_env_file
from local_stack.postgres import Postgres
from local_stack.processes import Service, free_port, http_ok, run

VENV_BIN = Path(sys.executable).parent
#: Services started, in order (compose's depends_on order); the triggerer is not needed.
AIRFLOW_SERVICES = ("airflow-apiserver", "airflow-scheduler", "airflow-dag-processor")
#: The caller's variables that a container would not have.
_FOREIGN = re.compile(r"^(AIRFLOW|AWS|CDCLAKE|SPARK|PYSPARK|POSTGRES|MINIO)_|^(AIRFLOW_HOME|JAVA_TOOL_OPTIONS)$")


def compose_variables() -> dict[str, str]:
    """``.env`` as a user makes it: ``.env.example`` with every change-me value replaced by a secret
    (64 bytes: the JWT secret signs with HS512)."""
    values = read_env_file()
    return {k: (secrets.token_urlsafe(64) if v.startswith("change-me") else v) for k, v in values.items()}


def image_environment(airflow_home: Path) -> dict[str, str]:
    """What the cdclake image's ``ENV`` lines give every container, for this checkout and venv."""
    import pyspark

    env = {k: v for k, v in os.environ.items() if not _FOREIGN.match(k)}
    env.update(
        {
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "CDCLAKE_JARS": str(REPO_ROOT / ".jars"),
            "PYSPARK_PYTHON": "python3",  # the venv's, first on PATH, as the image's python3
            "SPARK_HOME": str(Path(pyspark.__file__).parent),
            "AIRFLOW_HOME": str(airflow_home),
            # one machine: every JVM binds and advertises the loopback address
            "SPARK_LOCAL_IP": LOCALHOST,
        }
    )
    return env


@dataclass
class LocalStack:
    """The running stack; use as a context manager (everything is stopped on exit)."""

    home: Path
    #: Extra environment of every cdclake process (e.g. ``CDCLAKE_SOURCES`` of the test's sources).
    overrides: dict[str, str] = field(default_factory=dict)
    variables: dict[str, str] = field(default_factory=compose_variables)
    #: Spark workers started (``--scale spark-worker=N``); each has the compose file's settings
    #: (``SPARK_WORKER_CORES`` etc. from ``variables``), its own UI port and work folder.
    workers: int = 1
    services: dict[str, Any] = field(init=False)
    placement: Placement = field(init=False)
    processes: list[Service] = field(init=False, default_factory=list)
    postgres: Postgres | None = field(init=False, default=None)
    health_port: int = field(init=False, default=0)
    log_port: int = field(init=False, default=0)
    #: The UI port of each worker (the first is the compose port's placement).
    worker_ports: list[int] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers={self.workers}: at least one Spark worker")
        self.home = self.home.resolve()
        self.services = load_services(self.variables)
        ports = {
            ("postgres", 5432): free_port(),
            ("minio", 9000): free_port(),
            ("spark-master", 7077): free_port(),
            ("spark-master", 8080): free_port(),
            ("spark-worker", 8081): free_port(),
            ("airflow-apiserver", 8080): free_port(),
        }
        paths = {
            "/opt/cdclake": str(REPO_ROOT),
            "/data/cdclake": str(self.home / "data"),
            "/opt/airflow": str(self.home / "airflow"),
            "/tmp/spark-worker": str(self.home / "spark-worker"),
        }
        self.placement = Placement(ports, paths)
        self.logs = self.home / "logs"
        self.health_port, self.log_port = free_port(), free_port()
        self.worker_ports = [ports[("spark-worker", 8081)]] + [free_port() for _ in range(self.workers - 1)]

    # -- where things are -------------------------------------------------------------------

    @property
    def api_url(self) -> str:
        return f"http://{LOCALHOST}:{self.placement.port('airflow-apiserver', 8080)}"

    @property
    def s3_url(self) -> str:
        return f"http://{LOCALHOST}:{self.placement.port('minio', 9000)}"

    @property
    def spark_ui_url(self) -> str:
        return f"http://{LOCALHOST}:{self.placement.port('spark-master', 8080)}"

    def worker_name(self, index: int) -> str:
        """The process name of worker ``index`` (0-based): ``spark-worker``, then ``spark-worker-2`` ..."""
        return "spark-worker" if index == 0 else f"spark-worker-{index + 1}"

    def worker_ui_url(self, index: int) -> str:
        return f"http://{LOCALHOST}:{self.worker_ports[index]}"

    def worker_command(self, index: int) -> list[str]:
        """The compose worker command with this worker's own UI port."""
        command = self.placement.command("spark-worker", self.services["spark-worker"])
        first = str(self.worker_ports[0])
        return [str(self.worker_ports[index]) if token == first else token for token in command]

    def worker_env(self, index: int) -> dict[str, str]:
        """``spark-worker``'s environment with this worker's own work folder (``SPARK_WORKER_DIR``)."""
        env = self.env("spark-worker")
        env["SPARK_WORKER_DIR"] = str(self.home / self.worker_name(index))
        return env

    @property
    def admin_password(self) -> str:
        return self.env("airflow-apiserver")["AIRFLOW_ADMIN_PASSWORD"]

    def env(self, service: str) -> dict[str, str]:
        """The full environment of ``service``'s process (also for CLI commands run "inside" it)."""
        env = image_environment(self.home / "airflow")
        env.update(self.placement.environment(self.services[service]))
        env.update(self._local_settings(service))
        if service.startswith("airflow") or service == "spark-worker":
            env.update(self.overrides)
        return env

    def _local_settings(self, service: str) -> dict[str, str]:
        """Ports a container has to itself but a shared machine does not."""
        if not service.startswith("airflow"):
            return {}
        local = {
            "AIRFLOW__API__HOST": LOCALHOST,
            "AIRFLOW__API__PORT": str(self.placement.port("airflow-apiserver", 8080)),
            "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_HOST": LOCALHOST,
            "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_PORT": str(self.health_port),
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(self.log_port),
        }
        if service == "airflow-init":  # docker/init_catalog_db.py defaults to the host "postgres", port 5432
            local.update({"POSTGRES_HOST": LOCALHOST, "POSTGRES_PORT": str(self.placement.port("postgres", 5432))})
        return local

    # -- lifecycle ----------------------------------------------------------------------------

    def __enter__(self) -> LocalStack:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        for folder in ("data", "airflow", *map(self.worker_name, range(self.workers))):
            (self.home / folder).mkdir(parents=True, exist_ok=True)
        self._start_postgres()
        self._start_s3()
        self._start_spark()
        self._init_airflow()
        self._start_airflow()

    def stop(self) -> None:
        """Every process in reverse order of start, then the database cluster."""
        for process in reversed(self.processes):
            process.stop()
        self.processes.clear()
        if self.postgres is not None:
            self.postgres.stop()
            self.postgres = None

    def _spawn(
        self, name: str, command: list[str], timeout: float, ready, what: str, env: dict[str, str] | None = None
    ) -> Service:
        env = self.env(name) if env is None else env
        service = Service(name, command, env, self.logs / f"{name}.log", cwd=self.home).start()
        self.processes.append(service)
        service.wait_until(ready, timeout, what)
        return service

    def _start_postgres(self) -> None:
        env = self.placement.environment(self.services["postgres"])
        self.postgres = Postgres(self.placement.port("postgres", 5432), env, self.logs).start()

    def _start_s3(self) -> None:
        """moto's S3 server for ``minio``; then ``minio-init``'s buckets, with MinIO's credentials."""
        import boto3

        port = self.placement.port("minio", 9000)
        self._spawn("minio", [str(VENV_BIN / "moto_server"), "-H", LOCALHOST, "-p", str(port)], 60,
                    lambda: http_ok(f"{self.s3_url}/moto-api/"), "serving S3")  # fmt: skip
        init = self.services["minio-init"]
        creds = self.placement.environment(init)
        s3 = boto3.client(
            "s3",
            endpoint_url=self.s3_url,
            region_name="us-east-1",
            aws_access_key_id=creds["MINIO_ROOT_USER"],
            aws_secret_access_key=creds["MINIO_ROOT_PASSWORD"],
        )
        for bucket in minio_buckets(init):
            s3.create_bucket(Bucket=bucket)

    def _start_spark(self) -> None:
        master = self.placement.command("spark-master", self.services["spark-master"])
        self._spawn("spark-master", master, 120, lambda: http_ok(self.spark_ui_url), "serving its UI")
        for index in range(self.workers):
            self._spawn(
                self.worker_name(index),
                self.worker_command(index),
                120,
                lambda count=index + 1: self._workers_alive() >= count,
                "registered with the master",
                env=self.worker_env(index),
            )

    def _workers_alive(self) -> int:
        """How many workers the master lists as ALIVE."""
        import json
        import urllib.request

        try:
            with urllib.request.urlopen(f"{self.spark_ui_url}/json/", timeout=5) as response:
                return sum(w.get("state") == "ALIVE" for w in json.load(response).get("workers", []))
        except OSError:
            return 0

    def _init_airflow(self) -> None:
        """``airflow-init``: the catalog's role and database, ``airflow db migrate``."""
        command = self.placement.command("airflow-init", self.services["airflow-init"])
        run(command, self.env("airflow-init"), self.logs / "airflow-init.log", timeout=900)

    def _start_airflow(self) -> None:
        checks = {
            "airflow-apiserver": (lambda: http_ok(f"{self.api_url}/api/v2/version"), "serving the API"),
            "airflow-scheduler": (
                lambda: http_ok(f"http://{LOCALHOST}:{self.health_port}/health"),
                "healthy",
            ),
            "airflow-dag-processor": (lambda: self._job_alive("DagProcessorJob"), "running"),
        }
        for name in AIRFLOW_SERVICES:
            ready, what = checks[name]
            self._spawn(name, self.placement.command(name, self.services[name]), 240, ready, what)

    def _job_alive(self, job_type: str) -> bool:
        """The compose healthcheck of the dag-processor / triggerer (``airflow jobs check``)."""
        result = self.airflow(["jobs", "check", "--job-type", job_type], check=False)
        return result.returncode == 0

    # -- what users type ------------------------------------------------------------------------

    def airflow(
        self, args: list[str], check: bool = True, service: str = "airflow-scheduler"
    ) -> subprocess.CompletedProcess:
        """The ``airflow`` CLI as ``docker compose exec <service> airflow ...`` runs it."""
        result = subprocess.run(
            [str(VENV_BIN / "airflow"), *args], env=self.env(service), capture_output=True, text=True, check=False
        )
        with open(self.logs / "cli.log", "a") as log:
            log.write(f"\n$ airflow {shlex.join(args)}\n{result.stdout}{result.stderr}")
        if check and result.returncode != 0:
            raise RuntimeError(f"airflow {shlex.join(args)} failed ({result.returncode}):\n{result.stderr[-4000:]}")
        return result

    def lake_env(self) -> dict[str, str]:
        """The lake as ``python -m cdclake show`` sees it inside the scheduler: its catalog and S3 settings."""
        return {k: v for k, v in self.env("airflow-scheduler").items() if k.startswith(("CDCLAKE_", "AWS_"))}

    def keep_logs(self, target: Path) -> None:
        """The services' logs (the last 2 MB of each) copied to ``target`` (CI keeps the folder)."""
        target.mkdir(parents=True, exist_ok=True)
        for log in self.logs.glob("*.log"):
            (target / log.name).write_bytes(log.read_bytes()[-2_000_000:])

    def s3_client(self):
        """boto3 on the stack's S3 with MinIO's credentials (what ``mc`` or the console would use)."""
        import boto3

        creds = self.placement.environment(self.services["minio"])
        return boto3.client(
            "s3",
            endpoint_url=self.s3_url,
            region_name="us-east-1",
            aws_access_key_id=creds["MINIO_ROOT_USER"],
            aws_secret_access_key=creds["MINIO_ROOT_PASSWORD"],
        )


@contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """``values`` set in this process's environment; the earlier values (or none) restored on exit."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def minio_buckets(init_service: dict[str, Any]) -> list[str]:
    """The buckets of ``minio-init``'s ``mc mb`` lines (``alias/bucket`` arguments)."""
    command = "\n".join(map(str, init_service.get("command") or []))
    lines = [line for line in command.splitlines() if re.search(r"\bmc mb\b", line)]
    return [target.split("/", 1)[1] for line in lines for target in re.findall(r"\S+/\S+", line)]


def require_tools() -> None:
    """Fail early with the install hint when something the stack runs is missing."""
    from local_stack.postgres import postgres_bin

    postgres_bin()
    for tool in ("java", "runuser"):
        if shutil.which(tool) is None:
            raise FileNotFoundError(f"{tool} not found on PATH")
