"""The spark-submit driver's class-data-sharing archive: where it is, and when the steps are given it."""

from __future__ import annotations

from pathlib import Path

from cdclake.jvm_archive import driver_java_options
from cdclake.orchestration import _spark_args
from cdclake.settings import Settings


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
