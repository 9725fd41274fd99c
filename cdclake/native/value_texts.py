"""Texts of an Arrow string column spelt anew (``_value_texts.c``), each helper with its Python equivalent: integer
dates and timestamps as ISO texts, Kafka Connect decimals as decimal texts, and a column with some texts replaced.

The spellers answer ``(done, offsets, data)``: per row asked, whether it was spelt (numpy bools), and the spelt
rows' texts in row order as int64 offsets (from 0) and data bytes, the buffers of an Arrow ``large_string``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdclake.native.buffers import text_buffers
from cdclake.native.loader import compiled

#: :func:`epoch_texts`' kinds: an integer counting days, milli-, micro- or nanoseconds since the epoch.
DATE_DAYS, TS_MILLIS, TS_MICROS, TS_NANOS = 6, 7, 8, 9
DAY_US = 86_400_000_000
#: Microseconds since the epoch of 1000-01-01 and of 9999-12-31 23:59:59.999999: Arrow spells the years between
#: as Python's ``isoformat`` does (four digits).
MIN_US, MAX_US = -30_610_224_000_000_000, 253_402_300_799_999_999


def _answer(spelt: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    done, offsets, data = spelt
    return np.frombuffer(done, np.bool_), np.frombuffer(offsets, np.int64), np.frombuffer(data, np.uint8)


def _spelt(done: np.ndarray, texts: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The answer of the done rows' ``texts`` (in row order)."""
    if not len(texts):
        return done, np.zeros(1, np.int64), np.zeros(0, np.uint8)
    offsets, data = text_buffers(texts.cast(pa.large_string()))
    return done, offsets - offsets[0], data[int(offsets[0]) : int(offsets[-1])]


