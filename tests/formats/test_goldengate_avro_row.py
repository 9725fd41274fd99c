"""goldengate-avro-row decoder: the vendor doc's samples (§6.4.2), the three containers (OCF §6.6, raw
messages with a schema directory, generic wrapper §6.4.7.3), schema versions and hostile Avro.

Every Avro byte here is written by the test with fastavro (or, for framing fastavro will not write,
by the small OCF writer below); the fixtures are schema texts and the seed's sample renderings.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import shutil
import time
import zlib
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdclake import cli
from cdclake.events.change import ChangeEvent, Rejected, Source, to_json
from cdclake.formats import _gg_avro
from cdclake.formats._gg_avro import avro_fingerprint, java_string_hash, load_schema
from cdclake.formats.goldengate_avro_row import GoldenGateAvroRowDecoder
from cdclake.options import OptionError, Options
from cdclake.registry import get_decoder

FIXTURES = Path(__file__).parents[1] / "fixtures" / "goldengate_avro"
SEED = FIXTURES / "seed"
SEED_ROW = SEED / "row"
UTC = dt.UTC
TABLE = "GG.TCUSTORD"
KEYS = ["CUST_CODE", "ORDER_DATE", "PRODUCT_CODE", "ORDER_ID"]
SAMPLES = ("insert", "update", "delete", "truncate")


# --- writers (test side) --------------------------------------------------------------------


def text_of(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def schema_of(path: Path) -> dict[str, Any]:
    return json.loads(text_of(path))


def ocf(schema: Any, records: list[dict[str, Any]], codec: str = "null", **kwargs: Any) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, codec=codec, **kwargs)
    return out.getvalue()


def message(schema: Any, record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


def raw(schema: Any, records: list[dict[str, Any]], delimiter: bytes = b"") -> bytes:
    return b"".join(message(schema, r) + delimiter for r in records)


WRAPPER_HASH = schema_of(SEED / "generic_wrapper.avsc")
WRAPPER_FINGERPRINT = {
    **WRAPPER_HASH,
    "fields": [
        {"name": "table_name", "type": "string"},
        {"name": "schema_fingerprint", "type": "long"},
        {"name": "payload", "type": "bytes"},
    ],
}


def wrapped(
    schema_text: str,
    records: list[dict[str, Any]],
    table: str = TABLE,
    kind: str = "schema_hash",
    delimiter: bytes = b"",
    value: int | None = None,
) -> bytes:
    """generic_wrapper messages as GoldenGate writes them: the hash is Java's String.hashCode() of
    the schema text (how the DBus consumer computes it), the fingerprint Avro's parsingFingerprint64."""
    schema = json.loads(schema_text)
    if value is None:
        value = java_string_hash(schema_text) if kind == "schema_hash" else avro_fingerprint(schema)
    wrapper = WRAPPER_HASH if kind == "schema_hash" else WRAPPER_FINGERPRINT
    return b"".join(
        message(wrapper, {"table_name": table, kind: value, "payload": message(schema, r)}) + delimiter for r in records
    )


def zz(n: int) -> bytes:
    """Avro long encoding (zig-zag varint)."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def avro_bytes(value: bytes) -> bytes:
    return zz(len(value)) + value


SYNC = bytes(range(16))


def ocf_by_hand(
    schema: Any,
    blocks: list[tuple[int, bytes]],
    codec: str = "null",
    sync: bytes = SYNC,
    block_syncs: list[bytes] | None = None,
) -> bytes:
    """An OCF file with given (count, block data) pairs: for framing fastavro would not write."""
    text = schema if isinstance(schema, str) else json.dumps(schema)
    meta = [(b"avro.schema", text.encode()), (b"avro.codec", codec.encode())]
    header = b"Obj\x01" + zz(len(meta)) + b"".join(avro_bytes(k) + avro_bytes(v) for k, v in meta) + zz(0) + sync
    body = b"".join(
        zz(count) + zz(len(data)) + data + (block_syncs[i] if block_syncs else sync)
        for i, (count, data) in enumerate(blocks)
    )
    return header + body


# --- decoding helpers -------------------------------------------------------------------------


def decoder(**options: str) -> GoldenGateAvroRowDecoder:
    dec = get_decoder("goldengate-avro-row", Options(options))
    assert isinstance(dec, GoldenGateAvroRowDecoder)
    return dec


def decode(
    data: bytes, file: str = "f.avro", schema_events: bool = False, **options: str
) -> list[ChangeEvent | Rejected]:
    """Decoded items; the SCHEMA event announcing each table is left out unless asked for."""
    items = list(decoder(**options).decode(data, file))
    return items if schema_events else [i for i in items if not (isinstance(i, ChangeEvent) and i.op == "SCHEMA")]


def events(items: list[ChangeEvent | Rejected]) -> list[ChangeEvent]:
    assert all(isinstance(i, ChangeEvent) for i in items), [i for i in items if isinstance(i, Rejected)]
    return items  # type: ignore[return-value]


def split(items: list[ChangeEvent | Rejected]) -> tuple[list[ChangeEvent], list[Rejected]]:
    return [i for i in items if isinstance(i, ChangeEvent)], [i for i in items if isinstance(i, Rejected)]


def portable(event: ChangeEvent) -> dict[str, Any]:
    """The event without its source and the container part of meta (which differ by container)."""
    d = event.to_dict()
    d.pop("source")
    d["meta"] = {k: v for k, v in d["meta"].items() if k != "avro"}
    return d


def seed_records() -> list[dict[str, Any]]:
    """The seed's sample messages (§6.4.2), read verbatim from their text rendering."""
    return [json.loads(text_of(SEED_ROW / f"sample_{name}.json")) for name in SAMPLES]


def schema_dir(tmp_path: Path, *files: Path, name: str = "schemas") -> Path:
    target = tmp_path / name
    target.mkdir(exist_ok=True)
    for path in files:
        shutil.copy(path, target / path.name)
    return target


# --- the vendor doc's samples (§6.4.2) ------------------------------------------------------------

COLUMN_TYPES = {
    "CUST_CODE": "string",
    "ORDER_DATE": "string",
    "PRODUCT_CODE": "string",
    "ORDER_ID": "string",
    "PRODUCT_PRICE": "double",
    "PRODUCT_AMOUNT": "double",
    "TRANSACTION_ID": "string",
}


def seed_event(
    op: str, pos: str, op_ts: str, current_ts: str, tokens: dict[str, str], before: Any, after: Any
) -> ChangeEvent:
    return ChangeEvent(
        table=TABLE,
        op=op,
        seq=pos.zfill(32),
        event_ts=dt.datetime.fromisoformat(op_ts).replace(tzinfo=UTC),
        source=Source("f", 0),
        keys=KEYS,
        before=before,
        after=after,
        meta={
            "pos": pos,
            "op_ts": op_ts,
            "current_ts": current_ts,
            "tokens": tokens,
            "primary_keys": KEYS,
            "column_types": COLUMN_TYPES,
        },
    )


SEED_EXPECTED = [
    seed_event(
        "INSERT",
        "00000000000000001444",
        "2013-06-02 22:14:36.000000",
        "2015-09-18T10:13:11.172000",
        {"R": "AADPkvAAEAAEqL2AAA"},
        None,
        {
            "CUST_CODE": "WILL",
            "ORDER_DATE": "1994-09-30:15:33:00",
            "PRODUCT_CODE": "CAR",
            "ORDER_ID": "144",
            "PRODUCT_PRICE": Decimal("17520.0"),
            "PRODUCT_AMOUNT": Decimal("3.0"),
            "TRANSACTION_ID": "100",
        },
    ),
    seed_event(
        "UPDATE",
        "00000000000000002891",
        "2013-06-02 22:14:41.000000",
        "2015-09-18T10:13:11.492000",
        {"R": "AADPkvAAEAAEqLzAAA"},
        None,  # a row formatter writes the after image only (§6.1.2)
        {
            "CUST_CODE": "BILL",
            "ORDER_DATE": "1995-12-31:15:00:00",
            "PRODUCT_CODE": "CAR",
            "ORDER_ID": "765",
            "PRODUCT_PRICE": Decimal("14000.0"),
            "PRODUCT_AMOUNT": Decimal("3.0"),
            "TRANSACTION_ID": "100",
        },
    ),
    seed_event(
        "DELETE",
        "00000000000000004338",
        "2013-06-02 22:14:41.000000",
        "2015-09-18T10:13:11.512000",
        {"L": "206080450", "6": "9.0.80330", "R": "AADPkvAAEAAEqLzAAC"},
        {
            "CUST_CODE": "DAVE",
            "ORDER_DATE": "1993-11-03:07:51:35",
            "PRODUCT_CODE": "PLANE",
            "ORDER_ID": "600",
            "PRODUCT_PRICE": None,  # missing in the trail, NULL in Avro row (§6.4.1.2)
            "PRODUCT_AMOUNT": None,
            "TRANSACTION_ID": None,
        },
        None,
    ),
    seed_event(
        "TRUNCATE",
        "00000000000000004515",
        "2013-06-02 22:14:41.000000",
        "2015-09-18T10:13:11.514000",
        {"R": "AADPkvAAEAAEqL2AAB"},
        None,
        None,
    ),
]


