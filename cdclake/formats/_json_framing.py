"""The records of a JSON landing file, shared by ``goldengate-json``, ``debezium-json`` and the
DataHub / CDL decoders (through :func:`cdclake.formats._datahub.scan_json`).

One ``JSONDecoder.raw_decode`` loop reads every framing: one record per line, concatenated or
pretty-printed. A record that cannot be parsed is rejected with its bytes and byte offset, and
scanning resumes where the format says the next record starts, so junk costs only itself. A
parsed record that is too big, holds bytes the encoding could not decode, nests too deeply or
repeats a member name is rejected alone. The loop and its checks are the same for every format;
what differs (what stands between records, where to resume, the words of a rejection) is the
format's :class:`JsonFraming`. Its limits (:class:`JsonLimits`) are passed at call time, from the
format's module, where tests patch them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from cdclake.events.change import Rejected, Source
from cdclake.formats._gg_common import ESCAPED
from cdclake.formats._json import JsonScanner, duplicate_reason, nests_deeper

_BLANKS = re.compile(r"[ \t\r\n\f\v]*")


class ByteOffsetMap(Protocol):
    """Byte offset in the file of a character position of its decoded text (asked in growing order)."""

    #: Whether the text may hold escaped (undecodable) bytes; False only when the decode found none.
    escapes: bool

    def at(self, char_pos: int) -> int: ...


@dataclass(frozen=True, slots=True)
class JsonFraming:
    """How one format frames and words its JSON records.

    Bytes the text's decoding could not decode are lone surrogates U+DC00-U+DCFF (what both
    ``surrogateescape`` and :data:`~cdclake.formats._gg_common.ESCAPE_ERRORS` make of them).
    """

    #: Where scanning resumes after a record at a position could not be parsed (after it).
    resync: Callable[[str, int], int]
    #: That place in words, for ``skipped N bytes up to ...`` (the end of the file is worded here).
    resume: str
    #: The reason for a parse error of the record starting at a position.
    json_error: Callable[[json.JSONDecodeError, str, int], str]
    #: The reason for an undecodable byte at a position of a parsed record.
    encoding_error: Callable[[str, int], str]
    #: What may stand between records (also matches the empty string).
    separators: re.Pattern[str] = _BLANKS


class JsonLimits(NamedTuple):
    """The limits a format's records are held to."""

    max_record_bytes: int
    max_depth: int
    max_raw_bytes: int


@dataclass(slots=True)
class JsonRecord:
    """One parsed JSON value with where it was read (its bytes copied only when it is rejected)."""

    value: Any
    source: Source
    data: bytes
    end: int
    max_raw_bytes: int
    #: Byte offset of what follows a remembered first member (the ``schema`` block; the record's start when
    #: none was): row values are only there, so a search for one need not read the block.
    rest: int = -1

    @property
    def body(self) -> int:
        """Where the record's row values may start (its first byte, or the end of a remembered first member)."""
        return self.source.offset if self.rest < 0 else self.rest

    def raw(self) -> bytes:
        start = self.source.offset
        return self.data[start : min(self.end, start + self.max_raw_bytes)]

    def reject(self, reason: str) -> Rejected:
        return Rejected(reason, self.source, self.raw())


def scan_records(
    data: bytes,
    file: str,
    text: str,
    offsets: ByteOffsetMap,
    framing: JsonFraming,
    limits: JsonLimits,
) -> Iterator[JsonRecord | Rejected]:
    """The records of ``text`` (``data`` decoded), in file order, or the rejections of what is not one."""
    max_record_bytes, max_depth, max_raw_bytes = limits
    scanner = JsonScanner()  # exact numbers (NaN, Infinity too), repeated member names noticed
    has_escapes = offsets.escapes and ESCAPED.search(text) is not None
    pos, end_of_text = 0, len(text)
    while True:
        pos = framing.separators.match(text, pos).end()  # type: ignore[union-attr]  # always matches
        if pos >= end_of_text:
            return
        start = pos
        try:
            value, pos = scanner.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            reason = framing.json_error(exc, text, start)
        except RecursionError:
            reason = f"record nests JSON deeper than {max_depth} levels (line {line_of(text, start)})"
        except ValueError as exc:  # e.g. an integer longer than Python converts (sys.get_int_max_str_digits)
            reason = f"cannot read the record at line {line_of(text, start)}: {exc}"
        else:
            head_chars = scanner.head_chars
            byte_start = offsets.at(start)
            rest = offsets.at(start + head_chars) if head_chars else -1
            byte_end = offsets.at(pos)
            record = JsonRecord(value, Source(file, byte_start), data, byte_end, max_raw_bytes, rest)
            escaped = ESCAPED.search(text, start, pos) if has_escapes else None
            if byte_end - byte_start > max_record_bytes:
                size = byte_end - byte_start
                yield record.reject(f"record is {size} bytes, larger than the limit of {max_record_bytes}")
            elif escaped is not None:
                yield record.reject(framing.encoding_error(text, escaped.start()))
            elif nests_deeper(text, start, pos, max_depth, head_chars, scanner.head_brackets):
                yield record.reject(f"record nests JSON deeper than {max_depth} levels")
            elif scanner.duplicate is not None:
                yield record.reject(duplicate_reason(scanner.duplicate))
            else:
                yield record
            continue
        pos = framing.resync(text, start)
        resume = "the end of the file" if pos >= end_of_text else framing.resume
        end = len(text[start:pos].rstrip()) + start  # trailing blanks are not part of what is skipped
        byte_start, byte_end = offsets.at(start), offsets.at(end)
        reason = f"{reason}; skipped {byte_end - byte_start} bytes up to {resume}"
        yield Rejected(reason, Source(file, byte_start), data[byte_start : min(byte_end, byte_start + max_raw_bytes)])


def line_of(text: str, char_pos: int) -> int:
    """The line number (from 1) of a character position, for reasons."""
    return text.count("\n", 0, char_pos) + 1