def epoch_texts(texts: pa.Array, rows: np.ndarray, kinds: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each of ``rows`` (int64) of ``texts`` (``large_string``), a JSON integer of at most 16 characters counting
    the units of its kind (``kinds``, one int8 a row: :data:`DATE_DAYS` .. :data:`TS_NANOS`) since the epoch, its ISO
    text ``"YYYY-MM-DD"`` or ``"YYYY-MM-DDTHH:MM:SS.ffffffZ"`` (as Arrow casts it), for instants of the years
    1000-9999 only (nanoseconds rounded down to the microsecond). The caller passes JSON integers only."""
    rows = np.ascontiguousarray(rows, np.int64)
    c = compiled("value_texts")
    if c is not None:
        offsets, data = text_buffers(texts)
        return _answer(c.epoch_texts(data, offsets, rows, np.ascontiguousarray(kinds, np.int8)))
    chosen = texts.take(pa.array(rows, pa.int64()))
    offsets, _ = text_buffers(chosen)
    integral = np.diff(offsets) <= 16
    numbers = np.zeros(len(rows), np.int64)
    numbers[integral] = pc.cast(chosen.filter(pa.array(integral)), pa.int64()).to_numpy()
    kind = np.asarray(kinds, np.int8)
    # no overflow below: days past this bound are outside the years anyway (16 characters of milliseconds
    # times 1,000 wrap only to values below the years)
    safe = (kind != DATE_DAYS) | (np.abs(numbers) <= 4_000_000)
    numbers[~safe] = 0
    micros = np.select(
        [kind == DATE_DAYS, kind == TS_MILLIS, kind == TS_MICROS],
        [numbers * DAY_US, numbers * 1_000, numbers],
        np.floor_divide(numbers, 1_000),
    )
    done = integral & safe & (micros >= MIN_US) & (micros <= MAX_US)
    at = micros[done]
    stamps = pa.array(at, pa.int64()).cast(pa.timestamp("us")).cast(pa.string())
    days = pa.array(at // DAY_US, pa.int64()).cast(pa.int32()).cast(pa.date32()).cast(pa.string())
    spelt = pc.if_else(
        pa.array(kind[done] == DATE_DAYS),
        pc.binary_join_element_wise('"', days, '"', ""),
        pc.binary_join_element_wise('"', pc.replace_substring(stamps, " ", "T", max_replacements=1), 'Z"', ""),
    )
    return _spelt(done, spelt)


# --- connect_decimals ---------------------------------------------------------------------------------------------

_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_PAD, _BAD = 64, 255
_SIXES = np.full(256, _BAD, np.uint8)
_SIXES[np.frombuffer(_ALPHABET, np.uint8)] = np.arange(64, dtype=np.uint8)
_SIXES[ord("=")] = _PAD
_QUOTE = ord('"')
#: ``str(Decimal)`` writes an exponent below this adjusted exponent.
_PLAIN_ADJUSTED = -6


#: A speller's answer: (done per row, the done rows' texts as int64 offsets and data bytes).
Spelt = tuple[np.ndarray, np.ndarray, np.ndarray]


def connect_decimals(texts: pa.Array, rows: np.ndarray, scales: np.ndarray) -> Spelt:
    """For each of ``rows`` (int64) of ``texts`` (``large_string``), a Kafka Connect decimal: a quoted canonical
    base64 text of 1-8 two's-complement bytes (no blanks or escapes) and its scale (``scales``, int8 a row, 0-63),
    the number as ``str(Decimal)`` writes it where it writes no exponent. Without C, numpy reads the base64 of up
    to 8 bytes at once and Arrow spells the numbers."""
    rows = np.ascontiguousarray(rows, np.int64)
    c = compiled("value_texts")
    if c is not None:
        offsets, data = text_buffers(texts)
        return _answer(c.connect_decimals(data, offsets, rows, np.ascontiguousarray(scales, np.int8)))
    numbers, read = _base64_numbers(texts.take(pa.array(rows, pa.int64())))
    scales = np.asarray(scales, np.int64)
    done = np.zeros(len(rows), bool)
    at, spelt = [], []
    for scale in np.unique(scales[read]).tolist():
        group = np.flatnonzero(read & (scales == scale))
        plain, text = _decimal_texts(numbers[group], scale)
        at.append(group[plain])
        spelt.append(text.cast(pa.large_string()))
    where = np.concatenate(at) if at else np.zeros(0, np.int64)
    done[where] = True
    joined = pa.concat_arrays(spelt) if spelt else pa.array([], pa.large_string())
    return _spelt(done, joined.take(pa.array(np.argsort(where, kind="stable"), pa.int64())))


def _base64_numbers(chosen: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Per JSON text of ``chosen``: the signed number of a quoted canonical base64 text of 1-8 bytes (4, 8 or 12
    characters, no blanks or escapes, the unused bits of its last character zero), and whether it was one."""
    offsets, data = text_buffers(chosen)
    lengths = np.diff(offsets)
    numbers = np.zeros(len(chosen), np.int64)
    read = np.zeros(len(chosen), bool)
    for width in (4, 8, 12):
        rows = np.flatnonzero(lengths == width + 2)
        if not len(rows):
            continue
        chars = data[offsets[rows, None] + np.arange(width + 2)]
        sixes = _SIXES[chars[:, 1:-1]]
        quoted = (chars[:, 0] == _QUOTE) & (chars[:, -1] == _QUOTE)
        head_ok = (sixes[:, :-2] < 64).all(axis=1)
        last2, last1 = sixes[:, -2], sixes[:, -1]
        pads = np.where(last1 != _PAD, 0, np.where(last2 != _PAD, 1, 2))
        tail_ok = (last1 != _BAD) & (last2 != _BAD) & ~((last2 == _PAD) & (last1 != _PAD))
        ok = quoted & head_ok & tail_ok
        for pad in (0, 1, 2):
            used = width - pad
            size, spare = divmod(6 * used, 8)
            group = np.flatnonzero(ok & (pads == pad))
            if not len(group) or size > 8:
                continue
            last = sixes[group, used - 1]
            canonical = (last & ((1 << spare) - 1)) == 0
            group, last = group[canonical], last[canonical]
            value = np.zeros(len(group), np.uint64)
            for column in range(used - 1):
                value = (value << np.uint64(6)) | sixes[group, column].astype(np.uint64)
            value = (value << np.uint64(6 - spare)) | (last >> spare).astype(np.uint64)
            if size == 8:
                signed = value.view(np.int64)
                keep = signed != np.iinfo(np.int64).min  # its magnitude is no int64
                group, signed = group[keep], signed[keep]
            else:
                signed = value.astype(np.int64)
                signed = np.where(signed >= 1 << (8 * size - 1), signed - (1 << (8 * size)), signed)
            numbers[rows[group]] = signed
            read[rows[group]] = True
    return numbers, read


def _decimal_texts(numbers: np.ndarray, scale: int) -> tuple[np.ndarray, pa.Array]:
    """Which of ``numbers`` (unscaled, of one ``scale``) ``str(Decimal)`` writes without an exponent, and
    their texts as it writes them."""
    if scale == 0:
        return np.ones(len(numbers), bool), pa.array(numbers).cast(pa.string())
    magnitude = pa.array(np.abs(numbers)).cast(pa.string())
    digits = pc.utf8_length(magnitude).to_numpy()
    plain = digits - 1 - scale >= _PLAIN_ADJUSTED
    magnitude = magnitude.filter(pa.array(plain))
    padded = pc.utf8_lpad(magnitude, width=scale + 1, padding="0")
    whole = pc.utf8_slice_codeunits(padded, 0, -scale)
    fraction = pc.utf8_slice_codeunits(padded, -scale)
    sign = pc.if_else(pa.array(numbers[plain] < 0), "-", "")
    return plain, pc.binary_join_element_wise(sign, whole, ".", fraction, "")


# --- splice -------------------------------------------------------------------------------------------------------


def splice(texts: pa.Array, rows: np.ndarray, replacements: pa.Array) -> pa.Array:
    """``texts`` (``string`` / ``large_string``) with the texts of ``rows`` (ascending) replaced by ``replacements``
    (one each, not null), as ``pc.replace_with_mask`` gives it. That kernel builds the column a value at a time
    (about 0.5 ms a span's image column); the C splice copies the kept runs whole."""
    rows = np.ascontiguousarray(rows, np.int64)
    c = compiled("value_texts")
    if c is None or replacements.null_count or (texts.null_count and texts.offset):
        mask = np.zeros(len(texts), bool)
        mask[rows] = True
        return pc.replace_with_mask(texts, pa.array(mask, pa.bool_()), replacements.cast(texts.type))
    offsets, data = text_buffers(texts)
    new_offsets, new_data = text_buffers(replacements)
    out_offsets, out_data = c.splice(data, offsets, rows, new_offsets, new_data)
    validity = texts.buffers()[0] if texts.null_count else None
    buffers = [validity, pa.py_buffer(out_offsets), pa.py_buffer(out_data)]
    out = pa.Array.from_buffers(pa.large_string(), len(texts), buffers, texts.null_count)
    return out if texts.type == pa.large_string() else out.cast(texts.type)
