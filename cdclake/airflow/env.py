"""Running the DAGs on the embedded defaults (demo, end-to-end tests).

Everything Airflow needs is set through environment variables for a child
process: its home and SQLite DB inside the cdclake home, our dags/ and
plugins/ folders, and a ``spark_default`` connection at ``local[*]`` (without
one SparkSubmitOperator would use ``--master yarn``; DESIGN.md section 7).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cdclake.runtime.settings import REPO_ROOT


def airflow_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    home = home.resolve()
    airflow_home = home / "airflow"
    airflow_home.mkdir(parents=True, exist_ok=True)
    venv_bin = str(Path(sys.executable).parent)
    env = dict(os.environ)
    env.update(
        {
            "CDCLAKE_HOME": str(home),
            "AIRFLOW_HOME": str(airflow_home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO_ROOT / "dags"),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO_ROOT / "plugins"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{airflow_home / 'airflow.db'}",
            "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
            "AIRFLOW_CONN_SPARK_DEFAULT": '{"conn_type": "spark", "host": "local[*]"}',
            "PYSPARK_PYTHON": sys.executable,
            "PATH": venv_bin + os.pathsep + env.get("PATH", ""),
        }
    )
    env.update(extra or {})
    return env


def airflow(args: list[str], env: dict[str, str], log: Path | None = None) -> subprocess.CompletedProcess:
    """Run the ``airflow`` CLI of this venv; output to ``log`` (or captured)."""
    cmd = [str(Path(sys.executable).parent / "airflow"), *args]
    if log is None:
        return subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as handle:
        handle.write(f"\n$ airflow {' '.join(args)}\n")
        handle.flush()
        return subprocess.run(cmd, env=env, stdout=handle, stderr=subprocess.STDOUT, text=True, check=False)


def migrate(env: dict[str, str], log: Path | None = None) -> None:
    result = airflow(["db", "migrate"], env, log)
    if result.returncode != 0:
        raise RuntimeError(f"airflow db migrate failed (see {log}): {getattr(result, 'stderr', '')}")


def dags_test(
    dag_id: str, logical_date: str, env: dict[str, str], log: Path | None = None
) -> subprocess.CompletedProcess:
    return airflow(["dags", "test", dag_id, logical_date], env, log)
