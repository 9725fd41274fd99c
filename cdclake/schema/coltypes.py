"""Column types of lake tables: inference from JSON values, casting, Arrow/Spark names.

Why a small closed set: every vendor's values pass through JSON text in the
change log (exact, see ``events.py``); the lake table needs one type per column
that Iceberg, Spark and pyiceberg all read the same way. Types are written as
Spark SQL names (``bigint``, ``decimal(10,2)``) because that is what users see.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import re
from decimal import Context, Decimal, InvalidOperation
from typing import Any

import pyarrow as pa

from cdclake.events.change import to_json

STRING, LONG, DOUBLE, BOOLEAN = "string", "bigint", "double", "boolean"
TIMESTAMP, DATE, BINARY = "timestamp", "date", "binary"
#: What an integer beyond bigint's range suggests: the widest Iceberg decimal without a fraction.
DECIMAL_INTEGER = "decimal(38,0)"
_DECIMAL = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")
_ALIASES = {
    "long": LONG,
    "int64": LONG,
    "integer": LONG,
    "int": LONG,
    "float": DOUBLE,
    "number": DOUBLE,
    "bool": BOOLEAN,
    "str": STRING,
    "text": STRING,
    "bytes": BINARY,
}


class CastError(ValueError):
    """A value that cannot be stored in its column's type."""


def canonical_type(name: str) -> str:
    """Normalize a type name (``long`` -> ``bigint``); unknown names are an error."""
    lowered = name.strip().lower()
    lowered = _ALIASES.get(lowered, lowered)
    if lowered in (STRING, LONG, DOUBLE, BOOLEAN, TIMESTAMP, DATE, BINARY):
        return lowered
    match = _DECIMAL.match(lowered)
    if match:
        precision, scale = int(match[1]), int(match[2])
        if not 0 < precision <= 38 or scale > precision:
            raise ValueError(f"decimal({precision},{scale}) is not a valid Iceberg decimal")
        return f"decimal({precision},{scale})"
    raise ValueError(f"unknown column type {name!r}")


def kind_of(value: Any) -> str | None:
    """The type a JSON value suggests (None for NULL: it suggests nothing)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, int):
        if -(2**63) <= value < 2**63:
            return LONG
        return DECIMAL_INTEGER if len(str(abs(value))) <= 38 else STRING
    if isinstance(value, (Decimal, float)):
        return DOUBLE
    return STRING


def unify(kinds: set[str]) -> str:
    """One column type for the kinds seen in a batch: the narrowest that holds them all (integers beyond
    bigint widen a column of integers to ``decimal(38,0)``; any number with a fraction makes it ``double``)."""
    kinds = {k for k in kinds if k}
    if not kinds:
        return STRING
    if len(kinds) == 1:
        return next(iter(kinds))
    if kinds <= {LONG, DECIMAL_INTEGER}:
        return DECIMAL_INTEGER
    if kinds <= {LONG, DECIMAL_INTEGER, DOUBLE}:
        return DOUBLE
    return STRING


def arrow_type(type_name: str) -> pa.DataType:
    match = _DECIMAL.match(type_name)
    if match:
        return pa.decimal128(int(match[1]), int(match[2]))
    return {
        STRING: pa.string(),
        LONG: pa.int64(),
        DOUBLE: pa.float64(),
        BOOLEAN: pa.bool_(),
        TIMESTAMP: pa.timestamp("us", tz="UTC"),
        DATE: pa.date32(),
        BINARY: pa.binary(),
    }[type_name]


def layout_schema(ddl: str) -> pa.Schema:
    """One of cdclake's own layouts (change log, hidden columns), stated once as Spark DDL, as an Arrow schema."""
    extra = {"int": pa.int32(), "map<string,string>": pa.map_(pa.string(), pa.string())}
    return pa.schema([(name, extra.get(t) or arrow_type(t)) for name, t in (c.split(" ") for c in ddl.split(", "))])


def type_from_engine(type_text: Any) -> str:
    """Our type name for a Spark (``bigint``) or pyiceberg (``long``) type of an existing column."""
    text = str(type_text).lower().replace(" ", "")
    mapping = {
        "string": STRING,
        "long": LONG,
        "bigint": LONG,
        "int": LONG,
        "integer": LONG,
        "smallint": LONG,
        "tinyint": LONG,
        "double": DOUBLE,
        "float": DOUBLE,
        "boolean": BOOLEAN,
        "timestamptz": TIMESTAMP,
        "timestamp": TIMESTAMP,
        "timestamp_ntz": TIMESTAMP,
        "date": DATE,
        "binary": BINARY,
    }
    if text in mapping:
        return mapping[text]
    if text.startswith("decimal"):
        return canonical_type(text)
    raise ValueError(f"column type {type_text} is not supported by cdclake")


