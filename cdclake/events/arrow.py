"""Decoded events and rejected records -> Arrow record batches, built column by column.

Why not ``RecordBatch.from_pylist`` over dicts (what ``events.event_to_row`` gives): the decode
task spent most of its time there, building a dict per event and a list of pairs per image and
having Arrow walk them again. Here each column is one Python list appended to as records arrive,
images go straight into the flat key / value lists of an Arrow map (offsets + null mask), and
Arrow converts each list once. The rows are the same as ``event_to_row`` / ``rejected_to_row``
give (a test holds the two to the same table).

Text that is not valid Unicode (a lone UTF-16 surrogate, which a JSON ``\\ud800`` escape gives)
cannot be stored as an Arrow string. It used to fail the whole task; now only such a batch is
rebuilt record by record: inside JSON text (values, meta, ddl) the surrogate is written as its
``\\uXXXX`` escape, which reads back as the same value, and a record with one in its table,
key or column names is quarantined with the reason.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa

from cdclake.events.change import (
    EVENT_SCHEMA,
    REJECT_SCHEMA,
    SCALAR_TEXT,
    ChangeEvent,
    Rejected,
    Source,
    meta_text,
    to_json,
)

#: Columns of one decode output file: every event column, then the rejected-record ones.
DECODED_FILE_SCHEMA = pa.schema(list(EVENT_SCHEMA) + [f for f in REJECT_SCHEMA if f.name in ("error", "raw")])

_PLAIN = ("table", "op", "seq", "event_ts", "tx_id", "tx_pos", "tx_last", "keys", "ddl", "meta", "error", "raw")


class _Image:
    """One map<string,string> column: flat keys and JSON-text values, offsets, nulls."""

    __slots__ = ("keys", "nulls", "offsets", "values")

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.values: list[str] = []
        self.offsets: list[int] = [0]
        self.nulls: list[bool] = []

    def add(self, image: dict[str, Any] | None) -> None:
        if image is None:
            self.nulls.append(True)
        else:
            self.nulls.append(False)
            get = SCALAR_TEXT.get
            self.keys.extend(image)
            self.values.extend([get(type(v), to_json)(v) for v in image.values()])
        self.offsets.append(len(self.keys))

    def none(self) -> None:
        self.nulls.append(True)
        self.offsets.append(len(self.keys))

    def array(self, type_: pa.DataType) -> pa.Array:
        return pa.MapArray.from_arrays(
            pa.array(self.offsets, pa.int32()),
            pa.array(self.keys, pa.string()),
            pa.array(self.values, pa.string()),
            type=type_,
            mask=pa.array(self.nulls, pa.bool_()),
        )


class DecodedBuilder:
    """Accumulates events and rejected records; :meth:`flush` returns them as one record batch."""

    def __init__(self, max_raw_bytes: int) -> None:
        self.max_raw_bytes = max_raw_bytes
        self._reset()

    def _reset(self) -> None:
        self.cols: dict[str, list[Any]] = {name: [] for name in _PLAIN}
        self.files: list[str] = []
        self.offsets: list[int] = []
        self.before, self.after = _Image(), _Image()
        self.rows = 0
        self.items: list[tuple[ChangeEvent | Rejected, int]] = []

    def add_event(self, event: ChangeEvent, offset_base: int = 0) -> None:
        self.items.append((event, offset_base))
        c = self.cols
        ts = event.event_ts
        if ts is not None and ts.tzinfo is None:
            ts = ts.replace(tzinfo=dt.UTC)
        c["table"].append(event.table)
        c["op"].append(event.op)
        c["seq"].append(event.seq)
        c["event_ts"].append(ts)
        c["tx_id"].append(event.tx_id)
        c["tx_pos"].append(event.tx_pos)
        c["tx_last"].append(event.tx_last)
        c["keys"].append(event.keys)
        c["ddl"].append(None if event.ddl is None else meta_text(event.ddl))
        c["meta"].append(meta_text(event.meta) if event.meta else None)
        c["error"].append(None)
        c["raw"].append(None)
        self.before.add(event.before)
        self.after.add(event.after)
        self.files.append(event.source.file)
        self.offsets.append(event.source.offset + offset_base)
        self.rows += 1

    def add_rejected(self, rejected: Rejected, offset_base: int = 0) -> None:
        self.items.append((rejected, offset_base))
        c = self.cols
        for name in _PLAIN:
            c[name].append(None)
        c["error"][-1] = rejected.error
        c["raw"][-1] = rejected.raw[: self.max_raw_bytes]
        self.before.none()
        self.after.none()
        self.files.append(rejected.source.file)
        self.offsets.append(rejected.source.offset + offset_base)
        self.rows += 1

    def flush(self) -> pa.RecordBatch | None:
        """The records added since the last flush (None if there are none)."""
        if not self.rows:
            return None
        try:
            batch = self._batch()
        except UnicodeEncodeError:
            batch = self._rebuilt_without_surrogates()
        self._reset()
        return batch

    def _batch(self) -> pa.RecordBatch:
        arrays = []
        for field in DECODED_FILE_SCHEMA:
            if field.name == "before":
                arrays.append(self.before.array(field.type))
            elif field.name == "after":
                arrays.append(self.after.array(field.type))
            elif field.name == "source_file":
                arrays.append(pa.array(self.files, field.type))
            elif field.name == "source_offset":
                arrays.append(pa.array(self.offsets, field.type))
            else:
                arrays.append(pa.array(self.cols[field.name], field.type))
        return pa.RecordBatch.from_arrays(arrays, schema=DECODED_FILE_SCHEMA)

    def _rebuilt_without_surrogates(self) -> pa.RecordBatch:
        items = self.items
        self._reset()
        for item, base in items:
            if isinstance(item, Rejected):
                item = Rejected(_escaped(item.error), Source(_escaped(item.source.file), item.source.offset), item.raw)
                self.add_rejected(item, base)
            elif bad := _bad_name(item):
                reason = (
                    f"the record's {bad} is not valid Unicode text (it holds a lone UTF-16 surrogate, e.g. "
                    "from a JSON \\ud800 escape): names cannot be stored or matched; fix the source data"
                )
                self.add_rejected(Rejected(reason, Source(_escaped(item.source.file), item.source.offset)), base)
            else:
                self.add_event(item, base)
        for texts in (self.before.values, self.after.values, self.cols["ddl"], self.cols["meta"]):
            texts[:] = [_escaped(t) for t in texts]
        return self._batch()


def _valid(text: str | None) -> bool:
    if text is None or text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _escaped(text: str | None) -> str | None:
    """JSON text with lone surrogates written as ``\\uXXXX`` escapes (same value when read back)."""
    return text if _valid(text) else text.encode("utf-8", "backslashreplace").decode("utf-8")


def _bad_name(event: ChangeEvent) -> str | None:
    """Which of the event's names is not valid Unicode (None: all are)."""
    for label, text in (("table name", event.table), ("op", event.op), ("seq", event.seq), ("tx id", event.tx_id)):
        if not _valid(text):
            return label
    if not _valid(event.source.file):
        return "file name"
    for name in [*(event.keys or []), *(event.before or {}), *(event.after or {})]:
        if not _valid(name):
            return "key or column name"
    return None
