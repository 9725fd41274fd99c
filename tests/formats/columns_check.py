"""The check every columnar-path test makes: the decode task writes the same files with and without it."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from cdclake.jobs.decode import decode_to_files
from cdclake.options import Options
from cdclake.registry import get_decoder


def _task(format_id: str, data: bytes, work: Path, fast: bool, options: dict[str, str]) -> tuple[dict, dict]:
    path = work / "landing.json"
    path.write_bytes(data)
    out = work / ("fast" if fast else "reference")
    pieces = [("landing.json", str(path), 0, None)]
    counts = decode_to_files(format_id, options, pieces, None, str(out), "p", fast)
    files = {
        kind: pq.read_table(out / f"kind={kind}" / "part-p.parquet")
        for kind in ("event", "rejected")
        if (out / f"kind={kind}" / "part-p.parquet").exists()
    }
    return counts, files


def assert_same_files(format_id: str, data: bytes, options: dict[str, str] | None = None) -> int:
    """Both paths write the same event and quarantine files and counts; returns how many spans the columnar
    path read (``decode_columns`` gave record batches), so a test can say it did not pass by falling back."""
    options = options or {}
    with tempfile.TemporaryDirectory() as work:
        reference = _task(format_id, data, Path(work), False, options)
        fast = _task(format_id, data, Path(work), True, options)
    assert fast[0] == reference[0]
    assert fast[1].keys() == reference[1].keys()
    for kind, table in reference[1].items():
        assert fast[1][kind].equals(table), kind
    decoder = get_decoder(format_id, Options(options))
    return sum(type(item) is pa.RecordBatch for item in decoder.decode_columns(data, "landing.json"))
