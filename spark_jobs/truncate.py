"""spark-submit entry point: the truncate step of one staged batch (logic in cdclake.jobs.truncate)."""

import argparse
import json

from cdclake.jobs import truncate
from cdclake.runtime.spark import build_session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch-dir", required=True)
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--buckets", type=int, default=16, help="buckets of a new table")
    args = parser.parse_args()
    spark = build_session("cdclake-truncate", args.warehouse)
    try:
        print(json.dumps(truncate.run(spark, args.batch_dir, buckets=args.buckets), default=str))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
