"""The decode step's events laid out per table, in the change log's own files.

Why: normalize used to read every decoded event and write it again, one folder per table, as the change log
(a 1M-change GoldenGate JSON batch: 2.7 of normalize's 5.4-5.9 CPU-s were those takes and writes). Now each
decode task writes its events per table as the change log lays them out (``table=<escaped>/``, the folder
Spark's ``partitionBy("table")`` names), in two files:

- ``part-<task>.parquet``: the ops the change log keeps (:data:`LOGGED_OPS`), in the change log's columns
  (:data:`CHANGELOG_SCHEMA`: no ``table``, the batch id in ``_batch``);
- ``other-<task>.parquet``: the rest (heartbeats, schema, DDL and transaction events), same columns.

Normalize still reads them all (its survey); when it quarantines nothing it links the ``part-`` files into
``changelog/`` instead of writing them (:func:`publish_changelog`), so an event is written once before the
compact step. Readers of the decoded events get the ``table`` column back from the folder (Spark's partition
discovery does the same). A replay batch keeps the flat layout (``part-<task>.parquet`` with ``table``): its
files are rewritten after decode (lineage) and an injected file joins them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cdclake.events.change import EVENT_SCHEMA, ROW_OPS
from cdclake.lake.parquet_stats import intermediate_options, write_intermediate

#: Column of the change log written per batch (the batch id), after the event columns.
BATCH_COLUMN = "_batch"
#: Ops the change log keeps.
LOGGED_OPS = pa.array([*sorted(ROW_OPS), "TRUNCATE"])
#: The change log's files: the event columns less ``table`` (the folder names it), then the batch id.
CHANGELOG_SCHEMA = pa.schema([f for f in EVENT_SCHEMA if f.name != "table"] + [pa.field(BATCH_COLUMN, pa.string())])
#: The folder of events without a table (Spark's name for a NULL partition value).
NULL_FOLDER_VALUE = "__HIVE_DEFAULT_PARTITION__"
#: Prefix of a task's file of logged events, and of its other events.
LOGGED_PREFIX, OTHER_PREFIX = "part-", "other-"
#: Rows of one table buffered by a decode task before they are written as a row group.
ROW_GROUP_ROWS = 65_536
#: Bytes a decode task buffers over all its tables before it writes them all.
BUFFER_BYTES = 64 * 2**20

# Spark's ExternalCatalogUtils.charToEscape (not on Windows): escaped as %XX in a partition folder's name
_ESCAPED = frozenset([chr(c) for c in range(1, 32)] + list("\"#%'*/:=?\\\x7f{[]^"))


def escape_table(name: str | None) -> str:
    """``table=<this>``: the folder Spark's ``partitionBy("table")`` writes a table's rows into (``escapePathName``;
    NULL and the empty name go to Spark's default partition). ``tests/test_decoded_tables.py`` holds it to Spark's."""
    if not name:
        return NULL_FOLDER_VALUE
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in name)


def unescape_table(value: str) -> str | None:
    """The table a ``table=<value>`` folder holds (Spark's ``unescapePathName``)."""
    if value == NULL_FOLDER_VALUE:
        return None
    out, i = [], 0
    while i < len(value):
        c = value[i]
        if c == "%" and i + 2 < len(value) and _is_hex(value[i + 1 : i + 3]):
            out.append(chr(int(value[i + 1 : i + 3], 16)))
            i += 3
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _is_hex(text: str) -> bool:
    return len(text) == 2 and all(c in "0123456789abcdefABCDEF" for c in text)


def table_of(path: Path) -> str | None:
    """The table of a per-table decoded file (its folder's name)."""
    return unescape_table(path.parent.name.partition("=")[2])


def _visible(path: Path) -> bool:
    return path.suffix == ".parquet" and not path.name.startswith((".", "_"))


def event_files(event_dir: Path) -> list[Path]:
    """The decode step's event files, in task order: flat ``part-<task>.parquet`` files (with ``table``), or
    every table folder's files (temporary files start with a dot)."""
    if not event_dir.is_dir():
        return []
    files = [p for p in event_dir.iterdir() if p.is_file() and _visible(p)]
    for folder in event_dir.iterdir():
        if folder.is_dir() and folder.name.startswith("table="):
            files.extend(p for p in folder.iterdir() if _visible(p))
    return sorted(files, key=lambda p: (p.name.split("-", 1)[-1], p.parent.name, p.name))


def is_per_table(event_dir: Path) -> bool:
    """Whether ``event_dir`` holds table folders (and no flat file): the layout :func:`publish_changelog` links."""
    if not event_dir.is_dir():
        return False
    entries = list(event_dir.iterdir())
    folders = any(p.is_dir() and p.name.startswith("table=") for p in entries)
    return folders and not any(p.is_file() and _visible(p) for p in entries)


def with_table(columns: pa.Table | pa.RecordBatch, path: Path, names: list[str]) -> pa.Table | pa.RecordBatch:
    """``columns`` (read from ``path``) with the ``table`` column its folder names, in ``names``' order."""
    if "table" in columns.schema.names or "table" not in names:
        return columns.select(names)
    table = pa.array([table_of(path)] * columns.num_rows, pa.string())
    arrays = [table if n == "table" else columns.column(n) for n in names]
    schema = pa.schema([pa.field("table", pa.string()) if n == "table" else columns.schema.field(n) for n in names])
    if isinstance(columns, pa.RecordBatch):
        return pa.RecordBatch.from_arrays(arrays, schema=schema)
    return pa.Table.from_arrays(arrays, schema=schema)


def file_columns(path: Path, names: list[str]) -> list[str]:
    """The columns of ``names`` to read from ``path`` (``table`` is the folder's in the per-table layout)."""
    return [n for n in names if n != "table"] if path.parent.name.startswith("table=") else names


def read_file(path: Path, names: list[str]) -> pa.Table:
    """``names`` of the events in ``path``, ``table`` included whichever the layout."""
    return with_table(pq.read_table(path, columns=file_columns(path, names)), path, names)


def iter_file(path: Path, names: list[str], batch_size: int) -> Iterator[pa.RecordBatch]:
    """``names`` of the events in ``path`` batch by batch, ``table`` included whichever the layout."""
    for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_size, columns=file_columns(path, names)):
        yield with_table(batch, path, names)


def publish_changelog(event_dir: Path, changelog: Path) -> int:
    """Link every table folder's logged files into ``changelog/`` (same folders, same names; a copy where a link
    cannot be made): the change log normalize would have written, without writing it. Returns the files linked;
    with none, ``changelog/`` gets one empty file that carries the schema for its readers."""
    if changelog.exists():
        shutil.rmtree(changelog)
    changelog.mkdir(parents=True)
    linked = 0
    for path in event_files(event_dir):
        if path.parent == event_dir or not path.name.startswith(LOGGED_PREFIX):
            continue
        target = changelog / path.parent.name / path.name
        target.parent.mkdir(exist_ok=True)
        try:
            os.link(path, target)
        except OSError:  # another file system, or one without hard links
            shutil.copyfile(path, target)
        linked += 1
    if not linked:
        write_intermediate(CHANGELOG_SCHEMA.empty_table(), changelog / f"{LOGGED_PREFIX}00000-empty.parquet")
    return linked


class TableFilesWriter:
    """One decode task's events written per table (:data:`LOGGED_PREFIX` / :data:`OTHER_PREFIX` files of
    ``folder/table=<escaped>/``), each table's rows buffered into row groups of about :data:`ROW_GROUP_ROWS`
    (a span's rows split over a schema's tables would make row groups of a few hundred rows). Files are
    written under temporary names and renamed by :meth:`close`, so a retried task replaces them whole."""

    def __init__(self, folder: Path, part: str, batch_id: str, survey: Any = None) -> None:
        """``survey``: told each piece's events (``add``, ``EVENT_SCHEMA`` columns) before it is written."""
        self.folder, self.part, self.batch_id, self.survey = folder, part, batch_id, survey
        self._tables: dict[str, str | None] = {}
        self._body = [n for n in CHANGELOG_SCHEMA.names if n != BATCH_COLUMN]
        self._buffers: dict[tuple[str, bool], list[pa.RecordBatch]] = {}
        self._rows: dict[tuple[str, bool], int] = {}
        self._bytes = 0
        self._writers: dict[tuple[str, bool], tuple[pq.ParquetWriter, Path, Path]] = {}

    def write(self, batch: pa.RecordBatch) -> None:
        """Add a batch of decoded events (``table`` and the event columns)."""
        if not batch.num_rows:
            return
        encoded = pc.dictionary_encode(batch.column("table"))
        codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
        logged = pc.fill_null(pc.is_in(batch.column("op"), LOGGED_OPS), False).to_numpy(zero_copy_only=False)
        names = [escape_table(t) for t in encoded.dictionary.to_pylist()]
        group = (codes + 1) * 2 + logged
        body = batch.select(self._body)
        if (group == group[0]).all():
            pieces = [(int(group[0]), body)]
        else:  # one take in group order, then zero-copy slices: not a take of the images per table
            order = np.argsort(group, kind="stable")
            ordered, taken = group[order], body.take(pa.array(order, pa.int64()))
            cuts = np.flatnonzero(np.diff(ordered)) + 1
            starts = np.concatenate([[0], cuts])
            ends = np.concatenate([cuts, [len(ordered)]])
            pieces = [(int(ordered[s]), taken.slice(s, e - s)) for s, e in zip(starts, ends, strict=True)]
        for g, piece in pieces:
            code, is_logged = g // 2 - 1, bool(g % 2)
            key = (NULL_FOLDER_VALUE if code < 0 else names[code], is_logged)
            self._tables.setdefault(key[0], None if code < 0 else encoded.dictionary[code].as_py())
            self._buffers.setdefault(key, []).append(piece)
            self._rows[key] = self._rows.get(key, 0) + piece.num_rows
            self._bytes += piece.nbytes
            if self._rows[key] >= ROW_GROUP_ROWS:
                self._flush(key)
        if self._bytes >= BUFFER_BYTES:
            for key in list(self._buffers):
                self._flush(key)

    def _flush(self, key: tuple[str, bool]) -> None:
        pieces = self._buffers.pop(key, [])
        self._rows.pop(key, None)
        if not pieces:
            return
        self._bytes -= sum(p.nbytes for p in pieces)
        rows = sum(p.num_rows for p in pieces)
        body = pa.Table.from_batches(pieces)
        if self.survey is not None:
            named = pa.array([self._tables[key[0]]] * rows, pa.string())
            self.survey.add(body.add_column(0, pa.field("table", pa.string()), named))
        table = body.append_column(BATCH_COLUMN, pa.array([self.batch_id] * rows, pa.string()))
        if key not in self._writers:
            folder = self.folder / f"table={key[0]}"
            folder.mkdir(parents=True, exist_ok=True)
            final = folder / f"{LOGGED_PREFIX if key[1] else OTHER_PREFIX}{self.part}.parquet"
            temp = folder / f".{final.name}.{os.getpid()}.tmp"
            self._writers[key] = (
                pq.ParquetWriter(str(temp), CHANGELOG_SCHEMA, **intermediate_options(CHANGELOG_SCHEMA)),
                temp,
                final,
            )
        self._writers[key][0].write_table(table.cast(CHANGELOG_SCHEMA), row_group_size=max(rows, 1))

    def close(self) -> None:
        """Write what is buffered and put every file in place."""
        for key in list(self._buffers):
            self._flush(key)
        for writer, temp, final in self._writers.values():
            writer.close()
            os.replace(temp, final)
        self._writers.clear()

    def abort(self) -> None:
        """Drop the files not yet in place (a failed task)."""
        for writer, temp, _ in self._writers.values():
            writer.close()
            temp.unlink(missing_ok=True)
        self._writers.clear()
