"""Runtime settings read from the environment: the Spark driver's heap, the bulk path's byte bound."""

from __future__ import annotations

import pytest

from cdclake.airflow.dags import _spark_args
from cdclake.runtime.settings import BULK_BYTES_CAP, BULK_BYTES_FLOOR, Settings, bulk_bytes_for


def test_the_driver_heap_defaults_to_4g_and_can_be_left_to_spark():
    assert Settings.from_env({}).driver_memory == "4g"
    assert Settings.from_env({"CDCLAKE_DRIVER_MEMORY": " 2048M "}).driver_memory == "2048m"
    assert Settings.from_env({"CDCLAKE_DRIVER_MEMORY": "spark"}).driver_memory is None
    assert Settings.from_env({"CDCLAKE_DRIVER_MEMORY": ""}).driver_memory is None
    for bad in ("lots", "4 g", "0g", "-1g", "4gb"):
        with pytest.raises(ValueError, match="CDCLAKE_DRIVER_MEMORY"):
            Settings.from_env({"CDCLAKE_DRIVER_MEMORY": bad})


def test_every_spark_step_is_submitted_with_the_heap():
    assert _spark_args(Settings.from_env({}))["driver_memory"] == "4g"
    assert _spark_args(Settings.from_env({"CDCLAKE_DRIVER_MEMORY": "spark"}))["driver_memory"] is None


def test_a_session_started_by_build_session_gets_the_heap(spark):
    """The test run's session is started by build_session, as the local apply command's is."""
    assert spark.sparkContext.getConf().get("spark.driver.memory") == Settings.from_env().driver_memory
    max_heap = spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()
    assert max_heap > 3 * 2**30  # Spark's own default (1 GiB) would give less than 1 GiB


def test_the_bulk_bound_follows_the_memory_available_between_a_floor_and_a_cap():
    gib, mib = 2**30, 2**20
    assert bulk_bytes_for(None) == BULK_BYTES_FLOOR == 192 * mib  # not known: the old default
    assert bulk_bytes_for(4 * gib) == 192 * mib  # a small worker keeps the floor
    assert bulk_bytes_for(12 * gib) == 256 * mib  # a 48th of it between
    assert bulk_bytes_for(20 * gib) == BULK_BYTES_CAP == 384 * mib
    assert bulk_bytes_for(200 * gib) == 384 * mib


def test_the_bulk_bound_set_in_the_environment_wins():
    assert Settings.from_env({"CDCLAKE_DRIVER_BULK_BYTES": "1048576"}).driver_bulk_bytes == 2**20
    assert Settings.from_env({"CDCLAKE_DRIVER_BULK_BYTES": "0"}).driver_bulk_bytes == 0
    assert BULK_BYTES_FLOOR <= Settings.from_env({}).driver_bulk_bytes <= BULK_BYTES_CAP
