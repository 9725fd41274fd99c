"""What each JSON text of a column is (null, a boolean, a string, a number, an integer) and whether the builder
would spell it otherwise, read from the column's bytes in one pass.

Why: the columnar fast paths judge every image value this way. As Arrow kernels (``equal``, ``starts_with``,
``is_in``, ``match_substring`` per needle, a regular expression for integers) that was about fifteen passes and
about a quarter of a Debezium image column's build. The texts are valid JSON values (msgspec read them), so a value's
first byte says what it is, one comparison over the bytes finds the backslashes, and exponents and decimal
points are looked for in the numbers' bytes alone.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyarrow as pa

from cdclake import native


class JsonShapes(NamedTuple):
    """Per text, as numpy bools (False for a null text)."""

    null: np.ndarray
    boolean: np.ndarray
    string: np.ndarray
    #: a number the builder spells as written (``number`` and not ``spelt``)
    number: np.ndarray
    #: ``number`` with neither a point nor an exponent
    integer: np.ndarray
    #: what :func:`json_shapes` says the builder writes another way
    spelt: np.ndarray
    backslash: np.ndarray


def json_shapes(texts: pa.Array) -> JsonShapes:
    """The shapes of ``texts`` (a ``string`` / ``large_string`` array of valid JSON values).

    ``spelt``: escapes in a string (only strings hold a backslash), nested values, and numbers ``Decimal`` or
    ``int`` write another way (an exponent; ``-0``; a decimal below 1e-6: ``0.0000001`` is ``1E-7``, every one of
    them starts with six zeros after the point, and a few that do not respell are flagged too).

    One scan of each text gives all of it as bits (:func:`cdclake.native.shape_bits`: in C where built, else numpy
    passes over the column's bytes)."""
    bits = native.shape_bits(texts)
    return JsonShapes(
        null=(bits & native.SHAPE_NULL) != 0,
        boolean=(bits & native.SHAPE_BOOLEAN) != 0,
        string=(bits & native.SHAPE_STRING) != 0,
        number=(bits & native.SHAPE_NUMBER) != 0,
        integer=(bits & native.SHAPE_INTEGER) != 0,
        spelt=(bits & native.SHAPE_SPELT) != 0,
        backslash=(bits & native.SHAPE_BACKSLASH) != 0,
    )
