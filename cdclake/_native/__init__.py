"""Compiled helpers of the decode path, built by ``make setup`` (``python -m cdclake._native.build``).

Why: a span of Kafka Connect records costs decode about 40 us a record in Python, and splitting each image
object into Arrow columns of member names and value texts was the largest part left that needs no Python
object per value (docs/decisions.md, "Image objects split in C"). Each helper has a Python path it is held to
by tests; where the module is not built (no C compiler, e.g. a slim image), that path runs and nothing else
changes. ``CDCLAKE_NATIVE=0`` turns the helpers off.
"""

from __future__ import annotations

import os
from types import ModuleType


def _load() -> ModuleType | None:
    if os.environ.get("CDCLAKE_NATIVE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    try:
        from cdclake._native import _json_objects
    except ImportError:
        return None
    return _json_objects


#: ``split_objects(texts, offsets)`` (see ``_json_objects.c``), or None where it is not built or turned off.
json_objects: ModuleType | None = _load()
