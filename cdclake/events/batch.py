"""A small batch's decoded events in the driver, as Arrow: what normalize asks of them, without Spark.

Normalize's questions (per table and op: counts, keys, newest event time, transaction marks; per
table and column: the kinds of its values and where it was first seen) are two Spark jobs, one with
a shuffle, and its change-log write a third: about 0.8 s in a warm session and several seconds in a
fresh step JVM, for a batch of a few hundred events. Here they are Arrow compute over the decode
step's Parquet files, with the same answers as the Spark queries they stand for (same rows, same
types as PySpark's ``collect`` gives), so the rest of normalize does not know which one ran
(docs/decisions.md, "Small batches normalize in the driver").
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cdclake import native
from cdclake.events.arrow_tables import ChunkedTake
from cdclake.events.arrow_text import holding
from cdclake.events.change import EVENT_SCHEMA, ROW_OPS
from cdclake.events.decoded import BATCH_COLUMN, LOGGED_OPS, event_files, iter_file, read_file
from cdclake.lake.parquet_stats import write_intermediate
from cdclake.schema.coltypes import DECIMAL_INTEGER


def decoded_files(event_dir: Path) -> list[Path]:
    """The decode step's event files, flat or per table (``decoded_tables.event_files``)."""
    return event_files(event_dir)


def decoded_rows(files: list[Path]) -> int:
    """Events in ``files``, from their Parquet footers (no data read)."""
    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)


def decoded_bytes(files: list[Path]) -> int:
    """Uncompressed bytes of ``files``' row groups, from their Parquet footers (no data read)."""
    total = 0
    for f in files:
        meta = pq.ParquetFile(f).metadata
        total += sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    return total


def read_events(files: list[Path]) -> pa.Table:
    """The events of ``files`` as one table of :data:`EVENT_SCHEMA`, in file order."""
    names = EVENT_SCHEMA.names
    tables = [read_file(f, names).cast(EVENT_SCHEMA) for f in files]
    return pa.concat_tables(tables) if tables else EVENT_SCHEMA.empty_table()


def event_chunks(files: list[Path], max_rows: int, max_bytes: int) -> Iterator[pa.Table]:
    """The events of ``files`` in file order, as tables of about ``max_rows`` rows and ``max_bytes`` bytes
    at most (at least one table, empty if there is no event): a batch too large to hold at once is read
    one chunk at a time, and what normalize asks of each chunk is merged (``merged_*``)."""
    names = EVENT_SCHEMA.names
    step = max(1, min(max_rows, 8192))
    batches: list[pa.RecordBatch] = []
    rows = size = 0
    yielded = False
    for f in files:
        for batch in iter_file(f, names, step):
            batches.append(batch.cast(EVENT_SCHEMA))
            rows, size = rows + batch.num_rows, size + batch.nbytes
            if rows >= max_rows or size >= max_bytes:
                yield pa.Table.from_batches(batches, EVENT_SCHEMA)
                yielded = True
                batches, rows, size = [], 0, 0
    if batches or not yielded:
        yield pa.Table.from_batches(batches, EVENT_SCHEMA)


_END = object()


def read_ahead(items: Iterator[Any]) -> Iterator[Any]:
    """The items of ``items``, each next one read on a thread while the caller works on the one it has: a chunk's
    Parquet read (decompression and decoding run without the GIL) overlaps the survey of the one before, which
    waited on it (a 1M batch's normalize: about 1 s of its 5-7). Holds one item more than the caller does."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="read-ahead") as pool:
        pending = pool.submit(next, items, _END)
        while (item := pending.result()) is not _END:
            pending = pool.submit(next, items, _END)
            yield item


def _nulls_first(values: tuple[Any, ...]) -> tuple[tuple[bool, Any], ...]:
    """A sort key ordering tuples as Spark orders structs ascending: field by field, nulls first."""
    return tuple((v is not None, v) for v in values)


def merged_op_summary(parts: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """:func:`op_summary` of consecutive chunks, merged into the whole batch's (groups in first-seen order)."""
    out: dict[tuple[Any, Any], dict[str, Any]] = {}
    for part in parts:
        for r in part:
            have = out.get((r["table"], r["op"]))
            if have is None:
                out[(r["table"], r["op"])] = dict(r)
                continue
            have["count"] += r["count"]
            have["marks"] += r["marks"]
            if have["keys"] is None:
                have["keys"] = r["keys"]
            if r["newest"] is not None and (have["newest"] is None or r["newest"] > have["newest"]):
                have["newest"] = r["newest"]
    return list(out.values())


