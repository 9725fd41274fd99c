"""Kafka Connect JSON values and their ``schema`` block: logical types to canonical values.

Shared by the decoders whose records are Kafka Connect ``JsonConverter`` output
(``debezium-json``; also usable by ``cdl-json`` and others). The public API:

- :func:`struct_fields` — field name -> field schema of a ``struct`` schema (None if not a struct).
- :func:`column_type` — the ``cdclake.schema.coltypes`` type of a field schema (None: no hint).
- :func:`column_types` — :func:`column_type` for every field of a struct schema.
- :func:`schema_columns` — every field of a struct schema with its type or None, in field order
  (the full column list a ``SCHEMA`` event announces).
- :func:`convert_value` — one JSON value (as parsed, numbers as ``Decimal``/``int``) to the
  canonical event value of its field schema; :class:`ConnectValueError` says why it cannot be.
- :func:`convert_row` — a row image (dict) with a struct schema; columns the schema does not
  name are kept as parsed.
- :func:`decode_decimal` / :func:`encode_decimal` — ``org.apache.kafka.connect.data.Decimal``:
  base64 of the big-endian two's-complement unscaled value, plus the schema's ``scale``. A JSON
  number or a string is accepted too (``decimal.handling.mode=double|string`` or writers that
  do not follow the converter).
  :func:`unscaled_to_decimal` (raw bytes + scale), :func:`decimal_scale` (a Decimal schema's scale).
- :func:`decode_variable_scale_decimal` — ``io.debezium.data.VariableScaleDecimal``
  (``{"scale": s, "value": base64}``).
- Time helpers: :func:`date_from_days`, :func:`timestamp_from_epoch`, :func:`time_of_day`,
  :func:`zoned_timestamp`, :func:`zoned_time`, :func:`parse_timestamp` (ISO-8601 or
  ``YYYY-MM-DD HH:MM:SS[.f]`` text, optional zone, as an aware UTC datetime; None if unreadable).

Why values are converted here and not in normalize: the event contract fixes value shapes
(dates ``YYYY-MM-DD``, timestamps ISO-8601 UTC with ``Z``, exact decimals, bytes), and only the
schema block tells that the int ``19439`` is a date or that ``"AdTA"`` is ``1200.00``.

``decimal.handling.mode=string`` fields whose ``parameters`` name a DECIMAL/NUMERIC source column
(``column.propagate.source.type``) become exact decimals too, typed ``decimal(length,scale)``.

Vendor forms: Huawei CDL's ``com.<vendor>.cdc.data.Decimal`` is the decimal as a string (no
scale given: no column type hint) and ``com.<vendor>.cdc.data.timestamp`` a timestamp string.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import re
from decimal import Decimal
from typing import Any

import orjson

from cdclake.events.change import format_ts
from cdclake.formats._timestamps import from_match, zone_offset
from cdclake.runtime.limits import MAX_CONNECT_SCHEMA_DEPTH, MAX_DECIMAL_BYTES, MAX_DECIMAL_CHARS
from cdclake.schema.coltypes import canonical_type

#: Kafka Connect's logical type names.
CONNECT_DECIMAL = "org.apache.kafka.connect.data.Decimal"
CONNECT_DATE = "org.apache.kafka.connect.data.Date"
CONNECT_TIME = "org.apache.kafka.connect.data.Time"
CONNECT_TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"
VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"

INT_TYPES = frozenset({"int8", "int16", "int32", "int64"})
_FLOAT_TYPES = frozenset({"float", "double", "float32", "float64"})  # JsonConverter writes float/double
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_NAIVE_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)
_VENDOR_DECIMAL = re.compile(r"com\.[A-Za-z0-9_]+\.cdc\.data\.Decimal")
_VENDOR_TIMESTAMP = re.compile(r"com\.[A-Za-z0-9_]+\.cdc\.data\.[Tt]imestamp")
_SPECIAL_FLOATS = {"NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity"}
_TS = re.compile(
    r"(\d{4,})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?"
)
_DECIMAL_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,4})?")
_TIME = re.compile(r"(\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?")

#: Logical types whose values are epoch-based integers: name -> (kind, units per second).
INTEGER_LOGICAL = {
    CONNECT_DATE: ("date", 0),
    "io.debezium.time.Date": ("date", 0),
    CONNECT_TIME: ("time", 1_000),
    "io.debezium.time.Time": ("time", 1_000),
    "io.debezium.time.MicroTime": ("time", 1_000_000),
    "io.debezium.time.NanoTime": ("time", 1_000_000_000),
    CONNECT_TIMESTAMP: ("timestamp", 1_000),
    "io.debezium.time.Timestamp": ("timestamp", 1_000),
    "io.debezium.time.MicroTimestamp": ("timestamp", 1_000_000),
    "io.debezium.time.NanoTimestamp": ("timestamp", 1_000_000_000),
}
#: Logical types carried as strings: name -> kind.
_STRING_LOGICAL = {
    "io.debezium.time.ZonedTimestamp": "timestamp",
    "io.debezium.time.IsoTimestamp": "timestamp",
    "io.debezium.time.ZonedTime": "time",
    "io.debezium.time.IsoTime": "time",
    "io.debezium.time.IsoDate": "date",
}
_KIND_TYPES = {"date": "date", "timestamp": "timestamp", "time": "string"}


class ConnectValueError(ValueError):
    """A value that does not fit its Kafka Connect schema (the message names the column)."""


# --- schemas -----------------------------------------------------------------------------------


def _struct_fields(schema: Any) -> dict[str, dict[str, Any]] | None:
    """Field name -> field schema of a ``struct`` schema; None when ``schema`` is not one."""
    if not isinstance(schema, dict) or schema.get("type") != "struct":
        return None
    fields = schema.get("fields")
    if not isinstance(fields, list):
        return None
    out: dict[str, dict[str, Any]] = {}
    for spec in fields:
        if isinstance(spec, dict) and isinstance(spec.get("field"), str):
            out[spec["field"]] = field_schema(spec)
    return out


def field_schema(spec: dict[str, Any]) -> dict[str, Any]:
    """A field schema whose ``type`` or ``name`` is not text (an object, a list, a number) without it: a type no
    rule names is an unknown type, whose values are kept as parsed (:func:`_convert`), in every path alike."""
    if all(isinstance(spec.get(member), (str, type(None))) for member in ("type", "name")):
        return spec
    return {k: v for k, v in spec.items() if k not in ("type", "name") or isinstance(v, str)}


def _params(schema: dict[str, Any]) -> dict[str, Any]:
    params = schema.get("parameters")
    return params if isinstance(params, dict) else {}


def int_param(schema: dict[str, Any], name: str) -> int | None:
    value = _params(schema).get(name)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def _source_decimal(schema: dict[str, Any]) -> bool:
    """A string field whose source column is DECIMAL/NUMERIC/FIXED (``column.propagate.source.type``)."""
    source_type = _params(schema).get("__debezium.source.column.type")
    return isinstance(source_type, str) and source_type.upper().startswith(("DECIMAL", "NUMERIC", "FIXED", "DEC "))


def decimal_scale(schema: dict[str, Any]) -> int:
    """``parameters.scale`` of a Decimal schema (Kafka Connect writes it as a string)."""
    scale = int_param(schema, "scale")
    if scale is None:
        raise ConnectValueError("the Decimal schema has no integer parameters.scale")
    return scale


def column_type(schema: Any) -> str | None:
    """Our column type for a field schema (None: the schema does not say enough for a hint)."""
    if not isinstance(schema, dict):
        return None
    kind, name = schema.get("type"), schema.get("name")
    if isinstance(name, str):
        if name == CONNECT_DECIMAL:
            scale = int_param(schema, "scale")
            precision = int_param(schema, "connect.decimal.precision")
            if scale is None or scale < 0:
                return None
            if precision is None:
                precision = 38
            if not 0 < precision <= 38 or scale > precision:
                return "string"  # wider than Iceberg decimals: kept exact as text
            return canonical_type(f"decimal({precision},{scale})")
        if name in INTEGER_LOGICAL:
            return _KIND_TYPES[INTEGER_LOGICAL[name][0]]
        if name in _STRING_LOGICAL:
            return _KIND_TYPES[_STRING_LOGICAL[name]]
        if name == VARIABLE_SCALE_DECIMAL or _VENDOR_DECIMAL.fullmatch(name):
            return None  # any scale: no fixed decimal(p,s); normalize decides from the values
        if _VENDOR_TIMESTAMP.fullmatch(name):
            return "timestamp"
        if name == "io.debezium.time.Year":
            return "bigint"
    if kind == "string" and _source_decimal(schema):
        precision = int_param(schema, "__debezium.source.column.length")
        scale = int_param(schema, "__debezium.source.column.scale") or 0
        if precision is not None and 0 < precision <= 38 and 0 <= scale <= precision:
            return canonical_type(f"decimal({precision},{scale})")
        return "string"
    if kind in INT_TYPES:
        return "bigint"
    if kind in _FLOAT_TYPES:
        return "double"
    if kind == "boolean":
        return "boolean"
    if kind == "string":
        return "string"
    if kind == "bytes":
        return "binary"
    if kind in ("struct", "array", "map"):
        return "string"  # nested values are stored as their JSON text
    return None


def _column_types(struct_schema: Any) -> dict[str, str]:
    """:func:`column_type` of every field of a struct schema that has one."""
    fields = _struct_fields(struct_schema) or {}
    out: dict[str, str] = {}
    for name, spec in fields.items():
        col_type = column_type(spec)
        if col_type is not None:
            out[name] = col_type
    return out


def _schema_columns(struct_schema: Any) -> list[tuple[str, str | None]] | None:
    """Every field of a struct schema as (name, :func:`column_type` or None), in field order.

    Unlike :func:`column_types` a field without a type hint is kept (as None): a full column list
    must name every column, or a diff against it would drop the ones left out. None when
    ``struct_schema`` is not a struct with a ``fields`` list.
    """
    fields = _struct_fields(struct_schema)
    if fields is None:
        return None
    return [(name, column_type(spec)) for name, spec in fields.items()]


#: Schema interpretations by schema text: a Debezium record repeats its whole schema block, and
#: reading it again for every record cost more than parsing the record.
_MEMO: dict[tuple[str, bytes], Any] = {}
_MEMO_ENTRIES = 4096


#: ... and by the schema object itself: the JSON scanner hands every record that repeats a schema
#: block's text the same parsed value (:class:`~cdclake.formats._json.JsonScanner`), so most
#: look-ups need not even write the schema out. Entries hold their schema, so an id is not reused.
_BY_OBJECT: dict[tuple[str, int], tuple[Any, Any]] = {}
_BY_OBJECT_ENTRIES = 64


def memoized(kind: str, compute: Any, schema: Any) -> Any:
    """``compute(schema)``, cached by the schema's exact JSON text (orjson, one C call); schemas
    orjson cannot write (numbers read as Decimal) are computed every time."""
    if not isinstance(schema, dict):
        return compute(schema)
    same = _BY_OBJECT.get((kind, id(schema)))
    if same is not None and same[0] is schema:
        return same[1]
    try:
        key = (kind, orjson.dumps(schema))
    except (TypeError, orjson.JSONEncodeError):
        return compute(schema)
    found = _MEMO.get(key)
    if found is None:
        if len(_MEMO) >= _MEMO_ENTRIES:
            _MEMO.clear()
        found = _MEMO[key] = compute(schema)
    if len(_BY_OBJECT) >= _BY_OBJECT_ENTRIES:
        _BY_OBJECT.clear()
    _BY_OBJECT[(kind, id(schema))] = (schema, found)
    return found


def struct_fields(schema: Any) -> dict[str, dict[str, Any]] | None:
    """Field name -> field schema of a ``struct`` schema; None when ``schema`` is not one."""
    fields = memoized("fields", _struct_fields, schema)
    return None if fields is None else dict(fields)


def column_types(struct_schema: Any) -> dict[str, str]:
    """:func:`column_type` of every field of a struct schema that has one."""
    return dict(memoized("types", _column_types, struct_schema))


def schema_columns(struct_schema: Any) -> list[tuple[str, str | None]] | None:
    """Every field of a struct schema as (name, type or None), in field order (see
    :func:`_schema_columns`); None when ``struct_schema`` is not a struct with a ``fields`` list."""
    columns = memoized("columns", _schema_columns, struct_schema)
    return None if columns is None else list(columns)


# --- values --------------------------------------------------------------------------------------


def convert_row(row: dict[str, Any], struct_schema: Any) -> dict[str, Any]:
    """A row image converted column by column (columns without a field schema kept as parsed).

    A value that is already its field's canonical value (a JSON integer of an ``int64`` field,
    a string of a plain ``string`` field: :func:`kept_types`) is kept without a call; a Connect
    Decimal or an integer date, time or timestamp takes its field's happy path
    (:func:`happy_path`); the rest, wrong types and bad values included, go through
    :func:`convert_value`, so every reason is its own.
    """
    fields, kept, happy = memoized("row", _row_plan, struct_schema)
    out = {}
    for name, value in row.items():
        if value is None or type(value) in kept.get(name, ()):
            out[name] = value
            continue
        path = happy.get(name)
        if path is not None and (converted := path(value)) is not ANOTHER_WAY:
            out[name] = converted
            continue
        out[name] = convert_value(value, fields.get(name), name)
    return out


def _row_plan(struct_schema: Any) -> tuple[dict[str, dict[str, Any]], dict[str, tuple[type, ...]], dict[str, Any]]:
    fields = _struct_fields(struct_schema) or {}
    kept = {name: types for name, spec in fields.items() if (types := kept_types(spec))}
    return fields, kept, {name: path for name, spec in fields.items() if (path := happy_path(spec))}


#: What a happy path returns for a value it leaves to :func:`convert_value`.
ANOTHER_WAY = object()


def happy_path(schema: dict[str, Any]) -> Any:
    """For a Connect Decimal of base64 bytes and an integer date, time or timestamp: a function giving
    :func:`_convert`'s value for the common case (the schema read once, not per value), or
    :data:`ANOTHER_WAY` for anything else (text with blanks, a number, a bad value), which
    :func:`convert_value` then converts or words. None for other field schemas."""
    kind, name = schema.get("type"), schema.get("name")
    if name == CONNECT_DECIMAL and kind == "bytes":
        scale = int_param(schema, "scale")
        if scale is None:
            return None

        def decimal(value: Any) -> Any:
            if type(value) is not str:
                return ANOTHER_WAY
            try:
                raw = base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                return ANOTHER_WAY
            if not raw or len(raw) > MAX_DECIMAL_BYTES:
                return ANOTHER_WAY
            return Decimal(f"{int.from_bytes(raw, 'big', signed=True)}E{-scale}")

        return decimal
    if name in INTEGER_LOGICAL and kind in INT_TYPES:
        logical, units = INTEGER_LOGICAL[name]
        text = _LOGICAL_TEXT[logical]

        def integer(value: Any) -> Any:
            if type(value) is not int:
                return ANOTHER_WAY
            try:
                return text(value, units)
            except ValueError:
                return ANOTHER_WAY

        return integer
    return None


def kept_types(schema: dict[str, Any]) -> tuple[type, ...]:
    """Python types (exactly, so ``bool`` is not an ``int``) :func:`_convert` returns unchanged
    for this field schema; () when every value must be converted."""
    if schema.get("name") is not None:
        return ()
    kind = schema.get("type")
    if kind in INT_TYPES:
        return (int,)
    if kind in _FLOAT_TYPES:
        return (int, Decimal)
    if kind == "boolean":
        return (bool,)
    if kind == "string" and not _source_decimal(schema):
        return (str,)
    return ()


def convert_value(value: Any, schema: Any, column: str) -> Any:
    """One JSON value as the canonical value of its field schema (None schema: unchanged)."""
    if value is None or not isinstance(schema, dict):
        return value
    try:
        return _convert(value, schema, column, 0)
    except ConnectValueError:
        raise
    except (ValueError, TypeError, ArithmeticError) as exc:  # pragma: no cover - defensive
        raise ConnectValueError(f"column {column}: {exc}") from None


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, Decimal, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


#: What :func:`_convert_named` returns for a schema name it does not know (the schema type converts).
_UNNAMED = object()


def _convert(value: Any, schema: dict[str, Any], column: str, depth: int) -> Any:
    if value is None:
        return None
    if depth > MAX_CONNECT_SCHEMA_DEPTH:
        raise ConnectValueError(f"column {column}: the schema nests deeper than {MAX_CONNECT_SCHEMA_DEPTH} levels")
    kind, name = schema.get("type"), schema.get("name")
    if isinstance(name, str):
        converted = _convert_named(value, kind, name, schema, column)
        if converted is not _UNNAMED:
            return converted
    if kind in INT_TYPES:
        number = _integer(value)
        if number is None:
            raise _wrong(value, kind, name, column, "an integer")
        return number
    if kind in _FLOAT_TYPES:
        if isinstance(value, bool):
            raise _wrong(value, kind, name, column, "a number")
        if isinstance(value, (int, Decimal)):
            return value
        if isinstance(value, float):
            return Decimal(repr(value))
        if isinstance(value, str) and value in _SPECIAL_FLOATS:
            return Decimal(_SPECIAL_FLOATS[value])
        raise _wrong(value, kind, name, column, "a number")
    if kind == "boolean":
        if not isinstance(value, bool):
            raise _wrong(value, kind, name, column, "true or false")
        return value
    if kind == "string":
        if not isinstance(value, str):
            raise _wrong(value, kind, name, column, "a string")
        if _source_decimal(schema):  # decimal.handling.mode=string with column.propagate.source.type
            number = _maybe_decimal_text(value.strip())
            if number is None:
                raise ConnectValueError(f"column {column}: {_describe(value)} is not a decimal number")
            return number
        return value
    if kind == "bytes":
        if not isinstance(value, str):
            raise _wrong(value, kind, name, column, "base64 text")
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ConnectValueError(
                f"column {column}: {_describe(value)} is not valid base64 (schema type bytes)"
            ) from None
    return _convert_nested(value, kind, name, schema, column, depth)


def _wrong(value: Any, kind: Any, name: Any, column: str, expected: str) -> ConnectValueError:
    """The error for a JSON value of the wrong kind for its schema type."""
    label = f"{kind} ({name})" if isinstance(name, str) else str(kind)
    return ConnectValueError(
        f"column {column}: schema type {label} expects {expected}, "
        f"the value is a JSON {_json_kind(value)} {_describe(value)}"
    )


def _convert_named(value: Any, kind: Any, name: str, schema: dict[str, Any], column: str) -> Any:
    """A value of a named (logical or vendor) schema; :data:`_UNNAMED` for a name the schema type converts."""
    if name == CONNECT_DECIMAL:
        try:
            return decode_decimal(value, decimal_scale(schema), base64_text=kind == "bytes")
        except ConnectValueError as exc:
            raise ConnectValueError(f"column {column}: {exc}") from None
    if name == VARIABLE_SCALE_DECIMAL:
        try:
            return decode_variable_scale_decimal(value)
        except ConnectValueError as exc:
            raise ConnectValueError(f"column {column}: {exc}") from None
    if name in INTEGER_LOGICAL and kind in INT_TYPES:
        number = _integer(value)
        if number is None:
            raise _wrong(value, kind, name, column, "an integer")
        logical_kind, units = INTEGER_LOGICAL[name]
        try:
            return _integer_logical(logical_kind, number, units)
        except ValueError as exc:
            raise ConnectValueError(f"column {column}: {exc}") from None
    if name in _STRING_LOGICAL and kind == "string":
        return _string_logical(value, kind, name, column)
    if _VENDOR_DECIMAL.fullmatch(name):
        try:
            return _decimal_text(value) if isinstance(value, str) else _decimal_number(value)
        except ConnectValueError as exc:
            raise ConnectValueError(f"column {column}: {exc}") from None
    if _VENDOR_TIMESTAMP.fullmatch(name):
        return _vendor_timestamp(value, name, column)
    return _UNNAMED


def _string_logical(value: Any, kind: Any, name: str, column: str) -> str:
    """A date, time or timestamp of a string logical type (``_STRING_LOGICAL``) as its canonical text."""
    if not isinstance(value, str):
        raise _wrong(value, kind, name, column, "a string")
    logical_kind = _STRING_LOGICAL[name]
    parsed = (
        zoned_timestamp(value)
        if logical_kind == "timestamp"
        else zoned_time(value)
        if logical_kind == "time"
        else _iso_date(value)
    )
    if parsed is None:
        raise ConnectValueError(f"column {column}: {value[:80]!r} is not a valid {name} value")
    return parsed


def _vendor_timestamp(value: Any, name: str, column: str) -> str:
    """A vendor timestamp (``com.<vendor>.cdc.data.Timestamp``): text, or epoch milliseconds."""
    parsed = None
    if isinstance(value, str):
        parsed = zoned_timestamp(value)
        if parsed is None and value.strip().isdigit():
            parsed = timestamp_from_epoch(int(value), 1_000)
    elif _integer(value) is not None:
        parsed = timestamp_from_epoch(_integer(value), 1_000)  # type: ignore[arg-type]
    if parsed is None:
        raise ConnectValueError(f"column {column}: {_describe(value)} is not a timestamp ({name})")
    return parsed


def _convert_nested(value: Any, kind: Any, name: Any, schema: dict[str, Any], column: str, depth: int) -> Any:
    """A value of an array, map or struct schema, its items converted one level deeper; any other kind kept."""
    if kind == "array":
        if not isinstance(value, list):
            raise _wrong(value, kind, name, column, "an array")
        items = schema.get("items")
        if not isinstance(items, dict):
            return value
        return [_convert(v, items, f"{column}[{i}]", depth + 1) for i, v in enumerate(value)]
    if kind == "map":
        values = schema.get("values")
        if isinstance(value, dict):
            if not isinstance(values, dict):
                return value
            return {k: _convert(v, values, f"{column}.{k}", depth + 1) for k, v in value.items()}
        if isinstance(value, list):  # maps with non-string keys: [[key, value], ...]
            return value
        raise _wrong(value, kind, name, column, "an object")
    if kind == "struct":
        if not isinstance(value, dict):
            raise _wrong(value, kind, name, column, "an object")
        fields = struct_fields(schema) or {}
        return {k: _convert(v, fields[k], f"{column}.{k}", depth + 1) if k in fields else v for k, v in value.items()}
    return value  # unknown schema type: kept as parsed


def _integer_logical(kind: str, number: int, units: int) -> str:
    """An integer of a logical type (``INTEGER_LOGICAL``: date, time or timestamp) as its text."""
    return _LOGICAL_TEXT[kind](number, units)


def _integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
        if abs(value.adjusted()) > 30:
            return None
        return int(value)
    return None


# --- decimals ------------------------------------------------------------------------------------


def decode_decimal(value: Any, scale: int, *, base64_text: bool = True) -> Decimal:
    """A Kafka Connect Decimal with ``scale`` digits after the point (when that loses nothing).

    The converter writes base64 of the big-endian two's-complement unscaled value (``AdTA``,
    scale 2 -> ``1200.00``; ``W5s=``, scale 0 -> ``23451``); some writers put a JSON number or a
    decimal string instead. ``base64_text``: the schema type is ``bytes``, so text that is valid
    base64 is read as base64 (``"1234"`` is both); otherwise text is read as a decimal string.
    """
    if isinstance(value, bool) or value is None:
        raise ConnectValueError(f"{_describe(value)} is not a decimal")
    if not isinstance(value, str):
        return _rescale(_decimal_number(value), scale)
    text = value.strip()
    raw = None
    if base64_text:
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raw = None
    if raw:
        return unscaled_to_decimal(raw, scale)
    number = _maybe_decimal_text(text)
    if number is None:
        raise ConnectValueError(f"{_describe(value)} is neither base64 of an unscaled value nor a decimal number")
    return _rescale(number, scale)


def unscaled_to_decimal(raw: bytes, scale: int) -> Decimal:
    """Big-endian two's-complement unscaled bytes with ``scale`` as an exact Decimal."""
    if len(raw) > MAX_DECIMAL_BYTES:
        raise ConnectValueError(f"decimal value of {len(raw)} bytes is longer than {MAX_DECIMAL_BYTES}")
    unscaled = int.from_bytes(raw, "big", signed=True)
    return Decimal(f"{unscaled}E{-scale}")  # exact: a Decimal built from text is never rounded


