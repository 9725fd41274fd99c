"""One module per vendor format; importing this package registers them all.

Owns the reference decoders, one module per format id (`goldengate_json`, `debezium_json`, ...: a
:class:`cdclake.registry.Decoder` registered with ``registry.register``), the columnar paths that read a span of
JSON records at a time into Arrow (hooks beside the reference decoder, registered under the same format id with
``registry.register_columns``), the engine those share (`columnar`: spans, the reference decoder behind every span
it does not read), and helpers shared by several formats (the ``_`` modules).

Modules are discovered, not listed, so adding a format is adding a module (docs/writing-a-decoder.md). The names
other packages import are exported here (``__all__``, resolved through PEP 562's ``__getattr__`` like the other
packages' faces; every module is loaded on import anyway, to register it).
"""

import importlib
import pkgutil

from cdclake import lazy_exports

#: Modules of this package exported as themselves.
_MODULES = (
    "columnar",
    "datahub_blob",
    "datahub_tuple",
    "debezium_json",
    "goldengate_delimited",
    "goldengate_json",
    "goldengate_xml",
    "qlik_avro",
)
#: The other public names, by the module of this package that defines them.
_NAMES = {
    "_avro_binary": ("OCF_MAGIC", "SYNC_SIZE", "Malformed", "read_varint"),
    "_gg_avro": ("codec_problem", "ocf_header"),
    "cdl_json": ("CdlJsonDecoder",),
    "columnar": (
        "DATE_DAYS",
        "TS_MICROS",
        "TS_MILLIS",
        "TS_NANOS",
        "UNNAMED",
        "repeated_values",
        "respelt",
        "schema_texts",
        "shallow",
        "spans",
    ),
    "datahub_blob": ("DataHubBlobDecoder",),
    "datahub_tuple": ("OPERATION", "DataHubTupleDecoder"),
    "debezium_json": ("DebeziumJsonDecoder",),
    "goldengate_avro_op": ("GoldenGateAvroOpDecoder",),
    "goldengate_avro_row": ("GoldenGateAvroRowDecoder",),
    "goldengate_delimited": ("GoldenGateDelimitedDecoder",),
    "goldengate_json": ("GoldenGateJsonDecoder",),
    "goldengate_xml": ("GoldenGateXmlDecoder",),
    "qlik_avro": ("ENVELOPE_SCHEMA", "REFRESH_SEQ", "QlikAvroDecoder", "has_bit", "mask_number"),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _NAMES, _MODULES)


for _module in sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")):
    importlib.import_module(f"{__name__}.{_module}")
