"""What a damaged record costs the decode fast path (issue 56; docs/decisions.md, "Fast paths never fail a batch").

For each JSON format with a fast path: one generated file (``--changes``), decoded by ``decode_columns`` as
written, with one corrupt byte in its first ``STATUS`` member name (the reference rejects that record), and with
that name escaped (``\\u0053TATUS``: a valid record the fast path does not read), beside the reference
``decode``; best of ``--runs`` (each a fresh decoder), and how many spans the fast path read.

    .venv/bin/python benchmarks/scripts/fallback_cost.py [--changes 60000] [--runs 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from cdclake.bench.generate import generate
from cdclake.options import Options
from cdclake.registry import get_decoder

FORMATS = ("goldengate-json", "debezium-json", "cdl-json", "datahub-blob")


def timed(format_id: str, options: dict[str, str], data: bytes, columns: bool, runs: int) -> tuple[float, int]:
    best, spans = float("inf"), 0
    for _ in range(runs):
        decoder = get_decoder(format_id, Options(options))
        started = time.perf_counter()
        items = list(decoder.decode_columns(data, "f") if columns else decoder.decode(data, "f"))
        best = min(best, time.perf_counter() - started)
        spans = sum(type(item) is pa.RecordBatch for item in items)
    return best, spans


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=60_000)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        written, _ = generate(list(FORMATS), Path(work), args.changes, seed=3, file_events=args.changes)
        for format_id in FORMATS:
            gen = written[format_id]
            data = gen.files[0].read_bytes()
            cases = {
                "fast, clean": (data, True),
                "fast, one corrupt byte": (data.replace(b'"STATUS":"', b'"STAT\xffUS":"', 1), True),
                "fast, one escaped name": (data.replace(b'"STATUS":"', b'"\\u0053TATUS":"', 1), True),
                "reference, clean": (data, False),
            }
            for label, (bytes_, columns) in cases.items():
                seconds, spans = timed(format_id, gen.options, bytes_, columns, args.runs)
                print(f"{format_id:16} {label:24} {seconds:6.2f} s  {spans:3d} spans  ({len(bytes_) / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
