# One image for every cdclake container of docker-compose.yaml: Airflow 3 (api-server, scheduler,
# dag-processor, triggerer) and the Spark standalone master / worker (`spark-class`, shipped by the
# pyspark wheel). Same Python 3.11, the pinned requirements.txt, the pinned jars of jars/pom.xml and
# this repository, so Spark executors import exactly the cdclake that the Airflow tasks run.

# Stage 1: the JVM jars from Maven Central, resolved as `make setup` does.
FROM maven:3.9.9-eclipse-temurin-17 AS jars
WORKDIR /build
COPY jars/pom.xml jars/pom.xml
RUN mvn -q -B -f jars/pom.xml dependency:copy-dependencies -DoutputDirectory=/build/.jars -DincludeScope=runtime

# Stage 2: the compiled helpers (cdclake/native), built where a C compiler is (the final image has
# none; the same Python 3.11 on the same Debian, so the module loads there).
FROM python:3.11-bookworm AS native
WORKDIR /build
COPY cdclake/native/ cdclake/native/
RUN python cdclake/native/build.py --force

FROM python:3.11-slim-bookworm
# Java 17 for Spark (drivers in Airflow tasks, master, worker); procps: Spark's scripts call ps.
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/cdclake
# The local venv's exact package set (with the PostgreSQL drivers: Airflow's metadata DB through
# psycopg2 and asyncpg, pyiceberg's SQL catalog through psycopg2).
COPY requirements.txt ./
RUN pip install --no-cache-dir uv==0.13.9 \
    && uv pip install --system --no-cache -r requirements.txt
COPY --from=jars /build/.jars /opt/cdclake/.jars
# Only what runs (not .venv/, var/, .jars/ of the checkout).
COPY pyproject.toml README.md ./
COPY cdclake/ cdclake/
COPY --from=native /build/cdclake/native/*.so cdclake/native/
COPY dags/ dags/
COPY plugins/ plugins/
COPY spark_jobs/ spark_jobs/
COPY config/ config/
COPY docker/ docker/
# Editable, so that REPO_ROOT (cdclake/runtime/settings.py) is /opt/cdclake and spark_jobs/ is found there.
RUN uv pip install --system --no-cache --no-deps -e . \
    && useradd --uid 50000 --gid 0 --home-dir /opt/airflow --create-home cdclake \
    && mkdir -p /data/cdclake /opt/airflow/logs \
    && chown -R 50000:0 /data/cdclake /opt/airflow
ENV CDCLAKE_JARS=/opt/cdclake/.jars \
    PYSPARK_PYTHON=python3 \
    SPARK_HOME=/usr/local/lib/python3.11/site-packages/pyspark \
    AIRFLOW_HOME=/opt/airflow
USER 50000
