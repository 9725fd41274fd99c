"""GoldenGate for Big Data XML formatter output (format id ``goldengate-xml``, vendor doc §6.7).

Why it is written this way:

- A landing file holds ``<operation>`` documents one after the other, each with or without the
  ``<?xml ...?>`` prolog (``includeProlog``). A small scanner finds where each document ends:
  it steps over CDATA sections, comments, processing instructions and declarations, so that a
  column value holding XML text (``<![CDATA[<row>...</row>]]>``, seen in real output) never looks
  like a document boundary; a new document starts at a ``<?xml`` prolog or at an
  ``<operation`` start tag outside any markup. The scanner only splits; parsing is done by
  ``defusedxml`` with DTDs, entity declarations and external references forbidden, so entity
  expansion (billion laughs) and external entities (XXE) are rejected, never expanded.
- Each document is decoded in the encoding its prolog declares (``encoding='ISO-8859-1'``), else
  in the ``encoding`` option; bytes invalid in that encoding reject only their document.
- A column is ``<col name=.. index=..>`` with ``<before>`` / ``<after>``: text or CDATA is a value,
  ``missing='true'`` a missing column (absent key), ``isNull='true'`` NULL (None, as real
  GoldenGate output writes it), ``<missing/>`` missing in both images. Values are text; the
  ``columns`` option or a table's ``.avsc`` gives types (``17520.00`` an exact Decimal).
- ``pos`` is the commit order (zero-padded to 32 digits); ``current_ts`` is processing time and
  only kept in ``meta``.
"""

from __future__ import annotations

import datetime as dt
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from defusedxml import DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden
from defusedxml.ElementTree import fromstring

from cdclake.events.change import ChangeEvent, Rejected, Source
from cdclake.formats._gg_common import (
    ESCAPE_ERRORS,
    ESCAPED,
    OP_OPTIONS,
    Layout,
    LayoutTracker,
    OpKeys,
    SchemaDir,
    codec_for,
    decode_text,
    encoded_length,
    encoding_error,
    is_ascii_compatible,
    merge_types,
    parse_columns_option,
    parse_ts,
    pos_to_seq,
    python_codec,
    raw_slice,
    typed,
)
from cdclake.options import OptionError, Options
from cdclake.registry import Decoder, register
from cdclake.runtime.limits import MAX_RECORD_BYTES
from cdclake.runtime.limits import MAX_XML_DEPTH as MAX_DEPTH

