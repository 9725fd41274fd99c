"""What the columnar fast paths of the JSON formats share (:mod:`.goldengate_json_columns`,
:mod:`.debezium_json_columns`): spans of whole records, the records' values as one Arrow string
column of their JSON texts, and which of those texts the builder would spell otherwise."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdclake.limits import MAX_RECORD_BYTES

#: A span is cut at the first record start after this many bytes (bounds the memory of one span's records).
SPAN_BYTES = 4 << 20

_LITERALS = pa.array(["true", "false", "null"])


def spans(data: bytes) -> Iterator[tuple[int, int]]:
    """``data`` in spans of about :data:`SPAN_BYTES`, each cut before a line starting with ``{`` after a
    line ending with ``}`` (the decode task's rule for pieces: a record is never cut)."""
    start, size = 0, len(data)
    while start < size:
        cut = start + SPAN_BYTES
        while cut < size:
            cut = data.find(b"\n{", cut)
            if cut < 0:
                cut = size
                break
            line_start = data.rfind(b"\n", 0, cut) + 1
            if data[line_start:cut].rstrip().endswith(b"}"):
                cut += 1
                break
            cut += 1
        end = min(cut, size)
        yield start, end
        start = end


def respelt(texts: pa.Array) -> pa.BooleanArray:
    """Which JSON texts (valid JSON: msgspec checked them) the builder would spell otherwise: escapes in a
    string (only strings hold a backslash), nested values, and numbers ``Decimal`` or ``int`` write another
    way (an exponent; ``-0``; a decimal below 1e-6, ``0.0000001`` is ``1E-7``: every one of them starts with
    six zeros after the point, a few that do not respell are flagged too). Simple kernels, not a regular
    expression: a regular expression's set-up per value cost more than the rest of the column."""
    literal_or_string = pc.or_(pc.starts_with(texts, '"'), pc.is_in(texts, _LITERALS))
    exponent = pc.and_not(pc.or_(pc.match_substring(texts, "e"), pc.match_substring(texts, "E")), literal_or_string)
    odd = pc.or_(pc.match_substring(texts, "\\"), exponent)
    for prefix in ("{", "[", "0.000000", "-0.000000"):
        odd = pc.or_(odd, pc.starts_with(texts, prefix))
    return pc.or_(odd, pc.equal(texts, "-0"))


def raw_texts(raws: list) -> pa.Array | None:
    """The JSON texts ``raws`` (``msgspec.Raw``: bytes-like) as one ``large_string`` array, copied once;
    None when one is not valid UTF-8."""
    lengths = np.fromiter(map(len, raws), np.int64, len(raws))
    offsets = np.zeros(len(raws) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    texts = pa.Array.from_buffers(
        pa.large_string(), len(raws), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(raws))]
    )
    try:
        texts.validate(full=True)  # UTF-8
    except pa.ArrowInvalid:
        return None
    return texts


def record_starts(text: bytes, records: int) -> np.ndarray | None:
    """The first byte of each line of ``text`` (a span that msgspec read as ``records`` lines); None when the
    lines are not the records one to one, or one is at the record size limit (the reference words it)."""
    ends = np.flatnonzero(np.frombuffer(text, np.uint8) == 10)
    if len(ends) != records:
        return None
    starts = np.concatenate(([0], ends[:-1] + 1))
    return None if int((ends - starts).max()) >= MAX_RECORD_BYTES else starts


def read_spans(
    decode: Callable[[bytes, str], Iterator[Any]],
    decode_span: Callable[[bytes, str, int], pa.RecordBatch | None],
    data: bytes,
    file: str,
) -> Iterator[Any]:
    """A format's ``decode_columns``: each span of ``data`` as the columnar path reads it, until a span it
    does not (``decode_span`` gives None); from there, what the reference ``decode`` finds reading the
    whole ``data`` again, as without the columnar path (its reasons count lines from the first byte of
    ``data``; the spans before held only records that leave the decoder's state as either path does)."""
    for start, end in spans(data):
        batch = decode_span(data[start:end], file, start)
        if batch is None:
            yield from (item for item in decode(data, file) if item.source.offset >= start)
            return
        yield batch
