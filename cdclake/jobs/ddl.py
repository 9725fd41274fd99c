"""DDL job: apply a batch's schema changes to the lake tables before its data is merged.

Input is ``schema_changes.json`` (written by normalize). Per table, with the
source's policy:

- ``evolve``: every change is first checked against the table (a key column
  change or a type change Iceberg cannot make in place fails with a rebuild
  hint, before anything is altered); then each change is applied with Spark
  SQL ``ALTER TABLE`` on the Iceberg table (and its SCD2 history table), and
  recorded in the table property ``cdclake.schema-history`` with the Iceberg
  schema id. Renames keep Iceberg field ids, so files written before and after
  read correctly; the merge reads old-layout events through the recorded
  renames and drops.
- ``fail``: a real change fails the task with table, change and source event;
  nothing is altered.
- ``ignore``: logged and counted; normalize already left the new columns out.

Every ALTER is checked for being a no-op first, so a retry after a crash part
way through applies only what is left. Identifiers are always quoted.
"""

from __future__ import annotations

import datetime as dt
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypedDict

from cdclake.compaction.lineage import current_schema_id, table_properties
from cdclake.jobs.layout import LAYOUTS_FILE, TableLayout, read_layouts
from cdclake.schema.changes import (
    ADD_COLUMN,
    CREATE_TABLE,
    DROP_COLUMN,
    MODIFY_COLUMN,
    RENAME_COLUMN,
    SchemaChange,
)
from cdclake.schema.coltypes import canonical_type, quote_ident
from cdclake.schema.evolution import (
    HISTORY_PROPERTY,
    IncompatibleChange,
    check,
    evolve_columns,
    history_entry,
    is_noop,
    parse_history,
)
from cdclake.staging.batch import read_manifest, write_report


class SchemaPolicyError(RuntimeError):
    """The ``fail`` policy met a schema change."""


class AppliedChange(TypedDict):
    """A schema change the DDL step applied to a table."""

    change: str
    kind: str
    #: the source event it came from (its first 200 characters)
    source_event: str


class DdlTableReport(TypedDict, total=False):
    """One table's line in the DDL step's report (``reports/ddl.json``): its policy and the changes applied, or
    ignored (policy ``ignore``), or deferred (``status`` ``deferred``: no table yet and no key to make one),
    or the error (``status`` ``failed``)."""

    policy: str
    applied: list[AppliedChange]
    ignored: int
    #: changes recorded in the table's schema history (a retry records what is left)
    recorded: int
    #: the table's Iceberg schema id after the changes
    schema_version: int | None
    status: str
    #: changes waiting for the table (``deferred``)
    pending: int
    error: str


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _columns(spark, name: str) -> dict[str, str]:
    from cdclake.schema.coltypes import type_from_engine

    return {
        f.name: type_from_engine(f.dataType.simpleString())
        for f in spark.table(name).schema.fields
        if not f.name.startswith("_cdc_")
    }


def _alter(spark, name: str, change: SchemaChange, columns: dict[str, str]) -> None:
    """One change as Spark SQL: names quoted, types only ever cdclake's own (``canonical_type`` raises otherwise)."""
    col = quote_ident(change.column) if change.column else None
    if change.kind == ADD_COLUMN:
        spark.sql(f"ALTER TABLE {name} ADD COLUMNS ({col} {canonical_type(change.type or 'string')})")
    elif change.kind == CREATE_TABLE:
        for column, col_type in change.columns:
            if column not in columns:
                sql_type = canonical_type(col_type or "string")
                spark.sql(f"ALTER TABLE {name} ADD COLUMNS ({quote_ident(column)} {sql_type})")
                columns[column] = col_type or "string"
    elif change.kind == DROP_COLUMN:
        spark.sql(f"ALTER TABLE {name} DROP COLUMN {col}")
    elif change.kind == RENAME_COLUMN:
        spark.sql(f"ALTER TABLE {name} RENAME COLUMN {col} TO {quote_ident(change.new_name or '')}")
    elif change.kind == MODIFY_COLUMN:
        spark.sql(f"ALTER TABLE {name} ALTER COLUMN {col} TYPE {canonical_type(change.type or '')}")


def plan(changes: list[SchemaChange], columns: dict[str, str], keys: list[str]) -> tuple[list[SchemaChange], list[str]]:
    """(changes to apply, reasons they cannot be) checked in order against the evolving columns."""
    todo, problems = [], []
    cols = dict(columns)
    for change in changes:
        if is_noop(change, cols):
            continue
        reason = check(change, cols, keys)
        if reason:
            problems.append(reason)
            continue
        todo.append(change)
        cols = dict(evolve_columns(list(cols.items()), [change]))
    return todo, problems


def _create_from_change(spark, table: str, doc: dict[str, Any], changes: list[SchemaChange], manifest, buckets: int):
    """A new table announced by CREATE TABLE / a schema message before any row: create it if its key is known."""
    from cdclake.jobs.compact import ensure_tables
    from cdclake.lake.naming import iceberg_identifier

    created = [c for c in changes if c.kind == CREATE_TABLE]
    columns = evolve_columns([], changes)
    keys = manifest.keys.get(table) or manifest.keys.get("*") or (list(created[-1].keys) if created else [])
    if not columns or not keys:
        return False
    ns, short = iceberg_identifier(table, manifest.namespace)
    layout = TableLayout(
        identifier=f"{ns}.{short}",
        spark_name=doc["spark_name"],
        keys=tuple(keys),
        columns=tuple(columns),
        scd2=table in manifest.scd2 or "*" in manifest.scd2,
    )
    ensure_tables(spark, table, layout, buckets)
    return True


