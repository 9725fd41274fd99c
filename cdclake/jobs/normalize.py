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

import datetime as dt
import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypedDict

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
from cdclake.jobs.layout import TableLayout, write_layouts
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


class NormalizeTableCounts(TypedDict):
    """One source table's line in the normalize report (``reports/normalize.json``'s ``tables``)."""

    events: int
    row_events: int
    #: ISO time of the table's newest row event (None: it had none)
    newest_event_ts: str | None


class NormalizeTotals(TypedDict):
    """What every normalize report holds (a batch without events reports only these: all 0, no tables)."""

    tables: dict[str, NormalizeTableCounts]
    events: int
    row_events: int
    #: the events that are not row events (heartbeats, markers, truncates, schema and DDL events), less the
    #: DDL events rejected
    non_row_events: int
    #: row events quarantined here and DDL events rejected
    quarantined: int
    #: events of incomplete transactions held back for a later batch
    held: int
    #: events an earlier batch held back, applied with this one
    carried_in: int


class NormalizeReport(NormalizeTotals, total=False):
    """The normalize step's report (``reports/normalize.json``); the batch report reads it."""

    ddl_rejected: int
    schema_changes: int
    ddl_truncates: int
    #: ISO time of the source's newest heartbeat (None: none came)
    newest_heartbeat_ts: str | None


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
) -> TableLayout:
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
    return TableLayout(
        identifier=f"{ns}.{table}",
        spark_name=spark_table_name(source_table, namespace),
        keys=None if keys is None else tuple(keys),
        columns=tuple(columns),
        new_columns=tuple(new_columns),
        exists=existing is not None,
    )


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


def run(spark, batch_dir: str | Path) -> NormalizeReport:
    """Normalize one batch (the steps in ``_BatchNormalizer.run``); returns the report it wrote."""
    return _BatchNormalizer(spark, Path(batch_dir)).run()


#: A lake table as normalize finds it: (Spark name, its columns or None when it does not exist, schema history).
LakeState = tuple[str, list[tuple[str, str]] | None, list[dict[str, Any]]]


@dataclass
class _TableTally:
    """What the counts say of one source table of the batch (added up from the counts per op)."""

    events: int = 0
    row_events: int = 0
    #: the key columns the events gave (row events' first)
    keys: list[str] | None = None
    newest_event_ts: dt.datetime | None = None

    def counts(self) -> NormalizeTableCounts:
        newest = self.newest_event_ts
        return {
            "events": self.events,
            "row_events": self.row_events,
            "newest_event_ts": newest.isoformat() if newest else None,
        }


