"""The spark-submit driver's class-data-sharing archive: where it is, and when the steps are given it."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdclake.airflow.dags import _spark_args, run_java_options, step_java_options
from cdclake.runtime.jvm_archive import QUICK_JIT, driver_java_options, warm_up_batches
from cdclake.runtime.settings import Settings
from cdclake.staging.batch import Manifest, StagedFile


def settings(tmp_path: Path, **env: str) -> Settings:
    return Settings.from_env({"CDCLAKE_HOME": str(tmp_path), "CDCLAKE_JARS": str(tmp_path / "jars"), **env})


def test_the_archive_sits_with_the_jars_unless_turned_off(tmp_path):
    assert settings(tmp_path).jvm_archive == (tmp_path / "jars" / "spark-driver.jsa").resolve()
    assert settings(tmp_path, CDCLAKE_JVM_ARCHIVE=str(tmp_path / "x.jsa")).jvm_archive == tmp_path / "x.jsa"
    assert settings(tmp_path, CDCLAKE_JVM_ARCHIVE="off").jvm_archive is None


def test_steps_get_the_archive_only_once_it_exists(tmp_path):
    s = settings(tmp_path)
    assert driver_java_options(s) is None
    assert "spark.driver.defaultJavaOptions" not in _spark_args(s)["conf"]
    s.jvm_archive.parent.mkdir(parents=True)
    s.jvm_archive.write_bytes(b"archive")
    assert driver_java_options(s) == f"-XX:SharedArchiveFile={s.jvm_archive}"
    # the default options: a user's spark.driver.extraJavaOptions are added to them, not replaced
    assert _spark_args(s)["conf"]["spark.driver.defaultJavaOptions"] == f"-XX:SharedArchiveFile={s.jvm_archive}"
    assert driver_java_options(settings(tmp_path, CDCLAKE_JVM_ARCHIVE="off")) is None


def test_small_batches_get_the_quick_jit_large_ones_and_full_refreshes_do_not(tmp_path):
    s = settings(tmp_path, CDCLAKE_QUICK_JIT_MAX_BYTES="1000")
    assert driver_java_options(s, 1000) == QUICK_JIT
    assert driver_java_options(s, 1001) is None
    assert driver_java_options(s) is None  # size unknown (the rebuild and maintenance DAGs): default JIT
    assert driver_java_options(settings(tmp_path, CDCLAKE_QUICK_JIT_MAX_BYTES="0"), 1) is None
    s.jvm_archive.parent.mkdir(parents=True)
    s.jvm_archive.write_bytes(b"archive")
    assert driver_java_options(s, 10) == f"-XX:SharedArchiveFile={s.jvm_archive} {QUICK_JIT}"

    def manifest(*sizes: int) -> Manifest:
        files = [StagedFile(name=f"f{i}", path=f"f{i}", size=n, sha256="") for i, n in enumerate(sizes)]
        return Manifest(source="s", batch_id="b", format="goldengate-json", options={}, files=files)

    archive = f"-XX:SharedArchiveFile={s.jvm_archive}"
    assert run_java_options(s, manifest(400, 600), {"params": {}}) == f"{archive} {QUICK_JIT}"
    assert run_java_options(s, manifest(400, 601), {"params": {}}) == archive  # the files add up
    assert run_java_options(s, manifest(10), {"params": {"full_refresh": True}}) == archive


class PushedBy:
    """A task instance whose stage task pushed ``value`` (None: it pushed nothing)."""

    def __init__(self, value):
        self.value = value

    def xcom_pull(self, task_ids: str, key: str):
        assert (task_ids, key) == ("stage", "driver_java_options")
        return self.value


def test_the_ingest_steps_take_their_options_from_the_runs_stage_task(tmp_path):
    import jinja2

    s = settings(tmp_path)
    s.jvm_archive.parent.mkdir(parents=True)
    s.jvm_archive.write_bytes(b"archive")
    template = _spark_args(s, per_run_options=True)["conf"]["spark.driver.defaultJavaOptions"]
    assert template == step_java_options(driver_java_options(s))

    def rendered(pushed) -> str:
        return jinja2.Environment().from_string(template).render(ti=PushedBy(pushed))

    archive = f"-XX:SharedArchiveFile={s.jvm_archive}"
    assert rendered(f"{archive} {QUICK_JIT}") == f"{archive} {QUICK_JIT}"
    assert rendered("") == ""  # the stage task found no options (no archive): none
    assert rendered(None) == archive  # a run staged before the XCom existed: the archive, never "None"


@pytest.mark.spark
def test_the_warm_up_batches_create_and_merge_into_a_table(spark, tmp_path, monkeypatch):
    """The archive holds what the warm-up loads: its batches must reach the Iceberg writes (an earlier
    warm-up gave no keys, so every event was quarantined and compact never wrote)."""
    monkeypatch.setenv("CDCLAKE_HOME", str(tmp_path))
    first, second = warm_up_batches(spark, tmp_path)
    assert first["applied"] == 4 and first["quarantined"] == 0 and first["balanced"], first
    assert second["applied"] > 0 and second["quarantined"] == 0 and second["balanced"], second
    assert all(t["status"] == "committed" for r in (first, second) for t in r["tables"].values())