def encode_decimal(value: Decimal, scale: int) -> str:
    """Inverse of :func:`decode_decimal` for base64: the text a Kafka Connect writer produces."""
    unscaled = value.scaleb(scale)
    if not unscaled.is_finite() or unscaled != unscaled.to_integral_value():
        raise ValueError(f"{value} has more than {scale} digits after the point")
    number = int(unscaled)
    magnitude = ~number if number < 0 else number
    length = magnitude.bit_length() // 8 + 1  # minimal two's complement, as Java's BigInteger.toByteArray
    return base64.b64encode(number.to_bytes(length, "big", signed=True)).decode("ascii")


def decode_variable_scale_decimal(value: Any) -> Decimal:
    """``io.debezium.data.VariableScaleDecimal``: ``{"scale": s, "value": base64}``."""
    if not isinstance(value, dict):
        if isinstance(value, (int, Decimal, str)) and not isinstance(value, bool):
            return _decimal_text(value) if isinstance(value, str) else _decimal_number(value)
        raise ConnectValueError(f"{_describe(value)} is not a VariableScaleDecimal object")
    scale, raw = value.get("scale"), value.get("value")
    if isinstance(scale, bool) or not isinstance(scale, int) or not isinstance(raw, str):
        raise ConnectValueError(f"{_describe(value)} is not a VariableScaleDecimal (needs integer scale, base64 value)")
    try:
        data = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        raise ConnectValueError(f"VariableScaleDecimal value {_describe(raw)} is not valid base64") from None
    if not data:
        raise ConnectValueError("empty VariableScaleDecimal value")
    return unscaled_to_decimal(data, scale)


