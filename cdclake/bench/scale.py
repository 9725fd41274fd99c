"""One large landing file: does decoding it keep each Python worker's memory bounded?

The file is a block of generated records (about 64 MB, mixed tables and operations) written
again and again up to the target size: decode cost and memory depend on the bytes, not on
whether records repeat, and writing 2 GB this way takes seconds instead of minutes. Only the
decode job runs (the staged copy is skipped: the manifest names the file where it lies).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from cdclake.bench.bareparse import parse_files
from cdclake.bench.generate import generate
from cdclake.bench.memory import Sampler
from cdclake.formats._avro_binary import OCF_MAGIC
from cdclake.formats._gg_avro import ocf_header
from cdclake.jobs import decode
from cdclake.staging.batch import Manifest, StagedFile, write_json_atomic

BLOCK_EVENTS = 100_000


def write_big_file(
    format_id: str, path: Path, target_bytes: int, work: Path, block_events: int = BLOCK_EVENTS
) -> dict[str, Any]:
    """``path`` of about ``target_bytes``: one generated file repeated. An Avro object container
    file keeps one header and repeats its blocks (same sync marker, so the chain of blocks holds)."""
    gens, _ = generate([format_id], work / "block", block_events, seed=11, file_events=block_events)
    gen = gens[format_id]
    source = max(gen.files, key=lambda p: p.stat().st_size)  # OCF formats write one file per table
    block, head = source.read_bytes(), b""
    if block.startswith(OCF_MAGIC):
        cut = ocf_header(block)[2]
        head, block = block[:cut], block[cut:]
    events = gen.events if len(gen.files) == 1 else parse_files(format_id, [source])[0]
    repeats = max(1, round(target_bytes / len(block)))
    with open(path, "wb") as out:
        out.write(head)
        for _ in range(repeats):
            out.write(block)
    shutil.rmtree(work / "block", ignore_errors=True)
    return {
        "options": gen.options,
        "keys": gen.keys,
        "events": events * repeats,
        "bytes": len(head) + len(block) * repeats,
    }


def run_big_file(spark, format_id: str, target_gb: float, work: Path, sampler: Sampler) -> dict[str, Any]:
    """Write the file, decode it as one batch, and report time, tasks and memory peaks."""
    work.mkdir(parents=True, exist_ok=True)
    path = work / f"big.{format_id}"
    info = write_big_file(format_id, path, int(target_gb * 1024**3), work)
    batch_dir = work / "staging" / f"big-{format_id}"
    manifest = Manifest(
        source="bench-big",
        batch_id=batch_dir.name,
        format=format_id,
        options=info["options"],
        keys=info["keys"],
        files=[StagedFile(name=path.name, path=str(path), size=info["bytes"], sha256="-")],
    )
    write_json_atomic(batch_dir / "manifest.json", manifest.to_json())
    sampler.window()
    started = time.perf_counter()
    report = decode.run(spark, batch_dir)
    seconds = time.perf_counter() - started
    peaks = sampler.window().as_mib()
    shutil.rmtree(batch_dir, ignore_errors=True)
    path.unlink()
    return {
        "format": format_id,
        "bytes": info["bytes"],
        "events": info["events"],
        "decoded_events": report["events"],
        "rejected": report["rejected"],
        "seconds": seconds,
        "tasks": report.get("tasks"),
        "pieces": report.get("pieces"),
        "memory": peaks,
    }
