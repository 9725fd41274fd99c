"""spark-submit entry point: decode, then normalize, one staged batch in one Spark application
(logic in cdclake.jobs.decode and cdclake.jobs.normalize; why one application: docs/decisions.md,
"One Spark application per batch step")."""

import argparse
import json

from cdclake.jobs import decode, normalize
from cdclake.runtime.spark import build_session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch-dir", required=True)
    parser.add_argument("--warehouse", required=True)
    args = parser.parse_args()
    spark = build_session("cdclake-decode-normalize", args.warehouse)
    try:
        print(json.dumps({"decode": decode.run(spark, args.batch_dir)}))
        print(json.dumps({"normalize": normalize.run(spark, args.batch_dir)}))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
