"""spark-submit entry point: rebuild tables of one source (logic in cdclake.jobs.rebuild)."""

import argparse
import json

from cdclake.jobs import rebuild
from cdclake.runtime.spark import build_session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--source-dir", required=True, help="<staging>/<source>")
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--table", action="append", default=None, help="source tables (default: all)")
    parser.add_argument("--from", dest="mode", choices=["changelog", "archive"], default="changelog")
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--buckets", type=int, default=16)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    spark = build_session("cdclake-rebuild", args.warehouse)
    try:
        report = rebuild.run(
            spark, args.source_dir, args.table, args.mode, args.run_id, buckets=args.buckets, dry_run=args.dry_run
        )
        print(json.dumps(report, default=str))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
