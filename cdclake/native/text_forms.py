"""Which texts of an Arrow string column have one of a few fixed forms (``_text_forms.c``), each helper with its
Python equivalent: Arrow's regular expressions and kernels, and numpy over the column's bytes.

Every helper takes a ``string`` / ``large_string`` array; the answers are numpy arrays, one value per text.
"""

from __future__ import annotations

import zlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdclake.native.buffers import TEXT_TYPES, first_bytes, text_buffers, valid
from cdclake.native.loader import NotBuilt, compiled

#: ISO dates and timestamps ``coltypes.cast`` reads (``fromisoformat``), years 1900-2999 so that no UTC offset
#: takes one out of range (the calendar is the caller's to check): what :func:`iso_forms` reads.
_YMD = r"(?:19|2[0-9])[0-9]{2}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
ISO_DATE = rf'^"{_YMD}"$'
ISO_TIMESTAMP = (
    rf'^"{_YMD}[T ](?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{{1,6}})?'
    r'(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])?"$'
)
#: The longest bounded repeat Arrow's regular expressions take (RE2): longer bounds are written unbounded.
_MAX_REPEAT = 1000


def _matched(texts: pa.Array, pattern: str) -> np.ndarray:
    return np.asarray(pc.fill_null(pc.match_substring_regex(texts, pattern), False).to_numpy(zero_copy_only=False))


def _scanned(texts: pa.Array, scan, *params) -> np.ndarray:
    """A ``_text_forms`` scan's 0/1 answer as bools, False for a null."""
    offsets, data = text_buffers(texts)
    matched = np.frombuffer(scan(data, offsets, *params), np.bool_)
    ok = valid(texts)
    return matched if ok is None else matched & ok


def _repeat(low: int, high: int) -> str:
    return f"{{{low},{high}}}" if high <= _MAX_REPEAT else ("*" if low == 0 else "+")


def number_regex(int_max: int, frac_max: int, exp_max: int) -> str:
    """The regular expression of :func:`number_forms`' form (``-0`` aside)."""
    whole = "0" if int_max < 1 else f"0|[1-9][0-9]{_repeat(0, int_max - 1)}"
    fraction = "" if frac_max == 0 else rf"(?:\.[0-9]{'+' if frac_max < 0 else _repeat(1, frac_max)})?"
    exponent = "" if exp_max == 0 else f"(?:[eE][+-]?[0-9]{_repeat(1, exp_max)})?"
    return f"^-?(?:{whole}){fraction}{exponent}$"


def number_forms(texts: pa.Array, int_max: int, frac_max: int, exp_max: int, neg_zero: int) -> np.ndarray:
    """Per text, whether it is ``-?(0|[1-9][0-9]{0,int_max-1})(\\.[0-9]{1,frac_max})?([eE][+-]?[0-9]{1,exp_max})?``
    (``frac_max`` 0: no fraction, -1: any number of fraction digits; ``exp_max`` 0: no exponent); ``neg_zero`` 0
    refuses ``-0`` with neither fraction nor exponent. Null: False."""
    c = compiled("text_forms")
    if c is not None and texts.type in TEXT_TYPES:
        return _scanned(texts, c.number_forms, int_max, frac_max, exp_max, neg_zero)
    matched = _matched(texts, number_regex(int_max, frac_max, exp_max))
    if not neg_zero:
        matched &= ~np.asarray(pc.fill_null(pc.equal(texts, "-0"), False).to_numpy(zero_copy_only=False))
    return matched


def quoted_forms(texts: pa.Array, controls: int) -> np.ndarray:
    """Per text, whether it is ``"[^"\\\\]*"`` (``controls`` 0: no character below U+0020 inside either)."""
    c = compiled("text_forms")
    if c is not None and texts.type in TEXT_TYPES:
        return _scanned(texts, c.quoted_forms, controls)
    return _matched(texts, r'^"[^"\\]*"$' if controls else r'^"[^"\\\x00-\x1f]*"$')


def iso_forms(texts: pa.Array, with_time: int) -> np.ndarray:
    """Per text, whether it is :data:`ISO_DATE` (``with_time`` 0) or :data:`ISO_TIMESTAMP` (1)."""
    c = compiled("text_forms")
    if c is not None and texts.type in TEXT_TYPES:
        return _scanned(texts, c.iso_forms, with_time)
    return _matched(texts, ISO_TIMESTAMP if with_time else ISO_DATE)


#: :func:`kind_codes`' answers.
KIND_NULL, KIND_OTHER, KIND_INTEGER, KIND_TEXT, KIND_BOOLEAN, KIND_LONG_INTEGER = -1, 0, 1, 3, 4, 5
#: Digits (a ``-`` not counted) of an integer :func:`kind_codes` calls ``KIND_INTEGER`` (more: ``KIND_LONG_INTEGER``).
_SHORT_DIGITS = 18
_OPENERS = np.zeros(256, bool)
_OPENERS[[ord('"'), ord("{"), ord("[")]] = True


