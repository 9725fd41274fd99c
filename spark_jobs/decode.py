"""spark-submit entry point: the decode step of one staged batch (logic in cdclake.jobs.decode)."""

import argparse
import json

from cdclake.jobs import decode
from cdclake.spark import build_session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch-dir", required=True)
    parser.add_argument("--warehouse", required=True)
    args = parser.parse_args()
    spark = build_session("cdclake-decode", args.warehouse)
    try:
        print(json.dumps(decode.run(spark, args.batch_dir)))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
