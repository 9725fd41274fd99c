"""Compiled helpers of the decode and merge paths, built by ``make setup`` (``python -m cdclake._native.build``).

Why: a span of Kafka Connect records cost decode about 40 us a record in Python, and splitting each image
object into Arrow columns of member names and value texts was the largest part left that needs no Python
object per value; the merge's routing judged every image value by a regular expression, a third of a bulk
compact step (docs/decisions.md, "Image objects split in C; ..." and "Value forms scanned in C"). Each helper
has a Python path it is held to by tests; where a module is not built (no C compiler, e.g. a slim image), that
path runs and nothing else changes. ``CDCLAKE_NATIVE=0`` turns the helpers off.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType


def _load(name: str) -> ModuleType | None:
    if os.environ.get("CDCLAKE_NATIVE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    try:
        return importlib.import_module(f"cdclake._native.{name}")
    except ImportError:
        return None


#: ``split_objects(texts, offsets)`` (see ``_json_objects.c``), or None where it is not built or turned off.
json_objects: ModuleType | None = _load("_json_objects")
#: ``number_forms`` and ``quoted_forms`` (see ``_text_forms.c``), or None likewise.
text_forms: ModuleType | None = _load("_text_forms")
#: ``epoch_texts`` (see ``_value_texts.c``), or None likewise.
value_texts: ModuleType | None = _load("_value_texts")
#: ``first_entries`` (see ``_image_index.c``), or None likewise.
image_index: ModuleType | None = _load("_image_index")
