"""The bare-parse limit: a plain single-process loop that only parses the landing files.

It reads the same bytes with the fastest ordinary parser for the encoding (orjson, fastavro,
csv, defusedxml) and does nothing with the result, so it bounds what any Python decoder of
the format could reach on one core. Each function returns the number of physical records.
"""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Callable
from pathlib import Path

import fastavro
import orjson
from defusedxml import ElementTree

from cdclake.formats.qlik_avro import ENVELOPE_SCHEMA


def json_lines(path: Path) -> int:
    count = 0
    with open(path, "rb") as handle:
        for line in handle:
            if line.strip():
                orjson.loads(line)
                count += 1
    return count


def delimited(path: Path) -> int:
    with open(path, encoding="utf-8", newline="") as handle:
        return sum(1 for _ in csv.reader(handle, delimiter="\x01", quoting=csv.QUOTE_NONE))


def csv_with_header(path: Path) -> int:
    with open(path, encoding="utf-8", newline="") as handle:
        return sum(1 for _ in csv.reader(handle)) - 1


def xml_documents(path: Path) -> int:
    """One ``<?xml`` prolog per document (the writer's layout): split there, parse each."""
    data = path.read_bytes()
    count = 0
    for doc in data.split(b"<?xml ")[1:]:
        ElementTree.fromstring(b"<?xml " + doc)
        count += 1
    return count


def avro_ocf(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(1 for _ in fastavro.reader(handle))


def qlik_envelopes(path: Path, schemas: dict[str, object] | None = None) -> int:
    """Envelopes, and each message with its schema (metadata messages announce the data schemas).

    ``schemas`` carries the announced data schemas from file to file, as Replicate's stream does.
    """
    envelope = fastavro.parse_schema(ENVELOPE_SCHEMA)
    schemas = {} if schemas is None else schemas
    count = 0
    with open(path, "rb") as handle:
        size = handle.seek(0, io.SEEK_END)
        handle.seek(0)
        while handle.tell() < size:
            record = fastavro.schemaless_reader(handle, envelope)
            message = io.BytesIO(record["message"])
            if record["type"] == "MD":
                meta = fastavro.schemaless_reader(message, fastavro.parse_schema(orjson.loads(record["messageSchema"])))
                schemas[meta["schemaId"]] = fastavro.parse_schema(orjson.loads(meta["dataSchema"]))
            else:
                fastavro.schemaless_reader(message, schemas[record["messageSchemaId"]])
            count += 1
    return count


PARSERS: dict[str, tuple[str, Callable[[Path], int]]] = {
    "goldengate-json": ("orjson", json_lines),
    "debezium-json": ("orjson", json_lines),
    "cdl-json": ("orjson", json_lines),
    "datahub-blob": ("orjson", json_lines),
    "datahub-tuple": ("csv", csv_with_header),
    "goldengate-delimited": ("csv", delimited),
    "goldengate-xml": ("defusedxml", xml_documents),
    "goldengate-avro-row": ("fastavro", avro_ocf),
    "goldengate-avro-op": ("fastavro", avro_ocf),
    "qlik-avro": ("fastavro", qlik_envelopes),
}


def parse_files(format_id: str, files: list[Path]) -> tuple[int, float]:
    """(records, seconds) of parsing ``files`` in order in this process."""
    _, parse = PARSERS[format_id]
    state: dict[str, object] = {}
    started = time.perf_counter()
    records = 0
    for path in files:
        records += qlik_envelopes(path, state) if format_id == "qlik-avro" else parse(path)
    return records, time.perf_counter() - started
