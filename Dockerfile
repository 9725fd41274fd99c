# One image for Airflow and Spark (same Python, same cdclake, same pinned jars).
FROM python:3.11-slim-bookworm
RUN apt-get update && apt-get install -y --no-install-recommends openjdk-17-jre-headless maven make procps \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/cdclake
COPY requirements.txt pyproject.toml README.md ./
RUN pip install --no-cache-dir uv==0.13.9 && uv pip install --system --no-cache -r requirements.txt
COPY jars/pom.xml jars/pom.xml
RUN mvn -q -B -f jars/pom.xml dependency:copy-dependencies -DoutputDirectory=/opt/cdclake/.jars -DincludeScope=runtime
COPY . .
RUN uv pip install --system --no-deps -e .
ENV CDCLAKE_JARS=/opt/cdclake/.jars PYSPARK_PYTHON=python3 SPARK_HOME=/usr/local/lib/python3.11/site-packages/pyspark
