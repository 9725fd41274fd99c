"""Every columnar fast path against its reference decoder on hostile input (issue 56): differential fuzzing.

Each example takes a small file of one JSON format in its real encoding (``cdclake.bench.generate``: every column
kind, mixed ops, key changes, update halves) and mutates a few of its records as a damaged landing file might be
damaged: flipped bytes, truncation, invalid UTF-8 in member names and in values, duplicate, blank and escaped
names, huge and negative numbers, the wrong JSON type for a value or for a schema's ``type``, deep nesting, CRLF
line ends, a byte order mark, a replayed line. The decode task then writes its files with and without the fast
path (``columns_check.assert_same_files``): the same events, the same quarantined records with the same reasons,
the same counts, and never an exception. Budgets: ``tests/fuzzing.py`` (small in CI, 1,000+ in ``make fuzz``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import re
import tempfile
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import columns_check
import pytest
from fuzzing import examples
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

import cdclake.formats.columnar as json_columns
from cdclake import native
from cdclake.bench.generate import generate

pytestmark = pytest.mark.fuzz

#: The formats with a columnar fast path (``Decoder.decode_columns`` over ``columnar.read_spans``).
FAST_FORMATS = ("goldengate-json", "debezium-json", "cdl-json", "datahub-blob")
#: Changes in each example's base file: small, so that an example costs milliseconds, yet every op and kind.
BASE_CHANGES = 40

_NAME = re.compile(rb'"([A-Za-z_][A-Za-z_0-9]*)":')
_NUMBER = re.compile(rb"(?<=[:\[,])-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?(?=[,}\]])")
_VALUE = re.compile(rb'(?<=":)(?:"(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*|true|false|null)')
_STRING_VALUE = re.compile(rb'(?<=":")')
_SCHEMA_TYPE = re.compile(rb'(?<="type":)"[a-z0-9]+"')

BAD_UTF8 = (b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe2\x82", b"\xc0\xaf", b"\x80")
HUGE_NUMBERS = (
    b"1" + b"0" * 40,
    b"-1" + b"0" * 40,
    b"9223372036854775808",
    b"-9223372036854775809",
    b"1e400",
    b"-0",
    b"-1",
    b"1.5",
    b"0.000000000000000000000000000000000000001",
    b"12345678901234567890123456789012345678901234567890",
)
WRONG_VALUES = (
    b'"abc"',
    b"true",
    b"{}",
    b"[]",
    b"null",
    b"12345",
    b"1000000000000",
    b'"AAAA"',
    b'"not base64!"',
    b'{"a":{"b":1}}',
    b'["x",1]',
    b'""',
    b'"2024-13-45 99:99:99"',
    b'"\\ud800"',
)
SCHEMA_TYPES = (b'{"a":1}', b'["int64"]', b"null", b"7", b'"nosuchtype"', b'""', b'"struct"', b'"bytes"')


@dataclass(frozen=True)
class Base:
    """One format's base file and the options it is decoded with."""

    data: bytes
    options: dict[str, str]


#: Each format's real samples (``tests/fixtures/<dir>``, sources in its SOURCES.md).
FIXTURE_DIRS = {
    "goldengate-json": ("goldengate_json",),
    "debezium-json": ("debezium_json",),
    "cdl-json": ("cdl_json", "debezium_json/seed"),
    "datahub-blob": ("datahub_blob",),
}
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@functools.cache
def base(format_id: str, real: bool = False) -> Base:
    """The generated stream's file, or (``real``) the format's real samples, each record written as a writer in
    the compact form would (one per line), so that the fast path reads them."""
    if real:
        return Base(b"".join(_compact(path) for path in _fixture_files(format_id)), {})
    with tempfile.TemporaryDirectory() as work:
        written, _ = generate([format_id], Path(work), BASE_CHANGES, seed=11)
        generated = written[format_id]
        data = b"".join(path.read_bytes() for path in generated.files)
        return Base(data, dict(generated.options))


def _fixture_files(format_id: str) -> list[Path]:
    found = [p for d in FIXTURE_DIRS[format_id] for p in sorted((FIXTURES / d).rglob("*")) if p.is_file()]
    return [p for p in found if p.suffix in (".json", ".jsonl", ".txt")]


def _compact(path: Path) -> bytes:
    """A sample file's records (JSON documents one after another, pretty or not; a top-level list is its items),
    one compact JSON text per line; what follows a part that is not JSON is left out."""
    text, at, records = path.read_text(encoding="utf-8", errors="replace"), 0, []
    reader = json.JSONDecoder()
    while True:
        at = len(text) - len(text[at:].lstrip())
        if at >= len(text):
            break
        try:
            record, at = reader.raw_decode(text, at)
        except json.JSONDecodeError:
            break
        records.extend(record if isinstance(record, list) else [record])
    return b"".join(json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode() + b"\n" for r in records)