def apply_table(
    spark, table: str, doc: dict[str, Any], layouts: dict[str, TableLayout], manifest, buckets: int
) -> DdlTableReport:
    from cdclake.jobs.compact import HISTORY_SUFFIX, ensure_tables

    name = doc["spark_name"]
    policy = doc.get("policy") or manifest.policy_for(table)
    changes = [SchemaChange.from_dict(c) for c in doc["changes"]]
    if policy == "ignore":
        for change in changes:
            print(f"schema change ignored (policy ignore): {change.describe()}")
        return {"policy": policy, "ignored": len(changes), "applied": []}
    if not spark.catalog.tableExists(name):
        layout = layouts.get(table)
        if layout is not None and not layout.error:
            ensure_tables(spark, table, layout, buckets)
        elif not _create_from_change(spark, table, doc, changes, manifest, buckets):
            return {"policy": policy, "status": "deferred", "applied": [], "pending": len(changes)}
    props = table_properties(spark, name)
    keys = [k for k in props.get("cdclake.keys", "").split(",") if k]
    history = parse_history(props.get(HISTORY_PROPERTY))
    done = {h.get("id") for h in history}
    pending = [c for c in changes if c.change_id not in done]
    columns = _columns(spark, name)
    todo, problems = plan(pending, columns, keys)
    if policy == "fail" and (todo or problems):
        first = (todo or pending)[0]
        raise SchemaPolicyError(
            f"schema policy 'fail' for {table}: {first.describe()}; source event: {first.source_event!r}. "
            f"The table {name} was left untouched; set schema_policy to evolve (or ignore) for this table "
            f"in the sources configuration and re-run"
        )
    if problems:
        raise IncompatibleChange(f"{table}: " + "; ".join(problems) + f" (table {name} was left untouched)")
    targets = [name] + ([name + HISTORY_SUFFIX] if spark.catalog.tableExists(name + HISTORY_SUFFIX) else [])
    now = dt.datetime.now(dt.UTC).isoformat()
    entries = []
    # each target's columns are read once, and again only after an ALTER (each read is a catalog round trip)
    target_columns = {name: columns}
    for change in pending:
        for target in targets:
            if target not in target_columns:
                target_columns[target] = _columns(spark, target)
            if not is_noop(change, target_columns[target]):
                _alter(spark, target, change, target_columns[target])
                target_columns.pop(target)
        entries.append(history_entry(change, manifest.batch_id, None, now))
    sid = current_schema_id(spark, name)  # setting a property below makes no new schema: the id stays
    for entry in entries:
        entry["schema_id"] = sid
    if entries:
        spark.sql(
            f"ALTER TABLE {name} SET TBLPROPERTIES "
            f"({_sql_string(HISTORY_PROPERTY)}={_sql_string(json.dumps(history + entries))})"
        )
    return {
        "policy": policy,
        "applied": [
            {"change": c.describe(), "kind": c.kind, "source_event": c.source_event[:200]} for c in pending if c in todo
        ],
        "recorded": len(entries),
        "schema_version": sid,
    }


def run(
    spark, batch_dir: str | Path, buckets: int = 16, tables: list[str] | None = None, threads: int = 4
) -> dict[str, DdlTableReport]:
    """Apply every table's schema changes, ``threads`` tables at a time.

    A table's changes are a chain of catalog round trips that wait on the driver (a new table's
    first batch: create, read properties and columns, record the history), so tables run side by
    side in the one session (no second session: its catalog cache could hold a table's layout from
    before another thread altered it). A table the policy refuses fails the task, with the first
    such table's error by name, after the other tables are done; a retry finds theirs recorded.
    """
    batch_dir = Path(batch_dir)
    manifest = read_manifest(batch_dir)
    path = batch_dir / "schema_changes.json"
    docs = json.loads(path.read_text()) if path.exists() else {}
    layouts = read_layouts(batch_dir) if (batch_dir / LAYOUTS_FILE).exists() else {}
    todo = [table for table in sorted(docs) if not tables or table in tables]
    outcomes: dict[str, DdlTableReport | Exception] = {}

    def one(table: str) -> None:
        try:
            outcomes[table] = apply_table(spark, table, docs[table], layouts, manifest, buckets)
        except Exception as exc:  # raised below, after the other tables are done
            outcomes[table] = exc

    if len(todo) <= 1 or threads <= 1:
        for table in todo:
            one(table)
    else:
        with ThreadPoolExecutor(max_workers=min(threads, len(todo)), thread_name_prefix="ddl") as pool:
            list(pool.map(one, todo))
    report: dict[str, DdlTableReport] = {
        t: o if not isinstance(o, Exception) else {"status": "failed", "error": str(o)[:2000]}
        for t, o in outcomes.items()
    }
    report = dict(sorted(report.items()))
    write_report(batch_dir, "ddl", report)
    failed = [outcomes[t] for t in todo if isinstance(outcomes[t], Exception)]
    if failed:
        raise failed[0]
    return report


def has_changes(batch_dir: str | Path) -> bool:
    path = Path(batch_dir) / "schema_changes.json"
    return path.exists() and bool(json.loads(path.read_text()))
