"""JSON object texts split into Arrow buffers of their member names and value texts, and the brackets of ranges of
bytes counted (``_json_objects.c``)."""

from __future__ import annotations

import numpy as np

from cdclake.native.loader import NotBuilt, compiled


def split_objects(texts: bytes, offsets: np.ndarray) -> tuple | None:
    """``texts``: n JSON texts back to back (valid JSON already), ``offsets`` their n + 1 int64 bounds; each must be
    ``null`` or an object as a writer with no blanks spells it (``{"name":value,...}``, no escape in a name).

    None where a text is not in that shape, else ``(counts, layouts, name offsets, name data, value offsets, value
    data, firsts, members)``: per text its member count and its layout (int32 each, -1 for ``null``), the names
    (unquoted) and the value texts in text order as Arrow ``large_string`` buffers, per layout (its distinct list of
    names) the index of its first name and its member count, and the member count of all texts (a name twice in one
    object is not checked: the caller checks each layout once). C only: :class:`NotBuilt` where it does not run
    (the caller reads the objects another way: ``available("json_objects")``)."""
    c = compiled("json_objects")
    if c is None:
        raise NotBuilt("json_objects.split_objects")
    return c.split_objects(texts, offsets)


def bracket_counts(data: bytes, froms: np.ndarray, tos: np.ndarray) -> np.ndarray:
    """Per range ``[froms[i], tos[i])`` of ``data`` (int64 bounds), how many of its bytes are ``{`` or ``[`` (int64):
    the bound on a record's depth the JSON paths hold to the limit."""
    froms = np.ascontiguousarray(froms, np.int64)
    tos = np.ascontiguousarray(tos, np.int64)
    c = compiled("json_objects")
    if c is not None:
        return np.frombuffer(c.bracket_counts(data, froms, tos), np.int64)
    count = data.count
    bounds = zip(froms.tolist(), tos.tolist(), strict=True)
    return np.fromiter((count(b"{", lo, hi) + count(b"[", lo, hi) for lo, hi in bounds), np.int64, len(froms))