def kind_codes(texts: pa.Array) -> np.ndarray:
    """Per text, the kind normalize's survey reads in it, as int8: -1 the text ``null``, 4 ``true`` / ``false``,
    3 a text opening with a quote or a bracket, 1 ``-?[0-9]+`` of at most 18 digits, 5 a longer one, else 0 (a null
    value too: the caller says what it is)."""
    c = compiled("text_forms")
    if c is not None and texts.type in TEXT_TYPES:
        offsets, data = text_buffers(texts)
        codes = np.frombuffer(c.kind_codes(data, offsets), np.int8)
        ok = valid(texts)
        if ok is not None:
            codes[~ok] = KIND_OTHER
        return codes

    def flags(mask: pa.Array) -> np.ndarray:
        return np.asarray(pc.fill_null(mask, False).to_numpy(zero_copy_only=False), bool)

    codes = np.zeros(len(texts), np.int8)
    if not len(texts):
        return codes
    offsets, _ = text_buffers(texts)
    first = first_bytes(texts)
    # ``-?[0-9]+`` is Arrow's ``ascii_is_decimal`` (non-empty, ASCII digits only) of the text, or of its rest after
    # one ``-``: the regular expression took as long as every other test together
    integer = flags(pc.ascii_is_decimal(texts))
    negative = np.flatnonzero(first == ord("-"))
    if len(negative):
        integer[negative] = flags(pc.ascii_is_decimal(pc.utf8_slice_codeunits(texts.take(pa.array(negative)), 1)))
    digits = offsets[1:] - offsets[:-1] - (first == ord("-"))
    codes[integer] = np.where(digits[integer] > _SHORT_DIGITS, KIND_LONG_INTEGER, KIND_INTEGER)
    codes[_OPENERS[first]] = KIND_TEXT
    codes[flags(pc.is_in(texts, pa.array(["true", "false"])))] = KIND_BOOLEAN
    codes[flags(pc.equal(texts, "null"))] = KIND_NULL
    return codes


def crc32_buckets(texts: pa.Array, buckets: int) -> np.ndarray:
    """``zlib.crc32(text) % buckets`` of every value (``merge.bucket_of`` of key texts) as int64, -1 for NULL: one C
    pass over the column's bytes, else a Python call per distinct value."""
    c = compiled("text_forms")
    if c is not None and texts.type in TEXT_TYPES:
        offsets, data = text_buffers(texts)
        codes = np.frombuffer(c.crc32_buckets(data, offsets, buckets), np.int64)
        ok = valid(texts)
        if ok is not None:
            codes[~ok] = -1
        return codes
    encoded = pc.dictionary_encode(texts)
    per_text = [zlib.crc32(t.encode("utf-8")) % buckets for t in encoded.dictionary.to_pylist()]
    indices = pc.fill_null(encoded.indices, len(per_text)).to_numpy(zero_copy_only=False)
    return np.array([*per_text, -1], np.int64)[indices]


def judge(texts: pa.Array, columns: np.ndarray, kinds: np.ndarray, params: np.ndarray) -> np.ndarray:
    """Routing's judgement of each text by its column's type in one pass (``_text_forms.c``'s ``judge``), as int8:
    3 the text ``null``, 1 accepted, 2 the caller judges it, else 0; a null value 0. ``columns``: each text's
    column (int64); ``kinds``: each column's judgement (int8: 0 none, 1 a :func:`number_forms` form of its four
    ``params`` (int32, four a column), 2 a string, 3 a boolean, 4 the caller's). C only: :class:`NotBuilt`
    where it does not run (the caller judges each type its own way: ``available("text_forms")``)."""
    c = compiled("text_forms")
    if c is None:
        raise NotBuilt("text_forms.judge")
    offsets, data = text_buffers(texts)
    verdicts = np.frombuffer(
        c.judge(data, offsets, np.ascontiguousarray(columns, np.int64), kinds, np.ascontiguousarray(params, np.int32)),
        np.int8,
    )
    ok = valid(texts)
    if ok is not None:
        verdicts[~ok] = 0
    return verdicts


# --- shape_bits ---------------------------------------------------------------------------------------------------

#: :func:`shape_bits`' bits.
SHAPE_NULL, SHAPE_BOOLEAN, SHAPE_STRING, SHAPE_NUMBER = 1, 2, 4, 8
SHAPE_INTEGER, SHAPE_SPELT, SHAPE_BACKSLASH = 16, 32, 64
_EXPONENT, _POINT = 1, 2
_SPECIAL = np.zeros(256, np.uint8)
_SPECIAL[[ord("e"), ord("E")]] = _EXPONENT
_SPECIAL[ord(".")] = _POINT
_NUMBER_START = np.zeros(256, bool)
_NUMBER_START[np.frombuffer(b"-0123456789", np.uint8)] = True
_TINY = (b"0.000000", b"-0.000000")


def shape_bits(texts: pa.Array) -> np.ndarray:
    """Per text (a valid JSON value), its shape as bits (uint8; 0 for an empty or null text): ``SHAPE_NULL``,
    ``SHAPE_BOOLEAN``, ``SHAPE_STRING``, ``SHAPE_NUMBER`` (a number the builder writes as it is), ``SHAPE_INTEGER``
    (such a number without a point), ``SHAPE_SPELT`` (a text the builder writes another way: a backslash, a nested
    value, a number with an exponent, ``-0``, or one starting ``0.000000`` / ``-0.000000``), ``SHAPE_BACKSLASH``.

    Without C, numpy passes over the column's bytes: a value's first byte says what it is, one comparison over the
    bytes finds the backslashes, and exponents and decimal points are looked for in the numbers' bytes alone."""
    offsets, data = text_buffers(texts)
    c = compiled("text_forms")
    if c is not None and texts.type in TEXT_TYPES:
        bits = np.frombuffer(c.shape_bits(data, offsets), np.uint8)
        ok = valid(texts)
        return bits if ok is None else bits & ok.astype(np.uint8) * 0xFF
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
    shapes = [
        ((first == ord("n")) & (lengths == 4), SHAPE_NULL),
        ((first == ord("t")) | (first == ord("f")), SHAPE_BOOLEAN),
        (first == ord('"'), SHAPE_STRING),
        (number, SHAPE_NUMBER),
        (number & ~point, SHAPE_INTEGER),
        (spelt, SHAPE_SPELT),
        (backslash, SHAPE_BACKSLASH),
    ]
    bits = np.zeros(count, np.uint8)
    for flags, bit in shapes:
        bits[flags] |= bit
    return bits


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