def _nth(pattern: re.Pattern[bytes], line: bytes, k: int) -> re.Match[bytes] | None:
    found = list(pattern.finditer(line))
    return found[k % len(found)] if found else None


def _replace(line: bytes, match: re.Match[bytes] | None, text: bytes, group: int = 0) -> bytes:
    return line if match is None else line[: match.start(group)] + text + line[match.end(group) :]


def _insert(line: bytes, at: int, text: bytes) -> bytes:
    return line[:at] + text + line[at:]


def mutate_line(line: bytes, kind: str, k: int, pick: int, byte: int) -> bytes:
    """``line`` (one record) damaged one way; ``k`` chooses where, ``pick`` what."""
    size = max(len(line), 1)
    if kind == "flip":
        at = k % size
        return line[:at] + bytes([byte]) + line[at + 1 :]
    if kind == "truncate":
        return line[: k % size]
    if kind == "bad_utf8_name":
        match = _nth(_NAME, line, k)
        return line if match is None else _insert(line, match.end(1), BAD_UTF8[pick % len(BAD_UTF8)])
    if kind == "bad_utf8_value":
        match = _nth(_STRING_VALUE, line, k)
        return line if match is None else _insert(line, match.end(), BAD_UTF8[pick % len(BAD_UTF8)])
    if kind == "duplicate_name":
        match = _nth(_NAME, line, k)
        return line if match is None else _insert(line, match.start(), match.group(0) + b"null,")
    if kind == "blank_name":
        return _replace(line, _nth(_NAME, line, k), b"", 1)
    if kind == "escaped_name":
        match = _nth(_NAME, line, k)
        return _replace(line, match, b"\\u0041" + match.group(1)[1:], 1) if match else line
    if kind == "number":
        return _replace(line, _nth(_NUMBER, line, k), HUGE_NUMBERS[pick % len(HUGE_NUMBERS)])
    if kind == "wrong_type":
        return _replace(line, _nth(_VALUE, line, k), WRONG_VALUES[pick % len(WRONG_VALUES)])
    if kind == "schema_type":
        return _replace(line, _nth(_SCHEMA_TYPE, line, k), SCHEMA_TYPES[pick % len(SCHEMA_TYPES)])
    if kind == "deep":
        depth = (40, 120, 1200)[pick % 3]
        return _replace(line, _nth(_VALUE, line, k), b"[" * depth + b"]" * depth)
    raise AssertionError(kind)


LINE_MUTATIONS = (
    "flip",
    "truncate",
    "bad_utf8_name",
    "bad_utf8_value",
    "duplicate_name",
    "blank_name",
    "escaped_name",
    "number",
    "wrong_type",
    "schema_type",
    "deep",
)
mutations = st.tuples(
    st.sampled_from(LINE_MUTATIONS),
    st.integers(0, 10_000),  # which record
    st.integers(0, 10_000),  # where in it
    st.integers(0, 100),  # what
    st.integers(0, 255),  # a flipped byte
)
#: Now and then: a file-wide change sends the whole file to the reference, which compares little of the fast path.
rarely = st.sampled_from([False] * 7 + [True])
file_changes = st.fixed_dictionaries(
    {"crlf": rarely, "bom": rarely, "replay": st.booleans(), "cut": st.none() | st.integers(0, 10**6)}
)


