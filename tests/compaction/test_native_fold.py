"""The native fold gives the rows and counts of the reference fold (``fold_part`` over ``merge.refold``)
on random change logs: several batches, partial updates, upserts, deletes, replays, a watermark."""

from __future__ import annotations

import pyarrow as pa
import pytest
from changelogs import BUCKETS, COLUMNS, CURRENT, event_st, log_rows, rows_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdclake.compaction.folding import fold_part, with_names
from cdclake.compaction.lake_tables import LOG_DDL, LOG_SCHEMA
from cdclake.compaction.native_fold import fold_native

pytestmark = pytest.mark.spark


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(event_st, min_size=1, max_size=14), st.sampled_from([None, "0003"]))
def test_native_fold_equals_the_reference(spark, drawn, truncate_seq):
    log = pa.Table.from_pylist(log_rows(drawn), schema=LOG_SCHEMA)
    # replays tie on order (seq, file, offset): every fold breaks the tie by batch id, none by the log's order
    log = log.sort_by([("_cdc_batch", "descending")])
    names = [n for n, _ in COLUMNS]
    reference = fold_part(
        log,
        None,
        keys=["id"],
        columns=COLUMNS,
        batch_id=CURRENT,
        buckets=BUCKETS,
        truncate_seq=truncate_seq,
        markers=True,
    )
    frame = spark.createDataFrame(log, schema=LOG_DDL)
    native = with_names(fold_native(frame, COLUMNS, CURRENT, truncate_seq).toArrow(), names)
    assert rows_of(native) == rows_of(reference)