def _maybe_decimal_text(text: str) -> Decimal | None:
    if not text or len(text) > MAX_DECIMAL_CHARS:
        return None
    if not _DECIMAL_TEXT.fullmatch(text):
        return None
    return Decimal(text)


def _decimal_text(value: str) -> Decimal:
    number = _maybe_decimal_text(value.strip())
    if number is None:
        raise ConnectValueError(f"{_describe(value)} is not a decimal number")
    return number


def _decimal_number(value: Any) -> Decimal:
    if isinstance(value, bool):
        raise ConnectValueError(f"{_describe(value)} is not a decimal")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, Decimal) and value.is_finite():
        return value
    raise ConnectValueError(f"{_describe(value)} is not a decimal")


def _rescale(number: Decimal, scale: int) -> Decimal:
    """``number`` with ``scale`` digits after the point when that adds only zeros."""
    sign, digits, exponent = number.as_tuple()
    if not isinstance(exponent, int) or exponent < -scale or exponent + scale > MAX_DECIMAL_CHARS:
        return number
    if digits == (0,):
        return Decimal((sign, (0,), -scale))
    return Decimal((sign, digits + (0,) * (exponent + scale), -scale))


# --- dates and times --------------------------------------------------------------------------------


def date_from_days(days: int) -> str:
    """Days since 1970-01-01 as ``YYYY-MM-DD``."""
    try:
        return (_EPOCH_DATE + dt.timedelta(days=days)).isoformat()
    except OverflowError:
        raise ValueError(f"date {days} (days since 1970-01-01) is outside the years 1-9999") from None