def seed_containers(tmp_path: Path) -> dict[str, tuple[bytes, dict[str, str]]]:
    schema_text = text_of(SEED_ROW / "GG.TCUSTORD.avsc")
    schema = json.loads(schema_text)
    records = seed_records()
    with_wrapper = schema_dir(tmp_path, SEED_ROW / "GG.TCUSTORD.avsc", SEED / "generic_wrapper.avsc", name="w")
    plain = str(SEED_ROW)
    return {
        "ocf-null": (ocf(schema, records), {}),
        "ocf-deflate": (ocf(schema, records, "deflate"), {}),
        "ocf-bzip2": (ocf(schema, records, "bzip2"), {}),
        "ocf-xz": (ocf(schema, records, "xz"), {}),
        "raw": (raw(schema, records), {"schemaDir": plain}),
        "raw-delimited": (raw(schema, records, b"\n"), {"schemaDir": plain, "lineDelimiter": "CDATA[\\n]"}),
        "wrapper-hash": (wrapped(schema_text, records), {"schemaDir": str(with_wrapper)}),
        "wrapper-fingerprint": (
            wrapped(schema_text, records, kind="schema_fingerprint"),
            {"schemaDir": plain, "genericWrapperUseFingerprint": "true"},
        ),
    }


CONTAINERS = [
    "ocf-null",
    "ocf-deflate",
    "ocf-bzip2",
    "ocf-xz",
    "raw",
    "raw-delimited",
    "wrapper-hash",
    "wrapper-fingerprint",
]


def test_registered_decoder_is_this_module():
    assert type(get_decoder("goldengate-avro-row")) is GoldenGateAvroRowDecoder
    assert GoldenGateAvroRowDecoder.format_id == "goldengate-avro-row"


def test_seed_samples_are_records_of_the_seed_schema():
    schema = fastavro.parse_schema(schema_of(SEED_ROW / "GG.TCUSTORD.avsc"))
    for record in seed_records():
        assert fastavro.validation.validate(record, schema)
        back = fastavro.schemaless_reader(io.BytesIO(message(schema, record)), schema)
        assert back == record  # the binary message is exactly the rendered one


@pytest.mark.parametrize("container", CONTAINERS)
def test_seed_samples_every_field(tmp_path, container):
    data, options = seed_containers(tmp_path)[container]
    items = events(decode(data, "f", **options))
    assert len(items) == 4
    for event, expected in zip(items, SEED_EXPECTED, strict=True):
        for name in ("table", "op", "seq", "event_ts", "tx_id", "tx_pos", "tx_last", "keys", "before", "after", "ddl"):
            assert getattr(event, name) == getattr(expected, name), (container, expected.op, name)
        assert {k: v for k, v in event.meta.items() if k != "avro"} == expected.meta, (container, expected.op)
        assert event.event_ts.utcoffset() == dt.timedelta(0) and len(event.seq) == 32
        assert event.source.file == "f"
    kind = container.split("-")[0]
    avro = [e.meta["avro"] for e in items]
    if kind == "ocf":
        codec = container.split("-")[1]
        assert avro == [
            {"container": "ocf", "schema": "OCF header", "codec": codec, "block": 0, "record": i} for i in range(4)
        ]
    elif kind == "raw":
        assert avro == [{"container": "raw", "schema": "GG.TCUSTORD.avsc"}] * 4
    else:
        wrapper_kind = "schema_hash" if container == "wrapper-hash" else "schema_fingerprint"
        value = (
            java_string_hash(text_of(SEED_ROW / "GG.TCUSTORD.avsc"))
            if wrapper_kind == "schema_hash"
            else avro_fingerprint(schema_of(SEED_ROW / "GG.TCUSTORD.avsc"))
        )
        assert (
            avro
            == [
                {
                    "container": "generic_wrapper",
                    "schema": "GG.TCUSTORD.avsc",
                    wrapper_kind: value,
                    "wrapper_table": TABLE,
                }
            ]
            * 4
        )


@pytest.mark.parametrize("container", CONTAINERS)
def test_seed_table_is_announced_by_a_schema_event(tmp_path, container):
    data, options = seed_containers(tmp_path)[container]
    items = events(decode(data, "f", schema_events=True, **options))
    assert [e.op for e in items] == ["SCHEMA", "INSERT", "UPDATE", "DELETE", "TRUNCATE"]
    schema_event, insert = items[0], items[1]
    assert (schema_event.table, schema_event.seq, schema_event.event_ts, schema_event.source, schema_event.keys) == (
        insert.table,
        insert.seq,
        insert.event_ts,
        insert.source,
        KEYS,
    )
    assert schema_event.before is None and schema_event.after is None
    assert schema_event.ddl == {
        "columns": [{"name": n, "type": t, "nullable": True} for n, t in COLUMN_TYPES.items()],
        "keys": KEYS,
        "version": f"{avro_fingerprint(schema_of(SEED_ROW / 'GG.TCUSTORD.avsc')) & (2**64 - 1):016x}",
    }
    assert schema_event.meta["column_types"] == COLUMN_TYPES
    assert schema_event.meta["avro"] == insert.meta["avro"] and "previous_version" not in schema_event.meta


def test_seed_sample_offsets_point_at_each_message(tmp_path):
    containers = seed_containers(tmp_path)
    schema = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    messages = [message(schema, r) for r in seed_records()]
    for name in ("raw", "raw-delimited", "ocf-null"):
        data, options = containers[name]
        for event, msg in zip(events(decode(data, "f", **options)), messages, strict=True):
            assert data[event.source.offset :].startswith(msg), name
    # compressed blocks: records share the block's offset, meta.avro.record tells them apart
    data, _ = containers["ocf-deflate"]
    offsets = {e.source.offset for e in events(decode(data))}
    assert len(offsets) == 1 and data.find(b"Obj\x01") == 0 and min(offsets) > 4


def test_seed_numbers_are_exact_decimals():
    [insert, update, delete, _] = events(decode(ocf(schema_of(SEED_ROW / "GG.TCUSTORD.avsc"), seed_records())))
    assert isinstance(insert.after["PRODUCT_PRICE"], Decimal) and str(insert.after["PRODUCT_PRICE"]) == "17520.0"
    assert '"PRODUCT_AMOUNT":3.0' in to_json(insert.to_dict())
    assert str(update.after["PRODUCT_PRICE"]) == "14000.0"
    # Avro row cannot carry "missing": the delete's missing columns are NULL, present keys
    assert {k for k, v in delete.before.items() if v is None} == {"PRODUCT_PRICE", "PRODUCT_AMOUNT", "TRANSACTION_ID"}


def test_cli_decodes_an_ocf_file(tmp_path, capsys):
    path = tmp_path / "tcustord.avro"
    path.write_bytes(ocf(schema_of(SEED_ROW / "GG.TCUSTORD.avsc"), seed_records(), "deflate"))
    assert cli.main(["decode", "--format", "goldengate-avro-row", str(path)]) == 0
    out = capsys.readouterr().out
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["op"] for line in lines] == ["SCHEMA", "INSERT", "UPDATE", "DELETE", "TRUNCATE"]
    assert lines[1]["after"]["PRODUCT_PRICE"] == 17520.0 and lines[1]["event_ts"] == "2013-06-02T22:14:36.000000Z"
    assert '"PRODUCT_PRICE":17520.0,' in out  # an exact number, as the decimal text of the double


