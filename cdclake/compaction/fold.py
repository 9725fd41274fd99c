"""One merge semantics, several folds: the :class:`Fold` protocol, and its implementations side by side.

A *fold* turns the logged events of a set of affected keys into each key's row (DESIGN.md section 4): every
event of a key, applied in order (seq, file, offset, then batch), a delete leaving no row. ``cdclake.merge``
states that once (:func:`cdclake.merge.refold`); the faster forms compute the same answer other ways, each
where it pays. Each is a small adapter here over its own module, so that one parity suite
(``tests/compaction/test_fold_differential.py``) holds every one of :data:`FOLDS` to the reference on the same
inputs:

- :class:`ReferenceFold`: ``merge.refold`` event by event (Arrow in and out through ``folding.fold_part``);
- :class:`ArrowFold`: the driver's fold over Arrow and numpy (``arrow_fold.fold_driver``; a key-change
  component it cannot fold as one chain goes to the reference);
- :class:`WorkersFold`: the same Arrow fold on Spark's Python workers, one bucket (or key-change component's
  home) at a time (``spark_fold.fold_parts``), as ``spark_fold.fold_on_workers`` runs it;
- :class:`RowStateFold`: a batch's in-order keys applied onto their current rows (``row_state``,
  ``merge.apply_events``), every other key by another fold, as ``driver_merge`` composes them.

The bucket overwrite's pass-through of the untouched rows, the SCD2 history (``merge.history``) and the commit
are not folds: they are the callers' (``driver_merge``, ``spark_fold``, ``commit``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import pyarrow as pa
import pyarrow.compute as pc

from cdclake.compaction.arrow_fold import fold_driver
from cdclake.compaction.folding import fold_part, with_names
from cdclake.compaction.lake_tables import LOG_DDL
from cdclake.compaction.routing import component_homes
from cdclake.compaction.row_state import candidate_keys, fold_onto_rows, in_order_keys
from cdclake.compaction.spark_fold import fold_parts, with_event_part
from cdclake.schema.evolution import ColumnMap


@dataclass(frozen=True)
class FoldSpec:
    """What every fold is told besides the events: the table's key and columns, the batch whose events it
    counts, the bucket count, the truncate watermark and the column map of renamed or dropped columns."""

    keys: list[str]
    columns: list[tuple[str, str]]
    batch_id: str
    buckets: int
    truncate_seq: str | None = None
    cmap: ColumnMap | None = None

    def args(self) -> dict[str, Any]:
        """The keyword arguments the fold functions take (``fold_part``, ``fold_driver``)."""
        return {
            "keys": self.keys,
            "columns": self.columns,
            "batch_id": self.batch_id,
            "buckets": self.buckets,
            "truncate_seq": self.truncate_seq,
            "cmap": self.cmap,
        }


@runtime_checkable
class Fold(Protocol):
    """The merge semantics' interface (DESIGN.md section 4), whatever computes it.

    ``fold(log, spec, rows)``: ``log`` holds the change-log rows (``LOG_SCHEMA``) of the affected keys, every
    logged event naming one of them (as key or as old key), read in any order; a key change links keys, so the
    affected keys are closed under the log's key changes. ``rows`` are the table's current rows of those keys
    (with ``_cdc_key``), or None when none were read: a cache of the refold of the log before this batch, which a
    fold may start from where that is provable (row state) and which none needs.

    Returns a table of ``folding.out_schema(spec.columns)`` (real column names): per affected key its ``row``, or a
    ``gone`` marker (only ``_cdc_key`` and ``_cdc_bucket``) when it is left without one; and ``stats`` rows whose
    ``_cdc_info`` counts add up to the fold's ``applied`` / ``stale`` events of ``spec.batch_id`` (an event logged
    twice counted once) and its ``deleted_keys``. The order of the rows means nothing.
    """

    #: the name the parity suite and the reports use
    name: str
    #: runs on Spark (needs the active session)
    on_spark: bool

    def fold(self, log: pa.Table, spec: FoldSpec, rows: pa.Table | None = None) -> pa.Table: ...


class ReferenceFold:
    """The reference: ``merge.refold`` over the typed events (``folding.fold_part``). ``rows`` are not read."""

    name = "reference"
    on_spark = False

    def fold(self, log: pa.Table, spec: FoldSpec, rows: pa.Table | None = None) -> pa.Table:
        return fold_part(log, None, markers=True, **spec.args())


class ArrowFold:
    """The driver's fold: sorted Arrow columns and numpy runs per key (``arrow_fold.fold_driver``)."""

    name = "arrow"
    on_spark = False

    def fold(self, log: pa.Table, spec: FoldSpec, rows: pa.Table | None = None) -> pa.Table:
        return fold_driver(log, None, markers=True, **spec.args())


