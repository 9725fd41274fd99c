"""spark-submit entry point: the compact step of one staged batch, every table or one group of them
(logic in cdclake.jobs.compact)."""

import argparse
import json

from cdclake.jobs import compact
from cdclake.runtime.spark import build_session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch-dir", required=True)
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--table", action="append", default=None, help="only these source tables")
    parser.add_argument("--buckets", type=int, default=16, help="buckets of a new table")
    parser.add_argument("--full-refresh", action="store_true", help="recompute every row from the change log")
    parser.add_argument("--label", default=None, help="what the Airflow UI shows for this task (not used here)")
    args = parser.parse_args()
    spark = build_session("cdclake-compact", args.warehouse)
    try:
        print(
            json.dumps(
                compact.run(
                    spark, args.batch_dir, tables=args.table, buckets=args.buckets, full_refresh=args.full_refresh
                ),
                default=str,
            )
        )
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
