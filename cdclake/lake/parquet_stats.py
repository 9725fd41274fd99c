"""Which columns of a Parquet file the driver and the decode tasks write get min/max statistics, and which
get dictionary pages.

Only the top-level scalar columns: they are what readers filter on (the bucket, the key, ``_old_key``'s null
count that lets a read skip a log file, the op) and what an Iceberg data file's counts are taken from
(:func:`cdclake.compaction.row_delta.column_counts`, which gives a map's leaves none). The leaves of the image
maps (every value of every event as JSON text) and of the ``keys`` list are never filtered on, and comparing
every one of those strings for a min and a max took a tenth of each write (the same bytes written otherwise:
measured on a 122k-row change-log batch and a 20k-event decoded file, docs/decisions.md, "Statistics only
where a reader uses them").
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa


def statistics_columns(schema: pa.Schema) -> list[str]:
    """The columns of ``schema`` whose Parquet statistics are written (``pq.write_table(write_statistics=...)``)."""
    return [field.name for field in schema if not pa.types.is_nested(field.type)]


#: The codec of the batch's own intermediate files (decoded events, the normalized change log), written once and
#: read once or twice within the batch: LZ4 wrote the 100k Debezium change log in 25% less CPU than snappy and
#: read it in 38% less, 10% smaller (docs/decisions.md, "Decode's value judgements read from the bytes"). The
#: lake's own files stay zstd, Iceberg's default.
INTERMEDIATE_COMPRESSION = "lz4"

#: Columns whose values repeat across a file's rows (a batch's tables, ops, key lists, source files, batch ids).
_REPEATED = frozenset({"table", "op", "keys", "source_file", "_batch", "_cdc_batch", "_role"})


def dictionary_columns(schema: pa.Schema) -> list[str]:
    """The columns of ``schema`` worth a dictionary page (``pq.write_table(use_dictionary=...)``): those whose
    values repeat. Images, metas, sequences and keys are mostly distinct, so their dictionaries were built and
    then dropped: the 100k bench batch's decoded files were written in 0.25 s against 0.37 s and its change log
    in 0.29 s against 0.36 s (5% larger under snappy; docs/decisions.md, "Dictionaries only where values repeat")."""
    return [name for name in schema.names if name in _REPEATED]


def intermediate_options(schema: pa.Schema) -> dict[str, Any]:
    """The ``pq.ParquetWriter`` / ``pq.write_table`` options of the batch's own intermediate files (the decoded
    events, the change log): :data:`INTERMEDIATE_COMPRESSION`, and statistics and dictionaries where above."""
    return {
        "compression": INTERMEDIATE_COMPRESSION,
        "write_statistics": statistics_columns(schema),
        "use_dictionary": dictionary_columns(schema),
    }


def write_intermediate(table: pa.Table, path: Path) -> None:
    """``table`` to ``path`` as an intermediate file, under a temporary name, renamed once whole."""
    import pyarrow.parquet as pq

    temp = path.with_name("." + path.name + ".tmp")
    pq.write_table(table, temp, **intermediate_options(table.schema))
    os.replace(temp, path)
