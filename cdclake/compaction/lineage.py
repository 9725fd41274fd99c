"""What a table's ``main`` history says: committed batch ids, their counts, the head snapshot.

A batch id in ``main``'s lineage is how every commit knows it was already made (retries).

Read through Iceberg's Java table object (``Spark3Util.loadIcebergTable``, the session catalog's
copy): each question is a few Py4J calls, not a Spark job over a metadata table (each of those
took 50-100 ms, and a table's compaction asked about ten). Where there is no JVM (Spark Connect)
the metadata tables are queried instead.
"""

from __future__ import annotations

import json
from typing import Any

from cdclake.lake.tables import BATCH_PROPERTY
from cdclake.runtime.spark import java_class

#: Snapshots walked one Py4J call at a time (several calls each); a longer lineage is read from the
#: table's metadata JSON in one call (0.05 s for 300 snapshots, against 0.17 s walked).
WALK_SNAPSHOTS = 50
#: Snapshot property with the batch's counts, so a retry after the commit reports them again.
COUNTS_PROPERTY = "cdclake.counts"


def java_table(spark, name: str):
    """Iceberg's ``Table`` of ``name`` as the session's catalog holds it, or None without a JVM."""
    util = java_class(spark, "org.apache.iceberg.spark.Spark3Util")
    return None if util is None else util.loadIcebergTable(spark._jsparkSession, name)


def snapshot_lineage(spark, name: str) -> list[dict[str, Any]]:
    """``main``'s snapshots, newest first, with their batch id and counts.

    Commits to other branches (an unpublished merge of a crashed or beaten attempt) are not part of it.
    """
    table = java_table(spark, name)
    if table is None:
        return _lineage_sql(spark, name)
    out = []
    snapshot = table.currentSnapshot()
    while snapshot is not None:
        if len(out) == WALK_SNAPSHOTS:  # a long history: its metadata as JSON in one Py4J call instead
            try:
                parser = java_class(spark, "org.apache.iceberg.TableMetadataParser")
                return _lineage_from_metadata(json.loads(parser.toJson(table.operations().current())))
            except Exception:  # a table without operations (a wrapper): walk on
                pass
        summary = snapshot.summary()
        parent = snapshot.parentId()
        out.append(
            {
                "snapshot_id": snapshot.snapshotId(),
                "parent_id": parent,
                "batch": summary.get(BATCH_PROPERTY),
                "counts": summary.get(COUNTS_PROPERTY),
            }
        )
        snapshot = table.snapshot(parent) if parent is not None else None
    return out


def _lineage_from_metadata(metadata: dict[str, Any]) -> list[dict[str, Any]]:
    """``main``'s snapshots, newest first, from Iceberg table metadata (its JSON form)."""
    by_id = {s["snapshot-id"]: s for s in metadata.get("snapshots", [])}
    current = metadata.get("refs", {}).get("main", {}).get("snapshot-id", metadata.get("current-snapshot-id"))
    out = []
    while current is not None and current in by_id:
        snapshot = by_id[current]
        summary = snapshot.get("summary", {})
        parent = snapshot.get("parent-snapshot-id")
        out.append(
            {
                "snapshot_id": current,
                "parent_id": parent,
                "batch": summary.get(BATCH_PROPERTY),
                "counts": summary.get(COUNTS_PROPERTY),
            }
        )
        current = parent
    return out


def _lineage_sql(spark, name: str) -> list[dict[str, Any]]:
    head = spark.sql(f"SELECT snapshot_id FROM {name}.refs WHERE name = 'main'").first()
    rows = spark.sql(
        f"SELECT snapshot_id, parent_id, summary['{BATCH_PROPERTY}'] AS batch, "
        f"summary['{COUNTS_PROPERTY}'] AS counts FROM {name}.snapshots"
    ).collect()
    by_id = {r["snapshot_id"]: r.asDict() for r in rows}
    out, current = [], (head["snapshot_id"] if head else None)
    while current is not None and current in by_id:
        out.append(by_id[current])
        current = by_id[current]["parent_id"]
    return out


def committed_counts(spark, name: str, batch_id: str) -> dict[str, Any]:
    """Counts of the commit that already applied ``batch_id`` (the report of a retried task)."""
    found = next((r for r in snapshot_lineage(spark, name) if r["batch"] == batch_id), None)
    counts = json.loads(found["counts"]) if found is not None and found["counts"] else {}
    return {"applied": 0, "stale": 0, "quarantined": 0, **counts, "status": "already-committed"}