def test_cli_exit_1_on_rejected_and_2_on_bad_option(tmp_path, capsys):
    path = tmp_path / "bad.bin"
    path.write_bytes(b"\x00\x01\x02")
    assert cli.main(["decode", "--format", "goldengate-avro-row", str(path)]) == 1
    err = capsys.readouterr().err
    assert "raw Avro messages need their table's schema: set schemaDir" in err
    assert cli.main(["decode", "--format", "goldengate-avro-row", "--option", "pkUpdateHandling=x", str(path)]) == 2


# --- hashes and fingerprints ---------------------------------------------------------------------


def test_java_string_hash_matches_java():
    # values of java.lang.String#hashCode
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("polygenelubricants") == -2147483648
    assert java_string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00  # UTF-16 code units, as Java
    assert java_string_hash("é") == 233


def test_avro_fingerprint_matches_the_avro_spec_vectors():
    # org.apache.avro.SchemaNormalization.parsingFingerprint64 of the primitive schemas
    expected = {
        "null": 7195948357588979594,
        "boolean": -6970731678124411036,
        "int": 8247732601305521295,
        "long": -3434872931120570953,
        "float": 5583340709985441680,
        "double": -8181574048448539266,
        "bytes": 5746618253357095269,
        "string": -8142146995180207161,
    }
    assert {name: avro_fingerprint(name) for name in expected} == expected


def test_schema_hash_variants_of_one_schema_text():
    text = text_of(SEED_ROW / "GG.TCUSTORD.avsc")
    schema = load_schema(text, "GG.TCUSTORD.avsc")
    compact = json.dumps(json.loads(text), separators=(",", ":"))
    assert compact.startswith('{"type":"record","name":"TCUSTORD","namespace":"GG","fields":[{"name":"table"')
    for variant in (text, text + "\n", text.replace("\n", "\r\n"), compact):
        assert java_string_hash(variant.strip().replace("\r\n", "\n")) in schema.hashes or (
            java_string_hash(variant) in schema.hashes
        )
    assert java_string_hash(text) in schema.hashes
    assert java_string_hash(compact) in schema.hashes
    # the fingerprint ignores layout, doc, defaults and logical types; the hash does not
    pretty = json.dumps(json.loads(text), indent=4)
    assert load_schema(pretty, "x").fingerprint == schema.fingerprint
    assert java_string_hash(pretty) not in schema.hashes


@pytest.mark.parametrize("spelling", ["pretty+newline", "crlf", "compact"])
def test_wrapper_hash_of_other_spellings_resolves(tmp_path, spelling):
    text = text_of(SEED_ROW / "GG.TCUSTORD.avsc")
    written = {
        "pretty+newline": text + "\n",
        "crlf": text.replace("\n", "\r\n"),
        "compact": json.dumps(json.loads(text), separators=(",", ":")),
    }[spelling]
    directory = tmp_path / "d"
    directory.mkdir()
    (directory / "GG.TCUSTORD.avsc").write_bytes(text.encode())
    data = wrapped(text, seed_records()[:1], value=java_string_hash(written))
    [event] = events(decode(data, schemaDir=str(directory)))
    assert event.op == "INSERT" and event.meta["avro"]["schema_hash"] == java_string_hash(written)


# --- wrapper -----------------------------------------------------------------------------------------


def test_unknown_schema_hash_rejects_that_message_only(tmp_path):
    text = text_of(SEED_ROW / "GG.TCUSTORD.avsc")
    records = seed_records()
    data = wrapped(text, records[:1]) + wrapped(text, records[1:2], value=12345) + wrapped(text, records[2:])
    ok, [bad] = split(decode(data, schemaDir=str(SEED_ROW)))
    assert [e.op for e in ok] == ["INSERT", "DELETE", "TRUNCATE"]
    first = len(wrapped(text, records[:1]))
    assert bad.source.offset == first
    assert bad.error.startswith(
        f"generic wrapper message at offset {first} for table GG.TCUSTORD has schema_hash 12345"
    )
    assert f"(the schema_hash of GG.TCUSTORD's schema files: {java_string_hash(text)})" in bad.error
    assert "Java's String.hashCode() of the schema text" in bad.error
    assert bad.raw == wrapped(text, records[1:2], value=12345)


def test_unknown_fingerprint_and_no_schema_dir(tmp_path):
    text = text_of(SEED_ROW / "GG.TCUSTORD.avsc")
    data = wrapped(text, seed_records()[:1], kind="schema_fingerprint", value=-7)
    [bad] = decode(data, schemaDir=str(SEED_ROW), genericWrapperUseFingerprint="true")
    assert "has schema_fingerprint -7, which matches no schema in" in bad.error
    [bad] = decode(wrapped(text, seed_records()[:1]), wrapMessageInGenericAvroMessage="true")
    assert "which matches no schema: set schemaDir" in bad.error


def test_wrapper_schema_from_schema_dir_decides_hash_or_fingerprint(tmp_path):
    text = text_of(SEED_ROW / "GG.TCUSTORD.avsc")
    directory = schema_dir(tmp_path, SEED_ROW / "GG.TCUSTORD.avsc")
    (directory / "generic_wrapper.avsc").write_text(json.dumps(WRAPPER_FINGERPRINT, indent=2))
    data = wrapped(text, seed_records(), kind="schema_fingerprint")
    assert [e.op for e in events(decode(data, schemaDir=str(directory)))] == ["INSERT", "UPDATE", "DELETE", "TRUNCATE"]
    # the option, when given, wins over the file
    hashed = wrapped(text, seed_records()[:1])
    [event] = events(decode(hashed, schemaDir=str(directory), genericWrapperUseFingerprint="false"))
    assert "schema_hash" in event.meta["avro"]


def test_broken_wrapper_schema_file_is_not_a_table(tmp_path):
    directory = schema_dir(tmp_path, SEED_ROW / "GG.TCUSTORD.avsc")
    (directory / "generic_wrapper.avsc").write_text("{broken")
    schema = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    assert len(events(decode(raw(schema, seed_records()), schemaDir=str(directory)))) == 4
    text = text_of(SEED_ROW / "GG.TCUSTORD.avsc")
    [bad] = decode(wrapped(text, seed_records()), schemaDir=str(directory), wrapMessageInGenericAvroMessage="true")
    assert bad.error.startswith("schema generic_wrapper.avsc is not JSON") and "rejected the whole file" in bad.error


def test_wrapper_detected_without_option_and_forced_by_option(tmp_path):
    text = text_of(SEED_ROW / "GG.TCUSTORD.avsc")
    data = wrapped(text, seed_records())
    assert len(events(decode(data, schemaDir=str(SEED_ROW)))) == 4
    for spelling in ("wrapMessageInGenericAvroMessage", "wrapMessageInGenericAvroSchema"):
        assert len(events(decode(data, schemaDir=str(SEED_ROW), **{spelling: "true"}))) == 4
        # told it is raw: the wrapper bytes are read as a row message and rejected
        items = decode(data, schemaDir=str(SEED_ROW), **{spelling: "false"})
        assert isinstance(items[0], Rejected) and "cannot be read with schema GG.TCUSTORD.avsc" in items[0].error
    # raw data is not mistaken for a wrapper
    schema = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    assert len(events(decode(raw(schema, seed_records()), schemaDir=str(SEED_ROW)))) == 4


