#!/usr/bin/env bash
# Spark 4.1 needs Java 17 or newer; say so plainly instead of failing deep inside Spark.
set -euo pipefail
if ! command -v java >/dev/null 2>&1; then
  echo "error: Java 17+ is required (Spark runs on the JVM) but 'java' is not on PATH." >&2
  echo "       Debian/Ubuntu: sudo apt-get install openjdk-17-jre-headless ; macOS: brew install openjdk@17" >&2
  exit 1
fi
version=$(java -version 2>&1 | awk -F'"' '/version/ {print $2; exit}')
major=${version%%.*}
if [[ "$major" == "1" ]]; then major=$(echo "$version" | cut -d. -f2); fi
if [[ -z "$major" || "$major" -lt 17 ]]; then
  echo "error: Java 17+ is required, found Java '$version'." >&2
  echo "       Debian/Ubuntu: sudo apt-get install openjdk-17-jre-headless ; then re-run." >&2
  exit 1
fi