def fresh_snapshot_id(spark, name: str) -> int | None:
    """Drop the session's cached copy of ``name`` and return its current snapshot id.

    Reads planned afterwards see this snapshot or a later one, so validating from it is safe
    (at worst a false conflict, which only costs a retry).
    """
    spark.catalog.refreshTable(name)
    table = java_table(spark, name)
    if table is None:
        row = spark.sql(f"SELECT snapshot_id FROM {name}.refs WHERE name = 'main'").first()
        return None if row is None else row["snapshot_id"]
    snapshot = table.currentSnapshot()
    return None if snapshot is None else snapshot.snapshotId()


def snapshot_info(spark, name: str) -> set[str]:
    """Batch ids committed to ``name`` (``main``'s history only)."""
    return {r["batch"] for r in snapshot_lineage(spark, name) if r["batch"]}


def only_batch(spark, name: str, batch_id: str) -> bool:
    """Whether every snapshot of ``name``'s ``main`` was committed by ``batch_id`` (a log holding
    nothing but this batch: a table's first batch). A maintenance rewrite (no batch id) says no."""
    lineage = snapshot_lineage(spark, name)
    return bool(lineage) and all(r["batch"] == batch_id for r in lineage)


def head_summary(spark, name: str) -> dict[str, str]:
    """The summary of ``main``'s head snapshot (empty for an empty table).

    Read as the snapshot's JSON in one Py4J call: iterating the Java map costs a call per entry
    (17-31 ms against 2.4-4.9 ms, /tmp script of the issue 19 note), and compact reads it several
    times per table.
    """
    table = java_table(spark, name)
    if table is not None:
        snapshot = table.currentSnapshot()
        if snapshot is None:
            return {}
        try:
            text = java_class(spark, "org.apache.iceberg.SnapshotParser").toJson(snapshot)
            return {str(k): str(v) for k, v in json.loads(text).get("summary", {}).items()}
        except Exception:  # not a snapshot Iceberg's parser knows: entry by entry
            return {str(k): str(v) for k, v in snapshot.summary().items()}
    head = spark.sql(f"SELECT snapshot_id FROM {name}.refs WHERE name = 'main'").first()
    if head is None:
        return {}
    row = spark.sql(f"SELECT summary FROM {name}.snapshots WHERE snapshot_id = {head['snapshot_id']}").first()
    return dict(row["summary"]) if row is not None else {}


def table_properties(spark, name: str) -> dict[str, str]:
    """The table's properties (what ``SHOW TBLPROPERTIES`` lists of them), as one Py4J call returning the
    map as JSON: the SQL command is parsed, analysed and collected (0.1-0.8 s a table when four tables ask
    at once), and walking the Java map costs a call per entry."""
    table = java_table(spark, name)
    if table is not None:
        text = java_class(spark, "org.apache.iceberg.util.JsonUtil").mapper().writeValueAsString(table.properties())
        return {str(k): str(v) for k, v in json.loads(text).items()}
    return {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {name}").collect()}


def current_schema_id(spark, name: str) -> int | None:
    """The Iceberg schema id of the table's current metadata, from the table object (the query of its
    ``metadata_log_entries`` is a Spark job: 1.6 s a table with four tables asking at once)."""
    table = java_table(spark, name)
    if table is not None:
        table.refresh()  # what is committed now, as the metadata table query would read it
        return int(table.schema().schemaId())
    rows = spark.sql(
        f"SELECT latest_schema_id FROM {name}.metadata_log_entries ORDER BY timestamp DESC LIMIT 1"
    ).collect()
    return rows[0]["latest_schema_id"] if rows else None


def has_ref(spark, name: str, ref: str) -> bool:
    """Whether ``name`` has the branch or tag ``ref``."""
    table = java_table(spark, name)
    if table is not None:
        return bool(table.refs().containsKey(ref))
    return spark.sql(f"SELECT 1 FROM {name}.refs WHERE name = '{ref}'").first() is not None


def bucket_has_files(spark, name: str, bucket: int) -> bool:
    """Whether ``name``'s current snapshot has a data file in partition ``_cdc_bucket = bucket``, from its
    manifests (Py4J calls, no Spark job; True without a JVM, so the caller queries)."""
    table = java_table(spark, name)
    if table is None:
        return True
    expression = java_class(spark, "org.apache.iceberg.expressions.Expressions").equal("_cdc_bucket", bucket)
    tasks = table.newScan().filter(expression).planFiles()
    try:
        return bool(tasks.iterator().hasNext())
    finally:
        tasks.close()
