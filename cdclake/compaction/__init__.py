"""Compaction: applying a batch's events to the lake tables, one room per concern.

- :mod:`~cdclake.compaction.lake_tables`: the tables (current rows, change log, SCD2 history), their
  DDL and creation;
- :mod:`~cdclake.compaction.fold`: the merge semantics' interface (:class:`Fold`) and every fold of it side by
  side (:data:`FOLDS`: the reference, the Arrow fold in the driver and on the workers, row state);
- :mod:`~cdclake.compaction.routing`: which events a batch folds and on which worker (typing and keying
  column-wise through :mod:`~cdclake.compaction.arrow_typing`);
- :mod:`~cdclake.compaction.folding`: what a merge means (the refold, SCD2 versions), Arrow in and out;
  its fast forms: :mod:`~cdclake.compaction.arrow_fold` (Arrow and numpy, in the driver and on the workers),
  :mod:`~cdclake.compaction.row_state` (in-order keys onto their rows);
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

The names other packages import are exported here (``__all__``), each loaded from its module when first
asked for (PEP 562): importing the package alone loads none of its modules.
"""

from cdclake import lazy_exports

#: Modules of this package exported as themselves.
_MODULES = ("arrow_fold", "arrow_typing", "driver_io", "lineage", "publish", "table")
#: The other public names, by the module of this package that defines them.
_NAMES = {
    "arrow_fold": ("chain_keys", "fold_arrow", "fold_driver"),
    "arrow_typing": ("typed_values",),
    "driver_io": ("bulk_shares", "coalesced", "table_events", "whole_budget"),
    "driver_read": ("read_buckets",),
    "fold": ("FOLDS", "Fold", "FoldSpec"),
    "folding": ("fold_part", "with_names"),
    "lake_tables": (
        "HISTORY_SUFFIX",
        "LOG_DDL",
        "LOG_SCHEMA",
        "LOG_SUFFIX",
        "META_DDL",
        "ROUTED_SCHEMA",
        "ROW_KEYS_PROPERTY",
        "TRUNCATE_BUCKET",
        "ensure_namespace",
        "ensure_tables",
        "sql_string",
        "table_ddl",
        "table_schema",
    ),
    "lineage": (
        "COUNTS_PROPERTY",
        "current_schema_id",
        "fresh_snapshot_id",
        "head_summary",
        "java_table",
        "snapshot_info",
        "table_properties",
    ),
    "publish": ("SNAPSHOT_PROPERTY_CONF", "branch_name", "is_conflict"),
    "routing": ("linked_in_driver", "prepared_rows", "route_events"),
    "row_delta": (
        "LOCATED_COLUMNS",
        "POSITION_COLUMNS",
        "Located",
        "append_rows",
        "commit_overwrite",
        "commit_row_delta",
    ),
    "row_state": ("candidate_keys", "fold_onto_rows", "in_order_keys"),
    "runner": ("CompactFailed", "compact_tables"),
    "strategy": (
        "MAX_EXTRA_FILES_PROPERTY",
        "MERGE_ON_READ",
        "MIN_ROWS_PROPERTY",
        "MOR_MIN_BUCKET_ROWS",
        "OVERWRITE",
        "choose_mode",
    ),
    "table": ("compact_table",),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _NAMES, _MODULES)
