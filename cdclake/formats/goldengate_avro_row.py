"""GoldenGate for Big Data Avro row formatter output (format id ``goldengate-avro-row``, vendor doc §6.4, §6.6).

Why it is written this way:

- A row message is one flat record: the operation metadata (``table``, ``op_type``, ``op_ts``,
  ``current_ts``, ``pos``, ``primary_keys``, ``tokens``) followed by one field per column
  (§6.4.1). It carries a single image: the after image for inserts and updates, the before
  image for deletes, none for truncates (§6.1.2).
- Avro fields have two states, so a column missing from the trail arrives as NULL (§6.4.1.2):
  every column of the schema is a present key of the image, a missing one with ``None``. The
  merge then writes NULL where a partial update meant "unchanged"; the vendor recommends full
  supplemental logging with this formatter, and ``goldengate-avro-op`` keeps the difference.
- A primary key update is whatever ``pkUpdateHandling`` made of it on the writer side (``update``:
  an UPDATE with the new row only; ``delete-insert``: a DELETE then an INSERT): the option is
  accepted and checked, the records are decoded as written.
- Containers (OCF, raw messages with ``schemaDir``, generic wrapper), schema handling, ``SCHEMA``
  events and bounds are shared with the operation decoder in :mod:`cdclake.formats._gg_avro`.
"""

from __future__ import annotations

from typing import Any

from cdclake.formats._gg_avro import GoldenGateAvroDecoder, Layout, column_value
from cdclake.registry import register


@register("goldengate-avro-row")
class GoldenGateAvroRowDecoder(GoldenGateAvroDecoder):
    """Decoder of GoldenGate Avro row messages (see the module docstring)."""

    layout_kind = "row"

    def images(
        self, record: dict[str, Any], op: str, layout: Layout
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        if op == "TRUNCATE":
            return None, None
        row = {column.name: column_value(column, record.get(column.name)) for column in layout.columns}
        return (row, None) if op == "DELETE" else (None, row)
