"""The ingest DAG through Airflow for real: `airflow dags test` runs stage, the three
spark-submit jobs and the report, twice, on the embedded defaults."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cdclake import samples
from cdclake.airflow_env import airflow_env, dags_test, migrate
from cdclake.settings import REPO_ROOT
from cdclake.tables import read_rows, snapshot_summaries

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
        "decode": ["stage"],
        "normalize": ["decode", "stage"],
        "has_schema_changes": ["normalize", "stage"],
        "apply_ddl": ["has_schema_changes", "stage"],
        "has_truncates": ["apply_ddl", "normalize", "stage"],
        "apply_truncates": ["has_truncates", "stage"],
        "affected_tables": ["apply_ddl", "apply_truncates", "normalize", "stage"],
        "compact": ["affected_tables"],
        "report": ["affected_tables", "compact", "stage"],
    }
    assert result["mapped"] == ["compact"]  # one task per affected table
    assert result["params"] == ["dry_run", "full_refresh", "interval_end", "interval_start"]
    assert result["rebuild_params"] == ["dry_run", "from", "source", "tables"]
    assert "cdclake_gg_json_demo" in result["outlets"][0]


def test_two_dag_runs_give_the_history_rows(airflow_home):
    home, env = airflow_home
    log = home / "airflow.log"
    landing = home / "landing" / "goldengate-json"
    samples.write_goldengate_json_batch(landing, 1)
    first = dags_test("cdc_gg_json_demo", "2024-01-01T00:00:00+00:00", env, log)
    assert first.returncode == 0, log.read_text()[-5000:]
    samples.write_goldengate_json_batch(landing, 2)
    second = dags_test("cdc_gg_json_demo", "2024-01-02T00:00:00+00:00", env, log)
    assert second.returncode == 0, log.read_text()[-5000:]

    warehouse = home / "warehouse"
    assert read_rows(warehouse, samples.TABLE) == samples.EXPECTED_ROWS
    batches = [s["cdclake.batch-id"] for s in snapshot_summaries(warehouse, samples.TABLE) if "cdclake.batch-id" in s]
    assert len(batches) == 2 and len(set(batches)) == 2  # one commit per run
    # each landing file was staged by exactly one run
    manifests = sorted((home / "staging" / "gg_json_demo").glob("*/manifest.json"))
    staged = [f["name"] for m in manifests for f in json.loads(m.read_text())["files"]]
    assert sorted(staged) == ["gg_tcustord_0001.json", "gg_tcustord_0002.json"]
    reports = [json.loads(p.read_text()) for p in (home / "staging" / "gg_json_demo").glob("*/reports/batch.json")]
    assert all(r["balanced"] and r["quarantined"] == 0 for r in reports) and len(reports) == 2
