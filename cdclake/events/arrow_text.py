"""Arrow string columns read at the byte level, where Arrow's kernels pay a set-up per value.

A column of short JSON texts (an image's values, a meta per event) is one data buffer and one offsets
buffer: a byte test over the buffer in numpy (a substring, an opening character) answers for every
value at once, where ``match_substring`` or a string ``if_else`` run a matcher or build a string per value.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdclake import native

_TEXT_TYPES = (pa.string(), pa.large_string())


def text_buffers(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A ``string`` / ``large_string`` array's value offsets (``len + 1``, int64, into the data buffer) and
    its data buffer's bytes (at least one byte, so the first byte of an empty value can be read as 0)."""
    return native.text_buffers(texts)


def text_buckets(texts: pa.Array, buckets: int) -> np.ndarray:
    """``zlib.crc32(text) % buckets`` of every value (``merge.bucket_of`` of key texts), -1 for NULL
    (:func:`cdclake.native.crc32_buckets`: one C pass over the column's bytes, else a Python call per distinct
    value)."""
    return native.crc32_buckets(texts, buckets)


def first_bytes(texts: pa.Array) -> np.ndarray:
    """Each value's first byte (0 for an empty or null value)."""
    return native.first_bytes(texts)


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
    (one each, not null), as ``pc.replace_with_mask`` gives it (:func:`cdclake.native.splice`: the C copies the kept
    runs whole)."""
    return native.splice(texts, rows, replacements)


def with_spelt(
    texts: pa.Array, slow: np.ndarray, rows: np.ndarray, spelt: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> pa.Array:
    """``texts`` (``large_string``) with those of ``rows`` a speller of :mod:`cdclake.native` spelt replaced
    (``epoch_texts``, ``connect_decimals``): ``spelt`` is its answer (done per row, the done rows' texts as int64
    offsets and data); the rows replaced are no longer ``slow``."""
    done_rows, offsets, data = spelt
    done = np.asarray(done_rows, np.bool_)
    count = int(np.count_nonzero(done))
    if not count:
        return texts
    replacements = pa.Array.from_buffers(pa.large_string(), count, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    at = rows[done]
    slow[at] = False
    return replaced(texts, at, replacements)
