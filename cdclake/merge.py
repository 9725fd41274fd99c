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

from cdclake.events.change import value_text
from cdclake.schema.coltypes import CastError, cast

#: Metadata columns of a lake row; ``_cdc_bucket`` and ``_cdc_key`` are internal (hidden by ``show``).
META_COLUMNS = ("_cdc_op", "_cdc_seq", "_cdc_ts", "_cdc_batch", "_cdc_bucket", "_cdc_key")


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


_ABSENT = object()


def key_of(image: dict[str, Any] | None, keys: list[str]) -> str | None:
    """Canonical key text of an image (``to_json`` of its key values); None if the image lacks a key column.

    Written value by value with the scalar writers, not the generic writer over a list: routing and the
    reference fold call this twice an event, and a two-column key through ``to_json`` cost 15 us.
    """
    if image is None:
        return None
    if len(keys) == 1:  # the common key
        value = image.get(keys[0], _ABSENT)
        if value is _ABSENT:
            return None
        return f"[{value}]" if type(value) is int else "[" + value_text(value) + "]"
    texts = []
    for name in keys:
        value = image.get(name, _ABSENT)
        if value is _ABSENT:
            return None
        texts.append(value_text(value))
    return "[" + ",".join(texts) + "]"


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
    return keyed_event(op, seq, event_ts, cast_image(before, types), cast_image(after, types), source, keys)


def keyed_event(
    op: str,
    seq: str | None,
    event_ts: dt.datetime | None,
    typed_before: dict[str, Any] | None,
    typed_after: dict[str, Any] | None,
    source: tuple[str, int],
    keys: list[str],
) -> PreparedEvent:
    """:func:`prepare` after the cast: the key (and old key) of typed images; CastError when there is none."""
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
            if moved is not None or base is None or base.get("_cdc_seq") != event.seq:
                # never the new key's former row: that is another row, which this one replaces; unless this
                # same change wrote it (the change delivered twice, e.g. in a replayed batch: a no-op)
                base = moved
        if base is None:  # no current row: start from the before image
            base = dict.fromkeys(columns)
            base.update(event.before or {})
        row = dict(base)
    row.update(event.after or {})
    row.update(_cdc_op=event.op, _cdc_seq=event.seq, _cdc_ts=event.event_ts, _cdc_batch=batch_id)
    state[event.key] = row


@dataclass(slots=True)
class LoggedEvent:
    """A prepared event together with the batch that brought it (from the change log)."""

    event: PreparedEvent
    batch: str


def components(events: list[PreparedEvent]) -> list[list[PreparedEvent]]:
    """Split events into groups of keys linked by key changes (each folds on its own)."""
    parent: dict[str, str] = {}

    def find(k: str) -> str:
        parent.setdefault(k, k)
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for e in events:
        find(e.key)
        if e.old_key is not None:
            a, b = find(e.key), find(e.old_key)
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[str, list[PreparedEvent]] = {}
    for e in events:
        groups.setdefault(find(e.key), []).append(e)
    return list(groups.values())


def position(item: LoggedEvent) -> tuple[str, str, int, str, str]:
    """Where a logged event applies: its order (seq, file, offset), then its batch and op. Copies of one event
    in several batches (a replay) tie on the order: the batch breaks the tie, never the order the log was read
    in (DESIGN.md section 4), so a row's ``_cdc_batch`` is the same on every fold (the fast folds sort alike)."""
    return (*item.event.order, item.batch, item.event.op)


