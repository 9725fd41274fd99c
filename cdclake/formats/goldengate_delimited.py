"""GoldenGate for Big Data delimited text formatter output (format id ``goldengate-delimited``, §6.2).

Why it is written this way:

- A record is the text up to ``lineDelimiter``; its fields are split on ``fieldDelimiter``
  (both any string, ``CDATA[...]`` accepted). GoldenGate does not escape delimiters inside
  values (§6.2.3), so there is nothing to unescape and nothing to guess: a record whose field
  count does not match the metadata fields the options announce plus the table's columns is
  rejected, with a hint when the count points at a wrong option (tokens, column names).
- The format carries no column names unless ``includeColumnNames=true``; otherwise they come from
  our ``columns`` option or the table's ``.avsc`` in ``schemaDir`` (the newest versioned file).
  The types found there turn text into JSON values (``17520.00`` an exact Decimal, ``3`` an int),
  so the same change decodes to the same event as from the JSON formatter.
- Each column field is a value, the NULL representation (None) or the missing representation
  (an absent key): the three states of §6.2.
- It is a row formatter (§6.1.2): an update carries only its after image, a delete only its before
  image. A primary-key update written with ``pkUpdateHandling=delete-insert`` is a delete and an
  insert sharing one ``pos``; that pair is how a key change can be recognized at all, and
  ``pkUpdateHandling`` says whether it is expected (``delete-insert``) or rejected.
- The last record must end with the line delimiter: a record cut short by a truncated file would
  otherwise be read with a silently shortened last value.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from cdclake.events.change import ChangeEvent, Rejected, Source, format_ts
from cdclake.formats._gg_common import (
    ESCAPED,
    OP_OPTIONS,
    Layout,
    LayoutTracker,
    OpKeys,
    SchemaDir,
    decode_text,
    encoded_length,
    encoding_error,
    merge_types,
    parse_columns_option,
    parse_tokens,
    parse_ts,
    pos_to_seq,
    python_codec,
    raw_slice,
    typed,
)
from cdclake.options import OptionError, Options
from cdclake.registry import Decoder, register
from cdclake.runtime.limits import MAX_RECORD_BYTES

#: Metadata fields in the order the formatter writes them: (include option, name in reasons).
_META_FIELDS = (
    ("includeOpType", "op type"),
    ("includeTableName", "table name"),
    ("includeOpTimestamp", "op timestamp"),
    ("includeCurrentTimestamp", "current timestamp"),
    ("includePosition", "position"),
    ("includeTokens", "tokens"),
)
#: Defaults of the include options (Table 6-1; includeTokens is the handler's option, false).
_INCLUDE_DEFAULTS = {
    "includeOpType": True,
    "includeTableName": True,
    "includeOpTimestamp": True,
    "includeCurrentTimestamp": True,
    "includePosition": True,
    "includeTokens": False,
}
#: Misspellings printed in the vendor doc (Table 6-1, §6.2.6) accepted as aliases.
_ALIASES = {"iso8601Forma": "iso8601Format", "kevValuePairDelimiter": "keyValuePairDelimiter"}
_PK_MODES = ("abend", "update", "delete-insert")
#: The order of an event's meta keys.
_META_ORDER = ("pos", "seq_from", "op_ts", "current_ts", "tokens", "column_types")


@dataclass(slots=True)
class _Record:
    """One decoded record: its events (SCHEMA first, if any) and what pairing needs."""

    events: list[ChangeEvent]
    row: ChangeEvent
    raw: bytes
    pos: str | None


@register("goldengate-delimited")
class GoldenGateDelimitedDecoder(Decoder):
    """Decoder of GoldenGate delimited text (see the module docstring)."""

    option_names = frozenset(
        {name for name, _, _ in OP_OPTIONS}
        | set(_INCLUDE_DEFAULTS)
        | set(_ALIASES)
        | {
            "includeColumnNames",
            "encoding",
            "fieldDelimiter",
            "lineDelimiter",
            "keyValueDelimiter",
            "keyValuePairDelimiter",
            "pkUpdateHandling",
            "nullValueRepresentation",
            "missingValueRepresentation",
            "iso8601Format",
            "columns",
            "schemaDirectory",
        }
    )

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        for alias, name in _ALIASES.items():
            if alias in options and name in options and options.str(alias) != options.str(name):
                raise OptionError(f"options {alias} (the vendor doc's spelling) and {name} disagree")

        def text_option(name: str, default: str) -> str:
            alias = next((a for a, n in _ALIASES.items() if n == name), None)
            value = options.str(name)
            if value is None and alias is not None:
                value = options.str(alias)
            return default if value is None else value

        self.op_keys = OpKeys(options)
        self.include = {name: options.bool(name, default) for name, default in _INCLUDE_DEFAULTS.items()}
        self.include_names = options.bool("includeColumnNames", False)
        options.bool("iso8601Format", True)  # shapes current_ts only (kept as text): validated
        if "iso8601Forma" in options:
            options.bool("iso8601Forma", True)
        self.field_delimiter = text_option("fieldDelimiter", "\u0001")
        self.line_delimiter = text_option("lineDelimiter", "\n")
        self.kv_delimiter = text_option("keyValueDelimiter", "=")
        self.pair_delimiter = text_option("keyValuePairDelimiter", ",")
        self.null_repr = text_option("nullValueRepresentation", "NULL")
        self.missing_repr = text_option("missingValueRepresentation", "")
        for name, value in (
            ("fieldDelimiter", self.field_delimiter),
            ("lineDelimiter", self.line_delimiter),
            ("keyValueDelimiter", self.kv_delimiter),
            ("keyValuePairDelimiter", self.pair_delimiter),
        ):
            if value == "":
                raise OptionError(f"option {name} must not be empty")
        if self.line_delimiter in self.field_delimiter:
            raise OptionError(
                f"fieldDelimiter {self.field_delimiter!r} contains lineDelimiter {self.line_delimiter!r}:"
                " records could not be told apart"
            )
        if self.kv_delimiter == self.pair_delimiter:
            raise OptionError("keyValueDelimiter and keyValuePairDelimiter must differ")
        if self.null_repr == self.missing_repr:
            raise OptionError(
                f"nullValueRepresentation and missingValueRepresentation are both {self.null_repr!r}:"
                " NULL and missing values could not be told apart"
            )
        mode = (options.str("pkUpdateHandling") or "abend").strip().lower()
        if mode not in _PK_MODES:
            raise OptionError(f"option pkUpdateHandling must be one of {', '.join(_PK_MODES)}, not {mode!r}")
        self.pk_mode = mode
        self.encoding = options.str("encoding") or "UTF-8"
        self.codec = python_codec(self.encoding)
        if not self.include["includeTableName"] and not self.table_override:
            raise OptionError(
                "includeTableName=false: records carry no table name;"
                " give it with the table option (table=SCHEMA.TABLE)"
            )
        self.columns = parse_columns_option(options.str("columns"))
        self.schemas = SchemaDir(self.schema_dir or options.str("schemaDirectory"))
        self.layouts = LayoutTracker()
        self.meta_fields = [(opt, label) for opt, label in _META_FIELDS if self.include[opt]]

    # --- framing --------------------------------------------------------------------------------

    def decode(self, data: bytes, file: str) -> Iterator[ChangeEvent | Rejected]:
        """Events and rejected records of one landing file (already gunzipped), in file order."""
        self.schemas.new_file()
        yield from self._pair(self._records(data, file))

    def _records(self, data: bytes, file: str) -> Iterator[_Record | Rejected]:
        text, offsets = decode_text(data, self.codec)
        delimiter, pos, end_of_text, number = self.line_delimiter, 0, len(text), 0
        while pos < end_of_text:
            end = text.find(delimiter, pos)
            terminated = end >= 0
            if not terminated:
                end = end_of_text
            start, pos = pos, end + len(delimiter) if terminated else end_of_text
            body_end = end - 1 if delimiter == "\n" and end > start and text[end - 1] == "\r" else end
            if body_end == start or (
                text[start:body_end].isspace() and self.field_delimiter not in text[start:body_end]
            ):
                continue  # an empty or blank line is no record
            number += 1
            byte_start, byte_end = offsets.at(start), offsets.at(body_end)
            source = Source(file, byte_start)
            raw = raw_slice(data, byte_start, byte_end)
            where = f"record {number} at byte {byte_start}"
            if byte_end - byte_start > MAX_RECORD_BYTES:
                size = byte_end - byte_start
                yield Rejected(f"{where}: {size} bytes, larger than the limit of {MAX_RECORD_BYTES}", source, raw)
                continue
            record = text[start:body_end]
            escaped = ESCAPED.search(record)
            if escaped is not None:
                bad_at = byte_start + encoded_length(record[: escaped.start()], offsets.codec)
                reason = encoding_error(record, escaped.start(), self.encoding, bad_at)
                yield Rejected(f"{where}: {reason}", source, raw)
                continue
            if not terminated:
                yield Rejected(
                    f"{where}: the last record does not end with the line delimiter {delimiter!r}: the file looks"
                    " truncated; it is not read so that a cut value is not taken for a whole one",
                    source,
                    raw,
                )
                continue
            yield self._record(record, source, raw, where)

    # --- one record ---------------------------------------------------------------------------

    def _record(self, record: str, source: Source, raw: bytes, where: str) -> _Record | Rejected:
        fields = record.split(self.field_delimiter)
        n_meta = len(self.meta_fields)
        if len(fields) < n_meta:
            return Rejected(f"{where}: {self._too_few_fields(len(fields))}", source, raw)
        meta_values = dict(zip((opt for opt, _ in self.meta_fields), fields, strict=False))
        values = fields[n_meta:]
        meta: dict[str, object] = {}
        envelope = self._envelope(meta_values, meta)
        if isinstance(envelope, str):
            return Rejected(f"{where}: {envelope}", source, raw)
        op, table, event_ts, seq, pos = envelope
        layout = self._record_layout(table, values, op)
        if isinstance(layout, str):
            return Rejected(f"{where}: {layout}", source, raw)
        tokens_text = meta_values.get("includeTokens")
        if tokens_text is not None:
            tokens = parse_tokens(tokens_text, self.kv_delimiter, self.pair_delimiter)
            if isinstance(tokens, str):
                return Rejected(f"{where}: {tokens}", source, raw)
            meta["tokens"] = tokens
        image: dict[str, object] = {}
        if layout is not None:
            problem = self._image(image, layout, values)
            if problem is not None:
                return Rejected(f"{where}: {problem}", source, raw)
            types = layout.types()
            if types:
                meta["column_types"] = types
        keys = self.keys or (layout.keys() if layout is not None else None) or None
        meta = {name: meta[name] for name in _META_ORDER if name in meta}
        before = after = None
        if op == "DELETE":
            before = image
        elif op in ("INSERT", "UPDATE", "UPSERT"):
            after = image
        row = ChangeEvent(
            table=table,
            op=op,
            seq=seq,
            event_ts=event_ts,
            source=source,
            keys=keys,
            before=before,
            after=after,
            meta=meta,
        )
        events = []
        if layout is not None:
            announced = self.layouts.check(layout, row)
            if announced is not None:
                events.append(announced)
        return _Record(events, row, raw, pos)

    def _too_few_fields(self, count: int) -> str:
        labels = ", ".join(label for _, label in self.meta_fields)
        return (
            f"record has {count} fields, fewer than the {len(self.meta_fields)} metadata fields the options announce"
            f" ({labels}); check fieldDelimiter={self.field_delimiter!r}"
        )

    def _envelope(
        self, meta_values: dict[str, str], meta: dict[str, object]
    ) -> tuple[str | None, str, str | None, str | None, str | None] | str:
        """The record's (op, table, event_ts, seq, pos) from its metadata fields, which go into ``meta``;
        a str saying why the record is rejected."""
        op: str | None = "UPSERT"
        if self.include["includeOpType"]:
            op_key = meta_values["includeOpType"]
            op = self.op_keys.op(op_key)
            if op is None:
                return f"unknown op type {op_key[:80]!r} in field 1; the configured op keys are {self.op_keys.help}"
        table = self.table_override or meta_values.get("includeTableName")
        if not table:
            return "empty table name field"
        op_ts = meta_values.get("includeOpTimestamp")
        event_ts = None
        if op_ts is not None:
            event_ts = parse_ts(op_ts)
            if event_ts is None:
                return f"op timestamp {op_ts[:80]!r} is not a timestamp like 'YYYY-MM-DD HH:MM:SS.ffffff'"
            meta["op_ts"] = op_ts
        current_ts = meta_values.get("includeCurrentTimestamp")
        if current_ts is not None:
            meta["current_ts"] = current_ts
        pos = meta_values.get("includePosition")
        if pos is not None:
            if not pos:
                return "empty position field: GoldenGate records need pos for ordering"
            seq: str | None = pos_to_seq(pos)
            meta["pos"] = pos
        else:
            seq = format_ts(event_ts)  # commit time; ties keep file order (see docs)
            if seq is not None:
                meta["seq_from"] = "op_ts"
        return op, table, event_ts, seq, pos

    def _record_layout(self, table: str, values: list[str], op: str | None) -> Layout | str | None:
        """The record's columns (None: a truncate, which needs none); a str saying why there are none that fit."""
        layout = self._layout(table, values)
        if layout is None and op != "TRUNCATE":  # a truncate needs no columns
            return (
                f"no columns known for table {table}: the delimited format carries no column names; give them"
                f" with columns={table}(COL:type,...), or schemaDir=DIR holding {table}.avsc, or set"
                " includeColumnNames=true in the writer and here"
            )
        return layout

    def _image(self, image: dict[str, object], layout: Layout, values: list[str]) -> str | None:
        """The column fields into ``image`` (NULL: None, missing: no key); the reason of a value that is not
        of its column's type."""
        column_values = values[1::2] if self.include_names else values
        missing_repr, null_repr = self.missing_repr, self.null_repr
        for column, text in zip(layout.columns, column_values, strict=True):
            if text == missing_repr:
                continue
            if text == null_repr:
                image[column.name] = None
                continue
            try:
                image[column.name] = typed(text, column)
            except ValueError as exc:
                return str(exc)
        return None

    def _layout(self, table: str, values: list[str]) -> Layout | str | None:
        """The record's columns; None when nothing gives them; a str saying why they do not fit."""
        configured = self.columns.get(table) or self.columns.get(None)
        schema = self.schemas.layout(table)
        if isinstance(schema, str):  # an unreadable schema file
            if configured is None and not self.include_names:
                return schema
            schema = None
        if self.include_names:
            if len(values) % 2:
                return (
                    f"includeColumnNames=true but the record has an odd number ({len(values)}) of column fields;"
                    " each column must be a name field followed by a value field"
                )
            names = values[0::2]
            if any(not n for n in names):
                return "includeColumnNames=true but a column name field is empty"
            if len(set(names)) != len(names):
                duplicate = next(n for n in names if names.count(n) > 1)
                return f"column {duplicate} appears twice in the record"
            return merge_types(names, "record's column names", configured, schema)
        layout = configured or schema
        if layout is None:
            return None
        if len(values) != len(layout.columns):
            hint = ""
            if len(values) == len(layout.columns) + 1 and not self.include["includeTokens"]:
                hint = "; if the writer included tokens, set includeTokens=true"
            elif len(values) == len(layout.columns) - 1 and self.include["includeTokens"]:
                hint = "; if the writer did not include tokens, set includeTokens=false"
            elif len(values) == 2 * len(layout.columns):
                hint = "; if the writer set includeColumnNames=true, set it here too"
            return (
                f"record has {len(values)} column fields but table {table} has {len(layout.columns)} columns"
                f" (from the {layout.source}); a record must have exactly one field per column{hint}"
            )
        return layout

    # --- primary-key updates -----------------------------------------------------------------------

    def _pair(self, items: Iterator[_Record | Rejected]) -> Iterator[ChangeEvent | Rejected]:
        """Recognize a delete followed by an insert of the same table at the same pos (a key update)."""
        pending: _Record | None = None
        for item in items:
            if pending is not None:
                if (
                    isinstance(item, _Record)
                    and item.row.op == "INSERT"
                    and item.pos is not None
                    and item.pos == pending.pos
                    and item.row.table == pending.row.table
                ):
                    yield from self._key_update(pending, item)
                    pending = None
                    continue
                yield from pending.events
                yield pending.row
                pending = None
            if isinstance(item, Rejected):
                yield item
            elif item.row.op == "DELETE" and item.pos is not None:
                pending = item
            else:
                yield from item.events
                yield item.row
        if pending is not None:
            yield from pending.events
            yield pending.row

    def _key_update(self, delete: _Record, insert: _Record) -> Iterator[ChangeEvent | Rejected]:
        yield from delete.events
        if self.pk_mode == "delete-insert":
            for record in (delete, insert):
                record.row.meta["pk_update"] = "delete-insert"
            yield delete.row
            yield from insert.events
            yield insert.row
            return
        reason = (
            f"a DELETE and an INSERT of table {delete.row.table} share pos {delete.pos}: that is a primary-key"
            f" update written with pkUpdateHandling=delete-insert, but this decoder has pkUpdateHandling={self.pk_mode}"
        )
        if self.pk_mode == "abend":
            reason += " (with abend the writer stops at a primary-key update instead of writing it)"
        reason += "; set pkUpdateHandling=delete-insert to read it"
        yield Rejected(f"{reason} (the DELETE half)", delete.row.source, delete.raw)
        yield from insert.events
        yield Rejected(f"{reason} (the INSERT half)", insert.row.source, insert.raw)
