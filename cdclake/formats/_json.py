"""JSON scanning shared by the JSON decoders (GoldenGate JSON, Debezium, CDL, DataHub).

- :class:`JsonScanner`: ``JSONDecoder.raw_decode`` with exact numbers (``Decimal``, NaN and
  Infinity too) that also notices a member name repeated in one object. ``{"op": "c", "op": "d"}``
  is valid JSON syntax whose meaning readers disagree on (Python keeps the last value, other
  readers the first, strict ones refuse): a record whose meaning depends on the reader is
  rejected, never guessed at. It also remembers a record's long first member (the ``schema``
  block Debezium, CDL and DataHub repeat in every record, 80% of its bytes) and parses only the
  rest of a record that starts with the same text.
- :func:`loads_unique`: ``json.loads`` refusing repeated member names (schema texts from the data).
- :func:`truncation_hint`: words for a parse error caused by the text ending inside the
  record, so a cut file says "truncated" rather than only what token was expected.
- :func:`json_kind`: the JSON type name of a parsed value, for reasons.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from json.decoder import JSONObject
from typing import Any

_TRUNCATED = "; the file ends inside the record: it looks truncated"
#: A structureless fragment at the end of the text shorter than this reads as a cut-off token.
_FRAGMENT = 64
_NON_BLANK = re.compile(r"\S")


#: A record's first member is remembered when its text is at least this long ...
HEAD_MIN_CHARS = 256
#: ... and at most this long; this many are kept, the most recently used first.
HEAD_MAX_CHARS = 1 << 20
HEADS = 16
#: The rest of a record's line read by the C scanner is at most this long (a copy of it is made).
REST_MAX_CHARS = 1 << 20
_WHITESPACE = re.compile(r"[ \t\n\r]*")


class JsonScanner:
    """Reads one JSON value at a position; :attr:`duplicate` names a repeated member of it.

    A record that starts with the exact text of a remembered first member (``{"schema":{...}``,
    see :data:`HEAD_MIN_CHARS`) gets that member's parsed value without parsing it again: the same
    text parses to the same value, and it was checked (no repeated member names) when first read.
    Only the members after it are parsed; when they are not well formed the whole record is parsed
    again the ordinary way, so errors and their positions are the reader's own. The value is shared
    by every record that repeats it: decoders read parsed values, they never change them.
    """

    def __init__(self) -> None:
        self.duplicate: str | None = None
        #: Of the value last read: the characters of its remembered first member (0: none) and the brackets
        #: (``{`` and ``[``) in them, so a reader looks at the rest of the record alone (the head holds no
        #: row values, and its brackets are counted once).
        self.head_chars = 0
        self.head_brackets = 0
        self._decoder = json.JSONDecoder(parse_float=Decimal, parse_constant=Decimal, object_pairs_hook=self._object)
        # (text from the record's "{", member name, value, brackets in the text)
        self._heads: list[tuple[str, str, Any, int]] = []

    def raw_decode(self, text: str, pos: int) -> tuple[Any, int]:
        """(value, end) like ``JSONDecoder.raw_decode``; :attr:`duplicate` is set for this value."""
        self.duplicate = None
        self.head_chars = self.head_brackets = 0
        if self._heads and text.startswith('{"', pos):
            for index, head in enumerate(self._heads):
                if text.startswith(head[0], pos):
                    found = self._after_head(text, pos + len(head[0]), head[1], head[2])
                    if found is not None:
                        if index:
                            self._heads.insert(0, self._heads.pop(index))
                        self.head_chars, self.head_brackets = len(head[0]), head[3]
                        return found
                    self.duplicate = None
                    break
        value, end = self._decoder.raw_decode(text, pos)
        if type(value) is dict and value and self.duplicate is None:
            self._remember_head(text, pos, value)
        return value, end

    def _after_head(self, text: str, at: int, name: str, head_value: Any) -> tuple[dict[str, Any], int] | None:
        """The record whose first member (``name``: ``head_value``) ends at ``at``, or None when
        what follows is not the rest of a well-formed object (then it is parsed whole)."""
        at = _WHITESPACE.match(text, at).end()  # type: ignore[union-attr]  # always matches
        after = text[at : at + 1]
        try:
            if after == "}":
                pairs, end = [], at + 1
            elif after == ",":
                at = _WHITESPACE.match(text, at + 1).end()  # type: ignore[union-attr]
                if text[at : at + 1] != '"':
                    return None
                found = self._rest_of_line(text, at, name, head_value)
                if found is not None:
                    return found
                self.duplicate = None  # what the C scanner saw before it failed is read again
                decoder = self._decoder
                pairs, end = JSONObject((text, at), decoder.strict, decoder.scan_once, None, list, {})
            else:
                return None
        except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
            return None
        return self._object([(name, head_value), *pairs]), end

    def _rest_of_line(self, text: str, at: int, name: str, head_value: Any) -> tuple[dict[str, Any], int] | None:
        """The record whose members after the first start at ``at``, read by the C scanner as the object
        ``{`` + the rest of the line (one record per line, the common framing); None when that is not a
        whole object (a record over several lines: the caller reads on in Python) or repeats ``name``
        (the caller reads the record whole, so the reason names the first repeated member)."""
        line_end = text.find("\n", at)
        if line_end < 0:
            line_end = len(text)
        if line_end - at > REST_MAX_CHARS:
            return None
        try:
            rest, end = self._decoder.scan_once("{" + text[at:line_end], 0)
        except (StopIteration, ValueError):
            return None
        if type(rest) is not dict or name in rest:
            return None
        value = {name: head_value}
        value.update(rest)
        return value, at + end - 1  # the copy's "{" stands for the text's character before ``at``

    def _remember_head(self, text: str, pos: int, value: dict[str, Any]) -> None:
        name = next(iter(value))
        member = value[name]
        if not isinstance(member, (dict, list)):
            return
        opening = '{"' + name + '":'
        if not text.startswith(opening, pos):  # blanks or escapes in the name: not the common shape
            return
        start = _WHITESPACE.match(text, pos + len(opening)).end()  # type: ignore[union-attr]
        _, end = self._decoder.scan_once(text, start)  # the record parsed, so this member does too
        if HEAD_MIN_CHARS <= end - pos <= HEAD_MAX_CHARS:
            head = text[pos:end]
            self._heads.insert(0, (head, name, member, head.count("{") + head.count("[")))
            del self._heads[HEADS:]

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


def unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
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
    return json.loads(text, object_pairs_hook=unique_object)


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_EMPTY_CONTAINER = re.compile(r"\{\}|\[\]")
_BRACKETS_ONLY = str.maketrans({c: None for c in map(chr, range(128)) if c not in "{}[]"})


def nests_deeper(text: str, start: int, end: int, limit: int, head_chars: int = 0, head_brackets: int = 0) -> bool:
    """Whether the JSON value ``text[start:end]`` (already parsed, so well formed) nests containers
    deeper than ``limit``.

    Worked out on the text rather than by walking the parsed value, which cost a decoder more than
    parsing did (a Debezium record with its schema block holds hundreds of containers): when the
    text has at most ``limit`` opening brackets it cannot nest deeper (one C count); otherwise the
    strings are cut out, the brackets kept, and each round of removing every empty ``{}`` / ``[]``
    takes exactly one level off, so the number of rounds is the depth. ``head_chars``: characters at ``start``
    whose brackets are already counted, ``head_brackets`` of them (:attr:`JsonScanner.head_chars`).
    """
    counted = start + head_chars
    if head_brackets + text.count("{", counted, end) + text.count("[", counted, end) <= limit:
        return False
    brackets = _STRING.sub("", text[start:end]).translate(_BRACKETS_ONLY)
    for _ in range(limit):
        if not brackets:
            return False
        brackets = _EMPTY_CONTAINER.sub("", brackets)
    return bool(brackets)
