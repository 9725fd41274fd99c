"""The Parquet files the decode tasks, normalize and the driver's commits write: statistics on the scalar
columns readers filter on, none on the image maps' leaves."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq

from cdclake.compaction.lake_tables import LOG_SCHEMA
from cdclake.compaction.row_delta import _parquet_bytes
from cdclake.events.arrow import DECODED_FILE_SCHEMA
from cdclake.events.batch import ChangelogWriter
from cdclake.lake.parquet_stats import dictionary_columns, statistics_columns


def _leaf_statistics(metadata: pq.FileMetaData) -> dict[str, bool]:
    group = metadata.row_group(0)
    return {group.column(i).path_in_schema: group.column(i).statistics is not None for i in range(group.num_columns)}


def test_only_top_level_scalar_columns_get_statistics() -> None:
    schema = pa.schema(
        [
            ("_key", pa.string()),
            ("n", pa.int64()),
            ("keys", pa.list_(pa.string())),
            ("after", pa.map_(pa.string(), pa.string())),
            ("s", pa.struct([("x", pa.int32())])),
        ]
    )
    assert statistics_columns(schema) == ["_key", "n"]
    assert "table" in statistics_columns(DECODED_FILE_SCHEMA)
    assert "before" not in statistics_columns(DECODED_FILE_SCHEMA)


def _log_rows(n: int) -> pa.Table:
    rows = [
        {
            "_key": f"[{i}]",
            "_old_key": None,
            "_cdc_bucket": 0,
            "_role": "row",
            "op": "UPDATE",
            "seq": f"{i:05d}",
            "before": {"a": "1"},
            "after": {"a": str(i), "b": None},
            "source_file": "f",
            "source_offset": i,
            "_cdc_batch": "b",
        }
        for i in range(n)
    ]
    return pa.Table.from_pylist(rows, schema=LOG_SCHEMA)


def test_a_driver_log_file_has_statistics_on_its_scalars_and_none_on_its_images() -> None:
    _, footer = _parquet_bytes(_log_rows(5))
    stats = _leaf_statistics(footer)
    assert stats["_key"] and stats["_old_key"] and stats["seq"] and stats["_cdc_bucket"]
    images = {path: has for path, has in stats.items() if path.startswith(("before.", "after."))}
    assert images and not any(images.values())
    # the null count a scan for key changes prunes on is there
    assert footer.row_group(0).column(list(stats).index("_old_key")).statistics.null_count == 5


def test_a_change_log_file_written_by_normalize_has_statistics_on_its_scalars_only(tmp_path) -> None:
    events = _log_rows(3).select(["op", "seq", "before", "after", "source_file", "source_offset"])
    events = events.append_column("table", pa.array(["S.T"] * 3))
    with ChangelogWriter(tmp_path / "changelog", "b1", lambda t: t) as writer:
        writer.add(events)
    (written,) = (tmp_path / "changelog").glob("table=S.T/*.parquet")
    stats = _leaf_statistics(pq.read_metadata(written))
    assert stats["seq"] and stats["op"] and stats["_batch"]
    assert not any(has for path, has in stats.items() if path.startswith(("before.", "after.")))
    assert pq.read_table(written).num_rows == 3


def test_statistics_leave_the_bytes_readable_as_written() -> None:
    table = _log_rows(4)
    data, _ = _parquet_bytes(table)
    assert pq.read_table(io.BytesIO(data)).cast(table.schema).equals(table)


def _dictionary_columns(metadata: pq.FileMetaData) -> set[str]:
    group = metadata.row_group(0)
    return {
        group.column(i).path_in_schema
        for i in range(group.num_columns)
        if any("DICTIONARY" in e for e in group.column(i).encodings)
    }


def test_only_columns_whose_values_repeat_get_dictionary_pages(tmp_path) -> None:
    _, footer = _parquet_bytes(_log_rows(50))
    assert _dictionary_columns(footer) == {"_role", "op", "source_file", "_cdc_batch"}
    events = _log_rows(3).select(["op", "seq", "before", "after", "source_file", "source_offset"])
    events = events.append_column("table", pa.array(["S.T"] * 3))
    with ChangelogWriter(tmp_path / "changelog", "b1", lambda t: t) as writer:
        writer.add(events)
    (written,) = (tmp_path / "changelog").glob("table=S.T/*.parquet")
    assert _dictionary_columns(pq.read_metadata(written)) == {"op", "source_file", "_batch"}
    assert dictionary_columns(DECODED_FILE_SCHEMA) == ["table", "op", "keys", "source_file"]
