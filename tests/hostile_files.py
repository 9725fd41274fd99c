"""Hostile landing files for the tests of issue 56: a generated change stream in a format's real encoding with corrupt
copies of some of its inserts right after the originals (invalid UTF-8 in a member name and in a value, a binary
column holding a number where the format types its columns, a record cut short). The copies add nothing the stream
does not hold: the lake must equal the stream's final state, and exactly the copies be quarantined."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from cdclake.bench.generate import generate
from cdclake.bench.model import Stream

FORMATS = ("goldengate-json", "debezium-json", "datahub-blob")
CHANGES = 3_000
#: Every this many inserts, one corrupt copy (about 15 in a file of 3,000 changes).
EVERY = 60
_INSERT = {"goldengate-json": b'"op_type":"I"', "debezium-json": b'"op":"c"', "datahub-blob": b'"op":"INSERT"'}
_STATUS_VALUE = re.compile(rb'"STATUS":"[^"]*"')


def bad_name(line: bytes) -> bytes:
    return line.replace(b'"STATUS":"', b'"STAT\xffUS":"', 1)


def bad_value(line: bytes) -> bytes:
    return line.replace(b'"STATUS":"', b'"STATUS":"\xe2\x82', 1)


def binary_number(line: bytes) -> bytes:
    """``STATUS`` typed binary by the record's own schema, holding a JSON number."""
    line = line.replace(
        b'{"type":"string","optional":true,"field":"STATUS"}', b'{"type":"bytes","optional":true,"field":"STATUS"}'
    )
    line = line.replace(b'{"name":"STATUS","type":"STRING"}', b'{"name":"STATUS","type":"BYTES"}')
    return _STATUS_VALUE.sub(b'"STATUS":1000000000000', line, count=1)


def cut_short(line: bytes) -> bytes:
    return line[: len(line) // 2]


DAMAGE = {
    "goldengate-json": (bad_name, bad_value, cut_short),
    "debezium-json": (bad_name, bad_value, binary_number),
    "datahub-blob": (bad_name, bad_value, binary_number),
}


@dataclass(frozen=True)
class Hostile:
    """A hostile landing file, the offsets of its corrupt records, and how to decode it."""

    path: Path
    corrupt: list[int]
    options: dict[str, str]
    keys: dict[str, list[str]]


def damage(data: bytes, format_id: str) -> tuple[bytes, list[int]]:
    """``data`` with a corrupt copy after every :data:`EVERY`-th insert whose image has a ``STATUS`` text."""
    out, corrupt, inserts = bytearray(), [], 0
    kinds = DAMAGE[format_id]
    for line in data.splitlines(keepends=True):
        out += line
        if _INSERT[format_id] not in line or not _STATUS_VALUE.search(line):
            continue
        inserts += 1
        if inserts % EVERY == 0:
            bad = kinds[(inserts // EVERY) % len(kinds)](line.rstrip(b"\n"))
            assert bad != line.rstrip(b"\n")
            corrupt.append(len(out))
            out += bad + b"\n"
    return bytes(out), corrupt


def write_hostile(work: Path, formats: tuple[str, ...] = FORMATS) -> tuple[dict[str, Hostile], Stream]:
    """One hostile file per format under ``work/landing/<format>/`` and the stream they hold."""
    generated, stream = generate(list(formats), work / "clean", CHANGES, seed=56, file_events=CHANGES)
    files = {}
    for format_id, gen in generated.items():
        [path] = gen.files
        data, corrupt = damage(path.read_bytes(), format_id)
        target = work / "landing" / format_id / path.name
        target.parent.mkdir(parents=True)
        target.write_bytes(data)
        assert len(corrupt) >= 10
        files[format_id] = Hostile(target, corrupt, gen.options, gen.keys)
    return files, stream
