"""spark-submit entry point: maintenance of a source's lake tables (logic in cdclake.jobs.maintain)."""

import argparse
import json
from pathlib import Path

from cdclake.jobs import maintain
from cdclake.runtime.spark import build_session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--source-dir", required=True, help="the source's staging folder (lists its tables)")
    parser.add_argument("--table", action="append", default=None, help="only these Spark table names")
    parser.add_argument("--keep-days", type=float, default=maintain.DEFAULT_KEEP_DAYS)
    parser.add_argument("--keep-snapshots", type=int, default=maintain.DEFAULT_KEEP_SNAPSHOTS)
    parser.add_argument("--orphan-days", type=float, default=maintain.DEFAULT_ORPHAN_DAYS)
    parser.add_argument("--source", default=None, help="the source's name (shown by the Airflow UI)")
    args = parser.parse_args()
    tables = args.table or maintain.source_tables(Path(args.source_dir))
    spark = build_session("cdclake-maintain", args.warehouse)
    try:
        report = maintain.run(
            spark, tables, keep_days=args.keep_days, keep_snapshots=args.keep_snapshots, orphan_days=args.orphan_days
        )
        print(json.dumps(report, default=str))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
