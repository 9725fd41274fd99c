"""``make demo``: sample landing files -> the ingest DAG through Airflow -> the table.

Runs two batches of GoldenGate JSON (inserts, an update, then a delete, a
partial update, a new row and a re-insert) through ``airflow dags test`` on the
embedded defaults, then prints the resulting rows of GG.TCUSTORD and each
run's report.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from cdclake import samples
from cdclake.airflow_env import airflow_env, dags_test, migrate
from cdclake.batch import read_report
from cdclake.settings import REPO_ROOT
from cdclake.tables import read_rows

DAG_ID = "cdc_gg_json_demo"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", default=str(REPO_ROOT / "var" / "demo"), help="demo folder (wiped first)")
    args = parser.parse_args(argv)
    home = Path(args.home).resolve()
    shutil.rmtree(home, ignore_errors=True)
    started = time.monotonic()
    env = airflow_env(home)
    log = home / "demo.log"
    print(f"cdclake demo: home {home}, Airflow + Spark logs in {log}")
    migrate(env, log)
    landing = home / "landing" / "goldengate-json"
    for batch, day in ((1, "2024-01-01T00:00:00+00:00"), (2, "2024-01-02T00:00:00+00:00")):
        path = samples.write_goldengate_json_batch(landing, batch)
        print(f"batch {batch}: wrote {path.name}; running DAG {DAG_ID} for {day} ...", flush=True)
        result = dags_test(DAG_ID, day, env, log)
        if result.returncode != 0:
            print(f"error: the DAG run failed (exit {result.returncode}); see {log}", file=sys.stderr)
            return 1
        batch_dirs = sorted(
            (home / "staging" / "gg_json_demo").glob("*/reports/batch.json"), key=lambda p: p.stat().st_mtime
        )
        if batch_dirs:
            print("  report:", json.dumps(read_report(batch_dirs[-1].parent.parent, "batch")))
    print(f"\nrows of {samples.TABLE}:")
    for row in read_rows(home / "warehouse", samples.TABLE):
        print("  " + json.dumps(row, default=str))
    print(f"\ndemo finished in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