def test_wrapper_payload_with_two_records_and_bad_payload(tmp_path):
    text = text_of(SEED_ROW / "GG.TCUSTORD.avsc")
    schema = json.loads(text)
    records = seed_records()
    payload = message(schema, records[0]) + message(schema, records[1])
    value = java_string_hash(text)
    two = message(WRAPPER_HASH, {"table_name": TABLE, "schema_hash": value, "payload": payload})
    bad = message(WRAPPER_HASH, {"table_name": TABLE, "schema_hash": value, "payload": payload[:30]})
    empty = message(WRAPPER_HASH, {"table_name": TABLE, "schema_hash": value, "payload": b""})
    items = decode(two + bad + empty + wrapped(text, records[3:]), schemaDir=str(SEED_ROW))
    assert [type(i).__name__ for i in items] == ["ChangeEvent", "ChangeEvent", "Rejected", "Rejected", "ChangeEvent"]
    assert items[0].source.offset == items[1].source.offset == 0
    assert items[2].source.offset == len(two)
    assert items[2].error.startswith(
        f"payload of the generic wrapper message at offset {len(two)} (table GG.TCUSTORD) cannot be read "
        "with schema GG.TCUSTORD.avsc: the data ends early"
    )
    assert items[3].error == f"generic wrapper message at offset {len(two) + len(bad)} has an empty payload"


# --- raw messages and schema directories -------------------------------------------------------------


def test_raw_messages_need_a_schema_and_a_table(tmp_path):
    schema = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    data = raw(schema, seed_records())
    [bad] = decode(data)
    assert bad.error.startswith("raw Avro messages need their table's schema: set schemaDir")
    assert bad.error.endswith("; rejected the whole file") and bad.source.offset == 0
    two_tables = schema_dir(tmp_path, SEED_ROW / "GG.TCUSTORD.avsc")
    other = dict(schema, name="OTHER")
    (two_tables / "GG.OTHER.avsc").write_text(json.dumps(other, indent=2))
    [bad] = decode(data, schemaDir=str(two_tables))
    assert "raw Avro messages do not name their table: set the table option" in bad.error
    assert "has 2 tables: GG.OTHER, GG.TCUSTORD" in bad.error
    assert len(events(decode(data, schemaDir=str(two_tables), table=TABLE))) == 4
    [bad] = decode(data, schemaDir=str(two_tables), table="GG.NOPE")
    assert bad.error.startswith("no schema for table GG.NOPE: expected GG.NOPE.avsc (or GG.NOPE_<timestamp>.avsc)")


def test_table_option_overrides_table(tmp_path):
    schema = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    directory = schema_dir(tmp_path, SEED_ROW / "GG.TCUSTORD.avsc")
    shutil.copy(SEED_ROW / "GG.TCUSTORD.avsc", directory / "LAKE.ORDERS.avsc")
    items = events(decode(raw(schema, seed_records()), schemaDir=str(directory), table="LAKE.ORDERS"))
    assert {e.table for e in items} == {"LAKE.ORDERS"}
    assert {e.table for e in events(decode(ocf(schema, seed_records()), table="X.Y"))} == {"X.Y"}


def versioned(schema: dict[str, Any], extra_column: str | None) -> dict[str, Any]:
    fields = list(schema["fields"])
    if extra_column:
        fields.append({"name": extra_column, "type": ["null", "string"], "default": None})
    return {**schema, "fields": fields}


def test_newest_versioned_schema_applies(tmp_path):
    base = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    v1, v2 = versioned(base, None), versioned(base, "NOTE")
    directory = tmp_path / "d"
    directory.mkdir()
    (directory / "GG.TCUSTORD_2016-05-17_11-52-23.123.avsc").write_text(json.dumps(v1, indent=2))
    (directory / "GG.TCUSTORD_2016-06-01_08-00-00.000.avsc").write_text(json.dumps(v2, indent=2))
    record = dict(seed_records()[0], NOTE="new column")
    [event] = events(decode(raw(v2, [record]), schemaDir=str(directory)))
    assert event.after["NOTE"] == "new column" and event.meta["column_types"]["NOTE"] == "string"
    # the unversioned file is the current one when present (GoldenGate rewrites it on every change)
    (directory / "GG.TCUSTORD.avsc").write_text(json.dumps(v1, indent=2))
    [event] = events(decode(raw(v1, seed_records()[:1]), schemaDir=str(directory)))
    assert "NOTE" not in event.after


def test_table_name_ending_in_digits_is_not_a_version(tmp_path):
    base = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    table = "GG.T_20240101"
    own = {**base, "name": "T_20240101"}
    directory = tmp_path / "d"
    directory.mkdir()
    (directory / f"{table}.avsc").write_text(json.dumps(own, indent=2))
    (directory / "GG.T_20240101_2024-02-02_00-00-00.000.avsc").write_text(json.dumps(own, indent=2))
    record = dict(seed_records()[0], table=table)
    [event] = events(decode(raw(own, [record]), schemaDir=str(directory)))
    assert event.table == table and event.meta["avro"]["schema"] == f"{table}.avsc"


def test_schema_event_when_a_newer_avsc_appears_between_files(tmp_path):
    base = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    v2 = versioned(base, "NOTE")
    directory = schema_dir(tmp_path, SEED_ROW / "GG.TCUSTORD.avsc")
    dec = decoder(schemaDir=str(directory))
    records = seed_records()
    first = events(list(dec.decode(raw(base, records[:2]), "one")))
    assert [e.op for e in first] == ["SCHEMA", "INSERT", "UPDATE"]
    assert "previous_version" not in first[0].meta  # the table's first layout in this run
    time.sleep(0.01)
    (directory / "GG.TCUSTORD.avsc").write_text(json.dumps(v2, indent=2))
    os.utime(directory / "GG.TCUSTORD.avsc", ns=(time.time_ns(), time.time_ns() + 10**9))
    second = events(list(dec.decode(raw(v2, [dict(records[2], NOTE=None)]), "two")))
    assert [e.op for e in second] == ["SCHEMA", "DELETE"]
    schema_event, delete = second
    assert schema_event.table == TABLE and schema_event.seq == delete.seq and schema_event.source == delete.source
    assert schema_event.event_ts == delete.event_ts and schema_event.keys == KEYS
    assert schema_event.before is None and schema_event.after is None
    assert schema_event.ddl["columns"][-1] == {"name": "NOTE", "type": "string", "nullable": True}
    assert [c["name"] for c in schema_event.ddl["columns"]] == [*COLUMN_TYPES, "NOTE"]
    assert schema_event.ddl["keys"] == KEYS
    assert schema_event.ddl["version"] == f"{avro_fingerprint(v2) & (2**64 - 1):016x}"
    assert schema_event.meta["previous_version"] == f"{avro_fingerprint(base) & (2**64 - 1):016x}"
    # the same schema again: no further SCHEMA event
    assert [e.op for e in events(list(dec.decode(raw(v2, [dict(records[3], NOTE=None)]), "three")))] == ["TRUNCATE"]


def test_schema_event_for_a_new_ocf_schema(tmp_path):
    base = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    v2 = versioned(base, "NOTE")
    records = seed_records()
    dec = decoder()
    assert [e.op for e in dec.decode(ocf(base, records[:1]), "a.avro")] == ["SCHEMA", "INSERT"]
    assert [e.op for e in dec.decode(ocf(base, records[1:2]), "b.avro")] == ["UPDATE"]
    items = list(dec.decode(ocf(v2, [dict(records[2], NOTE="x"), dict(records[3], NOTE=None)]), "c.avro"))
    assert [e.op for e in items] == ["SCHEMA", "DELETE", "TRUNCATE"]
    assert items[0].source == items[1].source and items[0].meta["avro"]["container"] == "ocf"


def test_schema_events_follow_wrapper_hashes(tmp_path):
    base = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    v1_text, v2_text = json.dumps(base, indent=2), json.dumps(versioned(base, "NOTE"), indent=2)
    directory = tmp_path / "d"
    directory.mkdir()
    (directory / "GG.TCUSTORD_2016-05-17_11-52-23.123.avsc").write_text(v1_text)
    (directory / "GG.TCUSTORD_2016-06-01_08-00-00.000.avsc").write_text(v2_text)
    records = seed_records()
    data = (
        wrapped(v1_text, records[:1])
        + wrapped(v2_text, [dict(records[1], NOTE="n")])
        + wrapped(v1_text, records[2:3])  # an old message still in flight: decoded with its own version
    )
    items = events(decode(data, schemaDir=str(directory), schema_events=True))
    assert [e.op for e in items] == ["SCHEMA", "INSERT", "SCHEMA", "UPDATE", "SCHEMA", "DELETE"]
    assert items[3].after["NOTE"] == "n" and "NOTE" not in items[5].before
    assert items[2].meta["schema_version"] == "2016-06-01_08-00-00.000"
    assert items[3].meta["avro"]["schema"] == "GG.TCUSTORD_2016-06-01_08-00-00.000.avsc"


