"""docker-compose.yaml cannot run here (no Docker engine): check its structure and its agreement with the repo.

Each check is a function returning a list of problems; the tests run it on the real files and, to show
that it can fail, on a copy with one defect planted (the ``*_catches_*`` tests).
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cdclake.runtime.settings import Settings
from cdclake.runtime.sources import load_sources
from cdclake.runtime.spark import catalog_conf

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "docker-compose.yaml"
DOCKERFILE = ROOT / "Dockerfile"
ENV_EXAMPLE = ROOT / ".env.example"

AIRFLOW_SERVICES = (
    "airflow-init",
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
)
REQUIRED_SERVICES = ("postgres", "minio", "minio-init", "spark-master", "spark-worker", *AIRFLOW_SERVICES)
ONE_SHOT = ("airflow-init", "minio-init")

# $$ is a literal $; ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error}, ${VAR?error}, ${VAR:+alt}, $VAR.
_INTERPOLATION = re.compile(
    r"\$(?:(?P<escaped>\$)|\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\}"
    r"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)


# ---------------------------------------------------------------------------------------------- helpers


def compose_text() -> str:
    return COMPOSE.read_text()


def load_compose(text: str | None = None) -> dict:
    return yaml.safe_load(compose_text() if text is None else text)


def strings(node) -> list[str]:
    """Every string of parsed YAML (keys and values): what compose interpolates, comments excluded."""
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in strings(k) + strings(v)]
    if isinstance(node, list):
        return [s for item in node for s in strings(item)]
    return [node] if isinstance(node, str) else []


def variables(text: str) -> dict[str, set[str]]:
    """``{VAR: {operators}}`` of every compose interpolation in the YAML ``text`` ("" = no default)."""
    found: dict[str, set[str]] = {}
    for value in strings(yaml.safe_load(text)):
        for m in _INTERPOLATION.finditer(value):
            if not m.group("escaped"):
                found.setdefault(m.group("braced") or m.group("bare"), set()).add(m.group("op") or "")
    return found


def interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's substitution of ``value`` with ``env`` (a missing required variable raises KeyError)."""

    def sub(m: re.Match) -> str:
        if m.group("escaped"):
            return "$"
        name, op, arg = m.group("braced") or m.group("bare"), m.group("op") or "", m.group("arg") or ""
        present, empty = name in env, not env.get(name)
        if op == ":-":
            return arg if empty else env[name]
        if op == "-":
            return env[name] if present else arg
        if op == ":+":
            return "" if empty else arg
        if op == "+":
            return arg if present else ""
        if (op == ":?" and empty) or (op == "?" and not present):
            raise KeyError(f"{name}: {arg}")
        return env.get(name, "")

    return _INTERPOLATION.sub(sub, value)


def env_example() -> dict[str, str]:
    pairs = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, sep, value = line.partition("=")
            assert sep, f".env.example: not KEY=VALUE: {line!r}"
            pairs[key.strip()] = value.strip()
    return pairs


def dummy_env(text: str) -> dict[str, str]:
    """A value for every referenced variable, as a filled-in .env would give."""
    return {name: f"dummy-{name.lower().replace('_', '-')}" for name in variables(text)}


def service_env(service: dict, env: dict[str, str]) -> dict[str, str]:
    raw = service.get("environment") or {}
    if isinstance(raw, list):
        raw = dict(item.partition("=")[::2] for item in raw)
    return {k: interpolate(str(v), env) for k, v in raw.items()}


def volume_mounts(service: dict) -> list[tuple[str, str]]:
    """(source, target) of each volume of a service (short or long syntax); source "" for anonymous ones."""
    mounts = []
    for item in service.get("volumes") or []:
        if isinstance(item, dict):
            mounts.append((item.get("source", ""), item["target"]))
        else:
            parts = item.split(":")
            mounts.append(("", parts[0]) if len(parts) == 1 else (parts[0], parts[1]))
    return mounts


