"""An Arrow string column as the C helpers read it: its data bytes and its n + 1 int64 offsets."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

TEXT_TYPES = (pa.string(), pa.large_string())


def text_buffers(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A ``string`` / ``large_string`` array's value offsets (``len + 1``, int64, into the data buffer) and
    its data buffer's bytes (at least one byte, so the first byte of an empty value can be read as 0)."""
    buffers = texts.buffers()
    width = np.int64 if texts.type == pa.large_string() else np.int32
    offsets = np.frombuffer(buffers[1], width)[texts.offset : texts.offset + len(texts) + 1].astype(np.int64)
    data = np.frombuffer(buffers[2], np.uint8) if buffers[2] is not None and len(buffers[2]) else np.zeros(1, np.uint8)
    return offsets, data


def valid(texts: pa.Array) -> np.ndarray | None:
    """Which values are not null, or None where none is."""
    return np.asarray(texts.is_valid().to_numpy(zero_copy_only=False), bool) if texts.null_count else None


def first_bytes(texts: pa.Array) -> np.ndarray:
    """Each value's first byte (0 for an empty or null value)."""
    offsets, data = text_buffers(texts)
    first = np.zeros(len(texts), np.uint8)
    present = offsets[1:] > offsets[:-1]
    if texts.null_count:
        present &= np.asarray(texts.is_valid().to_numpy(zero_copy_only=False), bool)
    first[present] = data[offsets[:-1][present]]
    return first