def test_bad_schema_file_rejects_with_its_reason(tmp_path):
    directory = tmp_path / "d"
    directory.mkdir()
    (directory / "GG.TCUSTORD.avsc").write_text("{not json")
    [bad] = decode(b"\x16GG.TCUSTORD", schemaDir=str(directory))
    assert bad.error.startswith("schema GG.TCUSTORD.avsc is not JSON: ")
    assert "fix or remove it; rejected the whole file" in bad.error


# --- logical types and column types ------------------------------------------------------------------

TYPED_SCHEMA = {
    "type": "record",
    "name": "TYPED",
    "namespace": "GG",
    "fields": [
        {"name": "table", "type": "string"},
        {"name": "op_type", "type": "string"},
        {"name": "op_ts", "type": "string"},
        {"name": "pos", "type": "string"},
        {"name": "primary_keys", "type": {"type": "array", "items": "string"}},
        {"name": "ID", "type": "long"},
        {"name": "SMALL", "type": ["null", "int"]},
        {"name": "PRICE", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}]},
        {
            "name": "FIXED_DEC",
            "type": [
                "null",
                {"type": "fixed", "name": "dec8", "size": 8, "logicalType": "decimal", "precision": 18, "scale": 4},
            ],
        },
        {"name": "RATIO", "type": ["null", "float"]},
        {"name": "AMOUNT", "type": ["null", "double"]},
        {"name": "FLAG", "type": ["null", "boolean"]},
        {"name": "BLOB", "type": ["null", "bytes"]},
        {"name": "CREATED", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}]},
        {"name": "UPDATED", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
        {"name": "LOCAL_TS", "type": ["null", {"type": "long", "logicalType": "local-timestamp-micros"}]},
        {"name": "DAY", "type": ["null", {"type": "int", "logicalType": "date"}]},
        {"name": "AT", "type": ["null", {"type": "int", "logicalType": "time-millis"}]},
        {"name": "AT_US", "type": ["null", {"type": "long", "logicalType": "time-micros"}]},
        {"name": "UID", "type": ["null", {"type": "string", "logicalType": "uuid"}]},
        {"name": "KIND", "type": ["null", {"type": "enum", "name": "kind", "symbols": ["A", "B"]}]},
        {"name": "HUGE", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 50, "scale": 0}]},
        {"name": "TAGS", "type": ["null", {"type": "array", "items": "string"}]},
    ],
}


def typed_record(**values: Any) -> dict[str, Any]:
    base = {
        "table": "GG.TYPED",
        "op_type": "I",
        "op_ts": "2024-01-02 03:04:05.123456",
        "pos": "00000000000000000001",
        "primary_keys": ["ID"],
        "ID": 1,
    }
    return {**base, **values}


def test_logical_types_values_and_column_types():
    record = typed_record(
        SMALL=-5,
        PRICE=Decimal("12345678.90"),
        FIXED_DEC=Decimal("-12.3400"),
        RATIO=3.14,
        AMOUNT=0.1,
        FLAG=True,
        BLOB=b"\x00\xff",
        CREATED=dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
        UPDATED=dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        LOCAL_TS=dt.datetime(2024, 1, 2, 3, 4, 5, 1),
        DAY=dt.date(2024, 2, 29),
        AT=dt.time(13, 14, 15, 16000),
        AT_US=dt.time(23, 59, 59, 999999),
        UID="12345678-1234-5678-1234-567812345678",
        KIND="B",
        HUGE=Decimal("1" * 45),
        TAGS=["a", "b"],
    )
    [event] = events(decode(ocf(TYPED_SCHEMA, [record])))
    assert event.after == {
        "ID": 1,
        "SMALL": -5,
        "PRICE": Decimal("12345678.90"),
        "FIXED_DEC": Decimal("-12.3400"),
        "RATIO": Decimal("3.140000104904175"),  # the float32 value, exactly
        "AMOUNT": Decimal("0.1"),
        "FLAG": True,
        "BLOB": b"\x00\xff",
        "CREATED": "2024-01-02T03:04:05.678000Z",
        "UPDATED": "1969-12-31T23:59:59.999999Z",
        "LOCAL_TS": "2024-01-02T03:04:05.000001Z",
        "DAY": "2024-02-29",
        "AT": "13:14:15.016000",
        "AT_US": "23:59:59.999999",
        "UID": "12345678-1234-5678-1234-567812345678",
        "KIND": "B",
        "HUGE": Decimal("1" * 45),
        "TAGS": ["a", "b"],
    }
    assert str(event.after["PRICE"]) == "12345678.90" and str(event.after["FIXED_DEC"]) == "-12.3400"
    assert event.meta["column_types"] == {
        "ID": "bigint",
        "SMALL": "bigint",
        "PRICE": "decimal(10,2)",
        "FIXED_DEC": "decimal(18,4)",
        "RATIO": "double",
        "AMOUNT": "double",
        "FLAG": "boolean",
        "BLOB": "binary",
        "CREATED": "timestamp",
        "UPDATED": "timestamp",
        "LOCAL_TS": "timestamp",
        "DAY": "date",
        "AT": "string",
        "AT_US": "string",
        "UID": "string",
        "KIND": "string",
        "HUGE": "string",  # more digits than an Iceberg decimal holds: kept exact as text
    }
    assert '"BLOB":"AP8="' in to_json(event.to_dict())


def test_decimal_zero_keeps_its_scale_and_nulls_stay_null():
    [event] = events(decode(ocf(TYPED_SCHEMA, [typed_record(PRICE=Decimal("0.00"))])))
    assert str(event.after["PRICE"]) == "0.00"
    assert all(event.after[name] is None for name in ("SMALL", "CREATED", "DAY", "TAGS"))


def test_values_that_do_not_fit_their_logical_type_reject_their_record(tmp_path):
    # written with a look-alike schema (same binary layout, no logical types), read with the typed one
    look_alike = {**TYPED_SCHEMA, "fields": [dict(f) for f in TYPED_SCHEMA["fields"]]}
    for f in look_alike["fields"]:
        if f["name"] == "PRICE":
            f["type"] = ["null", "bytes"]
        if f["name"] in ("CREATED", "DAY"):
            f["type"] = ["null", "long" if f["name"] == "CREATED" else "int"]
    good = typed_record()
    records = [
        dict(good, pos="2", PRICE=(10**11).to_bytes(6, "big")),
        dict(good, pos="3", CREATED=2**62),
        dict(good, pos="4", DAY=10**9),
        dict(good, pos="5", PRICE=b"\x01" * 40),
        dict(good, pos="6"),
    ]
    (tmp_path / "GG.TYPED.avsc").write_text(json.dumps(TYPED_SCHEMA))
    ok, bad = split(decode(raw(look_alike, records), schemaDir=str(tmp_path)))
    assert [e.meta["pos"] for e in ok] == ["6"]
    assert [b.error for b in bad] == [
        "column PRICE: value has more than the 10 digits of its decimal(10,2) type",
        "column CREATED: timestamp 4611686018427387904 is outside the years 1-9999",
        "column DAY: date 1000000000 (days since 1970-01-01) is outside the years 1-9999",
        "column PRICE: decimal(10,2) value of 40 bytes has too many digits",
    ]


