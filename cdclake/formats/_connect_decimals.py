"""Kafka Connect decimals (base64 two's-complement bytes and a scale) converted a column at a time.

The reference converts each value through ``kafka_connect.happy_path``'s ``decimal``: ``b64decode`` (strict
alphabet), ``int.from_bytes(signed)``, ``Decimal(f"{n}E{-scale}")`` and ``str``. About five microseconds a value
in Python, and the Debezium bench stream holds 2.6 per event (a tenth of its decode task). Here numpy reads the
base64 of up to 8 bytes at once and Arrow spells the numbers, or C does both (``cdclake.native.connect_decimals``);
every value outside that common case (longer or non-canonical base64, escapes, a number ``str(Decimal)`` writes
with an exponent) stays with the reference.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from cdclake import native
from cdclake.events.arrow_text import with_spelt

#: A column kind (``columnar``' kinds): a Connect decimal of base64 bytes with this scale added (0-63).
CONNECT_DECIMAL_KIND = 32
MAX_SCALE = 63


def connect_decimal_kind(scale: int | None) -> int | None:
    """The kind of a Connect decimal field of this scale; None where the reference alone converts it."""
    return None if scale is None or not 0 <= scale <= MAX_SCALE else CONNECT_DECIMAL_KIND + scale


def with_connect_decimals(texts: pa.Array, kinds: np.ndarray, slow: np.ndarray, probed: np.ndarray) -> pa.Array:
    """``texts`` (``large_string`` JSON texts) with each Connect decimal of the common case replaced by the
    reference's JSON text of its number (:func:`cdclake.native.connect_decimals`); those are no longer ``slow``."""
    candidates = np.flatnonzero((kinds >= CONNECT_DECIMAL_KIND) & ~probed)
    if not len(candidates):
        return texts
    scales = (kinds[candidates].astype(np.int64) - CONNECT_DECIMAL_KIND).astype(np.int8)
    return with_spelt(texts, slow, candidates, native.connect_decimals(texts, candidates, scales))
