"""Kafka Connect decimals (base64 two's-complement bytes and a scale) converted a column at a time.

The reference converts each value through ``_kafka_connect.happy_path``'s ``decimal``: ``b64decode`` (strict
alphabet), ``int.from_bytes(signed)``, ``Decimal(f"{n}E{-scale}")`` and ``str``. About five microseconds a value
in Python, and the Debezium bench stream holds 2.6 per event (a tenth of its decode task). Here numpy reads the
base64 of up to 8 bytes at once and Arrow spells the numbers, or C does both (``cdclake._native``, where built);
every value outside that common case (longer or non-canonical base64, escapes, a number ``str(Decimal)`` writes
with an exponent) stays with the reference.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdclake._native import value_texts as _VALUE_TEXTS
from cdclake.events.arrow_text import text_buffers, with_spelt

#: A column kind (``columnar``' kinds): a Connect decimal of base64 bytes with this scale added (0-63).
CONNECT_DECIMAL_KIND = 32
MAX_SCALE = 63

_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_PAD, _BAD = 64, 255
_SIXES = np.full(256, _BAD, np.uint8)
_SIXES[np.frombuffer(_ALPHABET, np.uint8)] = np.arange(64, dtype=np.uint8)
_SIXES[ord("=")] = _PAD
_QUOTE = ord('"')
#: ``str(Decimal)`` writes an exponent below this adjusted exponent.
_PLAIN_ADJUSTED = -6


def connect_decimal_kind(scale: int | None) -> int | None:
    """The kind of a Connect decimal field of this scale; None where the reference alone converts it."""
    return None if scale is None or not 0 <= scale <= MAX_SCALE else CONNECT_DECIMAL_KIND + scale


def with_connect_decimals(texts: pa.Array, kinds: np.ndarray, slow: np.ndarray, probed: np.ndarray) -> pa.Array:
    """``texts`` (``large_string`` JSON texts) with each Connect decimal of the common case replaced by the
    reference's JSON text of its number; those are no longer ``slow``."""
    candidates = np.flatnonzero((kinds >= CONNECT_DECIMAL_KIND) & ~probed)
    if not len(candidates):
        return texts
    if _VALUE_TEXTS is not None:  # in C (``_native/_value_texts.c``), held to the numpy and Arrow path below by tests
        offsets, data = text_buffers(texts)
        scales = (kinds[candidates].astype(np.int64) - CONNECT_DECIMAL_KIND).astype(np.int8)
        return with_spelt(texts, slow, candidates, _VALUE_TEXTS.connect_decimals(data, offsets, candidates, scales))
    chosen = texts.take(pa.array(candidates))
    numbers, read = _base64_numbers(chosen)
    scales = kinds[candidates].astype(np.int64) - CONNECT_DECIMAL_KIND
    at, spelt = [], []
    for scale in np.unique(scales[read]).tolist():
        rows = np.flatnonzero(read & (scales == scale))
        plain, text = _spelt(numbers[rows], scale)
        at.append(rows[plain])
        spelt.append(text)
    where = np.concatenate(at) if at else np.zeros(0, np.int64)
    if not len(where):
        return texts
    order = np.argsort(where, kind="stable")
    mask = np.zeros(len(texts), bool)
    mask[candidates[where]] = True
    slow[mask] = False
    replacement = pa.concat_arrays([t.cast(pa.large_string()) for t in spelt]).take(pa.array(order))
    return pc.replace_with_mask(texts, pa.array(mask), replacement)


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


def _spelt(numbers: np.ndarray, scale: int) -> tuple[np.ndarray, pa.Array]:
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
