"""Typing and keying JSON value texts column-wise in Arrow: routing's check of a batch's events, and the
cast of the values a fold chose.

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

:func:`typed_values` casts texts to a column's Arrow type the same way: Arrow's own casts for the texts
the patterns accept, ``coltypes.cast`` for the rest (``tests/compaction/test_arrow_typing.py``), and
:func:`typed_images` builds the typed image dicts the reference fold takes from them.

The two ask different questions, so their patterns differ for one type. Routing asks whether a value is
*valid* (:func:`_accepted`): a ``string`` column takes any JSON scalar, escaped strings, numbers and
booleans included. Typing asks whether Arrow's cast *gives the reference's value* (:func:`_fast_pattern`):
for ``string`` only a text without escapes, since Arrow cannot unescape JSON; the others go to the
reference cast. For every other type the two agree or typing's pattern is the narrower.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdclake import native
from cdclake.events.change import from_json
from cdclake.schema.coltypes import BOOLEAN, DATE, DOUBLE, LONG, STRING, TIMESTAMP, CastError, arrow_type, cast

#: A JSON number (what ``events.from_json`` reads as int or Decimal), short enough that ``float`` of it
#: cannot overflow (an int of over 308 digits does; a Decimal never does).
_NUMBER = r"^-?(?:0|[1-9][0-9]{0,299})(?:\.[0-9]+)?(?:[eE][+-]?[0-9]{1,3})?$"
#: A JSON integer within bigint's range (18 digits at most).
_LONG = r"^-?(?:0|[1-9][0-9]{0,17})$"
#: Any JSON string (escapes included): a valid ``string`` value, as a number or a boolean is.
#: (A ``\\u`` escape of a UTF-16 surrogate is left to the reference: alone it is no text, ``coltypes`` refuses it.)
_JSON_STRING = r'^"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u(?:[0-9a-cefA-CEF][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}))*"$'
#: A JSON string as ``events.from_json`` returns it without parsing (its inside).
_UNESCAPED_STRING = r'^"[^"\\]*"$'
_BOOL = "^(?:true|false)$"
_BOOLS = pa.array(["true", "false"])
#: A JSON string without escapes or control characters: its text is its canonical key piece
#: (``json.dumps(..., ensure_ascii=False)``).
_PLAIN_STRING = r'^"[^"\\\x00-\x1f]*"$'
#: A bigint key piece: an integer written as ``int.__repr__`` writes it (no ``-0``).
_LONG_KEY = r"^(?:0|-?[1-9][0-9]{0,17})$"
#: A JSON number Arrow parses to the double ``float(from_json(text))`` is: bounded digits and exponent
#: (no overflow), and never the integer ``-0`` (an int, so +0.0 in Python; -0.0 in Arrow).
_DOUBLE = (
    r"^(?:0|-?[1-9][0-9]{0,20})(?:\.[0-9]{1,20})?(?:[eE][+-]?[0-9]{1,2})?$"
    r"|^-0(?:\.[0-9]{1,20}(?:[eE][+-]?[0-9]{1,2})?|[eE][+-]?[0-9]{1,2})$"
)
#: ISO dates and timestamps ``coltypes.cast`` reads (``fromisoformat``), years 1900-2999 so that no UTC
#: offset takes one out of range (``native.iso_forms``' patterns); the calendar is checked apart
#: (:func:`_calendar_dates`).
_ISO_DATE = native.ISO_DATE
_ISO_TIMESTAMP = native.ISO_TIMESTAMP
_DECIMAL = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")


#: The patterns a helper of :mod:`cdclake.native` reads exactly alike (the decimal patterns are added as
#: :func:`_decimal_pattern` makes them): ``number_forms``' (int_max, frac_max, exp_max, neg_zero) or
#: ``quoted_forms``' (controls,).
_FORMS: dict[str, tuple[int, ...]] = {
    _LONG: (18, 0, 0, 1),
    _LONG_KEY: (18, 0, 0, 0),
    _NUMBER: (300, -1, 3, 1),
    _DOUBLE: (21, 20, 2, 0),
    _UNESCAPED_STRING: (1,),
    _PLAIN_STRING: (0,),
}


#: The calendar patterns ``_text_forms.iso_forms`` scans (its ``with_time`` argument).
_ISO_FORMS = {_ISO_DATE: 0, _ISO_TIMESTAMP: 1}


def _matches(values: pa.Array, pattern: str) -> np.ndarray:
    """Which of ``values`` match ``pattern`` (NULL: no); by a helper of :mod:`cdclake.native` where one reads the
    pattern (a scanner in C where built, else the regular expression it stands for)."""
    if pattern in _ISO_FORMS:
        return native.iso_forms(values, _ISO_FORMS[pattern])
    form = _FORMS.get(pattern)
    if form is None:
        if pattern == _BOOL:
            return pc.is_in(values, value_set=_BOOLS).to_numpy(zero_copy_only=False)
        return pc.fill_null(pc.match_substring_regex(values, pattern), False).to_numpy(zero_copy_only=False)
    return native.number_forms(values, *form) if len(form) == 4 else native.quoted_forms(values, *form)


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
    pattern = f"^-?(?:0|[1-9][0-9]{{0,{whole - 1}}}){fraction}$"
    _FORMS.setdefault(pattern, (whole, scale, 0, 1))
    return pattern


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
    if type_name in (TIMESTAMP, DATE):
        return _calendar_dates(texts, _ISO_TIMESTAMP if type_name == TIMESTAMP else _ISO_DATE)
    return np.zeros(len(texts), dtype=bool)  # binary: the reference casts it


def _calendar_dates(texts: pa.Array, pattern: str) -> np.ndarray:
    """Texts of the ISO form ``pattern`` whose date is one of the calendar's (Arrow's date parser checks
    month lengths and leap years; the form fixes the rest). A batch with an impossible date: none."""
    formed = _matches(texts, pattern)
    rows = np.flatnonzero(formed)
    if len(rows):
        days = pc.utf8_slice_codeunits(texts.take(pa.array(rows)), 1, 11)
        try:
            pc.cast(days, pa.date32())
        except pa.ArrowInvalid:
            formed[:] = False  # the reference judges each one
    return formed


def _reference_accepts(texts: list[str | None], type_name: str) -> np.ndarray:
    """Per text: ``coltypes.cast(from_json(text))`` succeeds (the reference's own judgement)."""
    ok = np.zeros(len(texts), dtype=bool)
    for i, text in enumerate(texts):
        try:
            cast(from_json(text), type_name)
        except Exception:  # any failure: the event goes to the reference, which words or raises it
            continue
        ok[i] = True
    return ok


def _column_indexes(names: pa.Array, types: dict[str, str]) -> np.ndarray:
    """Per entry: the index of its column in ``types`` (-1: a column the table lacks)."""
    column = pc.index_in(names, value_set=pa.array(list(types), pa.string()))
    return pc.fill_null(column, -1).to_numpy(zero_copy_only=False)


def _rows_by_type(
    column: np.ndarray, types: dict[str, str], among: np.ndarray | None = None
) -> Iterator[tuple[str, np.ndarray]]:
    """The entries of each column type, as positions (``among``: only the entries it marks); a type
    with none is skipped. Each entry's type is looked up once (``isin`` per type over every entry was a
    tenth of routing's judgement of a bulk batch), among the marked entries only."""
    names = list(dict.fromkeys(types.values()))
    type_of = np.array([names.index(t) for t in types.values()] + [-1], np.int64)  # column -1: no type
    rows = np.arange(len(column)) if among is None else np.flatnonzero(among)
    codes = type_of[column[rows]]
    for code, type_name in enumerate(names):
        chosen = rows[codes == code]
        if len(chosen):
            yield type_name, chosen


#: ``_text_forms.judge``'s judgement of a column type: none (the reference), a number form, a string, a boolean,
#: asked of :func:`_accepted` (the calendar types).
_JUDGE_NONE, _JUDGE_NUMBER, _JUDGE_STRING, _JUDGE_BOOL, _JUDGE_ASK = range(5)


def _judgements(types: dict[str, str]) -> tuple[np.ndarray, np.ndarray]:
    """Each column's ``judge`` kind and its four number-form parameters, as :func:`_accepted` judges its type."""
    kinds = np.zeros(len(types), np.int8)
    params = np.zeros((len(types), 4), np.int32)
    for index, type_name in enumerate(types.values()):
        pattern = {LONG: _LONG, DOUBLE: _NUMBER}.get(type_name) or _decimal_pattern(type_name)
        if type_name == STRING:
            kinds[index] = _JUDGE_STRING
        elif type_name == BOOLEAN:
            kinds[index] = _JUDGE_BOOL
        elif pattern is not None:
            kinds[index], params[index] = _JUDGE_NUMBER, _FORMS[pattern]
        elif type_name in (TIMESTAMP, DATE):
            kinds[index] = _JUDGE_ASK
    return kinds, params


def _valid_values(names: pa.Array, texts: pa.Array, types: dict[str, str]) -> np.ndarray:
    """Per entry: its column is the table's and its text a value the cast accepts (False: ask the reference)."""
    ok = np.zeros(len(texts), dtype=bool)
    if not len(texts):
        return ok
    column = _column_indexes(names, types)
    if native.available("text_forms"):  # one C pass; without it, each type's takes and scans below
        return _judged_values(texts, column, types)
    null = pc.fill_null(pc.equal(texts, "null"), False).to_numpy(zero_copy_only=False)
    for type_name, rows in _rows_by_type(column, types, ~null):
        chosen = texts.take(pa.array(rows))
        accepted = _accepted(chosen, type_name)
        rest = np.flatnonzero(~accepted & pc.is_valid(chosen).to_numpy(zero_copy_only=False))
        if len(rest):  # outside the patterns: one reference cast per value, not per event
            accepted[rest] = _reference_accepts(chosen.take(pa.array(rest)).to_pylist(), type_name)
        ok[rows] = accepted
    return ok | (null & (column >= 0))


def _judged_values(texts: pa.Array, column: np.ndarray, types: dict[str, str]) -> np.ndarray:
    """:func:`_valid_values` by one C pass over every entry (``_text_forms.judge``): the per-type takes and scans
    of the path above were a tenth of a bulk batch's compact step. Strings that are not plain and the calendar
    types are judged here as :func:`_accepted` does (a type's entries together: a calendar check holds for all of
    them or none), and what no pattern accepts goes to the reference, as above."""
    kinds, params = _judgements(types)
    verdicts = native.judge(texts, column, kinds, params)
    valid = np.asarray(texts.is_valid().to_numpy(zero_copy_only=False), bool) if texts.null_count else None
    null = verdicts == 3
    ok = verdicts == 1
    asked = verdicts == 2
    if asked.any():
        for type_name, rows in _rows_by_type(column, types, asked):
            ok[rows] = _accepted(texts.take(pa.array(rows)), type_name)
    undecided = ~ok & ~null & (column >= 0)
    if valid is not None:
        undecided &= valid
    if undecided.any():  # outside the patterns: one reference cast per value, not per event
        for type_name, rows in _rows_by_type(column, types, undecided):
            ok[rows] = _reference_accepts(texts.take(pa.array(rows)).to_pylist(), type_name)
    return ok | (null & (column >= 0))


def _key_texts(
    names: pa.Array, texts: pa.Array, parents: np.ndarray, rows: int, keys: list[str], types: dict[str, str]
) -> tuple[pa.Array, np.ndarray]:
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
        at = np.full(rows, -1, dtype=np.int64)
        at[owners] = np.arange(len(owners))  # a repeated key column is unsure: the last one will do
        pieces.append(found.take(pa.array(at, mask=at < 0)).cast(pa.string()))
    joined = pc.binary_join_element_wise(*pieces, ",", null_handling="emit_null")
    keyed = pc.binary_join_element_wise("[", joined, "]", "", null_handling="emit_null")
    return keyed, unsure


def image_keys(images: pa.Array, keys: list[str], types: dict[str, str]) -> tuple[pa.Array, np.ndarray]:
    """Per row of a map column of images: its key text (None: no image, or no key) and whether the
    reference must judge the row (a value or a key the patterns do not accept)."""
    rows = len(images)
    names, texts, parents = _entries(images)
    unsure = np.zeros(rows, dtype=bool)
    unsure[parents[~_valid_values(names, texts, types)]] = True
    key_texts, key_unsure = _key_texts(names, texts, parents, rows, keys, types)
    return key_texts, unsure | key_unsure


def _fast_pattern(type_name: str) -> str | None:
    """The texts of a type Arrow's cast reads as the reference does (None: every text goes to the reference)."""
    fast = {LONG: _LONG, DOUBLE: _DOUBLE, BOOLEAN: _BOOL, STRING: _UNESCAPED_STRING}.get(type_name)
    return fast or _decimal_pattern(type_name)


def _instants(texts: pa.Array) -> pa.Array:
    """ISO timestamps (of :data:`_ISO_TIMESTAMP`, quotes off) as UTC instants, as ``coltypes.cast`` reads
    them: with a zone, converted to UTC; without, taken as UTC (Arrow parses each kind to its own type)."""
    utc = pa.timestamp("us", tz="UTC")
    zoned = pc.fill_null(pc.match_substring_regex(texts, "(?:Z|[+-][0-9]{2}:[0-9]{2})$"), False)
    with_zone = pc.cast(pc.if_else(zoned, texts, pa.scalar(None, pa.string())), utc)
    naive = pc.cast(pc.if_else(zoned, pa.scalar(None, pa.string()), texts), pa.timestamp("us")).cast(utc)
    return pc.if_else(zoned, with_zone, naive)


def typed_values(texts: pa.Array, type_name: str) -> pa.Array:
    """``[cast(from_json(t), type_name) for t in texts]`` (None and ``null`` as NULL) as an Arrow array of
    the column's type: Arrow's casts where the texts' form makes them the same, the reference elsewhere."""
    target = arrow_type(type_name)
    pattern = _fast_pattern(type_name)
    absent = pc.fill_null(pc.equal(texts, "null"), True).to_numpy(zero_copy_only=False)
    if type_name in (TIMESTAMP, DATE):
        fast = _calendar_dates(texts, _ISO_TIMESTAMP if type_name == TIMESTAMP else _ISO_DATE)
    else:
        fast = _matches(texts, pattern) if pattern is not None else np.zeros(len(texts), dtype=bool)
    slow = ~fast & ~absent
    chosen = pc.if_else(pa.array(fast), texts, pa.scalar(None, pa.string()))
    if type_name == STRING:
        out = pc.utf8_slice_codeunits(chosen, 1, -1)
    elif type_name == BOOLEAN:
        out = pc.equal(chosen, "true")
    elif type_name == DATE:
        out = pc.cast(pc.utf8_slice_codeunits(chosen, 1, -1), target)
    elif type_name == TIMESTAMP:
        out = _instants(pc.utf8_slice_codeunits(chosen, 1, -1))
    elif pattern is not None:
        out = pc.cast(chosen, target)
    else:
        out = pa.nulls(len(texts), target)
    if slow.any():
        rest = texts.filter(pa.array(slow)).to_pylist()
        out = pc.replace_with_mask(out, pa.array(slow), pa.array([cast(from_json(t), type_name) for t in rest], target))
    return out


def typed_images(images: pa.Array, types: dict[str, str]) -> list[dict[str, Any] | None] | None:
    """Per row of a map column: ``merge.cast_image(events.image_from_text(row), types)``, each column's
    values cast at once by :func:`typed_values`. None: the reference must do it, to word or raise what
    it does (a column the table lacks, a NULL text, a value its type refuses)."""
    if not pa.types.is_map(images.type):
        return None
    names, texts, parents = _entries(images)
    if texts.null_count:
        return None
    column = _column_indexes(names, types)
    if (column < 0).any():
        return None
    values = np.empty(len(texts), dtype=object)
    try:
        for type_name, rows in _rows_by_type(column, types):
            chosen = texts.take(pa.array(rows))
            if _fast_pattern(type_name) is None:  # as the reference gives them (a datetime's own UTC tzinfo)
                values[rows] = [cast(from_json(t), type_name) for t in chosen.to_pylist()]
            else:
                values[rows] = typed_values(chosen, type_name).to_pylist()
    except CastError:
        return None
    counts = np.bincount(parents, minlength=len(images)).tolist()
    valid = pc.is_valid(images).to_numpy(zero_copy_only=False).tolist()
    name_list, value_list = names.to_pylist(), values.tolist()
    out: list[dict[str, Any] | None] = []
    at = 0
    for count, is_valid in zip(counts, valid, strict=True):
        end = at + count
        out.append(dict(zip(name_list[at:end], value_list[at:end], strict=True)) if is_valid else None)
        at = end
    return out
