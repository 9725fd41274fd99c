"""The DAG file parses into the documented task graph (the full runs through Airflow are in
tests/test_dag_s3_e2e.py: three formats from S3; `make demo` runs every format from local folders)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cdclake.airflow.env import airflow_env, migrate
from cdclake.runtime.settings import REPO_ROOT

pytestmark = pytest.mark.airflow


@pytest.fixture(scope="module")
def airflow_home(tmp_path_factory: pytest.TempPathFactory):
    home = tmp_path_factory.mktemp("cdclake-home")
    env = airflow_env(home)
    migrate(env, home / "airflow.log")
    return home, env


def test_dag_file_imports_without_errors(airflow_home):
    _home, env = airflow_home
    code = (
        "from airflow.dag_processing.dagbag import DagBag; import json; "
        f"b = DagBag(dag_folder={str(REPO_ROOT / 'dags')!r}); "
        "d = b.dags['cdc_gg_json_demo']; r = b.dags['cdc_rebuild']; "
        "print(json.dumps({'errors': {k: str(v) for k, v in b.import_errors.items()}, 'dags': sorted(b.dags), "
        "'tasks': {t.task_id: sorted(t.upstream_task_ids) for t in d.tasks}, "
        "'mapped': [t.task_id for t in d.tasks if type(t).__name__ == 'MappedOperator'], "
        "'params': sorted(d.params), 'rebuild_params': sorted(r.params), "
        "'outlets': [str(o) for o in d.get_task('report').outlets]}))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["errors"] == {}
    assert {"cdc_gg_json_demo", "cdc_rebuild"} <= set(result["dags"])
    assert result["tasks"] == {
        "stage": [],
        "decode_normalize": ["stage"],
        "has_schema_changes": ["decode_normalize", "stage"],
        "apply_ddl": ["has_schema_changes", "stage"],
        "has_truncates": ["apply_ddl", "decode_normalize", "stage"],
        "apply_truncates": ["has_truncates", "stage"],
        "affected_tables": ["apply_ddl", "apply_truncates", "decode_normalize", "stage"],
        "compact": ["affected_tables"],
        "report": ["affected_tables", "compact", "stage"],
    }
    assert result["mapped"] == ["compact"]  # one task per group of tables
    assert result["params"] == ["dry_run", "full_refresh", "interval_end", "interval_start"]
    assert result["rebuild_params"] == ["dry_run", "from", "source", "tables"]
    assert "cdclake_gg_json_demo" in result["outlets"][0]
