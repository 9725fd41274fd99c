"""Committing a fold to the table: one atomic commit carrying the batch id, validated from the snapshot read.

One small type per commit kind, each a :class:`Commit`, picked in one place (:func:`plan_commits`):

- :class:`RowDelta` (merge-on-read, folded in the driver): the driver writes its rows and position deletes;
- :class:`BranchMerge` (merge-on-read): Spark's ``MERGE INTO`` on a private branch, fast-forwarded onto
  ``main`` (``publish.py``); it also stands in where the driver cannot write the row delta;
- :class:`Overwrite` (bucket overwrite): the driver's own overwrite of the rewritten buckets where it holds
  all their rows, else Spark's overwrite of them;
- :class:`Scd2History`: then, for an SCD2 table, its history.

A lost race raises the conflict to ``compact_table``, which re-reads and folds again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from cdclake.compaction.affected import Affected
from cdclake.compaction.batch_rows import Target
from cdclake.compaction.driver_io import commit_delta_in_driver, overwrite_in_driver, to_frame
from cdclake.compaction.driver_merge import Folded
from cdclake.compaction.lake_tables import HISTORY_SUFFIX, META_DDL, ROW_KEYS_PROPERTY, sql_string, table_ddl
from cdclake.compaction.publish import branch_name, drop_branch, merge_and_publish, unshuffled, validated_writer
from cdclake.compaction.spark_fold import write_history
from cdclake.compaction.strategy import MERGE_ON_READ
from cdclake.runtime.faults import fault_point, inside_commit


@dataclass(frozen=True)
class CommitInput:
    """What every commit is handed: the table, the batch, its affected keys and buckets (with the snapshot they
    were read at), the fold, and the snapshot properties the commit carries (the batch id, its counts)."""

    spark: Any
    target: Target
    batch_id: str
    affected: Affected
    folded: Folded
    properties: dict[str, str]


class Commit(Protocol):
    """One kind of commit of a batch's fold."""

    #: what the commit is, for logs and tests
    kind: ClassVar[str]

    def commit(self, given: CommitInput) -> str | None:
        """Commit ``given``'s fold: one snapshot carrying the batch id, validated from the snapshot read (a lost
        race raises). Returns how, for the report's ``fold`` ("" to say nothing), or None where this commit cannot
        take the fold after all and nothing was committed (the next one of the plan commits it)."""
        ...

    def settle(self, given: CommitInput) -> None:
        """What follows the commit (after its fault point): e.g. dropping a branch it published."""
        ...


@dataclass(frozen=True)
class RowDelta:
    """Merge-on-read from the driver: its ``row``s and ``gone`` markers as a row delta (``row_delta``); None where
    the driver cannot write it (no JVM, or the table holds columns the fold does not write)."""

    kind: ClassVar[str] = "row delta"

    def commit(self, given: CommitInput) -> str | None:
        affected, folded, target = given.affected, given.folded, given.target
        done = commit_delta_in_driver(
            given.spark,
            target.name,
            affected.read_snapshot,
            folded.picked,
            affected.located,
            target.columns,
            target.buckets,
            folded.merge_buckets,
            given.properties,
        )
        return ", committed as a row delta" if done else None

    def settle(self, given: CommitInput) -> None:
        pass


@dataclass(frozen=True)
class BranchMerge:
    """Merge-on-read through Spark: ``MERGE INTO`` a branch at the snapshot read, fast-forwarded onto ``main``
    (``publish.merge_and_publish``); the branch is dropped once it is published."""

    kind: ClassVar[str] = "branch merge"

    def commit(self, given: CommitInput) -> str | None:
        folded, target = given.folded, given.target
        source = folded.source
        if source is None:
            source = to_frame(given.spark, folded.picked, table_ddl(target.columns, META_DDL, "_cdc_kind string"))
        merge_and_publish(
            given.spark,
            target.name,
            given.batch_id,
            given.affected.read_snapshot,
            source,
            target.columns,
            folded.merge_buckets,
            given.properties,
            local_source=folded.in_driver,
        )
        return ""

    def settle(self, given: CommitInput) -> None:
        drop_branch(given.spark, given.target.name, branch_name(given.batch_id))


