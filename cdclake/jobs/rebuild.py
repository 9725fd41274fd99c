"""Rebuild lake tables of one source: from the change log, or from the raw archive.

- ``changelog``: every row of the table is recomputed from its Iceberg change
  log (a full refold in the table's current layout, through the recorded
  renames and drops). Repairs a damaged table; fast.
- ``archive``: the tables (current, change log, history) are dropped and every
  staged batch of the source is decoded and applied again, oldest first, with
  the decoder state reset. Needed after a decoder fix or an incompatible schema
  change (the new layout is built from scratch).

Both write a rebuild report under ``<source>/_rebuild/<run>/``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from cdclake.compaction.lineage import table_properties
from cdclake.jobs.layout import LAYOUTS_FILE, TableLayout, write_layouts
from cdclake.staging.batch import Manifest, read_manifest, write_json_atomic, write_report

REBUILD_DIR = "_rebuild"


def source_batches(source_dir: Path) -> list[Path]:
    """The source's staged batches in staging order (their manifests' write time)."""
    found = [p.parent for p in source_dir.glob("*/manifest.json") if not p.parent.name.startswith(("_", "."))]
    return sorted(found, key=lambda d: ((d / "manifest.json").stat().st_mtime, d.name))


def _table_layout(spark, source_table: str, manifest: Manifest) -> TableLayout | None:
    from cdclake.jobs.normalize import existing_columns, recorded_history
    from cdclake.lake.naming import iceberg_identifier, spark_table_name
    from cdclake.schema.evolution import column_map

    name = spark_table_name(source_table, manifest.namespace)
    columns = existing_columns(spark, name)
    if columns is None:
        return None
    props = table_properties(spark, name)
    ns, short = iceberg_identifier(source_table, manifest.namespace)
    return TableLayout(
        identifier=f"{ns}.{short}",
        spark_name=name,
        keys=tuple(k for k in props.get("cdclake.keys", "").split(",") if k),
        columns=tuple(columns),
        new_columns=(),
        exists=True,
        column_map=column_map(recorded_history(spark, name)).to_dict(),
        scd2=source_table in manifest.scd2 or "*" in manifest.scd2,
    )


def known_tables(batches: list[Path]) -> list[str]:
    tables: set[str] = set()
    for batch in batches:
        path = batch / LAYOUTS_FILE
        if path.exists():
            tables |= set(json.loads(path.read_text()))
    return sorted(tables)


def from_changelog(spark, source_dir: Path, tables: list[str], run_id: str, buckets: int) -> dict[str, Any]:
    from cdclake.jobs import compact
    from cdclake.jobs.decode import DECODED_SPARK_DDL

    batches = source_batches(source_dir)
    if not batches:
        return {"error": f"no staged batches under {source_dir}"}
    latest = read_manifest(batches[-1])
    work = source_dir / REBUILD_DIR / run_id
    manifest = Manifest(**{**latest.__dict__, "batch_id": f"rebuild-{run_id}", "files": []})
    write_json_atomic(work / "manifest.json", manifest.to_json())
    layouts: dict[str, TableLayout] = {}
    for table in tables:
        layout = _table_layout(spark, table, manifest)
        if layout is not None:
            layouts[table] = layout
    write_layouts(work, layouts)
    ddl = DECODED_SPARK_DDL.replace("kind string, ", "").replace(", error string, raw binary", "")
    spark.createDataFrame([], ddl + ", _batch string").write.mode("overwrite").parquet(str(work / "changelog"))
    result = compact.run(spark, work, tables=sorted(layouts), buckets=buckets, full_refresh=True) if layouts else {}
    missing = sorted(set(tables) - set(layouts))
    return {"mode": "changelog", "tables": result, "missing": missing}


def from_archive(spark, source_dir: Path, tables: list[str], run_id: str, buckets: int) -> dict[str, Any]:
    from cdclake.jobs import compact, ddl, decode, normalize, truncate
    from cdclake.jobs.compact import HISTORY_SUFFIX, LOG_SUFFIX
    from cdclake.lake.naming import spark_table_name

    batches = source_batches(source_dir)
    if not batches:
        return {"error": f"no staged batches under {source_dir}"}
    manifest = read_manifest(batches[-1])
    for table in tables:
        name = spark_table_name(table, manifest.namespace)
        for suffix in ("", LOG_SUFFIX, HISTORY_SUFFIX):
            spark.sql(f"DROP TABLE IF EXISTS {name}{suffix} PURGE")
    state_dir = source_dir / "_decoder_state"
    if state_dir.exists():  # decode again from a clean decoder, like the first time
        shutil.move(str(state_dir), str(source_dir / REBUILD_DIR / run_id / "_decoder_state.before"))
    per_batch = []
    for batch in batches:
        decode.run(spark, batch)
        normalize.run(spark, batch)
        ddl.run(spark, batch, buckets=buckets, tables=tables)
        truncate.run(spark, batch, buckets=buckets, tables=tables)
        result = compact.run(spark, batch, tables=tables, buckets=buckets)
        per_batch.append({"batch": batch.name, "tables": result})
    return {"mode": "archive", "batches": per_batch}


def run(
    spark,
    source_dir: str | Path,
    tables: list[str] | None,
    mode: str,
    run_id: str,
    buckets: int = 16,
    dry_run: bool = False,
) -> dict[str, Any]:
    source_dir = Path(source_dir)
    batches = source_batches(source_dir)
    tables = sorted(tables or known_tables(batches))
    work = source_dir / REBUILD_DIR / run_id
    work.mkdir(parents=True, exist_ok=True)
    if dry_run:
        report = {"mode": mode, "dry_run": True, "tables": tables, "batches": [b.name for b in batches]}
    elif mode == "changelog":
        report = from_changelog(spark, source_dir, tables, run_id, buckets)
    elif mode == "archive":
        report = from_archive(spark, source_dir, tables, run_id, buckets)
    else:
        raise ValueError(f"rebuild mode {mode!r}: expected changelog or archive")
    write_report(work, "rebuild", report)
    if report.get("error"):
        raise RuntimeError(report["error"])
    return report