def is_bind(source: str) -> bool:
    return source.startswith((".", "/", "~", "$"))


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    out = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def requirements() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep, f"requirements.txt: not pinned with ==: {line!r}"
            pins[canonical(name)] = version.strip()
    return pins


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def image_problems(image: str) -> list[str]:
    if "@sha256:" in image:
        return []
    tag = image.rpartition(":")[2] if ":" in image.split("/")[-1] else ""
    if not tag:
        return [f"{image}: no tag"]
    if tag == "latest" or not re.search(r"\d", tag):
        return [f"{image}: tag {tag!r} is not a version"]
    return []


# ---------------------------------------------------------------------------------------------- checks


def check_services(compose: dict) -> list[str]:
    services = compose.get("services") or {}
    problems = [f"missing service {name}" for name in REQUIRED_SERVICES if name not in services]
    commands = {
        "airflow-apiserver": "api-server",
        "airflow-scheduler": "scheduler",
        "airflow-dag-processor": "dag-processor",
        "airflow-triggerer": "triggerer",
    }
    for name, sub in commands.items():
        command = services.get(name, {}).get("command")
        words = " ".join(command) if isinstance(command, list) else str(command)
        if not re.search(rf"\bairflow {sub}\b", words):
            problems.append(f"{name} does not run `airflow {sub}`: {command!r}")
    if "airflow db migrate" not in str(services.get("airflow-init", {}).get("command")):
        problems.append("airflow-init does not run `airflow db migrate`")
    for name, cls in (("spark-master", "deploy.master.Master"), ("spark-worker", "deploy.worker.Worker")):
        command = services.get(name, {}).get("command") or []
        if not (command[:1] == ["spark-class"] and any(cls in str(c) for c in command)):
            problems.append(f"{name} does not run spark-class org.apache.spark.{cls}")
    return problems


def check_images(compose: dict, dockerfile: str) -> list[str]:
    problems = []
    for name, service in (compose.get("services") or {}).items():
        if "image" not in service:
            problems.append(f"{name}: no image (a built service needs a versioned image name too)")
            continue
        problems += [f"{name}: {p}" for p in image_problems(service["image"])]
        if "build" in service:
            build = service["build"] if isinstance(service["build"], dict) else {"context": service["build"]}
            if not (ROOT / build.get("context", ".") / build.get("dockerfile", "Dockerfile")).is_file():
                problems.append(f"{name}: build {build} has no Dockerfile")
    for word, args in dockerfile_instructions(dockerfile):
        if word == "FROM":
            problems += [f"Dockerfile FROM: {p}" for p in image_problems(args.split()[0])]
    return problems


def check_variables(text: str, example: dict[str, str]) -> list[str]:
    problems = []
    used = variables(text)
    for name, ops in sorted(used.items()):
        required = bool(ops & {"", ":?", "?"})  # used somewhere without a default
        if required and name not in example:
            problems.append(f"${{{name}}} has no default and is not in .env.example")
        if ops & {":?", "?"} and name not in example:
            problems.append(f"${{{name}}} is required but not documented in .env.example")
    problems += [f".env.example: {name} is not used by docker-compose.yaml" for name in example if name not in used]
    if re.search(r"\$\{[^}]*\$\{", text):
        problems.append("nested ${...${...}} interpolation (not checked here)")
    return problems


def check_volumes(compose: dict) -> list[str]:
    declared = set((compose.get("volumes") or {}).keys())
    problems, used = [], set()
    for name, service in (compose.get("services") or {}).items():
        for source, target in volume_mounts(service):
            if not source:
                continue
            if is_bind(source):
                if not (ROOT / source).exists():
                    problems.append(f"{name}: bind mount {source} does not exist in the repository")
            elif source not in declared:
                problems.append(f"{name}: volume {source} (at {target}) is not declared under volumes:")
            else:
                used.add(source)
    problems += [f"volume {v} is declared but no service uses it" for v in sorted(declared - used)]
    return problems


def check_dependencies(compose: dict) -> list[str]:
    services = compose.get("services") or {}
    problems = []
    for name, service in services.items():
        deps = service.get("depends_on") or {}
        deps = {d: {"condition": "service_started"} for d in deps} if isinstance(deps, list) else deps
        for target, spec in deps.items():
            condition = (spec or {}).get("condition", "service_started")
            if target not in services:
                problems.append(f"{name} depends on unknown service {target}")
            elif condition == "service_healthy" and "healthcheck" not in services[target]:
                problems.append(f"{name} waits for {target} to be healthy, but {target} has no healthcheck")
            elif condition == "service_completed_successfully" and target not in ONE_SHOT:
                problems.append(f"{name} waits for long-running {target} to complete")
    for name in ONE_SHOT:
        if services.get(name, {}).get("restart") not in (None, "no", "on-failure"):
            problems.append(f"one-shot {name} must not restart always")
    for name in ("postgres", "minio"):
        if "healthcheck" not in services.get(name, {}):
            problems.append(f"{name} has no healthcheck")
    return problems