@dataclass(frozen=True)
class Overwrite:
    """The bucket overwrite of ``rewrite_buckets``: from the driver where it holds every row they keep (its own
    fold's, none passed through by Spark) and can write them, else Spark's validated overwrite. A table whose rows
    lacked their key has every row rewritten with it: the table says so afterwards (``ROW_KEYS_PROPERTY``)."""

    rewrite_buckets: list[int]
    kind: ClassVar[str] = "overwrite"

    def commit(self, given: CommitInput) -> str | None:
        affected, folded, name = given.affected, given.folded, given.target.name
        local = folded.in_driver and not folded.kept_in_spark  # the driver's rows alone: as the MERGE's
        if local and affected.direct:
            if overwrite_in_driver(
                given.spark, name, affected.read_snapshot, folded.rows_out, self.rewrite_buckets, given.properties
            ):
                self._mark_keyed(given)
                return ", committed from the driver"
        self._spark_overwrite(given, local)
        self._mark_keyed(given)
        return ""

    def _spark_overwrite(self, given: CommitInput, local: bool) -> None:
        from pyspark.sql import functions as F

        spark, name, folded = given.spark, given.target.name, given.folded
        source = folded.source
        if source is None:
            source = to_frame(spark, folded.rows_out, table_ddl(given.target.columns, META_DDL))
        writer = (source.coalesce(1) if local else source).writeTo(name)
        for key, value in given.properties.items():
            writer = writer.option(f"snapshot-property.{key}", value)
        with inside_commit(spark, name), unshuffled(spark, local):
            read_snapshot = given.affected.read_snapshot
            validated_writer(writer, read_snapshot).overwrite(F.col("_cdc_bucket").isin(self.rewrite_buckets))

    @staticmethod
    def _mark_keyed(given: CommitInput) -> None:
        if not given.affected.keyed:  # every row was rewritten with its key
            given.spark.sql(f"ALTER TABLE {given.target.name} SET TBLPROPERTIES ({sql_string(ROW_KEYS_PROPERTY)}='1')")

    def settle(self, given: CommitInput) -> None:
        pass


@dataclass(frozen=True)
class Scd2History:
    """An SCD2 table's history: every version of the affected keys recomputed from their log and the affected
    buckets overwritten (``spark_fold.write_history``; skipped where the history holds the batch)."""

    history_dir: Path
    kind: ClassVar[str] = "scd2 history"

    def commit(self, given: CommitInput) -> str | None:
        affected, folded, target = given.affected, given.folded, given.target
        write_history(
            given.spark,
            target.name + HISTORY_SUFFIX,
            folded.ev_parted,
            folded.part_of,
            affected.buckets,
            target.keys,
            target.columns,
            target.buckets,
            given.batch_id,
            affected.log,
            self.history_dir,
            target.cmap,
        )
        return ""

    def settle(self, given: CommitInput) -> None:
        pass


@dataclass(frozen=True)
class CommitPlan:
    """The commits of one batch's fold: the table's, each standing in for the one before where that one cannot
    take the fold (none: ``main`` holds the batch already), then the history's (None: no SCD2)."""

    table: tuple[Commit, ...]
    history: Scd2History | None = None


def plan_commits(
    target: Target,
    affected: Affected,
    folded: Folded,
    mode: str,
    rewrite_buckets: list[int],
    main_done: bool,
    history_dir: Path,
) -> CommitPlan:
    """The one place a commit kind is chosen: from the merge mode, where the fold ran, and what is committed."""
    history = Scd2History(history_dir) if target.scd2 else None
    if main_done:  # a crash between the table's commit and the history's: the history only
        return CommitPlan((), history)
    if mode != MERGE_ON_READ:
        return CommitPlan((Overwrite(rewrite_buckets),), history)
    if affected.direct and folded.in_driver:
        return CommitPlan((RowDelta(), BranchMerge()), history)
    return CommitPlan((BranchMerge(),), history)


def commit_fold(given: CommitInput, plan: CommitPlan) -> str:
    """Commit ``given``'s fold by ``plan``: the first of its table commits that takes it, its fault point and
    settling, then the SCD2 history; returns how, for the report's ``fold`` ("" when Spark did)."""
    how, committed = "", None
    for commit in plan.table:
        said = commit.commit(given)
        if said is not None:
            how, committed = said, commit
            break
    fault_point("compact:after-commit")
    if committed is not None:
        committed.settle(given)
    if plan.history is not None:
        plan.history.commit(given)
    return how