_XML_DECL = re.compile(r"<\?xml[\s?]")
_BOUNDARY = re.compile(r"<\?xml[\s?]|<operation[\s/>]")
_NAME = re.compile(r"[^\s/>!?<\"'=]+")
_END_TAG_REST = re.compile(r"[^<>]*>")
_TAG_REST = re.compile(r"""(?:[^"'<>]+|"[^"<]*"|'[^'<]*')*+>""")
_DECL_REST = re.compile(r"""(?:[^"'\[\]>]+|"[^"]*"|'[^']*'|\[(?:[^"'\]]+|"[^"]*"|'[^']*')*+\])*+>""")
_ENCODING_DECL = re.compile(r"""<\?xml[^>]*?\sencoding\s*=\s*(["'])([^"']*)\1""")
_BLANK = re.compile(r"[ \t\r\n]*")
_BOMS = ((b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


@dataclass(slots=True)
class _Chunk:
    """One document (or unreadable stretch) of the file, in character positions of the scan text."""

    start: int
    end: int
    problem: str | None = None
    #: Only comments, processing instructions and blanks: nothing to decode, nothing to reject.
    empty: bool = False
    too_deep: bool = False
    #: Where the problem is (character position in the scan text), when it is not the start.
    problem_at: int | None = None


@register("goldengate-xml")
class GoldenGateXmlDecoder(Decoder):
    """Decoder of GoldenGate XML formatter documents (see the module docstring)."""

    option_names = frozenset(
        {name for name, _, _ in OP_OPTIONS}
        | {"encoding", "includeProlog", "iso8601Format", "columns", "schemaDirectory"}
    )

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self.op_keys = OpKeys(options)
        for name, default in (("includeProlog", False), ("iso8601Format", True)):
            options.bool(name, default)  # shape the writer's output only; validated
        self.encoding = options.str("encoding") or "UTF-8"
        self.codec = python_codec(self.encoding)
        self.columns = parse_columns_option(options.str("columns"))
        self.schemas = SchemaDir(self.schema_dir or options.str("schemaDirectory"))
        self.layouts = LayoutTracker()

    # --- framing --------------------------------------------------------------------------------

    def decode(self, data: bytes, file: str) -> Iterator[ChangeEvent | Rejected]:
        """Events and rejected records of one landing file (already gunzipped), in file order."""
        self.schemas.new_file()
        codec = self.codec
        for bom, name in _BOMS:
            if data.startswith(bom):
                codec = name  # a UTF-16 byte order mark says more than the option
        probe, bom_length = codec_for(codec, data)
        if is_ascii_compatible(probe):
            # Markup is ASCII: scan the bytes as Latin-1 (one character per byte) and decode each
            # document in the encoding it declares.
            text, offsets, per_document = data.decode("latin-1"), None, True
            position = bom_length
        else:
            text, offsets = decode_text(data, codec)
            per_document, position = False, 0
        for chunk in self._chunks(text, position):
            start = chunk.start if offsets is None else offsets.at(chunk.start)
            end = chunk.end if offsets is None else offsets.at(chunk.end)
            source = Source(file, start)
            raw = raw_slice(data, start, end)
            if chunk.problem is not None:
                problem = chunk.problem
                if chunk.problem_at is not None:
                    at = chunk.problem_at
                    if offsets is not None:
                        at = start + encoded_length(text[chunk.start : chunk.problem_at], offsets.codec)
                    problem = problem.replace("{at}", f"at byte {at}")
                yield Rejected(f"document at byte {start}: {problem}", source, raw)
                continue
            if end - start > MAX_RECORD_BYTES:
                reason = f"document at byte {start}: {end - start} bytes, larger than the limit of {MAX_RECORD_BYTES}"
                yield Rejected(reason, source, raw)
                continue
            if chunk.too_deep:
                yield Rejected(f"document at byte {start}: elements nest deeper than {MAX_DEPTH} levels", source, raw)
                continue
            document: str | _Problem
            if per_document:
                document = self._decode_document(data, start, end, text[chunk.start : chunk.end])
            else:
                assert offsets is not None
                document = text[chunk.start : chunk.end]
                escaped = ESCAPED.search(document)
                if escaped is not None:
                    bad_at = start + encoded_length(document[: escaped.start()], offsets.codec)
                    document = _Problem(encoding_error(document, escaped.start(), self.encoding, bad_at))
            if isinstance(document, _Problem):
                yield Rejected(f"document at byte {start}: {document.reason}", source, raw)
                continue
            yield from self._document(document, source, raw)

    def _decode_document(self, data: bytes, start: int, end: int, latin1: str) -> str | _Problem:
        declared = _ENCODING_DECL.match(latin1)
        encoding = self.encoding
        if declared is not None:
            encoding = declared.group(2)
            try:
                codec = python_codec(encoding)
            except OptionError:
                return _Problem(f"the prolog declares encoding {encoding!r}, which is not a known character encoding")
        else:
            codec = self.codec
        document = data[start:end].decode(codec, ESCAPE_ERRORS)
        escaped = ESCAPED.search(document)
        if escaped is not None:
            bad_at = start + encoded_length(document[: escaped.start()], codec)
            return _Problem(encoding_error(document, escaped.start(), encoding, bad_at))
        return document

    def _chunks(self, text: str, position: int) -> Iterator[_Chunk]:
        """Documents and unreadable stretches of ``text`` from ``position`` on (always advancing)."""
        end_of_text = len(text)
        finder = _Finder(text)
        while True:
            position = _BLANK.match(text, position).end()  # type: ignore[union-attr]
            if position >= end_of_text:
                return
            if text[position] != "<":
                end = finder.boundary(position)
                yield _Chunk(position, end, "text outside any <operation> document")
                position = end
                continue
            chunk = _scan(text, position, finder)
            if not chunk.empty:
                yield chunk
            position = chunk.end

    # --- one document ---------------------------------------------------------------------------

    def _document(self, document: str, source: Source, raw: bytes) -> Iterator[ChangeEvent | Rejected]:
        where = f"document at byte {source.offset}"
        try:
            root = fromstring(document, forbid_dtd=True, forbid_entities=True, forbid_external=True)
        except (DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden) as exc:
            kind = {DTDForbidden: "a DTD (<!DOCTYPE ...>)", EntitiesForbidden: "an entity declaration"}.get(
                type(exc), "an external reference"
            )
            yield Rejected(
                f"{where}: it has {kind}; DTDs, entities and external references are never read (protection"
                " against entity expansion and XXE), and GoldenGate does not write them",
                source,
                raw,
            )
            return
        except ET.ParseError as exc:
            line, column = exc.position
            message = str(exc).split(": line ")[0]
            yield Rejected(f"{where}: invalid XML at line {line}, column {column + 1}: {message}", source, raw)
            return
        except (ValueError, RecursionError) as exc:
            yield Rejected(f"{where}: cannot read the document: {exc}", source, raw)
            return
        result = self._operation(root, source)
        if isinstance(result, str):
            yield Rejected(f"{where}: {result}", source, raw)
        else:
            yield from result

    def _operation(self, root: ET.Element, source: Source) -> list[ChangeEvent] | str:
        header = self._header(root)
        if isinstance(header, str):
            return header
        table, op, pos, op_ts, event_ts = header
        meta: dict[str, Any] = {"pos": pos, "op_ts": op_ts}
        if root.attrib.get("current_ts") is not None:
            meta["current_ts"] = root.attrib["current_ts"]
        columns: list[ET.Element] = []
        extra: dict[str, str] = {}
        problem = _children(root, columns, extra, meta)
        if problem is not None:
            return problem
        layout = self._layout(table, columns)
        if isinstance(layout, str):
            return layout
        images: dict[str, dict[str, Any]] = {"before": {}, "after": {}}
        problem = _images(layout, columns, images)
        if problem is not None:
            return problem
        types = layout.types()
        if types:
            meta["column_types"] = types
        if extra:
            meta["extra"] = extra
        keys = self.keys or layout.keys() or None
        seq = pos_to_seq(pos)
        truncate = op == "TRUNCATE"
        row = ChangeEvent(
            table=table,
            op=op,
            seq=seq,
            event_ts=event_ts,
            source=source,
            keys=keys,
            before=None if truncate or not images["before"] else images["before"],
            after=None if truncate or not images["after"] else images["after"],
            meta=meta,
        )
        announced = self.layouts.check(layout, row)
        return [row] if announced is None else [announced, row]

    def _header(self, root: ET.Element) -> tuple[str, str, str, str, dt.datetime] | str:
        """The operation's (table, op, pos, ts, event_ts) from the root's attributes; a str saying why not."""
        if root.tag != "operation":
            return f"the root element is <{root.tag}>, not <operation>"
        attrs = root.attrib
        table = self.table_override or attrs.get("table")
        if not table:
            return "<operation> has no table attribute"
        type_key = attrs.get("type")
        op = self.op_keys.op(type_key)
        if op is None:
            return f"unknown operation type {type_key!r}; the configured op keys are {self.op_keys.help}"
        pos = attrs.get("pos")
        if not pos:
            return "<operation> has no pos attribute: GoldenGate records need pos for ordering"
        op_ts = attrs.get("ts")
        event_ts = parse_ts(op_ts)
        if event_ts is None:
            return f"ts {op_ts!r} is not a timestamp like 'YYYY-MM-DD HH:MM:SS.ffffff'"
        return table, op, pos, op_ts, event_ts  # type: ignore[return-value]

    def _layout(self, table: str, columns: list[ET.Element]) -> Layout | str:
        """The document's columns (named by its <col> elements, typed by the options or the schema file)."""
        names = []
        for index, col in enumerate(columns):
            name = col.get("name")
            if not name:
                return f"<col> number {index + 1} has no name attribute"
            if name in names:
                return f"column {name} appears twice"
            names.append(name)
        configured = self.columns.get(table) or self.columns.get(None)
        schema = self.schemas.layout(table)
        if isinstance(schema, str):
            if configured is None:
                return schema
            schema = None
        return merge_types(names, "document's <col> names", configured, schema)


def _children(root: ET.Element, columns: list[ET.Element], extra: dict[str, str], meta: dict[str, Any]) -> str | None:
    """The root's <col> elements into ``columns``, other elements into ``extra``, tokens and numCols into ``meta``;
    a str saying why the document is rejected."""
    tokens: dict[str, str] | str | None = None
    for child in root:
        if child.tag == "col":
            columns.append(child)
        elif child.tag == "tokens":
            tokens = _tokens(child)
            if isinstance(tokens, str):
                return tokens
        else:
            extra[str(child.tag)] = child.text or ""
    if tokens is not None:
        meta["tokens"] = tokens
    num_cols = root.attrib.get("numCols")
    if num_cols is not None:
        if not num_cols.strip().isdigit() or int(num_cols) != len(columns):
            return f"numCols={num_cols!r} but the document has {len(columns)} <col> elements"
        meta["num_cols"] = int(num_cols)
    return None


def _images(layout: Layout, columns: list[ET.Element], images: dict[str, dict[str, Any]]) -> str | None:
    """The <before> and <after> values of each column into ``images``; a str saying why a value cannot be read."""
    for column, col in zip(layout.columns, columns, strict=True):
        for element in col:
            if element.tag == "missing":
                continue  # missing in both images
            if element.tag not in images:
                return f"column {column.name}: unexpected element <{element.tag}> (expected before, after, missing)"
            if len(element):
                return f"column {column.name}: <{element.tag}> holds elements, not a value"
            if element.get("missing", "").strip().lower() == "true":
                continue
            if element.get("isNull", "").strip().lower() == "true":
                images[element.tag][column.name] = None
                continue
            try:
                images[element.tag][column.name] = typed(element.text or "", column)
            except ValueError as exc:
                return str(exc)
    return None


@dataclass(slots=True)
class _Problem:
    reason: str


def _tokens(element: ET.Element) -> dict[str, str] | str:
    tokens: dict[str, str] = {}
    for token in element:
        if token.tag != "token":
            return f"unexpected element <{token.tag}> in <tokens>"
        name, value = token.find("Name"), token.find("Value")
        if name is None:
            return "a <token> has no <Name>"
        tokens[name.text or ""] = "" if value is None else value.text or ""
    return tokens


class _Finder:
    """``text.find`` of closing tokens and of document boundaries that remembers its last answer.

    A construct left open (``<![CDATA[`` without ``]]>``) makes the search run to the end of the
    file; without the memory, every later document with the same defect would search again, and a
    file of such documents would take quadratic time (hours for 64 MiB). An answer stays true for
    any later start up to the position found, so each stretch of text is searched about once.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self._last: dict[str, tuple[int, int]] = {}

    def find(self, token: str, start: int) -> int:
        last = self._last.get(token)
        if last is not None and last[0] <= start and (last[1] < 0 or start <= last[1]):
            return last[1]
        found = self.text.find(token, start)
        self._last[token] = (start, found)
        return found

    def boundary(self, start: int) -> int:
        """Start of the next ``<?xml`` prolog or ``<operation`` tag at or after ``start`` (else the end)."""
        last = self._last.get("")
        if last is not None and last[0] <= start <= last[1]:
            return last[1]
        found = _BOUNDARY.search(self.text, start)
        end = found.start() if found else len(self.text)
        self._last[""] = (start, end)
        return end


def _scan(text: str, start: int, finder: _Finder | None = None) -> _Chunk:
    """Where the document starting at ``start`` ends (it starts with ``<``).

    Returns the chunk with a problem when the document cannot be complete: a construct that is
    not closed (scanning then resumes at the next prolog or ``<operation``), the end of the file
    inside the root element, or the next document starting inside it.
    """
    position, depth, max_depth, root_started = start, 0, 0, False
    end_of_text = len(text)
    finder = finder or _Finder(text)

    def unclosed(what: str, at: int) -> _Chunk:
        end = finder.boundary(at + 1)
        resume = "the end of the file" if end >= end_of_text else "the next document"
        return _Chunk(start, end, f"{what} {{at}} is not closed; skipped up to {resume}", problem_at=at)

    junk = False  # text before the root element

    def before_root(end: int) -> _Chunk:
        if junk:
            return _Chunk(start, end, "text outside any <operation> document")
        return _Chunk(start, end, empty=True)

    while True:
        lt = text.find("<", position)
        if not root_started and not junk:
            junk = not _BLANK.fullmatch(text, position, lt if lt >= 0 else end_of_text)
        if lt < 0:
            if not root_started:
                return before_root(end_of_text)
            problem = "the file ends inside the document: it is truncated (its root element is not closed)"
            return _Chunk(start, end_of_text, problem)
        if text.startswith("<![CDATA[", lt):
            close = finder.find("]]>", lt + 9)
            if close < 0:
                return unclosed("a CDATA section", lt)
            position = close + 3
        elif text.startswith("<!--", lt):
            close = finder.find("-->", lt + 4)
            if close < 0:
                return unclosed("a comment", lt)
            position = close + 3
        elif text.startswith("<?", lt):
            if lt != start and _XML_DECL.match(text, lt):
                if not root_started:
                    return before_root(lt)
                return _Chunk(
                    start, lt, "the next document's prolog {at} starts before this one is closed", problem_at=lt
                )
            close = finder.find("?>", lt + 2)
            if close < 0:
                return unclosed("a processing instruction", lt)
            position = close + 2
        elif text.startswith("<!", lt):
            match = _DECL_REST.match(text, lt + 2, finder.boundary(lt + 2))
            if match is None:
                return unclosed("a declaration", lt)
            position = match.end()
        elif text.startswith("</", lt):
            match = _END_TAG_REST.match(text, lt + 2)  # never past a '<': the next tag is not this one's end
            if match is None:
                return unclosed("an end tag", lt)
            position = match.end()
            if not root_started:  # an end tag before any root element belongs to no document: never dropped
                return _Chunk(start, finder.boundary(position), "text outside any <operation> document")
            depth -= 1
            if depth <= 0:
                return _Chunk(start, position, too_deep=max_depth > MAX_DEPTH)
        else:
            name = _NAME.match(text, lt + 1)
            if name is None:
                position = lt + 1  # a stray '<': the parser says what is wrong
                junk = junk or not root_started  # before a root it is text outside any document, never dropped
                continue
            if name.group() == "operation" and root_started:
                return _Chunk(start, lt, "the next <operation> {at} starts before this one is closed", problem_at=lt)
            match = _TAG_REST.match(text, name.end())
            if match is None:
                return unclosed(f"the start tag <{name.group()[:40]}", lt)
            position = match.end()
            if text[position - 2] == "/":
                if not root_started:
                    return _Chunk(start, position)
                continue
            root_started = True
            depth += 1
            max_depth = max(max_depth, depth)
