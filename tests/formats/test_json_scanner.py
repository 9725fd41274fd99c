"""JsonScanner's remembered first members (the repeated ``schema`` block) change nothing it returns.

The law: scanning records with remembered heads gives exactly what parsing every record whole
gives (values, ends, the repeated member noticed, errors and their positions), whatever follows a
repeated head: more members, a repeated ``schema`` member, blanks, a trailing comma, junk, a cut,
a line break inside the record.
"""

from __future__ import annotations

import json
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.formats import _json
from cdclake.formats._json import JsonScanner


class _WholeScanner(JsonScanner):
    """The reference: every record parsed whole (no head is ever remembered)."""

    def _remember_head(self, text, pos, value) -> None:
        return None


def _scan(scanner: JsonScanner, text: str) -> list:
    """Each line's outcome: (value, end, repeated member) or (error type, message)."""
    outcomes, pos = [], 0
    for line in text.split("\n"):
        try:
            value, end = scanner.raw_decode(text, pos)
            outcomes.append((value, end, scanner.duplicate))
        except (ValueError, RecursionError) as exc:
            outcomes.append((type(exc).__name__, str(exc)))
        pos += len(line) + 1
    return outcomes


_SCHEMA = {
    "type": "struct",
    "fields": [{"type": "int64", "optional": False, "field": f"COLUMN_{i}"} for i in range(12)],
    "name": "server1.SHOP.ORDERS.Envelope",
}
_HEADS = [
    '{"schema":' + json.dumps(_SCHEMA, separators=(",", ":")),
    '{"schema": ' + json.dumps(_SCHEMA),
    '{"schema":' + json.dumps({**_SCHEMA, "name": "server1.SHOP.ITEMS.Envelope"}, separators=(",", ":")),
    '{"schema":[' + ",".join(['{"a":1.50}'] * 30) + "]",
    '{"schema":{"short":true}',
]
_TAILS = [
    ',"payload":{"op":"c","after":{"ID":1,"PRICE":12.50,"N":NaN}}}',
    ',"payload":{"op":"u","before":{"ID":1},"after":{"ID":1,"ID":2}}}',
    ',"payload":null,"schema":{}}',
    ' , "payload" : {"op":"d"} }',
    "}",
    ",}",
    ',"payload":{"op":"c"}',
    ',"payload":{"op":"c",}}',
    ',"payload":{"op":"c"}}}',
    ',"payload":[1,2,]}',
    " x}",
    ',"payload":"\\ud800"}',
    ',"payload":' + "[" * 40 + "]" * 40 + "}",
    ',"payload":{"op":"c"}, "extra": -0.0e+5}',
    # the rest of a line read as one object by the C scanner: records over several lines read on in
    # Python, a repeated head member after a nested repeat, text after the record on its line
    ',"payload":{"op":"c",\n"after":{"ID":1}}}',
    ',\n"payload":{"op":"c"}}',
    ',"payload":{"a":1,"a":2},"schema":{}}',
    ',"payload":{"op":"c"}}  {"next":1}',
    ',"payload":{"op":"c"}}\r',
]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(_HEADS), st.sampled_from(_TAILS)), min_size=1, max_size=12),
    st.sampled_from([256, 8]),
)
def test_remembered_heads_return_what_whole_parses_return(records, min_chars) -> None:
    text = "\n".join(head + tail for head, tail in records)
    saved = _json.HEAD_MIN_CHARS
    _json.HEAD_MIN_CHARS = min_chars
    try:
        # repr: Decimal('NaN') is not equal to itself; member order must match too
        assert repr(_scan(JsonScanner(), text)) == repr(_scan(_WholeScanner(), text))
    finally:
        _json.HEAD_MIN_CHARS = saved


def test_a_repeated_head_is_parsed_once_and_its_value_shared() -> None:
    head = _HEADS[0]
    text = "\n".join([head + _TAILS[0], head + _TAILS[3]])
    scanner = JsonScanner()
    first, end = scanner.raw_decode(text, 0)
    second, _ = scanner.raw_decode(text, end + 1)
    assert second["schema"] is first["schema"]  # not parsed again
    assert second == {"schema": _SCHEMA, "payload": {"op": "d"}}
    assert first["payload"]["after"]["PRICE"] == Decimal("12.50")  # exact numbers on the fast path too


def test_a_repeated_member_after_a_remembered_head_is_noticed() -> None:
    head = _HEADS[0]
    text = "\n".join([head + _TAILS[0], head + ',"payload":{},"schema":{}}'])
    scanner = JsonScanner()
    _, end = scanner.raw_decode(text, 0)
    assert scanner.duplicate is None
    scanner.raw_decode(text, end + 1)
    assert scanner.duplicate == "schema"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(_HEADS), st.sampled_from(_TAILS)), min_size=1, max_size=8),
    st.sampled_from([256, 8]),
    st.integers(1, 45),
)
def test_a_remembered_head_s_brackets_count_as_if_the_record_were_read_whole(records, min_chars, limit) -> None:
    """The depth check of a record read after a remembered head (its brackets counted once, when it was
    remembered) says what the check of the whole record's text says, and the head is the record's start."""
    text = "\n".join(head + tail for head, tail in records)
    saved = _json.HEAD_MIN_CHARS
    _json.HEAD_MIN_CHARS = min_chars
    try:
        scanner, pos = JsonScanner(), 0
        for line in text.split("\n"):
            try:
                _, end = scanner.raw_decode(text, pos)
            except (ValueError, RecursionError):
                pos += len(line) + 1
                continue
            head = (scanner.head_chars, scanner.head_brackets)
            piece = text[pos : pos + head[0]]
            assert head[1] == piece.count("{") + piece.count("[")
            assert not head[0] or any(h.startswith(piece) or piece == h for h in _HEADS)
            assert _json.nests_deeper(text, pos, end, limit, *head) == _json.nests_deeper(text, pos, end, limit)
            pos += len(line) + 1
    finally:
        _json.HEAD_MIN_CHARS = saved
