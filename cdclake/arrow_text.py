"""Arrow string columns read at the byte level, where Arrow's kernels pay a set-up per value.

A column of short JSON texts (an image's values, a meta per event) is one data buffer and one offsets
buffer: a byte test over the buffer in numpy (a substring, an opening character) answers for every
value at once, where ``match_substring`` or a string ``if_else`` run a matcher or build a string per value.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_TEXT_TYPES = (pa.string(), pa.large_string())


def text_buffers(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A ``string`` / ``large_string`` array's value offsets (``len + 1``, int64, into the data buffer) and
    its data buffer's bytes (at least one byte, so the first byte of an empty value can be read as 0)."""
    buffers = texts.buffers()
    width = np.int64 if texts.type == pa.large_string() else np.int32
    offsets = np.frombuffer(buffers[1], width)[texts.offset : texts.offset + len(texts) + 1].astype(np.int64)
    data = np.frombuffer(buffers[2], np.uint8) if buffers[2] is not None and len(buffers[2]) else np.zeros(1, np.uint8)
    return offsets, data


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
    if len(needle) == 1:
        at = np.flatnonzero(data == needle[0])
    else:  # rare texts (probes, a meta member): few matches to walk
        raw = data.tobytes()
        found, start = [], raw.find(needle, int(offsets[0]))
        while start >= 0:
            found.append(start)
            start = raw.find(needle, start + 1)
        at = np.array(found, np.int64)
    at = at[at >= offsets[0]]
    owners = np.searchsorted(offsets, at, side="right") - 1
    inside = at + len(needle) <= offsets[owners + 1]
    holds = np.zeros(len(texts), bool)
    holds[owners[inside]] = True
    return pa.array(holds)