def refold(
    logged: list[LoggedEvent],
    columns: list[str],
    current_batch: str,
    truncate_seq: str | None = None,
) -> tuple[dict[str, dict[str, Any]], MergeStats, set[str]]:
    """State of the keys touched by ``logged`` = every event of them, applied in seq order.

    Order of arrival cannot matter because nothing but the set of events is
    used: retried, replayed and late batches give the same rows. A delete
    leaves no row, and its event stays in the change log, which is what keeps
    an older event from bringing the row back (the tombstone). Events of
    ``current_batch`` that are older than an event of another batch for the
    same key are counted as stale; their values only survive in columns that
    no newer event wrote.

    Returns (rows by key, stats of the current batch's events, every key seen).
    """
    stats = MergeStats()
    state: dict[str, dict[str, Any]] = {}
    keys_seen: set[str] = set()
    unique: dict[tuple[str, str, int], LoggedEvent] = {}
    for item in logged:  # a key change is logged under both keys: count it once
        unique.setdefault((item.batch, *item.event.source, item.event.seq, item.event.op), item)
    by_event = {id(item.event): item for item in unique.values()}
    for group in components([item.event for item in unique.values()]):
        group.sort(key=lambda e: position(by_event[id(e)]))
        group_keys = {e.key for e in group} | {e.old_key for e in group if e.old_key is not None}
        keys_seen |= group_keys
        newest_other: dict[str, tuple] = {}
        for e in group:
            if by_event[id(e)].batch != current_batch:
                for k in (e.key, e.old_key):
                    if k is not None and e.order > newest_other.get(k, ("",)):
                        newest_other[k] = e.order
        local: dict[str, dict[str, Any]] = {}
        for e in group:
            mine = by_event[id(e)].batch == current_batch
            if truncate_seq is not None and e.seq < truncate_seq:
                stats.stale += mine
                continue
            if mine:
                older = any(e.order < newest_other.get(k, ("",)) for k in (e.key, e.old_key) if k)
                if older:
                    stats.stale += 1
                else:
                    stats.applied += 1
            _apply_one(local, e, columns, by_event[id(e)].batch)
        state.update(local)
    return state, stats, keys_seen


def history(
    logged: list[LoggedEvent],
    columns: list[str],
    truncates: list[tuple[str, dt.datetime | None]] = (),
) -> dict[str, list[dict[str, Any]]]:
    """SCD type 2 versions of the keys touched by ``logged``, from all their events.

    Each applied row event closes the key's open version (``valid_to`` = the
    event's time) and, unless it is a delete, opens a new one that records the
    op that opened it. A truncate closes every open version at its time. Like
    :func:`refold`, only the set of events matters, so the law of order
    insensitivity holds for history too.
    """
    unique: dict[tuple, LoggedEvent] = {}
    for item in logged:
        unique.setdefault((item.batch, *item.event.source, item.event.seq, item.event.op), item)
    batch_of = {id(item.event): item.batch for item in unique.values()}
    out: dict[str, list[dict[str, Any]]] = {}
    for group in components([item.event for item in unique.values()]):
        # a truncate at seq T sorts before events at T: (T, "", -1) < (T, file, offset)
        timeline = [(position(LoggedEvent(e, batch_of[id(e)])), "E", e) for e in group]
        timeline += [((seq, "", -1, "", ""), "T", ts) for seq, ts in truncates]
        state: dict[str, dict[str, Any]] = {}
        open_version: dict[str, dict[str, Any]] = {}
        for _order, kind, item in sorted(timeline, key=lambda x: x[0]):
            if kind == "T":
                for version in open_version.values():
                    version["valid_to"], version["is_current"] = item, False
                open_version.clear()
                state.clear()
                continue
            event: PreparedEvent = item
            for k in (event.key, event.old_key):
                if k is not None and k in open_version:
                    version = open_version.pop(k)
                    version["valid_to"], version["is_current"] = event.event_ts, False
            _apply_one(state, event, columns, batch_of[id(event)])
            if event.op != "DELETE" and event.key in state:
                version = {**state[event.key], "valid_from": event.event_ts, "valid_to": None, "is_current": True}
                open_version[event.key] = version
                out.setdefault(event.key, []).append(version)
        for key in {e.key for e in group} | {e.old_key for e in group if e.old_key}:
            out.setdefault(key, [])
    return out
