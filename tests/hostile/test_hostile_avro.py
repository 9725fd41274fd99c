"""Hostile input for the Avro decoders: goldengate-avro-row, goldengate-avro-op and qlik-avro.

Avro bytes are written here with fastavro (records) and a small hand-made OCF writer (framing
fastavro would refuse to write: wrong sync markers, absurd declared lengths, unknown codecs).
Records carry an ``ID`` column; see :mod:`._corpus` for what every case asserts."""

from __future__ import annotations

import io
import json
import zlib
from pathlib import Path
from typing import Any

import fastavro
import pytest

from cdclake.formats._gg_avro import java_string_hash
from cdclake.formats.qlik_avro import ENVELOPE_SCHEMA
from cdclake.runtime.limits import MAX_BLOCK_BYTES

from ._corpus import DEEP, Case, check, huge_text
from ._runner import Outcome
from ._truncation import sweep_truncations

SYNC = bytes(range(16))
BAD = b"\xff\xfe\xfd\xfc"  # replaces the 4 bytes of a "@@@@" string: not UTF-8


def zz(n: int) -> bytes:
    """Avro long (zig-zag varint)."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def avro_bytes(value: bytes) -> bytes:
    return zz(len(value)) + value


def avro(schema: Any, record: Any) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


def ocf_header(schema_text: str, codec: str = "null", sync: bytes = SYNC) -> bytes:
    meta = [(b"avro.schema", schema_text.encode()), (b"avro.codec", codec.encode())]
    return b"Obj\x01" + zz(len(meta)) + b"".join(avro_bytes(k) + avro_bytes(v) for k, v in meta) + zz(0) + sync


def block(content: bytes, count: int = 1, sync: bytes = SYNC, size: int | None = None) -> bytes:
    return zz(count) + zz(len(content) if size is None else size) + content + sync


def deflate(content: bytes) -> bytes:
    squeezer = zlib.compressobj(9, zlib.DEFLATED, -15)
    return squeezer.compress(content) + squeezer.flush()


def deep_schema(depth: int = DEEP) -> str:
    """An Avro type nested ``depth`` levels deep (as JSON text: too deep for any parser's stack)."""
    return '{"type": "array", "items": ' * depth + '"long"' + "}" * depth


# --- GoldenGate ------------------------------------------------------------------------------------

#: A record type whose values take no bytes, and how many of them a tiny block may declare.
NOTHING = {"type": "record", "name": "T", "namespace": "GG", "fields": [{"name": "x", "type": "null"}]}
ZEROS = 2_000_000
#: Bad records in one compressed block.
MANY = 5000


def _raw_at_most(outcome: Outcome, limit: int) -> None:
    total = sum(r.raw_len for r in outcome.rejected)
    assert total <= limit, f"quarantined {total} bytes for {limit} bytes of bad records"


META_FIELDS = [
    {"name": "table", "type": "string"},
    {"name": "op_type", "type": "string"},
    {"name": "op_ts", "type": "string"},
    {"name": "current_ts", "type": "string"},
    {"name": "pos", "type": "string"},
    {"name": "primary_keys", "type": {"type": "array", "items": "string"}},
    {"name": "tokens", "type": {"type": "map", "values": "string"}},
]


def columns(decimal: bool) -> list[dict[str, Any]]:
    price = {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2} if decimal else "bytes"
    return [
        {"name": "ID", "type": ["null", "long"]},
        {"name": "NAME", "type": ["null", "string"]},
        {"name": "PRICE", "type": ["null", price]},
    ]


def gg_schema(kind: str, decimal: bool = True) -> dict[str, Any]:
    """The table's schema as GoldenGate writes it (``decimal=False``: what our writer encodes with)."""
    if kind == "row":
        fields = META_FIELDS + columns(decimal)
    else:
        flagged = []
        for column in columns(decimal):
            flagged += [column, {"name": column["name"] + "_isMissing", "type": "boolean"}]
        image = {"type": "record", "name": "columns", "fields": flagged}
        fields = [
            *META_FIELDS,
            {"name": "before", "type": ["null", image]},
            {"name": "after", "type": ["null", "columns"]},
        ]
    return {"type": "record", "name": "T", "namespace": "GG", "fields": fields}


def gg_record(kind: str, i: int, op: str = "I", table: str = "GG.T", name: str = "n", price: bytes | None = None):
    meta = {
        "table": table,
        "op_type": op,
        "op_ts": "2024-01-01 00:00:00.000000",
        "current_ts": "2024-01-01T00:00:00.000000",
        "pos": f"{i:020d}",
        "primary_keys": ["ID"],
        "tokens": {"R": "x"},
    }
    values = {"ID": i, "NAME": name, "PRICE": price}
    if kind == "row":
        return meta | values
    image = {**values, **{f"{c}_isMissing": False for c in values}}
    return meta | {"before": None, "after": image}


def gg_message(kind: str, i: int, **kw: Any) -> bytes:
    return avro(gg_schema(kind, decimal=False), gg_record(kind, i, **kw))


def gg_text(kind: str) -> str:
    return json.dumps(gg_schema(kind))


def gg_ocf(kind: str, *messages: bytes, codec: str = "null", text: str | None = None) -> bytes:
    return ocf_header(text or gg_text(kind), codec) + b"".join(block(m) for m in messages)


def gg_cases(kind: str) -> list[Case]:
    m = lambda i, **kw: gg_message(kind, i, **kw)  # noqa: E731
    ocf = lambda *ms, **kw: gg_ocf(kind, *ms, **kw)  # noqa: E731
    header = ocf_header(gg_text(kind))

    def around(bad: bytes) -> list[tuple[str, bytes]]:
        return [("f.avro", ocf(m(1), bad, m(3)))]

    def files(bad: bytes) -> list[tuple[str, bytes]]:
        """A good file, a bad file (its header is the problem), a good file."""
        return [("a.avro", ocf(m(1))), ("b.avro", bad), ("c.avro", ocf(m(3)))]

    def table_kept(outcome: Outcome) -> None:
        assert all(e.table == "GG.T" for e in outcome.events), "an empty table field falls back to the record name"

    text = gg_text(kind)
    duplicated_member = text.replace('"name": "T"', '"name": "T", "name": "U"', 1)
    schema = gg_schema(kind)
    schema["fields"] = [*schema["fields"], {"name": "pos", "type": "string"}]
    two_fields = json.dumps(schema)
    recursive = {
        "type": "record",
        "name": "T",
        "namespace": "GG",
        "fields": [*META_FIELDS, {"name": "NEXT", "type": ["null", "T"]}],
    }
    bomb = deflate(b"\x00" * (MAX_BLOCK_BYTES + 1024))
    wrong_sync = block(m(2), sync=bytes(16))
    many = block(deflate(m(2, op="X") * MANY), count=MANY)
    return [
        Case("empty-file", [("f.avro", b"")], [], []),
        Case("truncated-last-record", [("f.avro", ocf(m(1), m(2), m(3))[:-30])], [1, 2], ["truncated"]),
        Case("invalid-utf8", around(m(2, name="@@@@").replace(b"@@@@", BAD)), [1, 3], ["not valid UTF-8"]),
        Case("record-64mib", around(m(2, name=huge_text())), [1, 3], ["larger than the limit"], big=True),
        Case("deeply-nested", files(ocf_header(deep_schema()) + block(b"\x00")), [1, 3], ["nests JSON deeper"]),
        Case("unknown-op", around(m(2, op="X")), [1, 3], ["unknown op_type"]),
        Case("missing-table", around(m(2, table="")), [1, 2, 3], [], extra=table_kept),
        Case("wrong-value-types", around(m(2, price=(10**7).to_bytes(4, "big"))), [1, 3], ["more than the 5 digits"]),
        Case(
            "duplicate-keys",
            [
                ("a.avro", ocf(m(1))),
                ("b.avro", ocf(m(2), text=duplicated_member)),
                ("c.avro", ocf(m(3))),
                ("d.avro", ocf(m(4), text=two_fields)),
                ("e.avro", ocf(m(5))),
            ],
            [1, 3, 5],
            ["duplicate key", "two fields named"],
        ),
        # Avro framing and codecs
        Case("corrupted-block", around(b"\xff" * len(m(2))), [1, 3], ["cannot be read"]),
        # the block after a wrong marker is framed only by the corrupt block's length: it is
        # quarantined with it (in the rejection's bytes) and reading resumes at the next good marker
        Case(
            "wrong-sync-marker",
            [("f.avro", header + block(m(1)) + wrong_sync + block(m(3)) + block(m(4)))],
            [1, 4],
            ["sync marker"],
            written=4,
        ),
        Case(
            "huge-declared-lengths",
            [
                (
                    "f.avro",
                    header
                    + block(m(1))
                    + block(m(2), size=2**60)
                    + block(m(3))
                    + block(m(4), count=2**60)
                    + block(m(5)),
                )
            ],
            [1, 3, 5],
            ["declares 1152921504606846976 bytes but only", "declares 1152921504606846976 records"],
        ),
        Case("unknown-codec", files(gg_ocf(kind, m(2), codec="brotli-9000")), [1, 3], ["codec 'brotli-9000'"]),
        Case(
            "decompression-bomb",
            [("f.avro", ocf_header(text, "deflate") + block(deflate(m(1))) + block(bomb) + block(deflate(m(3))))],
            [1, 3],
            [f"decompresses to more than {MAX_BLOCK_BYTES}"],
            big=True,
        ),
        Case("recursive-schema", files(gg_ocf(kind, m(2), text=json.dumps(recursive))), [1, 3], ["recursive"]),
        # a 2 KB file whose compressed block declares 2 million records of no bytes each
        Case(
            "records-of-no-bytes",
            files(ocf_header(json.dumps(NOTHING), "deflate") + block(deflate(bytes(ZEROS)), count=ZEROS)),
            [1, 3],
            ["take no bytes"],
        ),
        # many bad records in one small compressed block: each is quarantined with its own bytes,
        # not with a copy of the block (which made a few KB quarantine gigabytes)
        Case(
            "many-bad-records-in-a-compressed-block",
            [("f.avro", ocf_header(text, "deflate") + block(deflate(m(1))) + many + block(deflate(m(3))))],
            [1, 3],
            ["unknown op_type"] * MANY,
            extra=lambda o: _raw_at_most(o, MANY * len(m(2, op="X"))),
        ),
    ]


WRAPPER = {
    "type": "record",
    "name": "generic_wrapper",
    "namespace": "oracle.goldengate",
    "fields": [
        {"name": "table_name", "type": "string"},
        {"name": "schema_hash", "type": "int"},
        {"name": "payload", "type": "bytes"},
    ],
}


def wrapper_case(kind: str) -> Case:
    """generic_wrapper messages; the second one's schema_hash names no schema of schemaDir."""
    text = gg_text(kind)
    known = java_string_hash(text)
    messages = [
        avro(WRAPPER, {"table_name": "GG.T", "schema_hash": h, "payload": gg_message(kind, i)})
        for i, h in ((1, known), (2, 12345), (3, known))
    ]
    return Case(
        "generic-wrapper-unknown-hash",
        [("f.bin", b"".join(messages))],
        [1, 3],
        ["schema_hash 12345, which matches no schema"],
        options={"schemaDir": "{dir}/schemas", "wrapMessageInGenericAvroMessage": "true"},
        aux={"schemas/GG.T.avsc": text.encode()},
    )


# --- Qlik ---------------------------------------------------------------------------------------------

COLUMN = {
    "type": "record",
    "name": "Column",
    "fields": [
        {"name": n, "type": t}
        for n, t in (
            ("ordinal", "int"),
            ("type", "string"),
            ("length", "int"),
            ("precision", "int"),
            ("scale", "int"),
            ("primaryKeyPosition", "int"),
            ("nullable", "boolean"),
        )
    ],
}
LINEAGE = {
    "type": "record",
    "name": "Lineage",
    "fields": [
        {"name": n, "type": t}
        for n, t in (
            ("server", "string"),
            ("task", "string"),
            ("schema", "string"),
            ("table", "string"),
            ("tableVersion", "long"),
            ("timestamp", "string"),
        )
    ],
}
METADATA = {
    "type": "record",
    "name": "MetadataMessage",
    "fields": [
        {"name": "schemaId", "type": "string"},
        {"name": "lineage", "type": LINEAGE},
        {
            "name": "tableStructure",
            "type": {
                "type": "record",
                "name": "TableStructure",
                "fields": [{"name": "tableColumns", "type": {"type": "map", "values": COLUMN}}],
            },
        },
        {"name": "dataSchema", "type": "string"},
    ],
}
HEADERS = [
    ("operation", "string"),
    ("changeSequence", "string"),
    ("timestamp", "string"),
    ("streamPosition", "string"),
    ("transactionId", "string"),
    ("changeMask", ["null", "bytes"]),
    ("columnMask", ["null", "bytes"]),
    ("transactionEventCounter", ["null", "long"]),
    ("transactionLastEvent", ["null", "boolean"]),
    ("externalSchemaId", ["null", "string"]),
]
DATA = {
    "type": "record",
    "name": "DataRecord",
    "fields": [
        {
            "name": "data",
            "type": {
                "type": "record",
                "name": "Data",
                "fields": [{"name": "ID", "type": ["null", "string"]}, {"name": "NAME", "type": ["null", "string"]}],
            },
        },
        {"name": "beforeData", "type": ["null", "Data"]},
        {
            "name": "headers",
            "type": {"type": "record", "name": "Headers", "fields": [{"name": n, "type": t} for n, t in HEADERS]},
        },
    ],
}


def envelope(kind: str, message: bytes, schema_id: str | None = None, schema: str | None = None) -> bytes:
    record = {
        "magic": b"atMSG",
        "type": kind,
        "headers": None,
        "messageSchemaId": schema_id,
        "messageSchema": schema,
        "message": message,
    }
    return avro(ENVELOPE_SCHEMA, record)


def md(schema_id: str = "S1", table: str = "T", data_schema: str | None = None) -> bytes:
    message = {
        "schemaId": schema_id,
        "lineage": {
            "server": "r1",
            "task": "t1",
            "schema": "S",
            "table": table,
            "tableVersion": 1,
            "timestamp": "2024-01-02T03:04:05.123",
        },
        "tableStructure": {
            "tableColumns": {
                "ID": {
                    "ordinal": 1,
                    "type": "INT4",
                    "length": 4,
                    "precision": 0,
                    "scale": 0,
                    "primaryKeyPosition": 1,
                    "nullable": False,
                },
                "NAME": {
                    "ordinal": 2,
                    "type": "STRING",
                    "length": 9,
                    "precision": 0,
                    "scale": 0,
                    "primaryKeyPosition": 0,
                    "nullable": True,
                },
            }
        },
        "dataSchema": data_schema if data_schema is not None else json.dumps(DATA),
    }
    return envelope("MD", avro(METADATA, message), schema_id, json.dumps(METADATA))


def dt_message(i: int, op: str = "INSERT", ident: str | None = None, name: str = "n") -> bytes:
    headers = {n: "" for n, t in HEADERS if t == "string"} | {n: None for n, t in HEADERS if t != "string"}
    headers |= {"operation": op, "changeSequence": f"2024010203040512{i:019d}"}
    return avro(
        DATA,
        {"data": {"ID": ident if ident is not None else str(i), "NAME": name}, "beforeData": None, "headers": headers},
    )


def dt(i: int, schema_id: str = "S1", **kw: Any) -> bytes:
    return envelope("DT", dt_message(i, **kw), schema_id)


def qlik_cases() -> list[Case]:
    def around(bad: bytes) -> list[tuple[str, bytes]]:
        return [("f.bin", md() + dt(1) + bad + dt(3))]

    recursive = {"type": "record", "name": "DataRecord", "fields": [{"name": "next", "type": ["null", "DataRecord"]}]}
    duplicated = json.dumps(DATA).replace('"name": "DataRecord"', '"name": "DataRecord", "name": "Other"', 1)
    rejected_md = "whose metadata was rejected"
    huge_length = b"atMSG" + avro_bytes(b"DT") + zz(0) + zz(1) + avro_bytes(b"S1") + zz(0) + zz(2**60) + b"\x00" * 64

    def ocf(*records: bytes, codec: str = "null", syncs: dict[int, bytes] | None = None) -> bytes:
        """An OCF of envelopes, one per block (envelope records read back by fastavro's schema)."""
        pack = deflate if codec == "deflate" else (lambda b: b)
        return ocf_header(json.dumps(ENVELOPE_SCHEMA), codec) + b"".join(
            block(pack(r), sync=(syncs or {}).get(n, SYNC)) for n, r in enumerate(records)
        )

    bomb = deflate(b"\x00" * (MAX_BLOCK_BYTES + 1024))
    return [
        Case("empty-file", [("f.bin", b"")], [], []),
        Case(
            "truncated-last-record",
            [("f.bin", md() + dt(1) + dt(2) + dt(3)[:-7])],
            [1, 2],
            ["bytes for its message but only"],
        ),
        Case("invalid-utf8", around(dt(2, name="@@@@").replace(b"@@@@", BAD)), [1, 3], ["not valid UTF-8"]),
        Case("record-64mib", around(dt(2, name=huge_text())), [1, 3], ["more than the limit"], big=True),
        Case(
            "deeply-nested",
            around(md("S2", data_schema=deep_schema()) + dt(2, "S2")),
            [1, 3],
            ["nests JSON too deeply", rejected_md],
        ),
        Case("unknown-op", around(dt(2, op="MERGE")), [1, 3], ["unknown operation"]),
        Case("missing-table", around(md("S2", table="") + dt(2, "S2")), [1, 3], ["no table name", rejected_md]),
        Case("wrong-value-types", around(dt(2, ident="abc")), [1, 3], ["is not an integer"]),
        Case(
            "duplicate-keys",
            around(md("S2", data_schema=duplicated) + dt(2, "S2")),
            [1, 3],
            ["duplicate key", rejected_md],
        ),
        Case(
            "recursive-schema",
            around(md("S2", data_schema=json.dumps(recursive)) + dt(2, "S2")),
            [1, 3],
            ["recursive", rejected_md],
        ),
        # a data message before its metadata message (in an earlier file) cannot be decoded
        Case(
            "data-before-metadata",
            [("a.bin", dt(1)), ("b.bin", md() + dt(2) + dt(3))],
            [2, 3],
            ["which no metadata message announced"],
        ),
        Case("huge-declared-length", around(huge_length), [1, 3], ["more than the limit"]),
        Case(
            "records-of-no-bytes",
            [
                ("a.bin", md() + dt(1)),
                ("b.avro", ocf_header(json.dumps(NOTHING), "deflate") + block(deflate(bytes(ZEROS)), count=ZEROS)),
                ("c.bin", dt(3)),
            ],
            [1, 3],
            ["take no bytes"],
        ),
        # a block whose record count is smaller than the records it holds: the rest is not dropped unseen
        Case(
            "bytes-after-the-declared-records",
            [
                (
                    "f.avro",
                    ocf_header(json.dumps(ENVELOPE_SCHEMA))
                    + block(md())
                    + block(dt(1))
                    + block(dt(2) + dt(9), count=1)
                    + block(dt(3)),
                )
            ],
            [1, 2, 3],
            ["bytes after its 1 records"],
        ),
        # OCF of envelopes: framing and codecs
        Case(
            "corrupted-block",
            [("f.avro", ocf(md(), dt(1), b"\xff" * len(dt(2)), dt(3)))],
            [1, 3],
            ["cannot be read"],
        ),
        Case(
            "wrong-sync-marker",
            [("f.avro", ocf(md(), dt(1), dt(2), dt(3), dt(4), syncs={2: bytes(16)}))],
            [1, 4],
            ["sync marker"],
            written=4,
        ),
        Case(
            "huge-declared-block-length",
            [
                (
                    "f.avro",
                    ocf_header(json.dumps(ENVELOPE_SCHEMA))
                    + block(md())
                    + block(dt(1))
                    + block(dt(2), size=2**60)
                    + block(dt(3)),
                )
            ],
            [1, 3],
            ["declares 1152921504606846976 bytes but only"],
        ),
        Case(
            "unknown-codec",
            [("a.bin", md() + dt(1)), ("b.avro", ocf(dt(2), codec="brotli-9000")), ("c.bin", dt(3))],
            [1, 3],
            ["codec 'brotli-9000'"],
        ),
        Case(
            "decompression-bomb",
            [
                (
                    "f.avro",
                    ocf_header(json.dumps(ENVELOPE_SCHEMA), "deflate")
                    + block(deflate(md()))
                    + block(deflate(dt(1)))
                    + block(bomb)
                    + block(deflate(dt(3))),
                )
            ],
            [1, 3],
            [f"decompresses to more than {MAX_BLOCK_BYTES}"],
            big=True,
        ),
    ]


ALL = (
    [("goldengate-avro-row", c) for c in [*gg_cases("row"), wrapper_case("row")]]
    + [("goldengate-avro-op", c) for c in [*gg_cases("op"), wrapper_case("op")]]
    + [("qlik-avro", c) for c in qlik_cases()]
)


@pytest.mark.parametrize(("format_id", "case"), ALL, ids=[f"{fid}:{c.name}" for fid, c in ALL])
def test_hostile_avro(format_id: str, case: Case, tmp_path: Path) -> None:
    check(format_id, case, tmp_path)


@pytest.mark.parametrize("kind", ["row", "op"])
def test_truncated_file_goldengate_ocf(kind: str, tmp_path: Path) -> None:
    blocks = [block(gg_message(kind, i)) for i in range(1, 5)]
    sweep_truncations(f"goldengate-avro-{kind}", blocks, tmp_path, header=ocf_header(gg_text(kind)), complete_at=len)


def test_truncated_file_qlik_stream(tmp_path: Path) -> None:
    records = [md(), dt(1), dt(2), dt(3)]
    sweep_truncations("qlik-avro", records, tmp_path, ids=[None, 1, 2, 3], complete_at=len)


def test_truncated_file_qlik_ocf(tmp_path: Path) -> None:
    blocks = [block(r) for r in (md(), dt(1), dt(2), dt(3))]
    header = ocf_header(json.dumps(ENVELOPE_SCHEMA))
    sweep_truncations("qlik-avro", blocks, tmp_path, header=header, ids=[None, 1, 2, 3], complete_at=len)
