"""Routing's typing and keying of a batch of events, vectorized over its image maps.

Routing (``routing.route_events``) must know of every row event whether its images cast to the
table's types (else it is quarantined) and what its key and old key are. Done event by event that
was most of a bulk merge: every value of every image parsed from JSON text and cast in Python
(100k GoldenGate JSON events: 11.7 of 21.3 s of compact under a profiler).

Here the values are judged column-wise in Arrow, by patterns that only *accept*: a value whose text
matches its type's pattern is one ``coltypes.cast`` takes (``null``, a JSON number for ``double``, an
integer of at most 18 digits for ``bigint``, ...), and a key value whose text matches is already
its piece of the canonical key text (``merge.key_of``). An event with any value the patterns do not
accept, a column the table lacks, a repeated key column or a key column of another type is left to
the reference (``merge.prepare``, one event at a time), so the outcome, including each error's
wording, is the reference's. ``tests/compaction/test_routing.py`` holds the two to each other.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdclake.coltypes import BOOLEAN, DOUBLE, LONG, STRING

#: A JSON number (what ``events.from_json`` reads as int or Decimal), short enough that ``float`` of it
#: cannot overflow (an int of over 308 digits does; a Decimal never does).
_NUMBER = r"^-?(?:0|[1-9][0-9]{0,299})(?:\.[0-9]+)?(?:[eE][+-]?[0-9]{1,3})?$"
#: A JSON integer within bigint's range (18 digits at most).
_LONG = r"^-?(?:0|[1-9][0-9]{0,17})$"
#: Any JSON string (escapes included): a valid ``string`` value, as a number or a boolean is.
_JSON_STRING = r'^"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"$'
#: A JSON string as ``events.from_json`` returns it without parsing (its inside).
_UNESCAPED_STRING = r'^"[^"\\]*"$'
_BOOL = "^(?:true|false)$"
#: A JSON string without escapes or control characters: its text is its canonical key piece
#: (``json.dumps(..., ensure_ascii=False)``).
_PLAIN_STRING = r'^"[^"\\\x00-\x1f]*"$'
#: A bigint key piece: an integer written as ``int.__repr__`` writes it (no ``-0``).
_LONG_KEY = r"^(?:0|-?[1-9][0-9]{0,17})$"
_DECIMAL = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")


def _matches(values: pa.Array, pattern: str) -> np.ndarray:
    return pc.fill_null(pc.match_substring_regex(values, pattern), False).to_numpy(zero_copy_only=False)


def _decimal_pattern(type_name: str) -> str | None:
    """Plain decimals that fit ``decimal(p,s)`` exactly (``coltypes._to_decimal`` keeps them)."""
    match = _DECIMAL.match(type_name)
    if match is None:
        return None
    precision, scale = int(match[1]), int(match[2])
    whole = precision - scale
    if whole < 1:
        return None
    fraction = f"(?:\\.[0-9]{{1,{scale}}})?" if scale else ""
    return f"^-?(?:0|[1-9][0-9]{{0,{whole - 1}}}){fraction}$"


def _entries(images: pa.Array) -> tuple[pa.Array, pa.Array, np.ndarray]:
    """The (name, text) entries of a map column and the row each belongs to."""
    entry = pa.struct([images.type.key_field, images.type.item_field])
    listed = images.cast(pa.list_(pa.field("entries", entry, nullable=False)))  # no flatten kernel for maps
    flat = pc.list_flatten(listed)
    parents = pc.list_parent_indices(listed).to_numpy(zero_copy_only=False)
    return flat.field(0), flat.field(1), parents


def _accepted(texts: pa.Array, type_name: str) -> np.ndarray:
    """Which texts (all of one column type) are values ``coltypes.cast`` takes for it."""
    if type_name == STRING:  # what from_json returns unparsed first; then any other JSON scalar
        accepted = _matches(texts, _UNESCAPED_STRING)
        rest = np.flatnonzero(~accepted)
        if len(rest):
            others = texts.take(pa.array(rest))
            accepted[rest] = _matches(others, _JSON_STRING) | _matches(others, _NUMBER) | _matches(others, _BOOL)
        return accepted
    if type_name == LONG:
        return _matches(texts, _LONG)
    if type_name == DOUBLE:
        return _matches(texts, _NUMBER)
    if type_name == BOOLEAN:
        return _matches(texts, _BOOL)
    pattern = _decimal_pattern(type_name)
    if pattern is not None:
        return _matches(texts, pattern)
    return np.zeros(len(texts), dtype=bool)  # timestamps, dates, binary: the reference casts them


def _valid_values(names: pa.Array, texts: pa.Array, types: dict[str, str]) -> np.ndarray:
    """Per entry: its column is the table's and its text a value the cast accepts (False: ask the reference)."""
    ok = np.zeros(len(texts), dtype=bool)
    if not len(texts):
        return ok
    column = pc.index_in(names, value_set=pa.array(list(types), pa.string()))
    column = pc.fill_null(column, -1).to_numpy(zero_copy_only=False)
    null = pc.fill_null(pc.equal(texts, "null"), False).to_numpy(zero_copy_only=False)
    by_type: dict[str, list[int]] = {}
    for index, type_name in enumerate(types.values()):
        by_type.setdefault(type_name, []).append(index)
    for type_name, indexes in by_type.items():
        rows = np.flatnonzero(np.isin(column, indexes) & ~null)
        if len(rows):
            ok[rows] = _accepted(texts.take(pa.array(rows)), type_name)
    return ok | (null & (column >= 0))


def _key_texts(
    names: pa.Array, texts: pa.Array, parents: np.ndarray, rows: int, keys: list[str], types: dict[str, str]
) -> tuple[list[str | None], np.ndarray]:
    """Per row, the canonical key text of its image (None: a key column missing) and whether the
    reference must key it (a key value not in canonical form, a key column repeated)."""
    unsure = np.zeros(rows, dtype=bool)
    pieces: list[pa.Array] = []
    for key in keys:
        pattern = {LONG: _LONG_KEY, STRING: _PLAIN_STRING}.get(types.get(key, ""))
        hit = pc.fill_null(pc.equal(names, key), False).to_numpy(zero_copy_only=False)
        owners = parents[hit]
        counts = np.bincount(owners, minlength=rows)
        unsure |= counts > 1
        found = texts.filter(pa.array(hit))
        if pattern is None:
            unsure |= counts > 0
        else:
            unsure[owners[~_matches(found, pattern)]] = True
        piece = np.full(rows, None, dtype=object)
        piece[owners] = found.to_numpy(zero_copy_only=False)
        pieces.append(pa.array(piece, pa.string()))
    joined = pc.binary_join_element_wise(*pieces, ",", null_handling="emit_null")
    keyed = pc.binary_join_element_wise("[", joined, "]", "", null_handling="emit_null")
    return keyed.to_pylist(), unsure


def image_keys(images: pa.Array, keys: list[str], types: dict[str, str]) -> tuple[list[str | None], np.ndarray]:
    """Per row of a map column of images: its key text (None: no image, or no key) and whether the
    reference must judge the row (a value or a key the patterns do not accept)."""
    rows = len(images)
    names, texts, parents = _entries(images)
    unsure = np.zeros(rows, dtype=bool)
    unsure[parents[~_valid_values(names, texts, types)]] = True
    key_texts, key_unsure = _key_texts(names, texts, parents, rows, keys, types)
    return key_texts, unsure | key_unsure
