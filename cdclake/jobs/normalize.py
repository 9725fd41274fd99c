"""Normalize job: canonical events -> per-table change log + table layout.

For each table it settles what the compact step needs before touching the
lake: the Iceberg identifier, the primary key (configuration overrides the
format), and one type per column (existing table columns keep their type; new
columns get the type their values imply, or the format's hint). Row events of a
table without a known key are quarantined with a reason instead of guessed, and so
are row events carrying a column name the lake cannot hold
(``cdclake.lake.naming.column_name_problem``: empty, NUL, the reserved ``_cdc_`` prefix,
a letter-case twin of another column); any other name is stored exactly.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from cdclake.compaction.lineage import table_properties
from cdclake.events.batch import (
    SCHEMA_EVENT_COLUMNS,
    ChangelogWriter,
    DriverEvents,
    decoded_files,
    decoded_rows,
    merged_surveys,
)
from cdclake.events.change import ROW_OPS
from cdclake.events.decoded import escape_table, is_per_table, publish_changelog
from cdclake.jobs.decode import DECODED_SPARK_DDL
from cdclake.lake.naming import column_name_problem, iceberg_identifier, spark_table_name
from cdclake.schema.changes import ADD_COLUMN, SchemaChange
from cdclake.schema.coltypes import canonical_type, type_from_engine, unify
from cdclake.schema.evolution import HISTORY_PROPERTY, column_map, evolve_columns, parse_history
from cdclake.staging.batch import read_manifest, write_json_atomic, write_report
from cdclake.transactions import held_inputs, held_output, split_incomplete, tx_mark

#: Tables whose lake state (columns, schema history) is looked up at once.
LOOKUP_THREADS = 4
#: ``meta`` of a TRUNCATE that came from a ``TRUNCATE TABLE`` statement (counted with its DDL event).
DDL_TRUNCATE_META = '{"from_ddl":true}'

# JSON text of a value -> the type it suggests; must agree with coltypes.kind_of.
_KIND_SQL = (
    "CASE WHEN v = 'null' THEN NULL WHEN v IN ('true','false') THEN 'boolean' "
    "WHEN v LIKE '\"%' OR v LIKE '{%' OR v LIKE '[%' THEN 'string' "
    "WHEN v RLIKE '^-?[0-9]+$' THEN CASE WHEN try_cast(v AS bigint) IS NOT NULL THEN 'bigint' "
    "WHEN try_cast(v AS decimal(38,0)) IS NOT NULL THEN 'decimal(38,0)' ELSE 'string' END ELSE 'double' END"
)


def table_layout(
    source_table: str,
    seen: list[tuple[str, set[str], str | None]],
    existing: list[tuple[str, str]] | None,
    event_keys: list[str] | None,
    configured_keys: list[str] | None,
    namespace: str | None,
) -> dict[str, Any]:
    """Columns, types and keys of one table (pure: the rules in one place).

    ``seen``: (column, kinds seen, format hint) in first-seen order;
    ``existing``: the lake table's (column, type) if it exists.
    """
    columns = list(existing or [])
    known = {name for name, _ in columns}
    new_columns = []
    for name, kinds, hint in seen:
        if name in known:
            continue
        col_type = canonical_type(hint) if hint else unify(kinds)
        columns.append((name, col_type))
        new_columns.append(name)
        known.add(name)
    keys = configured_keys or event_keys
    ns, table = iceberg_identifier(source_table, namespace)
    return {
        "identifier": f"{ns}.{table}",
        "spark_name": spark_table_name(source_table, namespace),
        "keys": keys,
        "columns": columns,
        "new_columns": new_columns,
        "exists": existing is not None,
    }


def unsafe_columns(seen: list[str], known: list[str], legacy: set[str], scd2: bool = False) -> dict[str, str]:
    """New column names (first-seen order) the lake cannot hold -> why; ``known``: the table's columns,
    ``legacy``: old names of renamed or dropped columns (they resolve to a known column or to nothing)."""
    taken, bad = list(known), {}
    for name in seen:
        if name in taken or name in legacy:
            continue
        problem = column_name_problem(name, taken, scd2)
        if problem:
            bad[name] = problem
        else:
            taken.append(name)
    return bad


def _unsafe_reason(unsafe: dict[str, dict[str, str]]):
    """Per row event: why one of its image columns cannot be stored (NULL: none)."""
    from pyspark.sql import functions as F

    by_table = F.create_map(
        *[
            x
            for table, cols in unsafe.items()
            for x in (
                F.lit(table),
                F.create_map(
                    *[
                        y
                        for col, problem in cols.items()
                        for y in (F.lit(col), F.lit(f"column {col!r} {problem}: the event cannot be stored in {table}"))
                    ]
                ),
            )
        ]
    )
    empty = F.array().cast("array<string>")
    names = F.concat(F.coalesce(F.map_keys("before"), empty), F.coalesce(F.map_keys("after"), empty))
    reasons = F.filter(F.transform(names, lambda k: by_table[F.col("table")][k]), lambda r: r.isNotNull())
    return F.when(F.col("table").isin(*unsafe), F.get(reasons, 0))


def existing_columns(spark, name: str) -> list[tuple[str, str]] | None:
    return _columns_of(spark, name) if spark.catalog.tableExists(name) else None


def _columns_of(spark, name: str) -> list[tuple[str, str]]:
    cols = []
    for field in spark.table(name).schema.fields:
        if field.name.startswith("_cdc_"):
            continue
        cols.append((field.name, type_from_engine(field.dataType.simpleString())))
    return cols


def recorded_history(spark, name: str) -> list[dict[str, Any]]:
    """Schema changes already applied to a lake table (its ``cdclake.schema-history`` property)."""
    return _history_of(spark, name) if spark.catalog.tableExists(name) else []


def _history_of(spark, name: str) -> list[dict[str, Any]]:
    return parse_history(table_properties(spark, name).get(HISTORY_PROPERTY))


def _versions(history: list[dict[str, Any]]) -> int | None:
    found = [h["version"] for h in history if isinstance(h.get("version"), int)]
    return max(found) if found else None


def _translate_seen(
    seen: list[tuple[str, set[str], str | None]], cmap, current: set[str]
) -> list[tuple[str, set[str], str | None]]:
    """Seen columns under their current names (old names of renamed columns merge, dropped ones go)."""
    out: dict[str, tuple[set[str], str | None]] = {}
    for name, kinds, hint in seen:
        target = cmap.resolve(name, current)
        if target is None:
            continue
        have = out.get(target)
        out[target] = (set(kinds) | (have[0] if have else set()), (have[1] if have else None) or hint)
    return [(n, k, h) for n, (k, h) in out.items()]


def _spilled():
    """Where a batch's events are kept between normalize's jobs: on local disk, serialized as they stream
    by. The default (memory, deserialized, unrolled per partition) ran a 1M-change batch out of a 1 GiB
    driver heap in local mode (benchmarks/results/2026-11-26-bench-1m.md); only batches the driver does not
    normalize come here (over its bound, carried-in events, transaction marks), and for them one disk write
    is cheap against the jobs it saves."""
    from pyspark import StorageLevel

    return StorageLevel.DISK_ONLY


def _grouped(events) -> list[Any]:
    """One job: per table and op, the count, the first keys, the newest event time and the transaction marks."""
    from pyspark.sql import functions as F

    return (
        events.groupBy("table", "op")
        .agg(
            F.count(F.lit(1)).alias("count"),
            F.first("keys", ignorenulls=True).alias("keys"),
            F.max("event_ts").alias("newest"),
            F.count(F.when(tx_mark(), 1)).alias("marks"),
        )
        .collect()
    )


def run(spark, batch_dir: str | Path) -> dict[str, Any]:
    from pyspark.sql import functions as F

    batch_dir = Path(batch_dir)
    manifest = read_manifest(batch_dir)
    event_dir = batch_dir / "decoded" / "kind=event"
    report: dict[str, Any] = {
        "tables": {},
        "events": 0,
        "row_events": 0,
        "non_row_events": 0,
        "quarantined": 0,
        "held": 0,
        "carried_in": 0,
    }
    carried_dirs = [d for d in held_inputs(batch_dir) if d.exists()]
    if not event_dir.exists() and not carried_dirs:
        write_json_atomic(batch_dir / "tables.json", {})
        write_json_atomic(batch_dir / "schema_changes.json", {})
        write_report(batch_dir, "normalize", report)
        return report
    event_ddl = DECODED_SPARK_DDL.replace("kind string, ", "")
    # decode wrote the events as the change log's files, and surveyed them: the surveys merged, the files linked
    # into the change log below if nothing is quarantined (decoded_tables); else the events read in the driver
    surveyed = _task_surveys(spark, event_dir) if not carried_dirs else None
    local = None if surveyed is not None else _driver_events(spark, event_dir, carried_dirs)  # Arrow, no Spark job
    driver = surveyed is not None or local is not None
    grouped = local_kinds = local_schema_rows = None
    linked = driver and is_per_table(event_dir)
    if surveyed is not None:
        grouped, local_kinds, local_schema_rows = surveyed
    elif linked and local is not None:
        grouped, local_kinds, local_schema_rows = local.survey()
    elif local is not None:
        # the change log is written in the survey's pass, as if nothing were to be quarantined: read once,
        # written while surveyed; when something is, Spark's path below writes it again (overwrite)
        with ChangelogWriter(batch_dir / "changelog", manifest.batch_id, escape_table) as log:
            grouped, local_kinds, local_schema_rows = local.survey(log)
    if grouped is not None and any(r["marks"] for r in grouped):
        local = grouped = None  # transactions that may be incomplete: the Spark path splits them off
        driver = linked = False
    events = None
    if not driver:
        if event_dir.exists():
            events = spark.read.schema(event_ddl).parquet(str(event_dir)).drop("error", "raw")
        else:
            events = spark.createDataFrame([], event_ddl).drop("error", "raw")
        carried = None
        if carried_dirs:
            carried = spark.read.schema(
                event_ddl.replace(", error string, raw binary", "") + ", _held_age int"
            ).parquet(*[str(d) for d in carried_dirs])
            report["carried_in"] = carried.count()
        raw = None
        if carried is None:  # the counts of this batch's events also say whether a transaction can be incomplete
            events = raw = events.persist(_spilled())
            grouped = _grouped(events)
            marked = any(r["marks"] for r in grouped)
        else:
            marked = None
        events, hold = split_incomplete(spark, events, carried, marked)
        if hold is not None:
            hold.write.mode("overwrite").parquet(str(held_output(batch_dir)))
            report["held"] = spark.read.parquet(str(held_output(batch_dir))).count()
        if grouped is None or hold is not None:  # counted again: what is applied now
            events = events.persist(_spilled())
            grouped = _grouped(events)
            if raw is not None:  # the kept events are cached now: do not hold the batch in memory twice
                raw.unpersist()

    per_table: dict[str, dict[str, Any]] = {}
    op_counts: dict[str, dict[str, int]] = {}
    heartbeat = None
    for r in sorted(grouped, key=lambda r: r["op"] not in ROW_OPS):  # keys from row events first
        stats = per_table.setdefault(r["table"], {"events": 0, "row_events": 0, "keys": None, "newest_event_ts": None})
        stats["events"] += r["count"]
        stats["keys"] = stats["keys"] or r["keys"]
        if r["op"] in ROW_OPS:
            stats["row_events"] += r["count"]
            if r["newest"] is not None and (stats["newest_event_ts"] is None or r["newest"] > stats["newest_event_ts"]):
                stats["newest_event_ts"] = r["newest"]
        if r["op"] == "HEARTBEAT" and r["newest"] is not None and (heartbeat is None or r["newest"] > heartbeat):
            heartbeat = r["newest"]
        op_counts.setdefault(r["table"], {})[r["op"]] = r["count"]

    # Columns with the kinds of their values, in first-seen order.
    kinds = local_kinds if driver else _kinds(events)
    seen: dict[str, list[tuple[Any, str, set[str], str | None]]] = {}
    for r in kinds:
        hint = json.loads(r["hints"]).get(r["col"]) if r["hints"] else None
        seen.setdefault(r["table"], []).append((tuple(r["first"]), r["col"], set(r["kinds"]), hint))

    # Schema changes (SCHEMA / DDL events), in event order, against each table's lake columns (no job
    # when the counts show none).
    schema_rows = []
    if any(op in ("SCHEMA", "DDL") for ops in op_counts.values() for op in ops):
        if driver:
            schema_rows = local_schema_rows
        else:
            found = events.where(F.col("op").isin("SCHEMA", "DDL")).select(*SCHEMA_EVENT_COLUMNS)
            schema_rows = [r.asDict() for r in found.collect()]
    state: dict[str, tuple[str, list[tuple[str, str]] | None, list[dict[str, Any]]]] = {}

    def lookup(source_table: str):
        name = spark_table_name(source_table, manifest.namespace)
        if not spark.catalog.tableExists(name):
            return name, None, []
        return name, _columns_of(spark, name), _history_of(spark, name)

    def table_state(source_table: str):
        if source_table not in state:
            state[source_table] = lookup(source_table)
        return state[source_table]

    # every table's lake state up front, side by side: catalog round trips that wait on the driver
    wanted = sorted(
        {t for t, s in per_table.items() if s["row_events"] or op_counts.get(t, {}).get("TRUNCATE")}
        | {r["table"] for r in schema_rows if r["table"]}
    )
    if len(wanted) > 1:
        with ThreadPoolExecutor(max_workers=min(LOOKUP_THREADS, len(wanted))) as pool:
            state.update(zip(wanted, pool.map(lookup, wanted), strict=True))

    for r in schema_rows:
        r["ddl"] = json.loads(r["ddl"]) if r["ddl"] else None
        r["meta"] = json.loads(r["meta"]) if r["meta"] else {}
        if r["table"]:
            table_state(r["table"])
    from cdclake.schema.events import changes_from_events

    def scd2(table: str) -> bool:
        return table in manifest.scd2 or "*" in manifest.scd2

    schema = changes_from_events(
        schema_rows,
        {t: cols for t, (_, cols, _) in state.items()},
        {t: v for t, (_, _, hist) in state.items() if (v := _versions(hist)) is not None},
        column_problem=lambda table, name, others: column_name_problem(name, others, scd2(table)),
    )
    for table in schema.changes:
        table_state(table)

    layouts: dict[str, Any] = {}
    keyless: list[str] = []
    unsafe: dict[str, dict[str, str]] = {}
    changes_out: dict[str, Any] = {}
    for source_table, stats in sorted(per_table.items()):
        newest = stats["newest_event_ts"]
        report["tables"][source_table] = {
            "events": stats["events"],
            "row_events": stats["row_events"],
            "newest_event_ts": newest.isoformat() if newest else None,
        }
        has_truncate = op_counts.get(source_table, {}).get("TRUNCATE") or any(
            t["table"] == source_table for t in schema.truncates
        )
        if not stats["row_events"] and not has_truncate:
            continue  # only heartbeats, transaction markers, schema or DDL events: no lake table to write
        name, existing, history = table_state(source_table)
        policy = manifest.policy_for(source_table)
        pending = schema.changes.get(source_table, [])
        applied = pending if policy == "evolve" else []
        cmap = column_map([*history, *applied])
        evolved = evolve_columns(existing, applied) if existing is not None else None
        first_seen = {col: first for first, col, _, _ in seen.get(source_table, [])}
        cols = [(col, kinds_, hint) for _, col, kinds_, hint in sorted(seen.get(source_table, []))]
        legacy = set(cmap.renames) | cmap.dropped
        bad_columns = unsafe_columns([c for c, _, _ in cols], [n for n, _ in evolved or []], legacy, scd2(source_table))
        if bad_columns:
            unsafe[source_table] = bad_columns
            cols = [c for c in cols if c[0] not in bad_columns]
        current = {n for n, _ in evolved or []} | {c for c, _, _ in cols}
        current -= set(cmap.renames) | cmap.dropped
        cols = _translate_seen(cols, cmap, current)
        layout = table_layout(
            source_table,
            cols,
            evolved,
            stats["keys"],
            manifest.keys.get(source_table) or manifest.keys.get("*"),
            manifest.namespace,
        )
        if existing is not None and layout["new_columns"]:
            if policy == "ignore":
                cmap.dropped |= set(layout["new_columns"])
                layout["columns"] = [c for c in layout["columns"] if c[0] not in layout["new_columns"]]
                layout["ignored_columns"], layout["new_columns"] = layout["new_columns"], []
            else:  # drift: a column first seen in records goes through the DDL step like any change
                announced = {c.column for c in pending if c.kind == ADD_COLUMN}
                types = dict(layout["columns"])
                for col in layout["new_columns"]:
                    if col in announced:
                        continue
                    seq, file, offset = (first_seen.get(col) or (None, None, None))[:3]
                    pending = [
                        *pending,
                        SchemaChange(
                            source_table,
                            ADD_COLUMN,
                            column=col,
                            type=types[col],
                            seq=seq,
                            source_file=file,
                            source_offset=offset,
                            source_event=f"column {col} first seen in a record of {file} at offset {offset}",
                        ),
                    ]
                schema.changes[source_table] = pending
        layout["column_map"] = cmap.to_dict()
        layout["policy"] = policy
        layout["counts"] = op_counts.get(source_table, {})
        layout["ddl_truncates"] = sum(1 for t in schema.truncates if t["table"] == source_table)
        layout["scd2"] = scd2(source_table)
        if bad_columns:
            layout["unsafe_columns"] = bad_columns
        if not layout["keys"] and stats["row_events"]:
            keyless.append(source_table)
            layout["error"] = (
                f"table {source_table} has no primary key: the format did not give one; declare it with "
                f"--option keys=COL1,COL2 or in the source configuration (keys: {{{source_table}: [...]}})"
            )
        elif stats["row_events"] and any("," in k or column_name_problem(k) for k in layout["keys"]):
            keyless.append(source_table)  # the table property cdclake.keys is a comma-separated list
            layout["error"] = (
                f"table {source_table}: primary-key column names {layout['keys']!r} cannot be stored (a comma, "
                "or a name the lake refuses); rename the key columns at the source"
            )
        layouts[source_table] = layout
    for source_table, changes in sorted(schema.changes.items()):
        name, existing, _ = table_state(source_table)
        changes_out[source_table] = {
            "spark_name": name,
            "exists": existing is not None,
            "policy": manifest.policy_for(source_table),
            "changes": [c.to_dict() for c in changes],
        }
    write_json_atomic(batch_dir / "schema_changes.json", changes_out)
    if schema.rejects:
        spark.createDataFrame(
            [(r["error"], r["source_file"], r["source_offset"], None) for r in schema.rejects],
            "error string, source_file string, source_offset bigint, raw binary",
        ).write.mode("overwrite").parquet(str(batch_dir / "quarantine" / "ddl"))
    report["ddl_rejected"] = len(schema.rejects)
    report["schema_changes"] = sum(len(c["changes"]) for c in changes_out.values())
    report["ddl_truncates"] = len(schema.truncates)

    if driver:
        tableless = any(r["table"] is None and r["op"] in (*ROW_OPS, "TRUNCATE") for r in grouped)
        if not (schema.truncates or keyless or unsafe or tableless):  # the change log the survey wrote stands
            if linked:
                publish_changelog(event_dir, batch_dir / "changelog")
            return _finish(batch_dir, report, per_table, schema, heartbeat, layouts, 0)
        if local is not None and local.whole is not None:
            events = spark.createDataFrame(local.whole, event_ddl.replace(", error string, raw binary", ""))
        else:  # quarantines or truncates to sort out: Spark's path from here, over the decoded files
            events = spark.read.schema(event_ddl).parquet(str(event_dir)).drop("error", "raw")
    row_events = events.where(F.col("op").isin(*ROW_OPS) | (F.col("op") == "TRUNCATE"))
    if schema.truncates:  # TRUNCATE TABLE statements go to the truncate step with their seq
        ddl_truncates = spark.createDataFrame(
            [
                (
                    t["table"],
                    "TRUNCATE",
                    t["seq"],
                    t["event_ts"],
                    DDL_TRUNCATE_META,
                    t["source_file"],
                    t["source_offset"],
                )
                for t in schema.truncates
            ],
            "table string, op string, seq string, event_ts timestamp, meta string, source_file string, "
            "source_offset bigint",
        )
        row_events = row_events.unionByName(ddl_truncates, allowMissingColumns=True)
    good = row_events.where(~F.col("table").isin(*keyless)) if keyless else row_events
    if unsafe:
        good = good.where(_unsafe_reason(unsafe).isNull())
    changelog = good.withColumn("_batch", F.lit(manifest.batch_id))
    changelog.write.mode("overwrite").partitionBy("table").parquet(str(batch_dir / "changelog"))
    if not any((batch_dir / "changelog").glob("table=*")):
        # every row event quarantined: one empty file that still carries the schema for the readers
        changelog.limit(0).write.mode("overwrite").parquet(str(batch_dir / "changelog"))
    quarantined = 0
    if keyless or unsafe:
        error = F.lit(None).cast("string")
        if keyless:
            reasons = F.create_map(*[x for t in keyless for x in (F.lit(t), F.lit(layouts[t]["error"]))])
            error = F.when(F.col("table").isin(*keyless), reasons[F.col("table")])
        if unsafe:
            error = F.coalesce(error, _unsafe_reason(unsafe))
        bad = row_events.where(F.col("op").isin(*ROW_OPS)).select(
            error.alias("error"),
            "source_file",
            "source_offset",
            F.to_json(F.struct("table", "op", "seq", "before", "after")).cast("binary").alias("raw"),
        )
        bad = bad.where(F.col("error").isNotNull())
        bad.write.mode("overwrite").parquet(str(batch_dir / "quarantine" / "normalize"))
        quarantined = spark.read.parquet(str(batch_dir / "quarantine" / "normalize")).count()

    return _finish(batch_dir, report, per_table, schema, heartbeat, layouts, quarantined)


def _finish(batch_dir: Path, report, per_table, schema, heartbeat, layouts, quarantined: int) -> dict[str, Any]:
    """The report's totals; the layouts and the report written (what the next steps read)."""
    report["newest_heartbeat_ts"] = heartbeat.isoformat() if heartbeat else None
    report["events"] = sum(r["events"] for r in per_table.values())
    report["row_events"] = sum(r["row_events"] for r in per_table.values())
    report["non_row_events"] = report["events"] - report["row_events"] - len(schema.rejects)
    report["quarantined"] = quarantined + len(schema.rejects)
    write_json_atomic(batch_dir / "tables.json", layouts)
    write_report(batch_dir, "normalize", report)
    return report


