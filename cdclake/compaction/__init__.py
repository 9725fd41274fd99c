"""Compaction: applying a batch's events to the lake tables, one room per concern.

- :mod:`~cdclake.compaction.lake_tables`: the tables (current rows, change log, SCD2 history), their
  DDL and creation;
- :mod:`~cdclake.compaction.fold`: the merge semantics' interface (:class:`Fold`) and every fold of it side by
  side (:data:`FOLDS`: the reference, the driver's Arrow fold, the workers' Spark SQL fold, row state);
- :mod:`~cdclake.compaction.routing`: which events a batch folds and on which worker (typing and keying
  column-wise through :mod:`~cdclake.compaction.arrow_typing`);
- :mod:`~cdclake.compaction.folding`: what a merge means (the refold, SCD2 versions), Arrow in and out;
  its fast forms: :mod:`~cdclake.compaction.arrow_fold` (the driver), :mod:`~cdclake.compaction.native_fold`
  (Spark SQL), :mod:`~cdclake.compaction.row_state` (in-order keys onto their rows);
- :mod:`~cdclake.compaction.strategy`: merge-on-read or bucket overwrite, and which buckets (maintenance);
- :mod:`~cdclake.compaction.driver_io`: the driver path's reads (pyarrow, pyiceberg through
  :mod:`~cdclake.compaction.driver_read`) and commits (:mod:`~cdclake.compaction.row_delta`);
- :mod:`~cdclake.compaction.spark_fold`: the folds Spark runs (the workers path, the SCD2 rewrite);
- :mod:`~cdclake.compaction.publish`: how Spark's fold is committed (validated overwrite, branch + fast-forward);
- :mod:`~cdclake.compaction.lineage`: what ``main``'s history says (committed batches and their counts);
- :mod:`~cdclake.compaction.switches`: the settings it reads at each table (bounds, switches);
- :mod:`~cdclake.compaction.table`: one table's merge, step by step, with its retries; each step in its room:
  :mod:`~cdclake.compaction.batch_rows` (the batch routed into change-log rows, appended once),
  :mod:`~cdclake.compaction.affected` (which keys and buckets the merge touches, row state, linked keys),
  :mod:`~cdclake.compaction.driver_merge` (the fold in the driver, when its inputs fit its bounds),
  :mod:`~cdclake.compaction.commit` (the fold committed: one type per kind, ``RowDelta``, ``BranchMerge``,
  ``Overwrite``, ``Scd2History``, picked by ``plan_commits``);
- :mod:`~cdclake.compaction.runner`: every table of a batch in one Spark application, several at once.

``cdclake.merge`` is the reference model of the semantics (DESIGN.md section 4).
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cdclake.compaction.fold import FOLDS, Fold, FoldSpec

__all__ = ["FOLDS", "Fold", "FoldSpec"]


def __getattr__(name: str) -> Any:
    """``Fold``, ``FoldSpec`` and ``FOLDS`` from :mod:`~cdclake.compaction.fold`, imported when first asked for (a
    module of this package imported alone does not load every fold, nor their numpy and native modules)."""
    if name in __all__:
        from cdclake.compaction import fold

        return getattr(fold, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