class _BatchNormalizer:
    """One run of normalize over a batch: the state its steps hand on, one method a step (``run``: their order).

    The events are counted where it is cheapest: the decode tasks' surveys, else the events read in the driver
    (Arrow, no Spark job), else Spark's path (``driver`` False: carried-in events, a batch over the driver's
    bound, or transactions that may be incomplete)."""

    def __init__(self, spark, batch_dir: Path) -> None:
        self.spark = spark
        self.batch_dir = batch_dir
        self.manifest = read_manifest(batch_dir)
        self.event_dir = batch_dir / "decoded" / "kind=event"
        self.report: NormalizeReport = {
            "tables": {},
            "events": 0,
            "row_events": 0,
            "non_row_events": 0,
            "quarantined": 0,
            "held": 0,
            "carried_in": 0,
        }
        self.carried_dirs = [d for d in held_inputs(batch_dir) if d.exists()]
        self.event_ddl = DECODED_SPARK_DDL.replace("kind string, ", "")
        # the survey: per table and op the counts (``grouped``), the columns' kinds and the schema events
        self.local: DriverEvents | None = None
        self.driver = self.linked = False
        self.grouped: list[Any] | None = None
        self.local_kinds: list[Any] | None = None
        self.local_schema_rows: list[dict[str, Any]] | None = None
        self.events: Any = None  # the Spark frame of the events (Spark's path)
        # what the counts say, per table
        self.per_table: dict[str, _TableTally] = {}
        self.op_counts: dict[str, dict[str, int]] = {}
        self.heartbeat: Any = None
        self.seen: dict[str, list[tuple[Any, str, set[str], str | None]]] = {}
        self.schema_rows: list[dict[str, Any]] = []
        self.state: dict[str, LakeState] = {}
        self.schema: Any = None  # schema.events.SchemaEventResult
        # the layouts, and the tables whose row events are quarantined
        self.layouts: dict[str, TableLayout] = {}
        self.keyless: list[str] = []
        self.unsafe: dict[str, dict[str, str]] = {}

    @property
    def row_ddl(self) -> str:
        """The events' Spark DDL without the decode step's ``error`` and ``raw``."""
        return self.event_ddl.replace(", error string, raw binary", "")

    def run(self) -> NormalizeReport:
        if not self.event_dir.exists() and not self.carried_dirs:
            write_layouts(self.batch_dir, {})
            write_json_atomic(self.batch_dir / "schema_changes.json", {})
            write_report(self.batch_dir, "normalize", self.report)
            return self.report
        self.survey()
        if not self.driver:
            self.read_in_spark()
        self.tally()
        self.collect_seen_columns()
        self.collect_schema_rows()
        self.look_up_lake_tables()
        self.settle_schema_changes()
        self.build_layouts()
        self.write_schema_changes()
        return self.write_changelog()

    def survey(self) -> None:
        """The counts from the decode tasks' surveys, or from the events read in the driver; neither: Spark's."""
        # decode wrote the events as the change log's files, and surveyed them: the surveys merged, the files linked
        # into the change log below if nothing is quarantined (decoded_tables); else the events read in the driver
        surveyed = _task_surveys(self.spark, self.event_dir) if not self.carried_dirs else None
        local = None if surveyed is not None else _driver_events(self.spark, self.event_dir, self.carried_dirs)
        self.driver = surveyed is not None or local is not None
        self.linked = self.driver and is_per_table(self.event_dir)
        if surveyed is not None:
            self.grouped, self.local_kinds, self.local_schema_rows = surveyed
        elif self.linked and local is not None:
            self.grouped, self.local_kinds, self.local_schema_rows = local.survey()
        elif local is not None:
            # the change log is written in the survey's pass, as if nothing were to be quarantined: read once,
            # written while surveyed; when something is, Spark's path below writes it again (overwrite)
            with ChangelogWriter(self.batch_dir / "changelog", self.manifest.batch_id, escape_table) as log:
                self.grouped, self.local_kinds, self.local_schema_rows = local.survey(log)
        self.local = local
        if self.grouped is not None and any(r["marks"] for r in self.grouped):
            self.local = self.grouped = None  # transactions that may be incomplete: the Spark path splits them off
            self.driver = self.linked = False

    def read_in_spark(self) -> None:
        """Spark's path: the events (and those carried in) read, incomplete transactions held back, then counted."""
        spark, batch_dir = self.spark, self.batch_dir
        if self.event_dir.exists():
            events = spark.read.schema(self.event_ddl).parquet(str(self.event_dir)).drop("error", "raw")
        else:
            events = spark.createDataFrame([], self.event_ddl).drop("error", "raw")
        carried = None
        if self.carried_dirs:
            carried = spark.read.schema(self.row_ddl + ", _held_age int").parquet(*[str(d) for d in self.carried_dirs])
            self.report["carried_in"] = carried.count()
        raw = None
        if carried is None:  # the counts of this batch's events also say whether a transaction can be incomplete
            events = raw = events.persist(_spilled())
            self.grouped = _grouped(events)
            marked = any(r["marks"] for r in self.grouped)
        else:
            marked = None
        events, hold = split_incomplete(spark, events, carried, marked)
        if hold is not None:
            hold.write.mode("overwrite").parquet(str(held_output(batch_dir)))
            self.report["held"] = spark.read.parquet(str(held_output(batch_dir))).count()
        if self.grouped is None or hold is not None:  # counted again: what is applied now
            events = events.persist(_spilled())
            self.grouped = _grouped(events)
            if raw is not None:  # the kept events are cached now: do not hold the batch in memory twice
                raw.unpersist()
        self.events = events

    def tally(self) -> None:
        """Per table: its events, row events, key and newest event time; per table and op the count; the newest
        heartbeat."""
        assert self.grouped is not None
        for r in sorted(self.grouped, key=lambda r: r["op"] not in ROW_OPS):  # keys from row events first
            stats = self.per_table.setdefault(r["table"], _TableTally())
            stats.events += r["count"]
            stats.keys = stats.keys or r["keys"]
            newest = r["newest"]
            if r["op"] in ROW_OPS:
                stats.row_events += r["count"]
                if newest is not None and (stats.newest_event_ts is None or newest > stats.newest_event_ts):
                    stats.newest_event_ts = newest
            if r["op"] == "HEARTBEAT" and newest is not None and (self.heartbeat is None or newest > self.heartbeat):
                self.heartbeat = newest
            self.op_counts.setdefault(r["table"], {})[r["op"]] = r["count"]

    def collect_seen_columns(self) -> None:
        """Columns with the kinds of their values, in first-seen order."""
        kinds = self.local_kinds if self.driver else _kinds(self.events)
        for r in kinds or []:
            hint = json.loads(r["hints"]).get(r["col"]) if r["hints"] else None
            self.seen.setdefault(r["table"], []).append((tuple(r["first"]), r["col"], set(r["kinds"]), hint))

    def collect_schema_rows(self) -> None:
        """Schema changes (SCHEMA / DDL events), in event order (no job when the counts show none)."""
        from pyspark.sql import functions as F

        if not any(op in ("SCHEMA", "DDL") for ops in self.op_counts.values() for op in ops):
            return
        if self.driver:
            self.schema_rows = self.local_schema_rows or []
        else:
            found = self.events.where(F.col("op").isin("SCHEMA", "DDL")).select(*SCHEMA_EVENT_COLUMNS)
            self.schema_rows = [r.asDict() for r in found.collect()]

    def _look_up(self, source_table: str) -> LakeState:
        name = spark_table_name(source_table, self.manifest.namespace)
        if not self.spark.catalog.tableExists(name):
            return name, None, []
        return name, _columns_of(self.spark, name), _history_of(self.spark, name)

    def table_state(self, source_table: str) -> LakeState:
        """The lake table of ``source_table`` as it is before this batch (looked up once)."""
        if source_table not in self.state:
            self.state[source_table] = self._look_up(source_table)
        return self.state[source_table]

    def look_up_lake_tables(self) -> None:
        """Every table's lake state up front, side by side: catalog round trips that wait on the driver."""
        wanted = sorted(
            {t for t, s in self.per_table.items() if s.row_events or self.op_counts.get(t, {}).get("TRUNCATE")}
            | {r["table"] for r in self.schema_rows if r["table"]}
        )
        if len(wanted) > 1:
            with ThreadPoolExecutor(max_workers=min(LOOKUP_THREADS, len(wanted))) as pool:
                self.state.update(zip(wanted, pool.map(self._look_up, wanted), strict=True))

    def scd2(self, table: str) -> bool:
        return table in self.manifest.scd2 or "*" in self.manifest.scd2

    def settle_schema_changes(self) -> None:
        """The schema events as changes per table, against each table's lake columns."""
        from cdclake.schema.events import changes_from_events

        for r in self.schema_rows:
            r["ddl"] = json.loads(r["ddl"]) if r["ddl"] else None
            r["meta"] = json.loads(r["meta"]) if r["meta"] else {}
            if r["table"]:
                self.table_state(r["table"])
        self.schema = changes_from_events(
            self.schema_rows,
            {t: cols for t, (_, cols, _) in self.state.items()},
            {t: v for t, (_, _, hist) in self.state.items() if (v := _versions(hist)) is not None},
            column_problem=lambda table, name, others: column_name_problem(name, others, self.scd2(table)),
        )
        for table in self.schema.changes:
            self.table_state(table)

    def build_layouts(self) -> None:
        """The report's line per table, and the layout of every table with rows (or truncates) to write."""
        for source_table, stats in sorted(self.per_table.items()):
            self.report["tables"][source_table] = stats.counts()
            has_truncate = self.op_counts.get(source_table, {}).get("TRUNCATE") or any(
                t["table"] == source_table for t in self.schema.truncates
            )
            if not stats.row_events and not has_truncate:
                continue  # only heartbeats, transaction markers, schema or DDL events: no lake table to write
            self.layouts[source_table] = self.layout_of(source_table, stats)

    def layout_of(self, source_table: str, stats: _TableTally) -> TableLayout:
        """One table's layout: its columns through the recorded and pending schema changes, new columns
        under the table's policy, names the lake cannot hold left out, and why its rows cannot be written."""
        _, existing, history = self.table_state(source_table)
        policy = self.manifest.policy_for(source_table)
        pending = self.schema.changes.get(source_table, [])
        applied = pending if policy == "evolve" else []
        cmap = column_map([*history, *applied])
        evolved = evolve_columns(existing, applied) if existing is not None else None
        seen = self.seen.get(source_table, [])
        cols = [(col, kinds_, hint) for _, col, kinds_, hint in sorted(seen)]
        legacy = set(cmap.renames) | cmap.dropped
        bad_columns = unsafe_columns(
            [c for c, _, _ in cols], [n for n, _ in evolved or []], legacy, self.scd2(source_table)
        )
        if bad_columns:
            self.unsafe[source_table] = bad_columns
            cols = [c for c in cols if c[0] not in bad_columns]
        current = {n for n, _ in evolved or []} | {c for c, _, _ in cols}
        current -= set(cmap.renames) | cmap.dropped
        cols = _translate_seen(cols, cmap, current)
        layout = table_layout(
            source_table,
            cols,
            evolved,
            stats.keys,
            self.manifest.keys.get(source_table) or self.manifest.keys.get("*"),
            self.manifest.namespace,
        )
        if existing is not None and layout.new_columns:
            if policy == "ignore":
                cmap.dropped |= set(layout.new_columns)
                layout = replace(
                    layout,
                    columns=tuple(c for c in layout.columns if c[0] not in layout.new_columns),
                    ignored_columns=layout.new_columns,
                    new_columns=(),
                )
            else:  # drift: a column first seen in records goes through the DDL step like any change
                first_seen = {col: first for first, col, _, _ in seen}
                self.schema.changes[source_table] = _with_drift(source_table, layout, pending, first_seen)
        error = _key_error(source_table, layout.keys) if stats.row_events else None
        if error:
            self.keyless.append(source_table)
        return replace(
            layout,
            column_map=cmap.to_dict(),
            policy=policy,
            counts=self.op_counts.get(source_table, {}),
            ddl_truncates=sum(1 for t in self.schema.truncates if t["table"] == source_table),
            scd2=self.scd2(source_table),
            unsafe_columns=bad_columns or None,
            error=error,
        )

    def write_schema_changes(self) -> None:
        """``schema_changes.json`` (what the DDL step applies), the rejected DDL events, and their counts."""
        changes_out: dict[str, Any] = {}
        for source_table, changes in sorted(self.schema.changes.items()):
            name, existing, _ = self.table_state(source_table)
            changes_out[source_table] = {
                "spark_name": name,
                "exists": existing is not None,
                "policy": self.manifest.policy_for(source_table),
                "changes": [c.to_dict() for c in changes],
            }
        write_json_atomic(self.batch_dir / "schema_changes.json", changes_out)
        if self.schema.rejects:
            self.spark.createDataFrame(
                [(r["error"], r["source_file"], r["source_offset"], None) for r in self.schema.rejects],
                "error string, source_file string, source_offset bigint, raw binary",
            ).write.mode("overwrite").parquet(str(self.batch_dir / "quarantine" / "ddl"))
        self.report["ddl_rejected"] = len(self.schema.rejects)
        self.report["schema_changes"] = sum(len(c["changes"]) for c in changes_out.values())
        self.report["ddl_truncates"] = len(self.schema.truncates)

    def write_changelog(self) -> NormalizeReport:
        """The change log (the survey's stands when nothing is quarantined or truncated), the quarantine, then
        the layouts and the report."""
        from pyspark.sql import functions as F

        if self.driver:
            assert self.grouped is not None
            tableless = any(r["table"] is None and r["op"] in (*ROW_OPS, "TRUNCATE") for r in self.grouped)
            if not (self.schema.truncates or self.keyless or self.unsafe or tableless):
                if self.linked:
                    publish_changelog(self.event_dir, self.batch_dir / "changelog")
                return self.finish(0)
            if self.local is not None and self.local.whole is not None:
                self.events = self.spark.createDataFrame(self.local.whole, self.row_ddl)
            else:  # quarantines or truncates to sort out: Spark's path from here, over the decoded files
                self.events = self.spark.read.schema(self.event_ddl).parquet(str(self.event_dir)).drop("error", "raw")
        row_events = self.events.where(F.col("op").isin(*ROW_OPS) | (F.col("op") == "TRUNCATE"))
        if self.schema.truncates:  # TRUNCATE TABLE statements go to the truncate step with their seq
            row_events = row_events.unionByName(self.ddl_truncates(), allowMissingColumns=True)
        good = row_events.where(~F.col("table").isin(*self.keyless)) if self.keyless else row_events
        if self.unsafe:
            good = good.where(_unsafe_reason(self.unsafe).isNull())
        changelog = good.withColumn("_batch", F.lit(self.manifest.batch_id))
        changelog.write.mode("overwrite").partitionBy("table").parquet(str(self.batch_dir / "changelog"))
        if not any((self.batch_dir / "changelog").glob("table=*")):
            # every row event quarantined: one empty file that still carries the schema for the readers
            changelog.limit(0).write.mode("overwrite").parquet(str(self.batch_dir / "changelog"))
        return self.finish(self.quarantine(row_events))

    def ddl_truncates(self):
        """The ``TRUNCATE TABLE`` statements as TRUNCATE events (a Spark frame)."""
        return self.spark.createDataFrame(
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
                for t in self.schema.truncates
            ],
            "table string, op string, seq string, event_ts timestamp, meta string, source_file string, "
            "source_offset bigint",
        )

    def quarantine(self, row_events) -> int:
        """The row events of keyless tables or with a column the lake cannot hold, with the reason; their count."""
        from pyspark.sql import functions as F

        if not (self.keyless or self.unsafe):
            return 0
        error = F.lit(None).cast("string")
        if self.keyless:
            reasons = F.create_map(*[x for t in self.keyless for x in (F.lit(t), F.lit(self.layouts[t].error))])
            error = F.when(F.col("table").isin(*self.keyless), reasons[F.col("table")])
        if self.unsafe:
            error = F.coalesce(error, _unsafe_reason(self.unsafe))
        bad = row_events.where(F.col("op").isin(*ROW_OPS)).select(
            error.alias("error"),
            "source_file",
            "source_offset",
            F.to_json(F.struct("table", "op", "seq", "before", "after")).cast("binary").alias("raw"),
        )
        bad = bad.where(F.col("error").isNotNull())
        bad.write.mode("overwrite").parquet(str(self.batch_dir / "quarantine" / "normalize"))
        return self.spark.read.parquet(str(self.batch_dir / "quarantine" / "normalize")).count()

    def finish(self, quarantined: int) -> NormalizeReport:
        """The report's totals; the layouts and the report written (what the next steps read)."""
        report, per_table = self.report, self.per_table
        report["newest_heartbeat_ts"] = self.heartbeat.isoformat() if self.heartbeat else None
        report["events"] = sum(r.events for r in per_table.values())
        report["row_events"] = sum(r.row_events for r in per_table.values())
        report["non_row_events"] = report["events"] - report["row_events"] - len(self.schema.rejects)
        report["quarantined"] = quarantined + len(self.schema.rejects)
        write_layouts(self.batch_dir, self.layouts)
        write_report(self.batch_dir, "normalize", report)
        return report


def _with_drift(
    source_table: str, layout: TableLayout, pending: list[SchemaChange], first_seen: dict[str, Any]
) -> list[SchemaChange]:
    """``pending`` and an ADD COLUMN for each new column no schema change announced (drift: a column first seen
    in records goes through the DDL step like any change), located where it was first seen."""
    announced = {c.column for c in pending if c.kind == ADD_COLUMN}
    types = dict(layout.columns)
    for col in layout.new_columns:
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
    return pending


def _key_error(source_table: str, keys: Sequence[str] | None) -> str | None:
    """Why the row events of a table with these primary-key columns cannot be written (None: they can)."""
    if not keys:
        return (
            f"table {source_table} has no primary key: the format did not give one; declare it with "
            f"--option keys=COL1,COL2 or in the source configuration (keys: {{{source_table}: [...]}})"
        )
    if any("," in k or column_name_problem(k) for k in keys):  # the table property cdclake.keys is comma-separated
        return (
            f"table {source_table}: primary-key column names {list(keys)!r} cannot be stored (a comma, "
            "or a name the lake refuses); rename the key columns at the source"
        )
    return None


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