def test_op_ts_as_timestamp_logical_type_and_pos_as_long():
    schema = {
        "type": "record",
        "name": "T",
        "namespace": "GG",
        "fields": [
            {"name": "table", "type": "string"},
            {"name": "op_type", "type": "string"},
            {"name": "op_ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
            {"name": "pos", "type": "long"},
            {"name": "ID", "type": "long"},
        ],
    }
    record = {"table": "GG.T", "op_type": "I", "op_ts": dt.datetime(2020, 1, 1, tzinfo=UTC), "pos": 1444, "ID": 7}
    [event] = events(decode(ocf(schema, [record])))
    assert event.event_ts == dt.datetime(2020, 1, 1, tzinfo=UTC) and event.seq == "1444".zfill(32)
    assert event.meta["op_ts"] == "2020-01-01T00:00:00.000000Z" and event.meta["pos"] == 1444 and event.keys is None


# --- metadata errors and options ---------------------------------------------------------------------


def test_bad_metadata_rejects_the_record_only():
    schema = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    good = seed_records()[0]
    cases = {
        "unknown op": (dict(good, op_type="X"), "unknown op_type 'X'; the configured op keys are insertOpKey='I'"),
        "no pos": (dict(good, pos=""), "no pos: GoldenGate records need pos for ordering"),
        "bad op_ts": (dict(good, op_ts="02/06/2013"), "op_ts '02/06/2013' is not a timestamp"),
    }
    data = b"".join(message(schema, r) for r, _ in cases.values()) + message(schema, good)
    ok, bad = split(decode(data, schemaDir=str(SEED_ROW)))
    assert len(ok) == 1 and len(bad) == len(cases)
    offset = 0
    for item, (name, (record, reason)) in zip(bad, cases.items(), strict=True):
        assert item.error.startswith(reason), name
        assert item.source.offset == offset and item.raw == message(schema, record), name
        offset += len(message(schema, record))


def test_empty_table_field_falls_back_to_the_schema_table():
    schema = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    [event] = events(decode(ocf(schema, [dict(seed_records()[0], table="")])))
    assert event.table == TABLE
    no_table = {**schema, "fields": [f for f in schema["fields"] if f["name"] != "table"]}
    record = {k: v for k, v in seed_records()[0].items() if k != "table"}
    [event] = events(decode(ocf(no_table, [record])))
    assert event.table == TABLE  # the record name GoldenGate gives the schema: the table's name


def test_custom_op_keys():
    schema = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    records = [dict(r, op_type=k) for r, k in zip(seed_records(), ("ins", "upd", "del", "trunc"), strict=True)]
    options = {"insertOpKey": "ins", "updateOpKey": "upd", "deleteOpKey": "CDATA[del]", "truncateOpKey": "trunc"}
    assert [e.op for e in events(decode(ocf(schema, records), **options))] == ["INSERT", "UPDATE", "DELETE", "TRUNCATE"]


def test_keys_option_overrides_primary_keys():
    schema = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    [event, *_] = events(decode(ocf(schema, seed_records()), keys="ORDER_ID"))
    assert event.keys == ["ORDER_ID"] and event.meta["primary_keys"] == KEYS


def test_all_documented_options_accepted(tmp_path):
    options = {
        "insertOpKey": "I",
        "updateOpKey": "U",
        "deleteOpKey": "D",
        "truncateOpKey": "T",
        "encoding": "UTF-8",
        "treatAllColumnsAsStrings": "false",
        "pkUpdateHandling": "delete-insert",
        "lineDelimiter": "CDATA[]",
        "versionSchemas": "true",
        "wrapMessageInGenericAvroSchema": "false",
        "wrapMessageInGenericAvroMessage": "false",
        "schemaDirectory": str(SEED_ROW),
        "iso8601Format": "true",
        "generateSchema": "true",
        "genericWrapperUseFingerprint": "false",
        "keys": "ORDER_ID",
        "table": TABLE,
    }
    schema = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    assert len(events(decode(raw(schema, seed_records()), **options))) == 4
    assert len(events(decode(raw(schema, seed_records()), schemaFilePath=str(SEED_ROW)))) == 4


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"fieldDelimiter": "|"}, "unknown option(s) fieldDelimiter for format goldengate-avro-row"),
        ({"pkUpdateHandling": "merge"}, "option pkUpdateHandling must be one of abend, update, delete-insert"),
        ({"treatAllColumnsAsStrings": "yes please"}, "option treatAllColumnsAsStrings must be true or false"),
        ({"wrapMessageInGenericAvroMessage": "true", "wrapMessageInGenericAvroSchema": "false"}, "disagree"),
        ({"insertOpKey": "X", "deleteOpKey": "X"}, "op keys must differ"),
        ({"schemaDir": "/nonexistent/cdclake/avsc"}, "does not exist or is not a directory"),
        ({"encoding": "KLINGON-1"}, "is not a known character encoding"),
    ],
)
def test_bad_options(options, message):
    with pytest.raises(OptionError) as info:
        get_decoder("goldengate-avro-row", Options(options))
    assert message in str(info.value)


def test_schema_file_encoding_option(tmp_path):
    base = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    schema = {**base, "doc": "Bestellungen für Kunden"}
    directory = tmp_path / "d"
    directory.mkdir()
    (directory / "GG.TCUSTORD.avsc").write_bytes(json.dumps(schema, ensure_ascii=False).encode("latin-1"))
    data = raw(schema, seed_records()[:1])
    [bad] = decode(data, schemaDir=str(directory))
    assert "is not valid utf-8" in bad.error
    [event] = events(decode(data, schemaDir=str(directory), encoding="ISO-8859-1"))
    assert event.op == "INSERT"


def test_row_decoder_refuses_operation_data():
    op_schema = schema_of(SEED / "op" / "GG.TCUSTORD.avsc")
    record = json.loads(text_of(SEED / "op" / "sample_insert.json"))
    [bad] = decode(ocf(op_schema, [record]))
    assert "has before/after records with _isMissing flags: this is Avro operation data" in bad.error
    assert "--format goldengate-avro-op" in bad.error


# --- hostile Avro ---------------------------------------------------------------------------------------


def one_record_per_block(records: list[dict[str, Any]], codec: str = "null") -> bytes:
    return ocf(schema_of(SEED_ROW / "GG.TCUSTORD.avsc"), records, codec, sync_interval=1)


def block_starts(data: bytes) -> list[int]:
    """Offsets of blocks of an OCF file written by fastavro (after each sync marker)."""
    _, sync, first = _gg_avro.ocf_header(data)
    starts, pos = [first], first
    while True:
        found = data.find(sync, pos)
        if found < 0 or found + 16 >= len(data):
            return starts
        pos = found + 16
        starts.append(pos)


def test_truncated_ocf_keeps_earlier_blocks():
    data = one_record_per_block(seed_records())
    starts = block_starts(data)
    assert len(starts) == 4
    cut = data[: starts[3] + 5]
    ok, [bad] = split(decode(cut))
    assert [e.op for e in ok] == ["INSERT", "UPDATE", "DELETE"]
    assert bad.source.offset == starts[3]
    assert bad.error.startswith(f"block 3 at offset {starts[3]} declares")
    assert "but only" in bad.error and "the file is truncated" in bad.error
    assert "no sync marker follows: rejected the rest of the file" in bad.error
    # cut inside the sync marker after the last block
    ok, [bad] = split(decode(data[:-3]))
    assert len(ok) == 3 and "is not followed by a complete sync marker: the file is truncated" in bad.error


def test_truncated_header():
    data = one_record_per_block(seed_records())
    for cut in (4, 10, 100, block_starts(data)[0] - 1):
        [bad] = decode(data[:cut])
        assert bad.source.offset == 0
        assert bad.error.startswith("Avro OCF header is truncated"), cut
    [bad] = decode(b"Obj\x01")
    assert "header is truncated" in bad.error


def test_every_truncation_terminates_with_sane_offsets():
    data = one_record_per_block(seed_records(), "deflate")
    for cut in range(len(data) + 1):
        items = decode(data[:cut])
        offsets = [i.source.offset for i in items]
        assert offsets == sorted(offsets) and all(0 <= o <= cut for o in offsets)
        assert sum(isinstance(i, Rejected) for i in items) <= 1


