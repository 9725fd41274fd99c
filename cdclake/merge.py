"""Applying change events to table state (DESIGN.md section 4, a contract).

This is the merge as a pure function over Python dicts, so the semantics are
written (and tested) once; the Spark compact job only routes each key's events
and current row to the same Python worker and writes what comes back.

State is ``{key: row}`` where ``key`` is the canonical JSON text of the typed
primary-key values and ``row`` holds typed column values plus the ``_cdc_*``
metadata columns. Events arrive as :class:`PreparedEvent` (typed images) and
are applied in ``order`` (seq, then file and offset).
"""

from __future__ import annotations

import datetime as dt
import zlib
from dataclasses import dataclass, field
from typing import Any

from cdclake.coltypes import CastError, cast
from cdclake.events import to_json

META_COLUMNS = ("_cdc_op", "_cdc_seq", "_cdc_ts", "_cdc_batch", "_cdc_bucket")


@dataclass(slots=True)
class PreparedEvent:
    """A row event with images cast to the table's column types."""

    op: str
    seq: str
    order: tuple[str, str, int]
    event_ts: dt.datetime | None
    key: str | None
    old_key: str | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    source: tuple[str, int]


@dataclass
class MergeStats:
    """What happened to the events of one fold (counts add up to the input)."""

    applied: int = 0
    stale: int = 0
    quarantined: int = 0
    rejects: list[dict[str, Any]] = field(default_factory=list)

    def add(self, other: MergeStats) -> None:
        self.applied += other.applied
        self.stale += other.stale
        self.quarantined += other.quarantined
        self.rejects.extend(other.rejects)


def key_of(image: dict[str, Any] | None, keys: list[str]) -> str | None:
    """Canonical key text of an image; None if the image lacks a key column."""
    if image is None or any(k not in image for k in keys):
        return None
    return to_json([image[k] for k in keys])


def bucket_of(key: str, buckets: int) -> int:
    """Stable bucket of a key (crc32 of its canonical text): same in every process."""
    return zlib.crc32(key.encode("utf-8")) % buckets


def cast_image(image: dict[str, Any] | None, types: dict[str, str]) -> dict[str, Any] | None:
    """Cast every present column; unknown columns are an error (normalize adds them)."""
    if image is None:
        return None
    out = {}
    for name, value in image.items():
        if name not in types:
            raise CastError(f"column {name} is not in the table's schema")
        try:
            out[name] = cast(value, types[name])
        except CastError as exc:
            raise CastError(f"column {name}: {exc}") from None
    return out


def prepare(
    op: str,
    seq: str | None,
    event_ts: dt.datetime | None,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    source: tuple[str, int],
    keys: list[str],
    types: dict[str, str],
) -> PreparedEvent:
    """Type the images and find the key (and old key for a key change).

    Raises CastError with a sentence a person can act on.
    """
    typed_before = cast_image(before, types)
    typed_after = cast_image(after, types)
    seq = seq or ""
    old_key = None
    if op == "DELETE":
        key = key_of(typed_before, keys) or key_of(typed_after, keys)
    elif op == "UPDATE":
        new_key, before_key = key_of(typed_after, keys), key_of(typed_before, keys)
        key = new_key or before_key
        if new_key is not None and before_key is not None and new_key != before_key:
            old_key = before_key
    else:
        key = key_of(typed_after, keys)
    if key is None:
        image = typed_after or typed_before or {}
        missing = [k for k in keys if k not in image] or keys
        raise CastError(f"{op} event has no value for key column(s) {', '.join(missing)}")
    return PreparedEvent(
        op, seq, (seq, source[0], source[1]), event_ts, key, old_key, typed_before, typed_after, source
    )


def apply_events(
    state: dict[str, dict[str, Any]],
    events: list[PreparedEvent],
    columns: list[str],
    batch_id: str,
    truncate_seq: str | None = None,
) -> MergeStats:
    """Apply events to ``state`` in order (mutates it) and count what happened.

    ``truncate_seq``: rows last changed before it are gone and older events are
    stale (the TRUNCATE watermark).
    """
    stats = MergeStats()
    if truncate_seq is not None:
        for key in [k for k, row in state.items() if (row.get("_cdc_seq") or "") < truncate_seq]:
            del state[key]
    for event in sorted(events, key=lambda e: e.order):
        if truncate_seq is not None and event.seq < truncate_seq:
            stats.stale += 1
            continue
        involved = [state.get(event.key)]
        if event.old_key is not None:
            involved.append(state.get(event.old_key))
        newest = max(((row.get("_cdc_seq") or "") for row in involved if row is not None), default=None)
        if newest is not None and event.seq < newest:
            stats.stale += 1
            continue
        _apply_one(state, event, columns, batch_id)
        stats.applied += 1
    return stats


def _apply_one(state: dict[str, dict[str, Any]], event: PreparedEvent, columns: list[str], batch_id: str) -> None:
    if event.op == "DELETE":
        state.pop(event.key, None)
        return
    if event.op in ("INSERT", "UPSERT"):
        row = dict.fromkeys(columns)
    else:  # UPDATE: missing columns keep their current value
        base = state.get(event.key)
        if event.old_key is not None:  # key change: the old key goes, its row moves
            moved = state.pop(event.old_key, None)
            base = moved if moved is not None else base
        if base is None:  # no current row: start from the before image
            base = dict.fromkeys(columns)
            base.update(event.before or {})
        row = dict(base)
    row.update(event.after or {})
    row.update(_cdc_op=event.op, _cdc_seq=event.seq, _cdc_ts=event.event_ts, _cdc_batch=batch_id)
    state[event.key] = row