def check_airflow_common(compose: dict, env: dict[str, str]) -> list[str]:
    services = compose["services"]
    problems = []
    envs = {name: service_env(services[name], env) for name in AIRFLOW_SERVICES if name in services}
    for key in (
        "AIRFLOW__API_AUTH__JWT_SECRET",
        "AIRFLOW__API__SECRET_KEY",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN",
        "AIRFLOW__CORE__EXECUTOR",
        "AIRFLOW_CONN_SPARK_DEFAULT",
        "AIRFLOW_CONN_AWS_DEFAULT",
        "CDCLAKE_SOURCES",
    ):
        values = {name: e.get(key) for name, e in envs.items()}
        if None in values.values() or len(set(values.values())) != 1:
            problems.append(f"{key} differs between the Airflow services: {values}")
    url = envs.get("airflow-apiserver", {}).get("AIRFLOW__CORE__EXECUTION_API_SERVER_URL", "")
    ports = [str(p) for p in services.get("airflow-apiserver", {}).get("ports", [])]
    if not re.fullmatch(r"http://airflow-apiserver:(\d+)/execution/", url) or not any(
        p.endswith(":" + url.split(":")[2].split("/")[0]) for p in ports
    ):
        problems.append(f"AIRFLOW__CORE__EXECUTION_API_SERVER_URL {url!r} does not reach the api-server {ports}")
    sql = envs.get("airflow-scheduler", {}).get("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "")
    if not sql.startswith("postgresql+psycopg2://") or "@postgres:" not in sql:
        problems.append(f"Airflow's database is not the postgres service: {sql}")
    return problems


def check_connections(compose: dict, env: dict[str, str]) -> list[str]:
    problems = []
    scheduler = service_env(compose["services"]["airflow-scheduler"], env)
    expected = {"AIRFLOW_CONN_SPARK_DEFAULT": "spark", "AIRFLOW_CONN_AWS_DEFAULT": "aws"}
    for key, conn_type in expected.items():
        try:
            conn = json.loads(scheduler.get(key, ""))
        except json.JSONDecodeError as exc:
            problems.append(f"{key} is not JSON after substitution: {exc}")
            continue
        if conn.get("conn_type") != conn_type:
            problems.append(f"{key}: conn_type {conn.get('conn_type')!r}, expected {conn_type!r}")
    if problems:
        return problems
    aws = json.loads(scheduler["AIRFLOW_CONN_AWS_DEFAULT"])
    minio = service_env(compose["services"]["minio"], env)
    if (aws.get("login"), aws.get("password")) != (minio.get("MINIO_ROOT_USER"), minio.get("MINIO_ROOT_PASSWORD")):
        problems.append("aws_default's login/password are not MinIO's credentials")
    if (aws.get("extra") or {}).get("endpoint_url") != "http://minio:9000":
        problems.append(f"aws_default's endpoint_url is not http://minio:9000: {aws.get('extra')}")
    return problems


def minio_buckets(compose: dict) -> set[str]:
    command = " ".join(map(str, compose["services"].get("minio-init", {}).get("command") or []))
    lines = [line for line in command.splitlines() if re.search(r"\bmc mb\b", line)]
    return {target.split("/", 1)[1] for line in lines for target in re.findall(r"\S+/\S+", line)}


def check_lake_env(compose: dict, env: dict[str, str]) -> list[str]:
    """The cdclake settings of the stack: S3 warehouse in a created bucket, the catalog in postgres."""
    services = compose["services"]
    problems = []
    buckets = minio_buckets(compose)
    for bucket in ("landing", "warehouse"):
        if bucket not in buckets:
            problems.append(f"minio-init does not create bucket {bucket}: {sorted(buckets)}")
    scheduler = service_env(services["airflow-scheduler"], env)
    settings = Settings.from_env(scheduler)
    if not (isinstance(settings.warehouse, str) and settings.warehouse.split("/")[2] in buckets):
        problems.append(f"CDCLAKE_WAREHOUSE {settings.warehouse} is not in a bucket minio-init creates")
    uri = settings.catalog.uri or ""
    init_db = service_env(services["airflow-init"], env).get("CDCLAKE_CATALOG_DB")
    if not re.fullmatch(rf"jdbc:postgresql://postgres:5432/{init_db}", uri):
        problems.append(f"CDCLAKE_CATALOG_URI {uri!r} is not the database airflow-init creates ({init_db})")
    worker = service_env(services["spark-worker"], env)
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL_S3", "AWS_REGION"):
        if worker.get(key) != scheduler.get(key):  # executors write table files with S3FileIO
            problems.append(f"spark-worker's {key} differs from the Airflow services'")
    home = scheduler.get("CDCLAKE_HOME")
    for name in ("airflow-scheduler", "spark-worker"):  # staged batches: written by tasks, read by executors
        mounts = dict((t, s) for s, t in volume_mounts(services[name]))
        if not mounts.get(home) or is_bind(mounts[home]):
            problems.append(f"{name} does not mount a shared named volume at CDCLAKE_HOME {home}")
    sources_file = scheduler.get("CDCLAKE_SOURCES", "")
    local = ROOT / "config" / Path(sources_file).name
    if not sources_file.startswith("/opt/cdclake/config/") or not local.is_file():
        problems.append(f"CDCLAKE_SOURCES {sources_file} is not a file of config/")
    else:
        for name, source in load_sources(local).items():
            if not source.landing.startswith("s3://") or source.landing[5:].split("/")[0] not in buckets:
                problems.append(f"source {name}: landing {source.landing} is not in a bucket minio-init creates")
    return problems


def check_versions(compose: dict, dockerfile: str) -> list[str]:
    """Image and repo agree: Airflow, Python, pyspark / pyspark-client, Iceberg runtime and hadoop-aws."""
    pins = requirements()
    problems = []
    froms = [args.split()[0] for word, args in dockerfile_instructions(dockerfile) if word == "FROM"]
    final = froms[-1] if froms else ""
    if final.startswith("apache/airflow:"):
        tag = final.split(":", 1)[1]
        if tag.split("-")[0] != pins.get("apache-airflow"):
            problems.append(f"Dockerfile base {final} != apache-airflow=={pins.get('apache-airflow')}")
        python = re.search(r"python(\d+\.\d+)", tag)
    else:
        python = re.fullmatch(r"python:(\d+\.\d+)[.\w-]*", final)
    if not python or python.group(1) != "3.11":
        problems.append(f"Dockerfile base {final!r} is not Python 3.11 (the version requirements.txt is for)")
    if "SPARK_HOME" in dockerfile and "/python3.11/" not in dockerfile:
        problems.append("Dockerfile SPARK_HOME is not in the Python 3.11 site-packages")
    if pins.get("apache-airflow") != pins.get("apache-airflow-core"):
        problems.append("apache-airflow and apache-airflow-core pins differ")
    if pins.get("pyspark") != pins.get("pyspark-client"):
        problems.append(f"pyspark {pins.get('pyspark')} != pyspark-client {pins.get('pyspark-client')}")
    pom = (ROOT / "jars" / "pom.xml").read_text()
    runtime = re.search(r"iceberg-spark-runtime-(\d+\.\d+)_", pom)
    if not runtime or not (pins.get("pyspark") or "").startswith(runtime.group(1) + "."):
        problems.append(f"Iceberg runtime for Spark {runtime and runtime.group(1)} != pyspark {pins.get('pyspark')}")
    version = re.search(r"version = \"([^\"]+)\"", (ROOT / "pyproject.toml").read_text())
    images = {s.get("image") for s in compose["services"].values() if "build" in s}
    if version and images != {f"cdclake:{version.group(1)}"}:
        problems.append(f"built images {images} are not cdclake:{version.group(1)} (pyproject.toml)")
    return problems


def check_dockerfile_installs(dockerfile: str) -> list[str]:
    """requirements.txt installed; anything else pinned with == and not contradicting requirements.txt."""
    pins = requirements()
    problems, installs_requirements = [], False
    takes_value = {"-r", "--requirement", "-c", "--constraint", "-t", "--target", "-i", "--index-url", "-p", "--python"}
    for word, args in dockerfile_instructions(dockerfile):
        if word != "RUN":
            continue
        for command in re.split(r"&&|;|\|\|", args):
            tokens = command.split()
            if "install" not in tokens or not {"pip", "pip3"} & set(tokens[: tokens.index("install")]):
                continue
            rest, i = tokens[tokens.index("install") + 1 :], 0
            while i < len(rest):
                token = rest[i]
                if token in ("-r", "--requirement"):
                    installs_requirements |= rest[i + 1] in ("requirements.txt", "/opt/cdclake/requirements.txt")
                    i += 2
                    continue
                if token in ("-e", "--editable"):
                    if rest[i + 1] != ".":
                        problems.append(f"editable install of {rest[i + 1]}, not the repository")
                    i += 2
                    continue
                if token in takes_value:
                    i += 2
                    continue
                i += 1
                if token.startswith("-") or token == ".":
                    continue
                name, sep, version = token.partition("==")
                if not sep or not re.fullmatch(r"[\w.+!-]+", version):
                    problems.append(f"Dockerfile installs {token!r} without an exact == pin")
                elif canonical(name) in pins and pins[canonical(name)] != version:
                    problems.append(f"Dockerfile pins {token} but requirements.txt has {pins[canonical(name)]}")
    if not installs_requirements:
        problems.append("Dockerfile does not install -r requirements.txt")
    makefile_uv = re.search(r"uv==([\w.]+)", (ROOT / "Makefile").read_text())
    docker_uv = re.search(r"uv==([\w.]+)", dockerfile)
    if docker_uv and makefile_uv and docker_uv.group(1) != makefile_uv.group(1):
        problems.append(f"Dockerfile uses uv {docker_uv.group(1)}, the Makefile {makefile_uv.group(1)}")
    return problems


def check_scripts(compose: dict, dockerfile: str) -> list[str]:
    """Files of the repository that service commands run exist and are copied into the image."""
    problems = []
    copied = [args.split()[0].rstrip("/") for word, args in dockerfile_instructions(dockerfile) if word == "COPY"]
    for name, service in compose["services"].items():
        for path in re.findall(r"/opt/cdclake/([\w./-]+\.py)", str(service.get("command"))):
            if not (ROOT / path).is_file():
                problems.append(f"{name} runs {path}, which does not exist")
            elif not any(path == c or path.startswith(c + "/") or c == "." for c in copied):
                problems.append(f"{name} runs {path}, which the Dockerfile does not copy")
    return problems


# ---------------------------------------------------------------------------------------------- tests on the real files


def test_compose_declares_the_airflow3_spark_minio_stack():
    assert check_services(load_compose()) == []


def test_every_image_is_pinned():
    assert check_images(load_compose(), DOCKERFILE.read_text()) == []


def test_every_variable_is_defaulted_or_in_env_example():
    assert check_variables(compose_text(), env_example()) == []


def test_compose_needs_only_env_example_to_start():
    """A copy of .env.example satisfies every ${VAR:?} (compose would refuse to start otherwise)."""
    text = compose_text()
    env = env_example()
    for service in load_compose(text)["services"].values():
        service_env(service, env)  # raises KeyError on a missing required variable
    with pytest.raises(KeyError, match="AIRFLOW_JWT_SECRET"):
        service_env(load_compose(text)["services"]["airflow-scheduler"], {})


def test_every_named_volume_is_declared_and_used():
    assert check_volumes(load_compose()) == []


def test_dependencies_exist_and_healthchecks_back_them():
    assert check_dependencies(load_compose()) == []


def test_airflow_services_share_one_configuration():
    text = compose_text()
    assert check_airflow_common(load_compose(text), dummy_env(text)) == []


def test_connections_are_json_with_the_expected_conn_type():
    text = compose_text()
    assert check_connections(load_compose(text), dummy_env(text)) == []


def test_lake_settings_point_at_minio_and_the_postgres_catalog():
    text = compose_text()
    assert check_lake_env(load_compose(text), dummy_env(text)) == []


def test_versions_agree_with_requirements():
    assert check_versions(load_compose(), DOCKERFILE.read_text()) == []


def test_dockerfile_installs_requirements_and_only_pinned_extras():
    assert check_dockerfile_installs(DOCKERFILE.read_text()) == []


def test_scripts_run_by_services_exist_in_the_image():
    assert check_scripts(load_compose(), DOCKERFILE.read_text()) == []


def test_hadoop_aws_matches_pysparks_hadoop():
    """hadoop-aws must be the Hadoop version pyspark ships (else s3a fails with NoSuchMethodError)."""
    import pyspark

    if pyspark.__version__ != requirements()["pyspark"]:
        pytest.skip(f"installed pyspark {pyspark.__version__} is not the pinned one")
    client = sorted((Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))
    assert client, "pyspark ships no hadoop-client-api jar"
    shipped = re.search(r"hadoop-client-api-([\d.]+)\.jar", client[0].name).group(1)
    pom = (ROOT / "jars" / "pom.xml").read_text()
    aws = re.search(r"<artifactId>hadoop-aws</artifactId>\s*<version>([^<]+)</version>", pom).group(1)
    assert aws == shipped


def test_spark_connection_resolves_to_the_master_in_airflow(tmp_path):
    """Airflow itself parses the pre-set connections: spark_default -> spark://spark-master:7077."""
    text = compose_text()
    scheduler = service_env(load_compose(text)["services"]["airflow-scheduler"], dummy_env(text))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "CDCLAKE_"))}
    env.update({k: v for k, v in scheduler.items() if k.startswith("AIRFLOW_CONN_")})
    env.update(AIRFLOW_HOME=str(tmp_path), AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=f"sqlite:///{tmp_path / 'a.db'}")
    code = (
        "from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook\n"
        "from airflow.sdk import BaseHook\n"
        "print(SparkSubmitHook(conn_id='spark_default')._connection['master'])\n"
        "aws = BaseHook.get_connection('aws_default')\n"
        "print(aws.conn_type, aws.extra_dejson['endpoint_url'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[:2] == ["spark://spark-master:7077", "aws http://minio:9000"]


def test_catalog_default_is_the_sqlite_file_in_the_warehouse(tmp_path):
    """Without CDCLAKE_CATALOG_URI nothing changes for local runs; with the compose env, PostgreSQL + S3."""
    assert catalog_conf(tmp_path / "wh", Settings.from_env({}).catalog) == {
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.sql.catalog.lake": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.lake.type": "jdbc",
        "spark.sql.catalog.lake.uri": f"jdbc:sqlite:{tmp_path / 'wh' / 'catalog.db'}",
        "spark.sql.catalog.lake.jdbc.schema-version": "V1",
        "spark.sql.catalog.lake.warehouse": (tmp_path / "wh").as_uri(),
    }
    text = compose_text()
    settings = Settings.from_env(service_env(load_compose(text)["services"]["airflow-scheduler"], dummy_env(text)))
    conf = catalog_conf(settings.warehouse, settings.catalog)
    assert conf["spark.sql.catalog.lake.uri"] == "jdbc:postgresql://postgres:5432/iceberg"
    assert conf["spark.sql.catalog.lake.jdbc.password"] == "dummy-iceberg-db-password"
    assert conf["spark.sql.catalog.lake.warehouse"] == "s3://warehouse/lake"
    assert conf["spark.sql.catalog.lake.io-impl"] == "org.apache.iceberg.aws.s3.S3FileIO"
    assert conf["spark.sql.catalog.lake.s3.endpoint"] == "http://minio:9000"
    assert conf["spark.sql.catalog.lake.s3.path-style-access"] == "true"
    assert not any("minioadmin" in v or "dummy-minio" in v for v in conf.values())  # S3 keys stay in the env
    assert settings.catalog.sqlalchemy_url(settings.warehouse) == (
        "postgresql+psycopg2://iceberg:dummy-iceberg-db-password@postgres:5432/iceberg"
    )
    assert "dummy-iceberg-db-password" not in repr(settings)


def test_docker_compose_config_accepts_the_file(tmp_path):
    """`docker compose config` (the reference parser) when the CLI and its compose plugin exist."""
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("no docker CLI")
    probe = subprocess.run([docker, "compose", "version"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.skip("docker CLI without the compose plugin")
    shutil.copy(ENV_EXAMPLE, tmp_path / ".env")
    out = subprocess.run(
        [docker, "compose", "-f", str(COMPOSE), "--env-file", str(tmp_path / ".env"), "config", "--quiet"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr


# ---------------------------------------------------------------------------------------------- each check can fail


def _with(change) -> dict:
    compose = copy.deepcopy(load_compose())
    change(compose)
    return compose


def test_checks_catch_a_missing_service_and_a_wrong_command():
    assert check_services(_with(lambda c: c["services"].pop("airflow-dag-processor")))
    assert check_services(_with(lambda c: c["services"]["airflow-triggerer"].update(command=["airflow", "version"])))


def test_checks_catch_unpinned_images():
    dockerfile = DOCKERFILE.read_text()
    assert check_images(_with(lambda c: c["services"]["minio"].update(image="minio/minio:latest")), dockerfile)
    assert check_images(_with(lambda c: c["services"]["postgres"].update(image="postgres")), dockerfile)
    assert check_images(load_compose(), dockerfile.replace("python:3.11-slim-bookworm", "python"))


def test_checks_catch_undocumented_variables():
    text = compose_text().replace("${MINIO_ROOT_USER:-minioadmin}", "${MINIO_ROOT_USER}")
    example = {k: v for k, v in env_example().items() if k != "MINIO_ROOT_USER"}
    assert check_variables(text, example)
    assert check_variables(compose_text(), {**env_example(), "UNUSED": "x"})


def test_checks_catch_undeclared_volumes_and_bad_dependencies():
    assert check_volumes(_with(lambda c: c["volumes"].pop("minio-data")))
    assert check_volumes(_with(lambda c: c["services"]["spark-worker"].update(volumes=["./nowhere:/x"])))
    assert check_dependencies(_with(lambda c: c["services"]["spark-worker"].update(depends_on=["spark-mastr"])))
    assert check_dependencies(_with(lambda c: c["services"]["minio"].pop("healthcheck")))


def test_checks_catch_diverging_airflow_settings_and_bad_connections():
    text = compose_text()
    env = dummy_env(text)

    def other_secret(c):
        c["services"]["airflow-triggerer"]["environment"] = {
            **c["services"]["airflow-triggerer"]["environment"],
            "AIRFLOW__API_AUTH__JWT_SECRET": "other",
        }

    assert check_airflow_common(_with(other_secret), env)

    def broken_json(c):
        c["services"]["airflow-scheduler"]["environment"] = {
            **c["services"]["airflow-scheduler"]["environment"],
            "AIRFLOW_CONN_AWS_DEFAULT": '{"conn_type": "aws", "login": "${MINIO_ROOT_USER}}',
        }

    assert check_connections(_with(broken_json), env)


def test_checks_catch_lake_settings_that_do_not_meet():
    env = dummy_env(compose_text())

    def no_bucket(c):
        script = c["services"]["minio-init"]["command"][0]
        c["services"]["minio-init"]["command"] = [script.replace(" lake/landing", "")]

    assert check_lake_env(_with(no_bucket), env)

    def no_shared_volume(c):
        c["services"]["spark-worker"].pop("volumes")

    assert check_lake_env(_with(no_shared_volume), env)


def test_checks_catch_version_drift_and_unpinned_installs():
    compose, dockerfile = load_compose(), DOCKERFILE.read_text()
    assert check_versions(compose, dockerfile.replace("python:3.11-slim-bookworm", "python:3.12-slim-bookworm"))
    airflow_base = dockerfile.replace("python:3.11-slim-bookworm", "apache/airflow:3.2.0-python3.11")
    assert check_versions(compose, airflow_base)
    assert check_dockerfile_installs(dockerfile.replace("uv==0.13.9", "uv"))
    assert check_dockerfile_installs(dockerfile.replace("-r requirements.txt", "apache-airflow==3.3.2"))
    assert check_scripts(compose, dockerfile.replace("COPY docker/ docker/", ""))
