"""Bounds on what hostile input can make a decoder do, in one place (docs/reliability.md, "Hostile input").

Landing files come from outside: a writer bug, a truncated copy or a deliberate attack must
cost at most the records it touches, in bounded time and memory. Every decoder takes its
limits from here (under its own module names, which tests patch), so that one table says what
cdclake accepts. Whatever exceeds a limit is rejected with a reason naming the limit, never
allocated or expanded first.
"""

from __future__ import annotations

#: Largest decompressed landing file read into memory at once; a larger file is quarantined whole. Also
#: the most the blocks of one Avro OCF file may inflate to in all (later blocks are rejected).
MAX_FILE_BYTES = 4 * 1024**3
#: A record (JSON object, text line, XML document, CSV record, Avro message or record, Qlik
#: envelope) larger than this is rejected.
MAX_RECORD_BYTES = 64 * 1024**2
#: A rejected record keeps at most this many of its bytes in quarantine (file + offset locate the rest).
MAX_RAW_BYTES = 1024**2
#: JSON containers nested deeper than this reject their record (Python's parser would stop near 1000
#: levels with a RecursionError; the limit keeps every later recursive walk far from that).
MAX_JSON_DEPTH = 512
#: XML elements nested deeper than this reject their document (checked before parsing).
MAX_XML_DEPTH = 512
#: Schema texts (Avro ``.avsc`` files, OCF headers, Qlik ``messageSchema``/``dataSchema``,
#: GoldenGate ``.schema.json``) larger than this are not read.
MAX_SCHEMA_BYTES = 16 * 1024**2
#: An Avro OCF block that decompresses to more than this is rejected, never inflated further.
MAX_BLOCK_BYTES = 64 * 1024**2
#: Avro types nested deeper than this are refused (GoldenGate schemas, named types expanded).
MAX_AVRO_TYPE_DEPTH = 128
#: Avro types nested deeper than this are refused in Qlik schemas, which arrive inside the data
#: stream itself (so are stricter than schema files an operator installs).
MAX_QLIK_TYPE_DEPTH = 64
#: JSON nesting allowed in an Avro schema text (three JSON levels per Avro level, plus slack).
MAX_SCHEMA_JSON_DEPTH = 3 * MAX_AVRO_TYPE_DEPTH + 8
#: Entries allowed in a GoldenGate OCF header's metadata map.
MAX_OCF_HEADER_ENTRIES = 1024
#: Entries allowed in a Qlik envelope's ``headers`` map or a Qlik OCF header.
MAX_QLIK_MAP_ENTRIES = 4096
#: ``.avsc`` files read from one schema directory.
MAX_SCHEMA_FILES = 10_000
#: Candidate positions tried after a bad raw Avro message before the rest of the file is rejected.
MAX_RESYNC_TRIES = 1000
#: Largest decimal precision accepted in an Avro schema.
MAX_DECIMAL_PRECISION = 1000
#: Kafka Connect decimals whose unscaled value takes more bytes than this are refused (~2,466 digits).
MAX_DECIMAL_BYTES = 1024
#: Decimal strings longer than this are refused (Python's int/str conversion limit is 4,300 digits).
MAX_DECIMAL_CHARS = 4000
#: Kafka Connect schema blocks nested deeper than this reject their record.
MAX_CONNECT_SCHEMA_DEPTH = 64
