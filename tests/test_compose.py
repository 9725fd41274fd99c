"""docker-compose.yaml cannot run here (no Docker engine): check its structure instead."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def test_compose_declares_the_stack():
    compose = yaml.safe_load((ROOT / "docker-compose.yaml").read_text())
    services = compose["services"]
    for name in (
        "postgres",
        "minio",
        "spark-master",
        "spark-worker",
        "airflow-apiserver",
        "airflow-scheduler",
        "airflow-dag-processor",
        "airflow-triggerer",
    ):
        assert name in services, name
    assert services["airflow-scheduler"]["environment"]["AIRFLOW_CONN_SPARK_DEFAULT"].count("spark://") == 1
    assert (ROOT / services["spark-master"]["build"] / "Dockerfile").exists()
