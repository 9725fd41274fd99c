"""Decoder options (``--option KEY=VALUE``; DESIGN.md section 2, a contract).

Vendor settings keep the vendor document's key without its prefix
(``gg.handler.name.format.jsonDelimiter`` -> ``jsonDelimiter``) and accept the
document's ``CDATA[...]`` wrapping, so a user can paste values from their
replication tool's configuration unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

#: Options every format understands.
COMMON_OPTIONS = frozenset({"keys", "schemaDir", "table"})


class OptionError(ValueError):
    """Bad option: a usage error (the CLI exits 2)."""


def unwrap_cdata(value: str) -> str:
    """``CDATA[\\n]`` -> the text inside; escapes such as ``\\n``, ``\\u0001`` resolved."""
    if value.startswith("CDATA[") and value.endswith("]"):
        value = value[len("CDATA[") : -1]
    return _unescape(value)


_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|[ntr0\\])")
_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\"}


def _unescape(value: str) -> str:
    """Resolve ``\\n``, ``\\t``, ``\\u0001``, ``\\x01``...; unknown escapes (Hive's ``\\N``) stay as written."""

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        return chr(int(code[1:], 16)) if code[0] in "ux" else _SIMPLE[code]

    return _ESCAPE.sub(one, value)


class Options:
    """Typed access to string options, checked against what a decoder knows."""

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self._values = dict(values or {})

    @classmethod
    def parse(cls, pairs: Iterable[str]) -> Options:
        """Parse ``KEY=VALUE`` strings."""
        values: dict[str, str] = {}
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep or not key.strip():
                raise OptionError(f"option {pair!r} is not KEY=VALUE")
            values[key.strip()] = value
        return cls(values)

    def check_known(self, known: Iterable[str], format_id: str) -> None:
        """Reject options the format does not understand (typos must not pass silently)."""
        allowed = set(known) | COMMON_OPTIONS
        unknown = sorted(k for k in self._values if k not in allowed)
        if unknown:
            raise OptionError(
                f"unknown option(s) {', '.join(unknown)} for format {format_id}; known: {', '.join(sorted(allowed))}"
            )

    def raw(self) -> dict[str, str]:
        return dict(self._values)

    def __contains__(self, key: str) -> bool:
        return key in self._values

    def str(self, key: str, default: str | None = None) -> str | None:
        """The value with ``CDATA[...]`` unwrapped and escapes resolved."""
        if key not in self._values:
            return default
        return unwrap_cdata(self._values[key])

    def bool(self, key: str, default: bool) -> bool:
        if key not in self._values:
            return default
        value = self._values[key].strip().lower()
        if value in ("true", "1", "yes"):
            return True
        if value in ("false", "0", "no"):
            return False
        raise OptionError(f"option {key} must be true or false, not {self._values[key]!r}")

    def list(self, key: str) -> list[str] | None:
        """Comma-separated list (``keys=A,B``); None when not given."""
        value = self.str(key)
        if value is None:
            return None
        items = [item.strip() for item in value.split(",") if item.strip()]
        return items or None