def merged_column_kinds(parts: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """:func:`column_kinds` of consecutive chunks, merged into the whole batch's: the earliest sighting,
    the union of kinds, the hint of the earliest event carrying one (an earlier chunk wins a tie, as
    row order does inside one)."""
    out: dict[tuple[Any, Any], dict[str, Any]] = {}
    for part in parts:
        for r in part:
            have = out.get((r["table"], r["col"]))
            if have is None:
                out[(r["table"], r["col"])] = {**r, "kinds": set(r["kinds"])}
                continue
            if _nulls_first(r["first"]) < _nulls_first(have["first"]):
                have["first"] = r["first"]
            have["kinds"] |= set(r["kinds"])
            hint_first = r["hint_first"]
            if hint_first is not None and (
                have["hint_first"] is None or _nulls_first(hint_first) < _nulls_first(have["hint_first"])
            ):
                have["hints"], have["hint_first"] = r["hints"], hint_first
    merged = [{**r, "kinds": sorted(r["kinds"])} for r in out.values()]
    return sorted(merged, key=lambda r: (r["table"] is not None, r["table"] or "", r["col"]))


def _timestamp(value: Any) -> Any:
    """An Arrow timestamp as PySpark's ``collect`` returns a ``TimestampType`` value (naive, local time)."""
    return None if value is None else _from_micros(value.value)


def _from_micros(micros: int | None) -> Any:
    if micros is None:
        return None
    from pyspark.sql.types import TimestampType

    return TimestampType().fromInternal(micros)


def _micros(value: Any) -> int | None:
    """An Arrow timestamp as its microseconds (a decode process keeps them so: no PySpark to import there)."""
    return None if value is None else value.value


def op_summary(events: pa.Table, stamp: Callable[[Any], Any] = _timestamp) -> list[dict[str, Any]]:
    """Per (table, op): ``count``, first non-null ``keys``, ``newest`` event time and transaction ``marks``,
    as ``normalize._grouped`` collects them (``newest`` as PySpark returns timestamps, or as ``stamp`` says)."""
    marks = pc.or_(pc.is_valid(events["tx_last"]), pc.is_in(events["op"], pa.array(["TX_END", "TX_BEGIN"])))
    flagged = events.select(["table", "op", "event_ts"]).append_column("_mark", pc.cast(marks, pa.int64()))
    groups = flagged.group_by(["table", "op"], use_threads=False).aggregate(
        [([], "count_all"), ("event_ts", "max"), ("_mark", "sum")]
    )
    # each group's first row with keys, found in Arrow (a Python loop over every row's keys took 2 s per 500k)
    with_keys = events.select(["table", "op", "keys"]).filter(pc.is_valid(events["keys"]))
    numbered = with_keys.select(["table", "op"]).append_column("_row", pa.array(np.arange(with_keys.num_rows)))
    firsts = numbered.group_by(["table", "op"], use_threads=False).aggregate([("_row", "min")])
    first_rows = with_keys["keys"].take(firsts["_row_min"]).to_pylist()
    groups_with_keys = zip(firsts["table"].to_pylist(), firsts["op"].to_pylist(), strict=True)
    first_keys = dict(zip(groups_with_keys, first_rows, strict=True))
    newest = groups["event_ts_max"]
    out = []
    for index, row in enumerate(groups.select(["table", "op", "count_all", "_mark_sum"]).to_pylist()):
        out.append(
            {
                "table": row["table"],
                "op": row["op"],
                "count": row["count_all"],
                "keys": first_keys.get((row["table"], row["op"])),
                "newest": stamp(newest[index] if newest[index].is_valid else None),
                "marks": row["_mark_sum"] or 0,
            }
        )
    return out


#: The kinds a value text suggests, by code (:func:`_kind_codes`; -1: none, the text ``null``).
KIND_NAMES = ("double", "bigint", DECIMAL_INTEGER, "string", "boolean")
_DOUBLE, _BIGINT, _DECIMAL, _STRING, _BOOLEAN = range(5)


def _kind(values: pa.Array) -> pa.Array:
    """The kind a JSON text value suggests, as normalize's SQL ``CASE`` says (``_KIND_SQL``): NULL for
    ``null``; a SQL NULL value falls through every test to ``double``, as in SQL."""
    codes = _kind_codes(values)
    return pa.array(np.asarray(KIND_NAMES, object)[np.maximum(codes, 0)], pa.string(), mask=codes < 0)


def _kind_column(values: pa.Array) -> pa.Array:
    """:func:`_kind_codes` as an Arrow column, null for ``null`` (what the survey's ``distinct`` leaves out)."""
    codes = _kind_codes(values)
    return pa.array(codes, pa.int8(), mask=codes < 0)


def _kind_codes(values: pa.Array) -> np.ndarray:
    """:func:`_kind` as codes into :data:`KIND_NAMES` (-1 for ``null``), worked out on small integers: the
    kinds of 11M values as Arrow strings (an ``if_else`` of strings per rule) took 1.8 s of a 1M batch's survey.

    Each text's kind is :func:`cdclake.native.kind_codes`' (one C scan of the texts' bytes: about a tenth of the
    Arrow kernels' time, which was a fifth of normalize's at 1M events); the integers of more than 18 digits
    are worked out here, and a SQL NULL is ``double``.
    """
    if not len(values):
        return np.zeros(0, np.int8)
    if values.type not in (pa.string(), pa.large_string()):
        values = values.cast(pa.large_string())
    codes = native.kind_codes(values)  # a null value: 0, ``double``
    long_ = np.flatnonzero(codes == native.KIND_LONG_INTEGER)
    if len(long_):
        named = _long_integer_kind(values.take(pa.array(long_))).to_numpy(zero_copy_only=False)
        codes[long_] = np.select([named == "bigint", named == DECIMAL_INTEGER], [_BIGINT, _DECIMAL], _STRING)
    return codes


def _long_integer_kind(values: pa.Array) -> pa.Array:
    """The kind of each integer text of any length: ``bigint`` within its range, ``decimal(38,0)`` up to 38
    digits, else ``string`` (the SQL ``CASE``'s ``try_cast`` tests); leading zeros do not count."""
    digits = pc.replace_substring_regex(values, "^-?0*", "")
    count = pc.utf8_length(digits)
    negative = pc.starts_with(values, "-")
    edge = pc.if_else(negative, pa.scalar(str(2**63)), pa.scalar(str(2**63 - 1)))
    in_range = pc.or_(pc.less(count, 19), pc.and_(pc.equal(count, 19), pc.less_equal(digits, edge)))
    kind = pc.if_else(pc.less_equal(count, 38), DECIMAL_INTEGER, "string")
    return pc.if_else(pc.fill_null(in_range, False), "bigint", kind)


def _hints_text(text: str) -> str | None:
    """A ``meta`` text's ``column_types`` object as compact JSON text, or None (orjson first: the meta
    of every Debezium event carries one, and the standard library took 1.8 s for 100k of them)."""
    try:
        found = orjson.loads(text)
    except orjson.JSONDecodeError:
        try:
            found = json.loads(text)  # what orjson refuses (NaN, integers past 64 bits) the SQL path reads
        except ValueError:
            return None
    found = found.get("column_types") if isinstance(found, dict) else None
    if not isinstance(found, dict):
        return None
    try:
        return orjson.dumps(found).decode()
    except TypeError:
        return json.dumps(found, separators=(",", ":"))


def _column_hints(meta: pa.Array) -> pa.Array:
    """Per event, its ``meta`` ``column_types`` object as JSON text (NULL when it has none)."""
    seen: dict[str, str | None] = {}
    out = []
    for text in meta.to_pylist():
        hints = None
        if text and "column_types" in text:
            hints = seen.get(text, ...)
            if hints is ...:
                hints = seen[text] = _hints_text(text)
        out.append(hints)
    return pa.array(out, pa.string())


def _ranks(rows: pa.Table, columns: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows ranked by ``columns`` ascending, nulls first: per row its dense rank (equal values, equal rank)
    and its place among the rows of that rank (in row order); the sort order, and where each rank starts in it."""
    order = pc.sort_indices(rows, sort_keys=[(c, "ascending", "at_start") for c in columns]).to_numpy()
    ranked = rows.select(columns).take(order)
    new_value = np.zeros(rows.num_rows, dtype=bool)
    new_value[0] = True
    for name in columns:
        column = ranked[name].combine_chunks()
        head, tail = column.slice(0, len(column) - 1), column.slice(1)
        differs = pc.fill_null(pc.not_equal(head, tail), False)  # both null: equal
        differs = pc.or_(differs, pc.xor(head.is_null(), tail.is_null()))
        new_value[1:] |= differs.to_numpy(zero_copy_only=False)
    sorted_rank = np.cumsum(new_value) - 1
    starts = np.flatnonzero(new_value)
    rank = np.empty(rows.num_rows, dtype=np.int64)
    place = np.empty(rows.num_rows, dtype=np.int64)
    rank[order] = sorted_rank
    place[order] = np.arange(rows.num_rows) - starts[sorted_rank]  # the sort is stable: row order within a rank
    return rank, place, order, starts


_ROW_OPS = pa.array(sorted(ROW_OPS))


#: Rows :func:`_only` drops by slicing around them (more: one filter).
_SLICED_DROPS = 64


def _only(events: pa.Table, ops: pa.Array) -> pa.Table:
    """The events of ``ops``, without copying their images where few others are dropped: ``events`` itself, or
    slices of it around the others (a GoldenGate chunk's two SCHEMA events made a filter copy all of it)."""
    kept = np.asarray(pc.is_in(events["op"], ops).to_numpy(zero_copy_only=False), bool)
    dropped = np.flatnonzero(~kept)
    if not len(dropped):
        return events
    if len(dropped) > _SLICED_DROPS:
        return events.filter(pa.array(kept))
    starts = np.concatenate(([0], dropped + 1))
    ends = np.concatenate((dropped, [events.num_rows]))
    pieces = [events.slice(int(a), int(b - a)) for a, b in zip(starts, ends, strict=True) if b > a]
    return pa.concat_tables(pieces) if pieces else events.slice(0, 0)


def column_kinds(events: pa.Table) -> list[dict[str, Any]]:
    """Per (table, column) of the row events' images: ``first`` (seq, source file, source offset, image,
    position: where it was first seen), ``kinds`` (the distinct kinds of its values) and ``hints`` (a
    ``column_types`` object of the events carrying it), as normalize's kinds query collects them.

    One entry per image value, but only integers per entry (the row's rank by (seq, source file, source
    offset), the image, the position) and the map's own key and value arrays: repeating each row's
    strings per entry and sorting them all took 3.6 s and 650 MB for 100k events of 20 columns.
    """
    rows = _only(events, _ROW_OPS)
    if not rows.num_rows:
        return []
    # a column's hint comes from the first event holding one, so only the chosen events' metas are parsed:
    # every meta that mentions column_types is a candidate, and should a chosen one hold no such object after
    # all, every meta is parsed and the choice made again (the meta of each Debezium event is its own text:
    # parsing them all took a third of normalize's time)
    found: list[dict[str, Any]] | object | None = _UNSURE
    first = rows["meta"][0].as_py()  # the metas joined only for a scan: a chunk's are about 130 MB of Debezium's
    if first is not None and _HINTS_MEMBER in first:
        # every event a candidate, and the chosen ones checked: where the first meta carries column_types (every
        # Debezium, CDL or DataHub event's does), the first event of each column carries them too, and the metas
        # need no scan (1.3-1.6 s over the 907 MB of a 1M Debezium batch's, beside the change log's writes)
        found = _column_kinds(rows, None)
    if found is _UNSURE:
        mentions = pc.fill_null(_mentions(rows["meta"].combine_chunks(), _HINTS_MEMBER.encode()), False)
        found = _column_kinds(rows, mentions)
    return found if found is not None else _column_kinds(rows, _column_hints(rows["meta"]).is_valid())  # type: ignore[return-value]


#: The ``meta`` member holding a format's column types (the hints).
_HINTS_MEMBER = "column_types"
#: :func:`_column_kinds` without a hint mask: a chosen event's meta does not mention :data:`_HINTS_MEMBER`.
_UNSURE = object()


def _mentions(metas: pa.Array, needle: bytes) -> pa.Array:
    """Which metas hold ``needle`` (null for a null meta, as ``match_substring`` answers)."""
    if not metas.null_count:
        return holding(metas, needle)
    return pc.if_else(metas.is_valid(), holding(pc.fill_null(metas, ""), needle), pa.scalar(None, pa.bool_()))


def _column_kinds(rows: pa.Table, has_hints: pa.BooleanArray | None) -> list[dict[str, Any]] | object | None:
    """:func:`column_kinds` of the row events ``rows``, a hint taken from the first event of ``has_hints``
    that has the column; None when a chosen event's meta holds no ``column_types`` object. ``has_hints`` None:
    every event a candidate, :data:`_UNSURE` when a chosen one's meta does not mention them (the first event
    that does may come later)."""
    tables = rows["table"].combine_chunks().dictionary_encode()
    rank, place, by_sort, rank_starts = _ranks(rows, ["seq", "source_file", "source_offset"])
    images = []
    for index, image in enumerate(("before", "after")):
        # offsets from 0 and children holding exactly the rows' entries, copied when they are not (a sliced
        # map's children are its parent's, and Arrow's list kernels do not take map arrays)
        maps = rows[image].combine_chunks()
        offsets = maps.offsets.to_numpy()
        if offsets[0] != 0 or len(maps.keys) != offsets[-1]:
            maps = maps.take(pa.array(range(rows.num_rows), pa.int64()))
            offsets = maps.offsets.to_numpy()
        sizes = np.diff(offsets)
        if sizes.sum():
            images.append((index, maps, offsets, sizes))
    if not images:
        return []
    # (rank, image, position) as one integer; for the hints, then the row's place in its rank (ties in row order)
    width = int(max(sizes.max() for _, _, _, sizes in images)) + 1
    ties = int(place.max()) + 1
    no_hint = None if has_hints is None else ~has_hints.to_numpy(zero_copy_only=False)
    parts = []
    for index, maps, offsets, sizes in images:
        parent = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
        position = np.arange(offsets[-1], dtype=np.int64) - np.repeat(offsets[:-1], sizes)
        order = rank[parent] * (2 * width) + index * width + position
        parts.append(
            pa.table(
                {
                    "table": pc.take(tables.indices, pa.array(parent)),
                    "col": maps.keys,
                    "order": pa.array(order),
                    "hint_order": pa.array(
                        order * ties + place[parent], mask=None if no_hint is None else no_hint[parent]
                    ),
                    "kind": _kind_column(maps.items),
                }
            )
        )
    flat = pa.concat_tables(parts)
    grouped = flat.group_by(["table", "col"], use_threads=False).aggregate(
        [("order", "min"), ("hint_order", "min"), ("kind", "distinct", pc.CountOptions(mode="only_valid"))]
    )
    names = tables.dictionary.to_pylist()
    seqs, files, offsets_ = (rows[c].to_pylist() for c in ("seq", "source_file", "source_offset"))
    metas = rows["meta"]
    hint_texts: dict[int, str | None] = {}

    def row_of(rank_: int, place_: int = 0) -> int:
        return int(by_sort[rank_starts[rank_] + place_])

    def where(row: int, order: int) -> tuple[Any, ...]:
        return (seqs[row], files[row], offsets_[row], (order // width) % 2, order % width)

    out = []
    columns = ("table", "col", "order_min", "hint_order_min", "kind_distinct")
    for t, col, order, hint_order, codes in zip(*(grouped[n].to_pylist() for n in columns), strict=True):
        kinds = [KIND_NAMES[code] for code in codes]
        row = row_of(order // (2 * width))  # rows of one rank share the three values
        hint = hint_first = None
        if hint_order is not None:
            hint_row = row_of(hint_order // ties // (2 * width), hint_order % ties)
            if hint_row not in hint_texts:
                text = metas[hint_row].as_py()
                if has_hints is None and (text is None or _HINTS_MEMBER not in text):
                    return _UNSURE
                hint_texts[hint_row] = _hints_text(text)
            hint, hint_first = hint_texts[hint_row], where(hint_row, hint_order // ties)
            if hint is None:
                return None
        out.append(
            {
                "table": None if t is None else names[t],
                "col": col,
                "first": where(row, order),
                "kinds": kinds,
                "hints": hint,
                "hint_first": hint_first,  # where the hint's event has the column (to merge chunks)
            }
        )
    return sorted(out, key=lambda r: (r["table"] is not None, r["table"] or "", r["col"]))


def schema_events(
    events: pa.Table, columns: list[str], stamp: Callable[[Any], Any] = _timestamp
) -> list[dict[str, Any]]:
    """The SCHEMA and DDL events' ``columns``, in file order, as PySpark's ``collect`` gives them (event times
    as ``stamp`` says)."""
    found = events.select(columns).filter(pc.is_in(events["op"], pa.array(["SCHEMA", "DDL"])))  # not the images
    rows = found.to_pylist()
    if "event_ts" in columns:
        for row, value in zip(rows, found["event_ts"], strict=True):
            row["event_ts"] = stamp(value if value.is_valid else None)
    return rows


#: Change log files written at once (one per table of a chunk).
WRITE_THREADS = 4


class ChangelogWriter:
    """The change log as Spark's ``partitionBy("table")`` write lays it out: ``table=<escaped>/`` folders of
    Parquet files (one per chunk of events with rows of the table) without the ``table`` column, plus
    ``_batch``; an empty file with the schema at the top when there is no row. ``escape``: Spark's partition
    path escaping.

    Parquet's encoding and compression run in C++ without the GIL: :meth:`add` starts a chunk's tables
    writing side by side and returns, so the caller's own work on the chunk (normalize's survey) runs while
    they are written; :meth:`wait` ends them (before the next chunk is surveyed, so no chunk waits on writes).
    """

    def __init__(self, folder: Path, batch_id: str, escape: Callable[[str], str]) -> None:
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        self.folder, self.batch_id, self.escape = folder, batch_id, escape
        self._pool = ThreadPoolExecutor(max_workers=WRITE_THREADS, thread_name_prefix="changelog")
        self._writes: list[Any] = []
        self._chunks = 0
        self._empty: tuple[pa.Table, str] | None = None
        self._written = False

    def __enter__(self) -> ChangelogWriter:
        return self

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        if kind is None:
            self.close()
        else:  # the writes already started end (or fail) before the error goes on
            self._pool.shutdown(wait=True, cancel_futures=True)

    def add(self, events: pa.Table) -> None:
        """Start writing ``events`` (the previous chunk's writes end first)."""
        self.wait()
        stamped = events.append_column(BATCH_COLUMN, pa.array([self.batch_id] * events.num_rows, pa.string()))
        name = f"part-{self._chunks:05d}-{uuid.uuid4()}.c000.lz4raw.parquet"
        self._chunks += 1
        if not stamped.num_rows:
            self._empty = self._empty or (stamped, name)
            return
        body = stamped.drop_columns(["table"])
        split = list(_table_rows(stamped["table"]))
        chunked = ChunkedTake(body)  # the tables' rows taken without joining the chunks first (``arrow_tables``)
        for table, rows in split:
            part = self.folder / f"table={self.escape(table)}"
            part.mkdir(exist_ok=True)
            # the take in the writer's thread too: Arrow's take runs without the GIL, so the tables' takes run
            # beside each other and beside the caller's survey of the chunk (in the caller they ran one by one
            # before it, a quarter of a 1M batch's normalize)
            self._writes.append(self._pool.submit(_take_and_write, body, chunked, rows, part / name))
        self._written = True

    def wait(self) -> None:
        """End the writes started (raising the first one's error)."""
        writes, self._writes = self._writes, []
        for write in writes:
            write.result()

    def close(self) -> None:
        self.wait()
        self._pool.shutdown(wait=True)
        if not self._written and self._empty is not None:
            write_intermediate(self._empty[0], self.folder / self._empty[1])


def _table_rows(tables: pa.ChunkedArray) -> Iterator[tuple[Any, np.ndarray | None]]:
    """Each table named in ``tables`` with the positions of its rows (None: every row), taken by position: a
    filter per table scanned the whole chunk's images once per table."""
    encoded = tables.combine_chunks().dictionary_encode()
    codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False)
    names = encoded.dictionary.to_pylist() + ([None] if encoded.null_count else [])
    for code, table in enumerate(names):
        rows = np.flatnonzero(codes == (-1 if table is None else code))
        yield table, None if len(rows) == len(codes) else rows


def _take_and_write(body: pa.Table, chunked: ChunkedTake, rows: np.ndarray | None, path: Path) -> None:
    write_intermediate(body if rows is None else chunked.take(rows), path)


#: Event columns of the SCHEMA and DDL events normalize reads (``schema_events``).
SCHEMA_EVENT_COLUMNS = ["table", "op", "seq", "event_ts", "keys", "ddl", "meta", "source_file", "source_offset"]


class DriverEvents:
    """A batch's decoded events for normalize in the driver: held whole when they fit one chunk
    (``max_rows`` / ``max_bytes``, the footers say), else read again chunk by chunk for each of its two
    passes, so the driver holds at most two chunks: the one surveyed and the next, read ahead (docs/decisions.md,
    "A large batch normalizes in the driver, chunk by chunk")."""

    def __init__(self, files: list[Path], rows: int, max_rows: int, max_bytes: int) -> None:
        """``rows``: the events of ``files`` (:func:`decoded_rows`, which the caller has already read)."""
        self.files, self.max_rows, self.max_bytes = files, max(1, max_rows), max(1, max_bytes)
        fits = rows <= self.max_rows and decoded_bytes(files) <= self.max_bytes
        self.whole: pa.Table | None = read_events(files) if fits else None

    def chunks(self) -> Iterator[pa.Table]:
        """The batch's events: whole, or chunk by chunk, the next chunk read while the caller works on this one
        (:func:`read_ahead`: the driver holds two chunks)."""
        if self.whole is not None:
            yield self.whole
        else:
            yield from read_ahead(event_chunks(self.files, self.max_rows, self.max_bytes))

    def survey(
        self, log: ChangelogWriter | None = None
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
        """One pass: :func:`op_summary`, :func:`column_kinds` and :func:`schema_events` of the batch; with
        ``log``, the change log (the events of :data:`LOGGED_OPS`) written in the same pass, while each chunk is
        surveyed (its caller discards it if the survey finds the log must be written otherwise)."""
        summaries, kinds, schema_rows = [], [], []
        for chunk in self.chunks():
            if log is not None:
                log.add(_only(chunk, LOGGED_OPS))
            summaries.append(op_summary(chunk))
            kinds.append(column_kinds(chunk))
            schema_rows.extend(schema_events(chunk, SCHEMA_EVENT_COLUMNS))
            if log is not None:
                log.wait()  # before the next chunk is surveyed: the driver holds this chunk and the next
        if len(summaries) == 1:
            return summaries[0], kinds[0], schema_rows
        return merged_op_summary(summaries), merged_column_kinds(kinds), schema_rows


#: Where each decode task leaves the survey of its events (``_``: no reader of the events lists it).
SURVEY_FOLDER = "_survey"


class TaskSurvey:
    """A decode task's survey of its events, piece by piece as they are written (:func:`op_summary`,
    :func:`column_kinds`, :func:`schema_events`, event times in microseconds), saved beside them as JSON so
    normalize merges the tasks' surveys instead of reading every event again (docs/decisions.md, "Decode
    writes the change log's files and surveys them")."""

    def __init__(self) -> None:
        self.summaries: list[list[dict[str, Any]]] = []
        self.kinds: list[list[dict[str, Any]]] = []
        self.schema_rows: list[dict[str, Any]] = []

    def add(self, events: pa.Table) -> None:
        """Survey a piece of the task's events (``EVENT_SCHEMA`` columns), in the order they are written."""
        self.summaries.append(op_summary(events, stamp=_micros))
        self.kinds.append(column_kinds(events))
        self.schema_rows.extend(schema_events(events, SCHEMA_EVENT_COLUMNS, stamp=_micros))

    def save(self, decoded: Path, part: str) -> None:
        """Write the survey as ``decoded/_survey/part-<part>.json`` (whole or not at all)."""
        folder = decoded / SURVEY_FOLDER
        folder.mkdir(parents=True, exist_ok=True)
        body = {"summaries": self.summaries, "kinds": self.kinds, "schema_rows": self.schema_rows}
        temp = folder / f".part-{part}.{os.getpid()}.tmp"
        temp.write_bytes(orjson.dumps(body))
        os.replace(temp, folder / f"part-{part}.json")


def merged_surveys(
    decoded: Path, parts: set[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]] | None:
    """The batch's survey, merged from its decode tasks' (in task order), as :meth:`DriverEvents.survey` gives
    it; None when a task that wrote events left none (normalize then reads the events). ``parts``: the tasks
    that wrote events (the names their files end in)."""
    folder = decoded / SURVEY_FOLDER
    files = {p.name[len("part-") : -len(".json")]: p for p in folder.glob("part-*.json")} if folder.is_dir() else {}
    if not parts <= set(files):
        return None
    summaries, kinds, schema_rows = [], [], []
    for part in sorted(files):
        body = orjson.loads(files[part].read_bytes())
        summaries.extend(body["summaries"])
        kinds.extend(body["kinds"])
        schema_rows.extend(body["schema_rows"])
    for summary in summaries:
        for r in summary:
            r["newest"] = _from_micros(r["newest"])
    for part_kinds in kinds:
        for r in part_kinds:
            r["first"] = tuple(r["first"])
            r["hint_first"] = None if r["hint_first"] is None else tuple(r["hint_first"])
    for r in schema_rows:
        r["event_ts"] = _from_micros(r["event_ts"])
    return merged_op_summary(summaries), merged_column_kinds(kinds), schema_rows