def test_huge_declared_lengths_are_not_allocated():
    schema = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    good = message(schema, seed_records()[0])
    # a block declaring 2^62 bytes / 2^62 records
    data = ocf_by_hand(schema, [(1, good), (1, good)])
    header_end = data.index(SYNC) + 16
    huge_size = data[:header_end] + zz(1) + zz(2**62) + good + SYNC
    [bad] = decode(huge_size)
    assert f"declares {2**62} bytes but only" in bad.error
    huge_count = ocf_by_hand(schema, [(2**62, good), (1, good)])
    items = decode(huge_count)
    assert isinstance(items[0], Rejected) and f"declares {2**62} records in {len(good)} bytes" in items[0].error
    assert isinstance(items[1], ChangeEvent)
    # a string declaring 2^62 bytes inside a record
    bomb = zz(2**62) + b"GG.TCUSTORD"
    items = decode(bomb + good, schemaDir=str(SEED_ROW))
    [bad] = items
    assert "cannot be read with schema GG.TCUSTORD.avsc: the data ends early" in bad.error
    assert "rejected the rest of the file" in bad.error and bad.source.offset == 0
    # a header metadata value declaring 2^62 bytes
    header = b"Obj\x01" + zz(1) + avro_bytes(b"avro.schema") + zz(2**62) + b"{}"
    [bad] = decode(header)
    assert bad.error.startswith("Avro OCF header is truncated: it declares a metadata value of 4611686018427387904")
    negative = b"Obj\x01" + zz(1) + zz(-5) + b"x" * 40
    [bad] = decode(negative)
    assert "Avro OCF header is corrupt: it declares a negative metadata key length (-5)" in bad.error


def test_decompression_is_bounded(monkeypatch):
    monkeypatch.setattr(_gg_avro, "MAX_BLOCK_BYTES", 1000)
    schema = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    big = dict(seed_records()[0], CUST_CODE="x" * 5000)
    small = seed_records()[1]
    items = decode(one_record_per_block([big, small], "deflate"))
    assert isinstance(items[0], Rejected) and "decompresses to more than 1000 bytes" in items[0].error
    assert isinstance(items[1], ChangeEvent) and items[1].op == "UPDATE"
    assert schema  # same limit for every codec
    for codec in ("bzip2", "xz"):
        items = decode(one_record_per_block([big, small], codec))
        assert "decompresses to more than 1000 bytes" in items[0].error and items[1].op == "UPDATE"


def test_unknown_codec_and_missing_codec_library(monkeypatch):
    schema = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    good = message(schema, seed_records()[0])
    [bad] = decode(ocf_by_hand(schema, [(1, good)], codec="brotli"))
    assert bad.error.startswith("Avro OCF file cannot be read: codec 'brotli' is not an Avro codec cdclake reads")
    assert "rejected all" in bad.error and bad.source.offset == 0

    def missing(name: str) -> Any:
        raise ImportError(name)

    monkeypatch.setattr(_gg_avro, "_optional_module", missing)
    [bad] = decode(ocf_by_hand(schema, [(1, good)], codec="snappy"))
    assert "codec 'snappy' needs the Python package cramjam, which is not installed" in bad.error


def test_zstandard_codec():
    zstandard = pytest.importorskip("zstandard")
    schema = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    body = b"".join(message(schema, r) for r in seed_records())
    data = ocf_by_hand(schema, [(4, zstandard.ZstdCompressor().compress(body))], codec="zstandard")
    items = events(decode(data))
    assert [e.op for e in items] == ["INSERT", "UPDATE", "DELETE", "TRUNCATE"]
    assert items[0].meta["avro"]["codec"] == "zstandard"
    [bad] = decode(ocf_by_hand(schema, [(4, b"not zstd")], codec="zstandard"))
    assert "cannot be decompressed with codec zstandard" in bad.error
    stream = zstandard.ZstdCompressor().compressobj()  # a frame without its content size
    bomb = stream.compress(b"\x00" * (_gg_avro.MAX_BLOCK_BYTES + 10)) + stream.flush()
    [bad] = decode(ocf_by_hand(schema, [(1, bomb)], codec="zstandard"))
    assert f"decompresses to more than {_gg_avro.MAX_BLOCK_BYTES} bytes" in bad.error


def test_snappy_codec_length_and_checksum(monkeypatch):
    schema = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    body = message(schema, seed_records()[0])
    # raw snappy of one literal: varint length, literal tag, bytes (what cramjam.snappy.compress_raw may write)
    literal = _uvarint(len(body)) + bytes([60 << 2, len(body) - 1]) + body
    monkeypatch.setattr(_gg_avro, "codec_problem", lambda codec: None)
    monkeypatch.setattr(_gg_avro, "_snappy_decompress", lambda data: body if data == literal else b"?")
    good = literal + zlib.crc32(body).to_bytes(4, "big")
    bad_crc = literal + b"\x00\x00\x00\x00"
    huge = _uvarint(2**40) + b"\x00" + b"\x00\x00\x00\x00"
    items = decode(ocf_by_hand(schema, [(1, good), (1, bad_crc), (1, huge)], codec="snappy"))
    assert isinstance(items[0], ChangeEvent)
    assert "fails its snappy CRC-32 check" in items[1].error
    assert f"declares {2**40} uncompressed bytes" in items[2].error


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def test_wrong_sync_marker_rejects_from_that_block_to_the_next_good_marker():
    schema = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    records = seed_records()
    blocks = [(1, message(schema, r)) for r in records]
    other = bytes(16)
    data = ocf_by_hand(schema, blocks, block_syncs=[SYNC, other, SYNC, SYNC])
    ok, [bad] = split(decode(data))
    # block 1 ends with a wrong marker: the next trustworthy start is after the next good marker,
    # so block 2 (framed by the bad block's length only) goes with it; block 3 decodes again
    assert [e.op for e in ok] == ["INSERT", "TRUNCATE"]
    start = data.index(SYNC, data.index(SYNC) + 16) + 16
    resume = ok[1].source.offset - len(zz(1)) - len(zz(len(blocks[3][1])))
    assert bad.source.offset == start and bad.raw == data[start:resume]
    assert bad.error == (
        f"block 1 at offset {start} does not end with the file's sync marker: the block is corrupt; "
        f"skipped {resume - start} bytes up to the next sync marker"
    )


def test_corrupt_block_data_and_trailing_bytes():
    schema = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    records = seed_records()
    first, second = message(schema, records[0]), message(schema, records[1])
    blocks = [(2, first + second[:20]), (1, first + b"\x00\x00"), (1, second)]
    items = decode(ocf_by_hand(schema, blocks))
    assert [type(i).__name__ for i in items] == ["ChangeEvent", "Rejected", "ChangeEvent", "Rejected", "ChangeEvent"]
    assert items[1].error.startswith("record 2 of 2 in block 0 at offset")
    assert "the data ends early" in items[1].error and "skipped the rest of the block (1 records)" in items[1].error
    assert items[3].error.endswith("has 2 bytes after its 1 records")
    # a deflate block whose data is not deflate
    [bad, good] = decode(ocf_by_hand(schema, [(1, b"garbage!"), (1, zlib.compress(second)[2:-4])], codec="deflate"))
    assert "cannot be decompressed with codec deflate" in bad.error and good.op == "UPDATE"


def test_recursive_schema_is_refused():
    recursive = {
        "type": "record",
        "name": "NODE",
        "namespace": "GG",
        "fields": [{"name": "table", "type": "string"}, {"name": "next", "type": ["null", "NODE"]}],
    }
    data = ocf_by_hand(recursive, [(1, avro_bytes(b"GG.NODE") + b"\x02" * 100_000 + b"\x00")])
    [bad] = decode(data)
    assert "the schema is recursive: type GG.NODE refers to itself" in bad.error


def test_recursive_schema_file_is_refused(tmp_path):
    directory = tmp_path / "d"
    directory.mkdir()
    indirect = {
        "type": "record",
        "name": "A",
        "namespace": "GG",
        "fields": [
            {"name": "b", "type": {"type": "record", "name": "B", "fields": [{"name": "a", "type": ["null", "A"]}]}}
        ],
    }
    (directory / "GG.A.avsc").write_text(json.dumps(indirect))
    [bad] = decode(b"\x02\x02\x02\x00", schemaDir=str(directory))
    assert "the schema is recursive: type GG.A refers to itself" in bad.error


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ({"type": "array", "items": "null"}, "an array's items take no bytes"),
        (
            {"type": "array", "items": {"type": "record", "name": "E", "fields": []}},
            "an array's items take no bytes",
        ),
        ("nope", "unknown type 'nope'"),
        ({"type": "record", "name": "R", "fields": [{"name": "a", "type": ["null", ["int"]]}]}, "union"),
        ({"type": "record", "name": "R", "fields": [{"name": "a"}]}, "has a field without a name or type"),
        ({"type": "bytes", "logicalType": "decimal", "precision": 0}, "decimal precision 0 is not between"),
        ({"type": "fixed", "name": "F", "size": -1}, "fixed size -1 is not a size in bytes"),
    ],
)
def test_unsafe_or_invalid_schemas_are_refused(schema, reason):
    with pytest.raises(_gg_avro.SchemaError) as info:
        load_schema(json.dumps(schema), "t.avsc")
    assert reason in str(info.value)


