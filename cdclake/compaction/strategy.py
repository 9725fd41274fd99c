"""Which path a batch takes and which buckets it rewrites (merge-on-read or bucket overwrite,
including the maintenance rule), from the table's file list only.
"""

from __future__ import annotations

MERGE_ON_READ, OVERWRITE = "merge-on-read", "overwrite"
#: Fewer rows than this per touched bucket (on average): rewriting the buckets costs about the same as a
#: merge, and leaves no delete files. Table property ``cdclake.mor-min-bucket-rows`` overrides it.
MOR_MIN_BUCKET_ROWS = 1000
MIN_ROWS_PROPERTY = "cdclake.mor-min-bucket-rows"
#: Maintenance: merges leave delete files and small data files in the buckets. More such *extra* files
#: (delete files, and small data files beyond one a bucket) than this x buckets: the batch rewrites its
#: buckets and every bucket with extra files (the overwrite path), which leaves one data file per bucket
#: (or a few large ones) and no delete file. Table property ``cdclake.max-extra-files`` overrides the product.
MAX_EXTRA_FILES_PER_BUCKET = 4
MAX_EXTRA_FILES_PROPERTY = "cdclake.max-extra-files"
#: A data file under this share of ``write.target-file-size-bytes`` is small (as in Iceberg's rewrite_data_files).
SMALL_FILE_RATIO = 0.75
TARGET_FILE_SIZE = 512 * 1024 * 1024  # Iceberg's default write.target-file-size-bytes


def choose_mode(
    spark, name: str, props: dict[str, str], touched: list[int], buckets: int, summary: dict[str, str] | None = None
) -> tuple[str, list[int]]:
    """Merge-on-read, or overwrite (and which buckets) for a batch that could merge.

    From the table's file list (metadata only): more extra files (delete files, and small data files
    beyond one a bucket) than the limit -> overwrite the touched buckets and every bucket with extra
    files (maintenance); touched buckets smaller than the minimum on average -> overwrite them.
    Returns (mode, buckets to write).

    ``summary`` (the head snapshot's): when its totals already decide, the file list is not queried (a
    Spark job, 0.1-0.3 s per table). No more files in all than the limit means no maintenance; then
    fewer records in all than the touched buckets' minimum (a small table) means overwrite, and a batch
    touching every bucket with enough live rows in all (records less position deletes) means merge.
    """
    limit = int(props.get(MAX_EXTRA_FILES_PROPERTY, MAX_EXTRA_FILES_PER_BUCKET * buckets))
    min_rows = int(props.get(MIN_ROWS_PROPERTY, MOR_MIN_BUCKET_ROWS))
    if summary and all(k in summary for k in ("total-data-files", "total-delete-files", "total-records")):
        files = int(summary["total-data-files"]) + int(summary["total-delete-files"])
        records = int(summary["total-records"])
        if files <= limit and records < min_rows * len(touched):
            return OVERWRITE, touched  # extra files <= all files <= limit; live rows <= records
        live = records - int(summary.get("total-position-deletes", 0)) - int(summary.get("total-equality-deletes", 0))
        if files <= limit and len(touched) >= buckets and live >= min_rows * len(touched):
            return MERGE_ON_READ, touched
    target = int(props.get("write.target-file-size-bytes", TARGET_FILE_SIZE))
    rows = spark.sql(
        f"SELECT partition._cdc_bucket AS bucket, content, file_size_in_bytes < {int(target * SMALL_FILE_RATIO)} "
        f"AS small, count(*) AS files, sum(record_count) AS records FROM {name}.files GROUP BY 1, 2, 3"
    ).collect()
    small, deletes, live = {}, {}, {}
    for r in rows:
        bucket = r["bucket"]
        if r["content"] == 0:
            live[bucket] = live.get(bucket, 0) + r["records"]
            small[bucket] = small.get(bucket, 0) + (r["files"] if r["small"] else 0)
        else:
            deletes[bucket] = deletes.get(bucket, 0) + r["files"]
            live[bucket] = live.get(bucket, 0) - (r["records"] if r["content"] == 1 else 0)
    extra = {b: deletes.get(b, 0) + max(0, small.get(b, 0) - 1) for b in set(small) | set(deletes)}
    if sum(extra.values()) > limit:
        return OVERWRITE, sorted(set(touched) | {b for b, n in extra.items() if n})
    if sum(live.get(b, 0) for b in touched) < min_rows * len(touched):
        return OVERWRITE, touched
    return MERGE_ON_READ, touched
