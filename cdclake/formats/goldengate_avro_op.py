"""GoldenGate for Big Data Avro operation formatter output (format id ``goldengate-avro-op``, vendor doc §6.5, §6.6).

Why it is written this way:

- An operation message is the operation metadata (``table``, ``op_type``, ``op_ts``,
  ``current_ts``, ``pos``, ``primary_keys``, ``tokens``) plus ``before`` and ``after`` records
  (or null) of the same ``columns`` record type (§6.5.1, §6.5.3).
- Each column ``C`` has a companion boolean ``C_isMissing`` giving the trail's three states
  (§6.5.1.2): a value, NULL (``C`` null, flag false) and missing (``C`` null, flag true). Missing
  becomes an absent key of the image, NULL a present key with ``None``: partial updates and
  key-only deletes merge correctly. A flag saying "missing" next to a non-null value is a
  contradiction and rejects the record. A column without a flag field is read as it is.
- Containers (OCF, raw messages with ``schemaDir``, generic wrapper), schema handling, ``SCHEMA``
  events and bounds are shared with the row decoder in :mod:`cdclake.formats._gg_avro`.
"""

from __future__ import annotations

from typing import Any

from cdclake.formats._gg_avro import Column, GoldenGateAvroDecoder, Layout, column_value
from cdclake.registry import register


@register("goldengate-avro-op")
class GoldenGateAvroOpDecoder(GoldenGateAvroDecoder):
    """Decoder of GoldenGate Avro operation messages (see the module docstring)."""

    layout_kind = "op"

    def images(
        self, record: dict[str, Any], op: str, layout: Layout
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        if op == "TRUNCATE":
            return None, None
        return (
            _image(record.get("before"), layout.images.get("before"), "before"),
            _image(record.get("after"), layout.images.get("after"), "after"),
        )


def _image(values: Any, columns: list[Column] | None, name: str) -> dict[str, Any] | None:
    if values is None or columns is None:
        return None
    if not isinstance(values, dict):
        raise ValueError(f"{name} is not a record of column values")
    image: dict[str, Any] = {}
    for column in columns:
        value = values.get(column.name)
        if column.flag is not None and values.get(column.flag) is True:
            if value is not None:
                raise ValueError(f"{name} column {column.name} has a value although {column.flag} is true")
            continue
        image[column.name] = column_value(column, value)
    return image
