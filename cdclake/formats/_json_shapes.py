"""What each JSON text of a column is (null, a boolean, a string, a number, an integer) and whether the builder
would spell it otherwise, read from the column's bytes in one pass.

Why: the columnar fast paths judge every image value this way. As Arrow kernels (``equal``, ``starts_with``,
``is_in``, ``match_substring`` per needle, a regular expression for integers) that was about fifteen passes and
about a quarter of a Debezium image column's build. The texts are valid JSON values (msgspec read them), so a value's
first byte says what it is, one comparison over the bytes finds the backslashes, and exponents and decimal
points are looked for in the numbers' bytes alone.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyarrow as pa

from cdclake._native import text_forms as _TEXT_FORMS
from cdclake.events.arrow_text import text_buffers

_EXPONENT, _POINT = 1, 2
_SPECIAL = np.zeros(256, np.uint8)
_SPECIAL[[ord("e"), ord("E")]] = _EXPONENT
_SPECIAL[ord(".")] = _POINT
_NUMBER_START = np.zeros(256, bool)
_NUMBER_START[np.frombuffer(b"-0123456789", np.uint8)] = True
_TINY = (b"0.000000", b"-0.000000")


class JsonShapes(NamedTuple):
    """Per text, as numpy bools (False for a null text)."""

    null: np.ndarray
    boolean: np.ndarray
    string: np.ndarray
    #: a number the builder spells as written (``number`` and not ``spelt``)
    number: np.ndarray
    #: ``number`` with neither a point nor an exponent
    integer: np.ndarray
    #: what :func:`json_shapes` says the builder writes another way
    spelt: np.ndarray
    backslash: np.ndarray


def json_shapes(texts: pa.Array) -> JsonShapes:
    """The shapes of ``texts`` (a ``string`` / ``large_string`` array of valid JSON values).

    ``spelt``: escapes in a string (only strings hold a backslash), nested values, and numbers ``Decimal`` or
    ``int`` write another way (an exponent; ``-0``; a decimal below 1e-6: ``0.0000001`` is ``1E-7``, every one of
    them starts with six zeros after the point, and a few that do not respell are flagged too).

    Where the C module is built, one scan of each text gives all of it as bits (``_text_forms.shape_bits``); the
    numpy passes below are what it is held to."""
    offsets, data = text_buffers(texts)
    if _TEXT_FORMS is not None:
        return _shapes_of_bits(np.frombuffer(_TEXT_FORMS.shape_bits(data, offsets), np.uint8), texts)
    count = len(texts)
    starts, lengths = offsets[:-1], np.diff(offsets)
    present = lengths > 0
    if texts.null_count:
        present &= np.asarray(texts.is_valid().to_numpy(zero_copy_only=False), bool)
    first = np.zeros(count, np.uint8)
    first[present] = data[starts[present]]
    backslash = np.zeros(count, bool)
    if count and offsets[-1] > offsets[0]:
        # only strings hold a backslash, and a few of them: one comparison over the bytes
        at = np.flatnonzero(data[offsets[0] : offsets[-1]] == ord("\\")) + offsets[0]
        backslash[np.searchsorted(offsets, at, side="right") - 1] = True
        backslash &= present
    numeric = _NUMBER_START[first] & present
    exponent, point = _number_marks(data, starts, lengths, numeric)
    spelt = backslash | (first == ord("{")) | (first == ord("[")) | (numeric & exponent)
    if numeric.any():
        spelt |= _tiny_or_minus_zero(data, starts, lengths, first, numeric)
    spelt &= present
    number = numeric & ~spelt
    return JsonShapes(
        null=(first == ord("n")) & (lengths == 4),
        boolean=(first == ord("t")) | (first == ord("f")),
        string=first == ord('"'),
        number=number,
        integer=number & ~point,
        spelt=spelt,
        backslash=backslash,
    )


def _shapes_of_bits(bits: np.ndarray, texts: pa.Array) -> JsonShapes:
    """:class:`JsonShapes` of ``shape_bits``' answer (a null value's bits cleared: it has no text)."""
    if texts.null_count:
        bits = bits & np.asarray(texts.is_valid().to_numpy(zero_copy_only=False), np.uint8) * 0xFF
    return JsonShapes(
        null=(bits & 1) != 0,
        boolean=(bits & 2) != 0,
        string=(bits & 4) != 0,
        number=(bits & 8) != 0,
        integer=(bits & 16) != 0,
        spelt=(bits & 32) != 0,
        backslash=(bits & 64) != 0,
    )


def _number_marks(
    data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, numeric: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Which numbers hold an exponent (``e``, ``E``) and which a decimal point: the numbers' bytes alone are
    looked at (a string's letters would be most of the hits of a scan of every byte)."""
    exponent, point = np.zeros(len(starts), bool), np.zeros(len(starts), bool)
    rows = np.flatnonzero(numeric)
    if not len(rows):
        return exponent, point
    widths = lengths[rows]
    ends = np.cumsum(widths)
    at = np.arange(int(ends[-1])) + np.repeat(starts[rows] - (ends - widths), widths)
    marks = _SPECIAL[data[at]]
    heads = ends - widths
    exponent[rows] = np.logical_or.reduceat((marks & _EXPONENT) != 0, heads)
    point[rows] = np.logical_or.reduceat((marks & _POINT) != 0, heads)
    return exponent, point


def _tiny_or_minus_zero(
    data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, first: np.ndarray, numeric: np.ndarray
) -> np.ndarray:
    """Numbers written ``-0`` or starting with six zeros after the point (``0.000000``, ``-0.000000``)."""
    out = np.zeros(len(starts), bool)
    minus = numeric & (first == ord("-"))
    two = np.flatnonzero(minus & (lengths == 2))
    out[two[data[starts[two] + 1] == ord("0")]] = True
    for prefix in _TINY:
        width = len(prefix)
        rows = np.flatnonzero(numeric & (first == prefix[0]) & (lengths >= width))
        if len(rows):
            heads = data[starts[rows, None] + np.arange(width)]
            out[rows[(heads == np.frombuffer(prefix, np.uint8)).all(axis=1)]] = True
    return out