def _kinds(events) -> list[Any]:
    """One job: per table and column of the row events' images, where it was first seen, the kinds of its
    values and a format's type hint (``batch_events.column_kinds`` answers the same in Arrow)."""
    from pyspark.sql import functions as F

    row_events_only = events.where(F.col("op").isin(*ROW_OPS))
    images = None
    for index, image in enumerate(("before", "after")):
        part = row_events_only.select(
            "table",
            "seq",
            "source_file",
            "source_offset",
            F.lit(index).alias("image"),
            F.get_json_object("meta", "$.column_types").alias("hints"),
            F.posexplode(image),
        )
        images = part if images is None else images.unionByName(part)
    images = images.withColumnRenamed("key", "col").withColumnRenamed("value", "v")
    return (
        images.withColumn("kind", F.expr(_KIND_SQL))
        .groupBy("table", "col")
        .agg(
            F.min(F.struct("seq", "source_file", "source_offset", "image", "pos")).alias("first"),
            F.collect_set("kind").alias("kinds"),
            F.first(F.get_json_object("hints", "$"), ignorenulls=True).alias("hints"),
        )
        .collect()
    )


def _task_surveys(spark, event_dir: Path) -> tuple[list[Any], list[Any], list[Any]] | None:
    """The decode tasks' surveys of the per-table layout, merged (``batch_events.merged_surveys``); None when the
    events are laid out flat, a task left no survey, or there is no JVM (the Spark path reads the events)."""
    if getattr(spark, "_jvm", None) is None or not is_per_table(event_dir):
        return None
    parts = {path.name.split("-", 1)[1].removesuffix(".parquet") for path in decoded_files(event_dir)}
    return merged_surveys(event_dir.parent, parts)


def _driver_events(spark, event_dir: Path, carried_dirs: list[Path]) -> DriverEvents | None:
    """This batch's events in Arrow when normalize runs in the driver (at most
    ``Settings.driver_normalize_max_rows`` of them, in chunks of ``driver_normalize_rows`` / ``_bytes``;
    not with events carried in from earlier batches, nor without a JVM), else None."""
    from cdclake.runtime.settings import Settings

    settings = Settings.from_env()
    files = decoded_files(event_dir)
    if carried_dirs or not files or getattr(spark, "_jvm", None) is None:
        return None
    rows = decoded_rows(files)
    if not settings.driver_normalize_rows or rows > settings.driver_normalize_max_rows:
        return None
    return DriverEvents(files, rows, settings.driver_normalize_rows, settings.driver_normalize_bytes)
