"""Compaction: applying a batch's events to the lake tables, one room per concern.

- :mod:`~cdclake.compaction.lake_tables`: the tables (current rows, change log, SCD2 history), their
  DDL and creation;
- :mod:`~cdclake.compaction.routing`: which events a batch folds and on which worker;
- :mod:`~cdclake.compaction.folding`: what a merge means (the refold, SCD2 versions), Arrow in and out;
- :mod:`~cdclake.compaction.strategy`: merge-on-read or bucket overwrite, and which buckets (maintenance);
- :mod:`~cdclake.compaction.publish`: how the fold is committed (validated overwrite, branch + fast-forward);
- :mod:`~cdclake.compaction.lineage`: what ``main``'s history says (committed batches and their counts);
- :mod:`~cdclake.compaction.table`: the procedure for one table, with its retries;
- :mod:`~cdclake.compaction.runner`: every table of a batch in one Spark application, several at once.

``cdclake.merge`` is the reference model of the semantics (DESIGN.md section 4).
"""
