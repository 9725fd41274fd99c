"""Arrow string columns read at the byte level, where Arrow's kernels pay a set-up per value.

A column of short JSON texts (an image's values, a meta per event) is one data buffer and one offsets
buffer: a byte test over the buffer in numpy (a substring, an opening character) answers for every
value at once, where ``match_substring`` or a string ``if_else`` run a matcher or build a string per value.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdclake._native import text_forms as _TEXT_FORMS
from cdclake._native import value_texts as _VALUE_TEXTS

_TEXT_TYPES = (pa.string(), pa.large_string())


def text_buffers(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A ``string`` / ``large_string`` array's value offsets (``len + 1``, int64, into the data buffer) and
    its data buffer's bytes (at least one byte, so the first byte of an empty value can be read as 0)."""
    buffers = texts.buffers()
    width = np.int64 if texts.type == pa.large_string() else np.int32
    offsets = np.frombuffer(buffers[1], width)[texts.offset : texts.offset + len(texts) + 1].astype(np.int64)
    data = np.frombuffer(buffers[2], np.uint8) if buffers[2] is not None and len(buffers[2]) else np.zeros(1, np.uint8)
    return offsets, data


def text_buckets(texts: pa.Array, buckets: int) -> np.ndarray:
    """``zlib.crc32(text) % buckets`` of every value (``merge.bucket_of`` of key texts), -1 for NULL: one C pass
    over the column's bytes where the module is built, else a Python call per distinct value."""
    if _TEXT_FORMS is not None and texts.type in _TEXT_TYPES:
        offsets, data = text_buffers(texts)
        codes = np.frombuffer(_TEXT_FORMS.crc32_buckets(data, offsets, buckets), np.int64)
        if texts.null_count:
            codes[~np.asarray(texts.is_valid().to_numpy(zero_copy_only=False), bool)] = -1
        return codes
    encoded = pc.dictionary_encode(texts)
    per_text = [zlib.crc32(t.encode("utf-8")) % buckets for t in encoded.dictionary.to_pylist()]
    indices = pc.fill_null(encoded.indices, len(per_text)).to_numpy(zero_copy_only=False)
    return np.array([*per_text, -1], np.int64)[indices]


def first_bytes(texts: pa.Array) -> np.ndarray:
    """Each value's first byte (0 for an empty or null value)."""
    offsets, data = text_buffers(texts)
    first = np.zeros(len(texts), np.uint8)
    present = offsets[1:] > offsets[:-1]
    if texts.null_count:
        present &= np.asarray(texts.is_valid().to_numpy(zero_copy_only=False), bool)
    first[present] = data[offsets[:-1][present]]
    return first


def holding(texts: pa.Array, needle: bytes) -> pa.BooleanArray:
    """``pc.match_substring(texts, needle)``, by one scan of the texts' bytes: Arrow's kernel sets its matcher up
    per value, and those calls were a tenth of a Debezium decode task's instructions."""
    if texts.null_count or not needle or texts.type not in _TEXT_TYPES:
        return pc.match_substring(texts, needle.decode())
    if not len(texts):
        return pa.array(np.zeros(0, bool))
    offsets, data = text_buffers(texts)
    data = data[: int(offsets[-1])]
    at = _found(data, needle, int(offsets[0]))
    owners = np.searchsorted(offsets, at, side="right") - 1
    inside = at + len(needle) <= offsets[owners + 1]
    holds = np.zeros(len(texts), bool)
    holds[owners[inside]] = True
    return pa.array(holds)


#: Bytes of the texts sampled to choose the needle's rarest byte (:func:`_found`).
_SAMPLE_BYTES = 1 << 16
#: Texts of up to this many bytes are searched by ``bytes.find`` (:func:`_found`).
_FIND_BYTES = 4 << 20


def _found(data: np.ndarray, needle: bytes, start: int) -> np.ndarray:
    """Every position from ``start`` where ``needle`` starts in ``data``.

    A span's image values (about 1 MB, a placeholder in a few hundred of them) are copied to bytes and searched
    by ``find``, match after match: 0.05-0.2 ms. A larger column is searched in numpy, from the positions of the
    needle's rarest byte (in a sample) narrowed by each other byte in turn: the ``find`` loop took 1.2 s over the
    907 MB of a 1M Debezium batch's metas, every one of which holds the needle, this 0.4 s (and 0.2-0.3 ms on a
    span's values, so it is not used there)."""
    body = data[start:]
    width = len(needle)
    if width == 1:
        return np.flatnonzero(body == needle[0]) + start
    if len(body) <= _FIND_BYTES:
        raw = body.tobytes()
        found, at = [], raw.find(needle)
        while at >= 0:
            found.append(at)
            at = raw.find(needle, at + 1)
        return np.array(found, np.int64) + start
    counts = np.bincount(body[:_SAMPLE_BYTES], minlength=256)
    rarest = min(range(width), key=lambda i: counts[needle[i]])
    at = np.flatnonzero(body == needle[rarest]) - rarest
    at = at[(at >= 0) & (at <= len(body) - width)]
    for i in range(width):
        if i != rarest and len(at):
            at = at[body[at + i] == needle[i]]
    return at + start


def replaced(texts: pa.Array, rows: np.ndarray, replacements: pa.Array) -> pa.Array:
    """``texts`` (``string`` / ``large_string``) with the texts of ``rows`` (ascending) replaced by ``replacements``
    (one each, not null), as ``pc.replace_with_mask`` gives it. That kernel builds the column a value at a time
    (about 0.5 ms a span's image column); the C splice copies the kept runs whole."""
    rows = np.ascontiguousarray(rows, np.int64)
    if _VALUE_TEXTS is None or replacements.null_count or (texts.null_count and texts.offset):
        mask = np.zeros(len(texts), bool)
        mask[rows] = True
        return pc.replace_with_mask(texts, pa.array(mask, pa.bool_()), replacements.cast(texts.type))
    offsets, data = text_buffers(texts)
    new_offsets, new_data = text_buffers(replacements)
    out_offsets, out_data = _VALUE_TEXTS.splice(data, offsets, rows, new_offsets, new_data)
    validity = texts.buffers()[0] if texts.null_count else None
    buffers = [validity, pa.py_buffer(out_offsets), pa.py_buffer(out_data)]
    out = pa.Array.from_buffers(pa.large_string(), len(texts), buffers, texts.null_count)
    return out if texts.type == pa.large_string() else out.cast(texts.type)


def with_spelt(texts: pa.Array, slow: np.ndarray, rows: np.ndarray, spelt: tuple[Any, bytes, bytes]) -> pa.Array:
    """``texts`` (``large_string``) with those of ``rows`` a speller of ``cdclake._native._value_texts`` spelt
    replaced: ``spelt`` is its answer (done per row, the done rows' texts as int64 offsets and data); the rows
    replaced are no longer ``slow``."""
    done_rows, offsets, data = spelt
    done = np.frombuffer(done_rows, np.bool_)
    count = int(np.count_nonzero(done))
    if not count:
        return texts
    replacements = pa.Array.from_buffers(pa.large_string(), count, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    at = rows[done]
    slow[at] = False
    return replaced(texts, at, replacements)
