"""Which compiled helpers run: each C module of the package is loaded once, where it is built, and used unless
``CDCLAKE_NATIVE=0`` (read at import) or :func:`disabled` (tests) turns the C off; the helpers then run their
Python equivalents."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

#: The compiled modules, by helper name (``text_forms``: ``cdclake/native/_text_forms.c``).
HELPERS = ("image_index", "json_objects", "text_forms", "value_texts")


class NotBuilt(RuntimeError):
    """A helper with no Python equivalent was asked for where its C module is not built or is turned off: the
    caller checks :func:`available` first and takes its own other way."""


def _load(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(f"cdclake.native._{name}")
    except ImportError:
        return None


def _turned_off() -> bool:
    return os.environ.get("CDCLAKE_NATIVE", "1").strip().lower() in ("0", "false", "no", "off")


_BUILT: dict[str, ModuleType | None] = {name: _load(name) for name in HELPERS}
#: Whether the C runs (where built); set by ``CDCLAKE_NATIVE`` at import and by :func:`disabled`.
_STATE = {"on": not _turned_off()}


def compiled(name: str) -> ModuleType | None:
    """The C module of helper ``name``, or None where it is not built or the C is turned off."""
    return _BUILT[name] if _STATE["on"] else None


def available(name: str) -> bool:
    """Whether helper ``name``'s C runs (:data:`HELPERS`: ``json_objects``, ``text_forms``, ...)."""
    if name not in _BUILT:
        raise ValueError(f"no native helper {name!r} (one of {', '.join(HELPERS)})")
    return compiled(name) is not None


def built(name: str) -> bool:
    """Whether helper ``name``'s C module is built (turned off or not)."""
    return _BUILT[name] is not None


@contextmanager
def disabled(off: bool = True) -> Iterator[None]:
    """Within the block every helper runs its Python path (``off=False``: the C where built): the switch tests
    use to hold each path to the other. Not for threads that run helpers meanwhile (one switch for the process)."""
    before = _STATE["on"]
    _STATE["on"] = not off and not _turned_off()
    try:
        yield
    finally:
        _STATE["on"] = before
