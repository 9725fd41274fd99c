"""The benchmark's inputs are sound (no Spark): every format's generated files decode with no
rejection and the intended op mix, and the bare-parse loop counts the records the decoder reads."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pytest

from cdclake.bench.bareparse import parse_files
from cdclake.bench.generate import WRITERS, Generated, generate
from cdclake.events import Rejected
from cdclake.jobs.decode import decode_files, file_pieces, piece_test
from cdclake.options import Options
from cdclake.registry import format_ids, get_decoder

EVENTS = 1_500


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Generated], Counter]:
    gens, stream = generate(format_ids(), tmp_path_factory.mktemp("bench"), EVENTS, file_events=600)
    return gens, stream.mix


def test_every_format_has_a_writer():
    assert sorted(WRITERS) == format_ids()


def test_the_stream_mixes_operations(generated):
    _, mix = generated
    assert sum(mix.values()) == EVENTS
    assert 0.22 < mix["partial_update"] / EVENTS < 0.38
    assert mix["delete"] > 0.05 * EVENTS and mix["key_change"] > 0.01 * EVENTS and mix["full_update"] > 0


@pytest.mark.parametrize("format_id", format_ids())
def test_files_decode_without_rejections_and_bare_parse_counts_the_same_records(generated, format_id):
    gen = generated[0][format_id]
    assert len(gen.files) >= 3 and gen.events == EVENTS
    decoder = get_decoder(format_id, Options(gen.options))  # one instance, files in order (as the decode job)
    ops: Counter = Counter()
    schema_events = 0
    for path in gen.files:
        for item in decoder.decode(path.read_bytes(), path.name):
            assert not isinstance(item, Rejected), f"{path.name}: {item.error}"
            if item.op == "SCHEMA":
                schema_events += 1
            else:
                ops[item.op] += 1
    assert ops == gen.ops
    assert ops["UPDATE"] > 0.4 * EVENTS and ops["DELETE"] > 0.05 * EVENTS
    # records the decoder consumed: update halves pair into one event, Qlik metadata messages become SCHEMA
    consumed = sum(ops.values())
    if format_id.startswith("datahub-"):
        consumed += ops["UPDATE"]
    if format_id == "qlik-avro":
        consumed += schema_events
    records, _ = parse_files(format_id, gen.files)
    assert records == consumed == gen.records


@pytest.mark.parametrize("format_id", ["goldengate-json", "cdl-json", "goldengate-delimited", "debezium-json"])
def test_a_file_cut_into_pieces_decodes_like_the_whole_file(generated, format_id):
    gen = generated[0][format_id]
    path = str(gen.files[0])
    pieces = file_pieces(path, piece_test(format_id, gen.options), piece_bytes=Path(path).stat().st_size // 7)
    assert len(pieces) >= 5
    assert pieces[0][0] == 0 and all(a[1] == b[0] for a, b in itertools.pairwise(pieces))

    def rows(items):
        return [(r["kind"], r["op"], r["seq"], r["source_offset"]) for r in items if r.get("op") != "SCHEMA"]

    whole = rows(decode_files(format_id, gen.options, [("f", path)]))
    cut = rows(decode_files(format_id, gen.options, [("f", path, start, end) for start, end in pieces]))
    assert cut == whole and all(kind == "event" for kind, *_ in whole)


def test_formats_with_dependent_records_are_not_cut():
    for format_id in ("datahub-blob", "datahub-tuple", "goldengate-xml", "qlik-avro"):
        assert piece_test(format_id, {}) is None
    assert piece_test("goldengate-json", {"jsonDelimiter": "CDATA[\\n]"}) is None
    assert piece_test("goldengate-delimited", {"encoding": "UTF-16"}) is None
    insert_line = piece_test("goldengate-delimited", {"fieldDelimiter": "|"})
    assert insert_line is not None and not insert_line(b"I|T|...", b"D|T|...") and insert_line(b"D|T|...", b"")


def test_a_debezium_key_record_stays_with_its_value_record(tmp_path: Path):
    key = b'{"schema":{"type":"struct","fields":[],"name":"srv.shop.t.Key"},"payload":{"id":1}}\n'
    value = b'{"payload":{"op":"c","after":{"id":1},"source":{"table":"t"}}}\n'
    path = tmp_path / "d.json"
    path.write_bytes((key + value) * 2000)
    starts = piece_test("debezium-json", {})
    pieces = file_pieces(str(path), starts, piece_bytes=len(key + value) * 100 + 7)
    assert len(pieces) > 5
    data = path.read_bytes()
    assert all(data[start:].startswith(key) for start, _ in pieces)  # never between a key and its value


def test_a_pretty_printed_json_record_is_not_cut_inside(tmp_path: Path):
    record = b'{\n"table": "S.T",\n"after": \n{"A": 1}\n}\n'
    path = tmp_path / "g.json"
    path.write_bytes(record * 5000)
    pieces = file_pieces(str(path), piece_test("goldengate-json", {}), piece_bytes=1000)
    data = path.read_bytes()
    assert len(pieces) > 10 and all(data[start:].startswith(record) for start, _ in pieces)


def test_single_core_figures_bound_the_task_by_parse_plus_output(generated):
    from cdclake.bench.stages import single_core

    figures = single_core(generated[0]["goldengate-json"], 1_000)
    bare, output, ceiling = figures["bare_parse_eps"], figures["output_eps"], figures["ceiling_eps"]
    assert 0 < ceiling < min(bare, output)
    assert abs(1 / ceiling - (1 / bare + 1 / output)) < 1e-9 * (1 / ceiling)
    assert figures["task_path_eps"] < bare