def hostile(data: bytes, edits: list[tuple[str, int, int, int, int]], whole: dict) -> bytes:
    """``data`` with ``edits`` made to its records and ``whole``'s changes to the file."""
    lines = data.split(b"\n")
    for kind, index, k, pick, byte in edits:
        at = index % len(lines)
        lines[at] = mutate_line(lines[at], kind, k, pick, byte)
    if whole["replay"]:
        lines.insert(len(lines) // 2, lines[0])
    out = (b"\r\n" if whole["crlf"] else b"\n").join(lines)
    if whole["cut"] is not None:
        out = out[: whole["cut"] % (len(out) + 1)]
    return (b"\xef\xbb\xbf" if whole["bom"] else b"") + out


#: Span sizes drawn: the decode task's, and small ones (a few records each) to cross the fallback's boundary.
SPANS = (json_columns.SPAN_BYTES, 600, 600, 2500, 2500)
QUIET = {"crlf": False, "bom": False, "replay": False, "cut": None}
#: The rest of a fixed example: what a fuzz run found, or the issue reported, kept in every run.
FOUND = {"whole": QUIET, "span": 600, "real": False, "native": True}


@pytest.mark.parametrize("format_id", FAST_FORMATS)
@settings(max_examples=examples(12), deadline=None, suppress_health_check=list(HealthCheck))
@given(
    edits=st.lists(mutations, min_size=1, max_size=4),
    whole=file_changes,
    span=st.sampled_from(SPANS),
    real=rarely,
    native=st.booleans(),
)
@example(edits=[("bad_utf8_name", 5, 0, 0, 0)], **FOUND)  # the byte: the fast path raised
@example(edits=[("bad_utf8_value", 9, 1, 0, 0), ("bad_utf8_name", 20, 3, 2, 0)], **FOUND)
@example(edits=[("schema_type", 3, 0, 0, 0)], **FOUND)  # {"a":1} as a field's type: both paths raised
@example(edits=[("schema_type", 0, 2, 0, 0)], **FOUND)  # the same in the envelope's image struct
@example(edits=[("schema_type", 3, 0, 1, 0)], **FOUND)
@example(edits=[("wrong_type", 7, 4, 6, 0)], **FOUND)  # a 13-digit integer where text is due
@example(edits=[("duplicate_name", 2, 5, 0, 0), ("blank_name", 4, 2, 0, 0)], **FOUND)
def test_fast_path_matches_reference_on_hostile_files(
    format_id: str, edits: list, whole: dict, span: int, real: bool, native: bool
) -> None:
    start = base(format_id, real)
    with _gave_up() as faults, _spans_of(span), _native_helpers(native):
        spans = columns_check.assert_same_files(format_id, hostile(start.data, edits, whole), start.options)
    event(f"{format_id}: spans read by the fast path: {min(spans, 3)}{'+' if spans >= 3 else ''}")
    # the net (``columnar.guarded_span``) keeps a batch going; a fast path that raises is still a gap in it
    assert not faults, faults


@contextlib.contextmanager
def _spans_of(size: int) -> Iterator[None]:
    """Spans of about ``size`` bytes: small ones put records before the damage in spans the fast path reads."""
    kept = json_columns.SPAN_BYTES
    json_columns.SPAN_BYTES = size
    try:
        yield
    finally:
        json_columns.SPAN_BYTES = kept


def _native_helpers(on: bool) -> contextlib.AbstractContextManager[None]:
    """The C helpers as built (``on``), or their Python paths (``cdclake.native.disabled``): both are held to the
    reference."""
    return native.disabled(not on)


class _Faults(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        trace = "".join(traceback.format_exception(*record.exc_info)[-4:]) if record.exc_info else ""
        self.messages.append(record.getMessage() + "\n" + trace)


@contextlib.contextmanager
def _gave_up() -> Iterator[list[str]]:
    """The messages of fast paths that raised (and were caught) while the block ran."""
    handler = _Faults()
    logger = logging.getLogger("cdclake.formats.columnar")
    logger.addHandler(handler)
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)


@pytest.mark.parametrize("format_id", FAST_FORMATS)
def test_real_samples_are_a_base(format_id: str) -> None:
    """Every format's real samples feed the fuzz (a file that parses no record would test nothing)."""
    assert base(format_id, real=True).data.count(b"\n") >= 2


@pytest.mark.parametrize("format_id", FAST_FORMATS)
def test_base_files_take_the_fast_path(format_id: str) -> None:
    """The undamaged base is read by the fast path (so the fuzz compares two paths, not the reference twice)."""
    start = base(format_id)
    assert columns_check.assert_same_files(format_id, start.data, start.options) >= 1


@pytest.mark.parametrize("format_id", ["goldengate-json", "debezium-json", "cdl-json"])
def test_a_span_the_fast_path_refuses_is_the_reference_s_alone(format_id: str) -> None:
    """A valid record the fast path does not read (an escaped member name) costs its span, not the rest of the file:
    the reference reads that span alone (``columnar.reference_window``) and the fast path goes on after it."""
    start = base(format_id)
    with _spans_of(2500):
        clean = columns_check.assert_same_files(format_id, start.data, start.options)
        escaped = start.data.replace(b'"STATUS":"', b'"\\u0053TATUS":"', 1)
        assert escaped != start.data
        assert columns_check.assert_same_files(format_id, escaped, start.options) == clean - 1


def test_a_span_with_a_rejected_record_hands_the_rest_of_the_file_to_the_reference() -> None:
    """A record the reference rejects may be judged by what follows it (a record cut short swallows the next),
    so its span's window cannot stand for the whole read: the reference reads on to the end of the file."""
    start = base("goldengate-json")
    lines = start.data.split(b"\n")
    lines[3] = lines[3][: len(lines[3]) // 2]
    with _spans_of(2500):
        assert columns_check.assert_same_files("goldengate-json", b"\n".join(lines), start.options) <= 1