def quote_ident(name: str) -> str:
    """Spark SQL identifier quoting for names that come from data."""
    return "`" + name.replace("`", "``") + "`"


_TS_FORMATS = ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d:%H:%M:%S.%f", "%Y-%m-%d:%H:%M:%S")


def cast(value: Any, type_name: str) -> Any:
    """Cast a JSON value to the Python value Arrow stores for ``type_name``."""
    if value is None:
        return None
    try:
        if type_name == STRING:
            return _to_string(value)
        if type_name == LONG:
            return _to_long(value)
        if type_name == DOUBLE:
            if isinstance(value, bool):
                raise CastError("boolean")
            return float(value)
        if type_name == BOOLEAN:
            return _to_bool(value)
        if type_name.startswith("decimal"):
            return _to_decimal(value, type_name)
        if type_name == TIMESTAMP:
            return _to_timestamp(value)
        if type_name == DATE:
            return _to_date(value)
        if type_name == BINARY:
            return _to_binary(value)
    except CastError:
        pass
    except (ValueError, TypeError, InvalidOperation, OverflowError, binascii.Error):
        pass
    raise CastError(f"value {_json_text(value)[:80]} is not a valid {type_name}")


#: A UTF-16 surrogate: JSON text may spell one alone (``"\ud800"``), but it is not Unicode text, and Arrow,
#: Parquet and Iceberg refuse it (a table's whole commit failed on one such value).
_SURROGATE = re.compile("[\ud800-\udfff]")


def _to_string(value: Any) -> str:
    """Text as it is, refused when it holds a lone surrogate; any other JSON value as its JSON text, with such a
    surrogate escaped (``\\ud800``: the same JSON value, now Unicode text)."""
    if not isinstance(value, str):
        return _json_text(value)
    if not value.isascii() and _SURROGATE.search(value):
        raise CastError("a lone UTF-16 surrogate: not Unicode text")
    return value


def _json_text(value: Any) -> str:
    """``value``'s JSON text with any lone surrogate escaped (``\\ud800``): the same JSON, and Unicode text (a
    reason or a string column holding it can be written)."""
    text = to_json(value)
    return text if text.isascii() else _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _to_binary(value: Any) -> bytes:
    """Binary values travel as base64 text (``events.to_json``; each decoder reads its format's own encoding into
    it): nothing else is one. A number or a list is refused here, never turned into bytes (``bytes(n)`` would
    allocate as many bytes as the input says)."""
    if isinstance(value, bytes):
        return value
    if not isinstance(value, str):
        raise CastError("not base64 text")
    return base64.b64decode(value, validate=True)


def _to_long(value: Any) -> int:
    if isinstance(value, bool):
        raise CastError("boolean")
    if isinstance(value, int):
        result = value  # an integer beyond bigint would make the whole table's write fail: quarantined here
    else:
        number = Decimal(value) if isinstance(value, str) else Decimal(str(value))
        if number != number.to_integral_value():
            raise CastError("fraction")
        result = int(number)
    if not -(2**63) <= result < 2**63:
        raise CastError("range")
    return result


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise CastError("not a boolean")


#: Room for any Iceberg decimal (38 digits): the default context's 28 refused a decimal(38,s) value of more
#: digits. Past it, quantize raises (a value of huge exponent is refused, not expanded).
_DECIMAL_CONTEXT = Context(prec=38)


def _to_decimal(value: Any, type_name: str) -> Decimal:
    match = _DECIMAL.match(type_name)
    assert match
    precision, scale = int(match[1]), int(match[2])
    if isinstance(value, bool):
        raise CastError("boolean")
    number = value if isinstance(value, Decimal) else Decimal(str(value))
    quantized = number.quantize(Decimal(1).scaleb(-scale), context=_DECIMAL_CONTEXT)
    if quantized != number or len(quantized.as_tuple().digits) > precision:
        raise CastError("precision")
    return quantized


def _to_timestamp(value: Any) -> dt.datetime:
    if isinstance(value, dt.datetime):
        parsed = value
    else:
        text = str(value).strip()
        parsed = None
        try:
            parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            for fmt in _TS_FORMATS:
                try:
                    parsed = dt.datetime.strptime(text, fmt)
                    break
                except ValueError:
                    continue
        if parsed is None:
            raise CastError("timestamp")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.astimezone(dt.UTC)


def _to_date(value: Any) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value).strip()[:10])