def linked_keys(log: pa.Table) -> set[str]:
    """Every key a key change of ``log`` names (new or old): the keys of its key-change components."""
    moved = log.filter(pc.is_valid(log["_old_key"])).select(["_key", "_old_key"])
    return set(moved["_key"].to_pylist()) | set(moved["_old_key"].to_pylist())


def _keys_of(log: pa.Table, keys: set[str], inside: bool = True) -> pa.Table:
    """The rows of ``log`` whose ``_key`` is (else is not) one of ``keys``."""
    found = pc.fill_null(pc.is_in(log["_key"], pa.array(sorted(keys), pa.string())), False)
    return log.filter(found if inside else pc.invert(found))


class WorkersFold:
    """The workers' fold: the log as a Spark frame, each ``_cdc_part`` (a bucket, or a key-change component's
    home) folded on a Python worker by the Arrow fold (``spark_fold.fold_parts``). ``spark``: the session
    (default: the active one)."""

    name = "workers"
    on_spark = True

    def __init__(self, spark=None):
        self.spark = spark

    def fold(self, log: pa.Table, spec: FoldSpec, rows: pa.Table | None = None) -> pa.Table:
        if not log.num_rows:  # (PySpark makes no frame of an empty Arrow table with timestamps)
            return fold_part(log, None, markers=True, **spec.args())
        spark = self.spark
        if spark is None:
            from pyspark.sql import SparkSession

            spark = SparkSession.builder.getOrCreate()
        moved = log.filter(pc.is_valid(log["_old_key"]))
        pairs = zip(moved["_key"].to_pylist(), moved["_old_key"].to_pylist(), strict=True)
        part_of = component_homes(sorted(set(pairs)), spec.buckets)
        frame = with_event_part(spark, spark.createDataFrame(log, schema=LOG_DDL), part_of)
        return with_names(fold_parts(frame, spec.args()).toArrow(), [n for n, _ in spec.columns])


class RowStateFold:
    """Row state: the batch's in-order keys (their row exists, every event of the batch for them is newer, no key
    change names them, no event is logged twice) folded onto their ``rows`` by ``merge.apply_events``
    (``row_state.fold_onto_rows``); every other key by ``rest`` (the driver's fold, as ``driver_merge`` does)."""

    name = "row-state"
    on_spark = False

    def __init__(self, rest: Fold | None = None):
        self.rest = rest if rest is not None else ArrowFold()

    def fold(self, log: pa.Table, spec: FoldSpec, rows: pa.Table | None = None) -> pa.Table:
        if rows is None or not rows.num_rows:
            return self.rest.fold(log, spec)
        batch = log.filter(pc.fill_null(pc.equal(log["_cdc_batch"], spec.batch_id), False))
        seqs = dict(zip(rows["_cdc_key"].to_pylist(), rows["_cdc_seq"].to_pylist(), strict=True))
        # a key no key change names is a component of its own: the other keys' log folds without it
        in_order = in_order_keys(batch, candidate_keys(batch), seqs, spec.truncate_seq) - linked_keys(log)
        if not in_order:
            return self.rest.fold(log, spec)
        their_rows = rows.filter(pc.is_in(rows["_cdc_key"], pa.array(sorted(in_order), pa.string())))
        state_args = {k: v for k, v in spec.args().items() if k != "truncate_seq"}
        onto = fold_onto_rows(_keys_of(batch, in_order), their_rows, **state_args)
        return pa.concat_tables([self.rest.fold(_keys_of(log, in_order, inside=False), spec), onto])


#: Every fold of the semantics, the reference first: what the parity suite iterates over.
FOLDS: tuple[Fold, ...] = (ReferenceFold(), ArrowFold(), WorkersFold(), RowStateFold())
