"""``python -m cdclake apply``: one batch from named files, in one local Spark session."""

from __future__ import annotations

from pathlib import Path

from cdclake.options import Options
from cdclake.pipeline import BatchReport, run_batch
from cdclake.runtime.settings import Settings
from cdclake.runtime.spark import build_session
from cdclake.staging.batch import Manifest
from cdclake.staging.stage import content_batch_id, stage_files


def apply_files(
    format_id: str,
    options: Options,
    files: list[str],
    warehouse: str | Path,
    batch_id: str | None = None,
    spark=None,
    scd2: list[str] | None = None,
    namespace: str | None = None,
    schema_policy: str = "evolve",
) -> BatchReport:
    settings = Settings.from_env()
    warehouse = Path(warehouse).resolve()
    warehouse.mkdir(parents=True, exist_ok=True)
    raw = options.raw()
    keys = options.list("keys")
    batch_id = batch_id or content_batch_id(
        files, format_id, {**raw, "scd2": ",".join(scd2 or []), "namespace": namespace or ""}
    )
    manifest = Manifest(
        source="apply",
        batch_id=batch_id,
        format=format_id,
        options=raw,
        keys={"*": keys} if keys else {},
        scd2=list(scd2 or []),
        namespace=namespace,
        schema_policy=schema_policy,
    )
    staging_root = warehouse / "_staging"
    stage_files(files, staging_root, manifest)
    if spark is None:
        spark = build_session("cdclake-apply", warehouse, master="local[*]", jars=settings.jars())
    return run_batch(spark, staging_root / batch_id, buckets=settings.buckets)