def timestamp_from_epoch(value: int, units_per_second: int) -> str:
    """An epoch count in ``units_per_second`` (1000: ms) as ISO-8601 UTC with ``Z`` (microseconds):
    :func:`~cdclake.events.change.format_ts`'s spelling, from a naive epoch (no zone to convert per value)."""
    micros = value * 1_000_000 // units_per_second
    try:
        # positional arguments: keywords cost a sixth of the call (instructions, cachegrind)
        return (_NAIVE_EPOCH + dt.timedelta(0, 0, micros)).isoformat("T", "microseconds") + "Z"
    except OverflowError:
        raise ValueError(f"timestamp {value} is outside the years 1-9999") from None


def time_of_day(value: int, units_per_second: int) -> str:
    """A time since midnight as ``HH:MM:SS.ffffff``. MySQL ``TIME`` values outside one day
    (durations up to 838 hours, negative) keep their hours: ``-01:00:00.000000``, ``838:59:59.000000``."""
    micros = value * 1_000_000 // units_per_second
    sign = "-" if micros < 0 else ""
    seconds, fraction = divmod(abs(micros), 1_000_000)
    return f"{sign}{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}.{fraction:06d}"


#: An integer of each logical kind as its text, from the integer and its units per second (a date's are days).
_LOGICAL_TEXT: dict[str, Any] = {
    "date": lambda days, _units: date_from_days(days),
    "time": time_of_day,
    "timestamp": timestamp_from_epoch,
}