def test_deeply_nested_schemas_are_refused():
    schema: Any = "string"
    for _ in range(200):
        schema = {"type": "array", "items": schema}
    with pytest.raises(_gg_avro.SchemaError, match="types nest deeper than 128 levels"):
        load_schema(json.dumps(schema), "deep")
    with pytest.raises(_gg_avro.SchemaError, match="nests JSON deeper"):
        load_schema("[" * 100_000 + "]" * 100_000, "deeper")


def test_schema_of_empty_messages_cannot_loop(tmp_path):
    empty = {"type": "record", "name": "E", "namespace": "GG", "fields": [{"name": "x", "type": "null"}]}
    (tmp_path / "GG.E.avsc").write_text(json.dumps(empty))
    [bad] = decode(b"\x00\x01", schemaDir=str(tmp_path))
    assert "schema GG.E.avsc reads a message of no bytes: it cannot frame messages" in bad.error
    value = java_string_hash(json.dumps(empty))
    data = message(WRAPPER_HASH, {"table_name": "GG.E", "schema_hash": value, "payload": b"\x00"})
    [bad] = decode(data, schemaDir=str(tmp_path), wrapMessageInGenericAvroMessage="true")
    assert "reads a message of no bytes: it cannot frame the payload" in bad.error


def test_raw_truncated_last_message():
    schema = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    data = raw(schema, seed_records())
    ok, [bad] = split(decode(data[:-3], schemaDir=str(SEED_ROW)))
    assert [e.op for e in ok] == ["INSERT", "UPDATE", "DELETE"]
    start = len(raw(schema, seed_records()[:3]))
    assert bad.source.offset == start and bad.raw == data[start:-3]
    assert bad.error.startswith(f"message at offset {start} cannot be read with schema GG.TCUSTORD.avsc: ")
    assert (
        "the data ends early" in bad.error and "(without a lineDelimiter the next message cannot be found)" in bad.error
    )


def test_raw_delimited_resyncs_after_a_corrupt_message():
    schema = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    records = seed_records()
    good = [message(schema, r) for r in records]
    corrupt = good[1][:15] + b"\xff\xff\xff" + good[1][18:]
    delimiter = b"\n##\n"
    data = delimiter.join([good[0], corrupt, good[2], good[3]]) + delimiter
    ok, [bad] = split(decode(data, schemaDir=str(SEED_ROW), lineDelimiter="CDATA[\\n##\\n]"))
    assert [e.op for e in ok] == ["INSERT", "DELETE", "TRUNCATE"]
    assert bad.source.offset == len(good[0]) + len(delimiter)
    assert bad.raw == corrupt and f"skipped {len(corrupt)} bytes up to the next lineDelimiter" in bad.error
    # a message not followed by the delimiter
    ok, [bad] = split(decode(good[0] + b"XX" + delimiter + good[1], schemaDir=str(SEED_ROW), lineDelimiter="##"))
    assert "is not followed by the lineDelimiter b'##'" in bad.error


def test_newline_delimiter_occurring_inside_messages():
    # b"\n" is also the varint 5: here inside CUST_CODE's length prefix; framing must not split on it
    schema = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    records = [dict(r, CUST_CODE="ABCDE") for r in seed_records()]
    data = raw(schema, records, b"\n")
    assert b"\n" in message(schema, records[0])
    assert len(events(decode(data, schemaDir=str(SEED_ROW), lineDelimiter="\\n"))) == 4


# --- properties --------------------------------------------------------------------------------------

_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
_rows = st.fixed_dictionaries(
    {
        "CUST_CODE": st.one_of(st.none(), _text),
        "ORDER_ID": st.one_of(st.none(), _text),
        "PRODUCT_PRICE": st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False, width=64)),
        "PRODUCT_AMOUNT": st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False)),
    }
)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.tuples(st.sampled_from("IUD"), _rows), min_size=1, max_size=6),
    st.sampled_from(["null", "deflate", "raw", "wrapper"]),
)
def test_property_round_trip_every_container(changes, container):
    text = text_of(SEED_ROW / "GG.TCUSTORD.avsc")
    schema = json.loads(text)
    records = []
    for i, (op, row) in enumerate(changes):
        full = {c: row.get(c) for c in COLUMN_TYPES}
        records.append(
            {
                "table": TABLE,
                "op_type": op,
                "op_ts": "2020-01-01 00:00:00.000001",
                "current_ts": "2020-01-01T00:00:01.000000",
                "pos": str(i + 1),
                "primary_keys": KEYS,
                "tokens": {},
                **full,
            }
        )
    if container in ("null", "deflate"):
        data, options = ocf(schema, records, container), {}
    elif container == "raw":
        data, options = raw(schema, records), {"schemaDir": str(SEED_ROW)}
    else:
        data, options = wrapped(text, records), {"schemaDir": str(SEED_ROW)}
    items = events(decode(data, **options))
    assert len(items) == len(records)
    for event, record in zip(items, records, strict=True):
        image = {c: record[c] for c in COLUMN_TYPES}
        image = {c: (Decimal(repr(v)) if isinstance(v, float) else v) for c, v in image.items()}
        assert (event.before if record["op_type"] == "D" else event.after) == image
        assert event.seq == record["pos"].zfill(32) and "tokens" not in event.meta


@settings(max_examples=50, deadline=None)
@given(st.data(), st.sampled_from(["null", "deflate", "raw", "wrapper"]))
def test_property_corrupted_bytes_never_crash_or_hang(data, container):
    text = text_of(SEED_ROW / "GG.TCUSTORD.avsc")
    schema = json.loads(text)
    records = seed_records()
    if container in ("null", "deflate"):
        blob, options = ocf(schema, records, container, sync_interval=1), {}
    elif container == "raw":
        blob, options = raw(schema, records, b"\n"), {"schemaDir": str(SEED_ROW), "lineDelimiter": "\\n"}
    else:
        blob, options = wrapped(text, records), {"schemaDir": str(SEED_ROW)}
    mutated = bytearray(blob)
    for _ in range(data.draw(st.integers(min_value=1, max_value=8))):
        index = data.draw(st.integers(min_value=0, max_value=len(mutated) - 1))
        mutated[index] = data.draw(st.integers(min_value=0, max_value=255))
    cut = data.draw(st.integers(min_value=0, max_value=len(mutated)))
    items = decode(bytes(mutated[:cut]), **options)
    offsets = [i.source.offset for i in items]
    assert offsets == sorted(offsets) and all(0 <= o <= cut for o in offsets)
    for item in items:
        if isinstance(item, ChangeEvent):
            to_json(item.to_dict())  # every decoded value is JSON-writable
        else:
            assert item.error and len(item.raw) <= _gg_avro.MAX_RAW_BYTES


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=400))
def test_property_arbitrary_bytes_after_the_magic(tail):
    items = decode(b"Obj\x01" + tail)
    assert all(isinstance(i, Rejected) for i in items) or items == []
    assert all(0 <= i.source.offset <= len(tail) + 4 for i in items)


@pytest.mark.parametrize("codec", ["snappy", "deflate", "lz4"])  # zstandard: see test_zstandard_codec
def test_ocf_written_by_fastavro_with_each_codec_decodes(codec):
    schema = schema_of(SEED_ROW / "GG.TCUSTORD.avsc")
    items = decode(ocf(schema, seed_records(), codec=codec))
    events = [i for i in items if not isinstance(i, Rejected) and i.op != "SCHEMA"]
    assert len(events) == len(seed_records()) and not [i for i in items if isinstance(i, Rejected)]
