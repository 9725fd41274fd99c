"""JSON scanning shared by the JSON decoders (GoldenGate JSON, Debezium, CDL, DataHub).

- :class:`JsonScanner`: ``JSONDecoder.raw_decode`` with exact numbers (``Decimal``, NaN and
  Infinity too) that also notices a member name repeated in one object. ``{"op": "c", "op": "d"}``
  is valid JSON syntax whose meaning readers disagree on (Python keeps the last value, other
  readers the first, strict ones refuse): a record whose meaning depends on the reader is
  rejected, never guessed at.
- :func:`loads_unique`: ``json.loads`` refusing repeated member names (schema texts from the data).
- :func:`truncation_hint`: words for a parse error caused by the text ending inside the
  record, so a cut file says "truncated" rather than only what token was expected.
- :func:`json_kind`: the JSON type name of a parsed value, for reasons.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

_TRUNCATED = "; the file ends inside the record: it looks truncated"
#: A structureless fragment at the end of the text shorter than this reads as a cut-off token.
_FRAGMENT = 64
_NON_BLANK = re.compile(r"\S")


class JsonScanner:
    """Reads one JSON value at a position; :attr:`duplicate` names a repeated member of it."""

    def __init__(self) -> None:
        self.duplicate: str | None = None
        self._decoder = json.JSONDecoder(parse_float=Decimal, parse_constant=Decimal, object_pairs_hook=self._object)

    def raw_decode(self, text: str, pos: int) -> tuple[Any, int]:
        """(value, end) like ``JSONDecoder.raw_decode``; :attr:`duplicate` is set for this value."""
        self.duplicate = None
        return self._decoder.raw_decode(text, pos)

    def _object(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(pairs)
        if len(result) != len(pairs) and self.duplicate is None:
            self.duplicate = _first_duplicate(pairs)
        return result


def _first_duplicate(pairs: list[tuple[str, Any]]) -> str:
    seen: set[str] = set()
    for name, _ in pairs:
        if name in seen:
            return name
        seen.add(name)
    raise AssertionError("no duplicate")  # pragma: no cover - only called when dict(pairs) lost a pair


def duplicate_reason(name: str) -> str:
    """Rejection reason for a record with a repeated member name."""
    shown = name if len(name) <= 80 else name[:77] + "..."
    return (
        f"a JSON object in the record has the member {shown!r} more than once (duplicate key); JSON readers "
        "disagree on which value counts, so the record is not guessed at"
    )


def truncation_hint(exc: json.JSONDecodeError, text: str) -> str:
    """``"; the file ends inside the record: it looks truncated"`` when the text ran out (else "").

    The text ran out when the parser failed at its end, inside a string that never closes, or
    on a last fragment without any JSON structure (a literal or number cut short: ``tr``, ``1.``).
    """
    if exc.msg.startswith("Unterminated string"):
        return _TRUNCATED
    window = exc.pos + _FRAGMENT
    if _NON_BLANK.search(text, window) is None and not any(c in text[exc.pos : window] for c in '{}[],:"'):
        return _TRUNCATED
    return ""


def json_kind(value: Any) -> str:
    """The JSON type name of a parsed value (for reasons)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float, Decimal)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


class DuplicateKeyError(ValueError):
    """A JSON object repeats a member name (see :class:`JsonScanner` for why that is refused)."""


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        name = _first_duplicate(pairs)
        raise DuplicateKeyError(f"a JSON object has the member {name[:80]!r} more than once (duplicate key)")
    return result


def loads_unique(text: str) -> Any:
    """``json.loads`` that refuses repeated member names (:class:`DuplicateKeyError`, a ValueError).

    For schema texts that come with the data: two ``"type"`` members in one Avro type would make
    the schema mean what this reader happens to pick, not what the writer used.
    """
    return json.loads(text, object_pairs_hook=_unique_object)


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_EMPTY_CONTAINER = re.compile(r"\{\}|\[\]")
_BRACKETS_ONLY = str.maketrans({c: None for c in map(chr, range(128)) if c not in "{}[]"})


def nests_deeper(text: str, start: int, end: int, limit: int) -> bool:
    """Whether the JSON value ``text[start:end]`` (already parsed, so well formed) nests containers
    deeper than ``limit``.

    Worked out on the text rather than by walking the parsed value, which cost a decoder more than
    parsing did (a Debezium record with its schema block holds hundreds of containers): when the
    text has at most ``limit`` opening brackets it cannot nest deeper (one C count); otherwise the
    strings are cut out, the brackets kept, and each round of removing every empty ``{}`` / ``[]``
    takes exactly one level off, so the number of rounds is the depth.
    """
    if text.count("{", start, end) + text.count("[", start, end) <= limit:
        return False
    brackets = _STRING.sub("", text[start:end]).translate(_BRACKETS_ONLY)
    for _ in range(limit):
        if not brackets:
            return False
        brackets = _EMPTY_CONTAINER.sub("", brackets)
    return bool(brackets)