def parse_timestamp(text: str) -> dt.datetime | None:
    """ISO-8601 or ``YYYY-MM-DD HH:MM:SS[.f]`` with an optional zone (none means UTC), as aware UTC."""
    match = _TS.fullmatch(text.strip())
    if not match:
        return None
    try:
        return from_match(match).astimezone(dt.UTC)
    except (ValueError, OverflowError):
        return None


def zoned_timestamp(text: str) -> str | None:
    """``io.debezium.time.ZonedTimestamp`` text (``2023-03-23T22:00:10.123456Z``, any offset) in UTC."""
    parsed = parse_timestamp(text)
    return format_ts(parsed) if parsed is not None else None


def zoned_time(text: str) -> str | None:
    """``io.debezium.time.ZonedTime`` / ``IsoTime`` text as ``HH:MM:SS.ffffff`` in UTC."""
    match = _TIME.fullmatch(text.strip())
    if not match:
        return None
    hour, minute, second, fraction, zone = match.groups()
    try:
        moment = dt.datetime(
            2000, 1, 3, int(hour), int(minute), int(second or 0), int((fraction or "0")[:6].ljust(6, "0"))
        )
    except ValueError:
        return None
    moment = moment.replace(tzinfo=zone_offset(zone)).astimezone(dt.UTC)
    return moment.time().isoformat(timespec="microseconds")


def _iso_date(text: str) -> str | None:
    stripped = text.strip().rstrip("Zz")
    try:
        return dt.date.fromisoformat(stripped[:10]).isoformat() if len(stripped) >= 10 else None
    except ValueError:
        return None
