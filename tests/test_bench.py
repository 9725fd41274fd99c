"""The benchmark's inputs are sound (no Spark): every format's generated files decode with no
rejection and the intended op mix, and the bare-parse loop counts the records the decoder reads."""

from __future__ import annotations

import functools
import itertools
from collections import Counter
from pathlib import Path

import pytest

from cdclake.bench.bareparse import parse_files
from cdclake.bench.generate import WRITERS, Generated, generate
from cdclake.events.change import Rejected
from cdclake.jobs.decode import OCF_BLOCKS, decode_files, file_pieces, piece_test
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


SPLIT_FORMATS = ["goldengate-json", "cdl-json", "goldengate-delimited", "debezium-json"]
OCF_FORMATS = ["goldengate-avro-row", "goldengate-avro-op"]


@pytest.mark.parametrize("format_id", SPLIT_FORMATS + OCF_FORMATS)
def test_a_file_cut_into_pieces_decodes_like_the_whole_file(generated, format_id):
    gen = generated[0][format_id]
    path = str(max(gen.files, key=lambda p: p.stat().st_size))  # OCF: one file per table, a few blocks each
    pieces = file_pieces(path, piece_test(format_id, gen.options), piece_bytes=Path(path).stat().st_size // 7)
    assert len(pieces) >= 5
    assert pieces[0][0] == 0 and all(a[1] == b[0] for a, b in itertools.pairwise(pieces))

    def rows(items):
        return [(r["kind"], r["op"], r["seq"], r["source_offset"]) for r in items if r.get("op") != "SCHEMA"]

    whole = rows(decode_files(format_id, gen.options, [("f", path)]))
    cut = rows(decode_files(format_id, gen.options, [("f", path, start, end) for start, end in pieces]))
    assert cut == whole and all(kind == "event" for kind, *_ in whole)


@pytest.mark.parametrize("format_id", SPLIT_FORMATS + OCF_FORMATS)
def test_a_staged_copy_is_cut_and_read_like_its_landing_file(generated, format_id, tmp_path: Path):
    from cdclake.staging import seekable_zstd
    from cdclake.staging.reading import STAGED_SUFFIX

    gen = generated[0][format_id]
    path = max(gen.files, key=lambda p: p.stat().st_size)
    staged = tmp_path / ("f" + STAGED_SUFFIX)
    with open(staged, "wb") as out:
        seekable_zstd.write([path.read_bytes()], out)
    assert staged.stat().st_size < path.stat().st_size
    starts, piece = piece_test(format_id, gen.options), path.stat().st_size // 7
    pieces = file_pieces(str(staged), starts, piece_bytes=piece)
    assert len(pieces) >= 5 and pieces == file_pieces(str(path), starts, piece_bytes=piece)
    size = path.stat().st_size
    assert file_pieces(str(staged), starts, piece_bytes=piece, size=size) == pieces
    # a size of one piece (the manifest's) is taken as given: the copy is not opened to plan it
    assert file_pieces(str(staged), starts, piece_bytes=piece, size=piece) == [(0, None)]

    def rows(items):
        return [(r["kind"], r["op"], r["seq"], r["source_offset"], r["after"]) for r in items]

    cut = rows(decode_files(format_id, gen.options, [("f", str(staged), start, end) for start, end in pieces]))
    assert cut == rows(decode_files(format_id, gen.options, [("f", str(path), start, end) for start, end in pieces]))
    assert rows(decode_files(format_id, gen.options, [("f", str(staged))])) == rows(
        decode_files(format_id, gen.options, [("f", str(path))])
    )


@pytest.mark.parametrize("line", [100, 255 * 1024, 256 * 1024 + 1000])
def test_the_first_small_search_for_a_cut_finds_the_cut_the_whole_search_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: int
):
    from cdclake.jobs import decode

    record = b'{"table":"S.T","op_type":"I","after":{"A":"' + b"x" * line + b'"}}\n'
    path = tmp_path / "g.json"
    path.write_bytes(record * 12)
    cut = functools.partial(file_pieces, str(path), piece_test("goldengate-json", {}), piece_bytes=len(record) * 2 + 5)
    pieces = cut()
    data = path.read_bytes()
    assert len(pieces) >= 3 and all(data[start:].startswith(record) for start, _ in pieces)
    monkeypatch.setattr(decode, "_CUT_PROBE_BYTES", decode._CUT_SEARCH_BYTES)  # one search, as before the probe
    assert cut() == pieces


def test_ocf_pieces_start_at_blocks_and_stop_where_the_block_chain_breaks(generated, tmp_path: Path):
    from cdclake.formats._gg_avro import ocf_header

    gen = generated[0]["goldengate-avro-row"]
    data = max(gen.files, key=lambda p: p.stat().st_size).read_bytes()
    _, sync, first_block = ocf_header(data)
    good = tmp_path / "good.avro"
    good.write_bytes(data)
    pieces = file_pieces(str(good), OCF_BLOCKS, piece_bytes=len(data) // 7)
    assert all(data[start - len(sync) : start] == sync for start, _ in pieces[1:])  # each after a sync marker
    assert pieces[1][0] >= first_block + len(data) // 7

    # a corrupt block: cuts only before it; the decoder of the last piece reports it, the rest decodes
    cut = pieces[3][0]
    broken = bytearray(data)
    broken[cut - 3] ^= 0xFF  # inside the sync marker that ends the block before the fourth piece
    bad = tmp_path / "bad.avro"
    bad.write_bytes(bytes(broken))
    bad_pieces = file_pieces(str(bad), OCF_BLOCKS, piece_bytes=len(data) // 7)
    assert bad_pieces[:2] == pieces[:2] and bad_pieces[-1][1] == len(data) and len(bad_pieces) == 3
    items = [
        (r["kind"], r["source_offset"])
        for r in decode_files(gen.format_id, gen.options, [("b", str(bad), s, e) for s, e in bad_pieces])
    ]
    whole = [(r["kind"], r["source_offset"]) for r in decode_files(gen.format_id, gen.options, [("b", str(bad))])]
    assert items == whole and [k for k, _ in items].count("rejected") == 1

    # a header the decoder refuses (unknown codec): the file stays whole, so it is rejected once
    assert data.count(b"avro.codec\x08null") == 1
    unknown = tmp_path / "unknown.avro"
    unknown.write_bytes(data.replace(b"avro.codec\x08null", b"avro.codec\x0cbrotli"))
    assert file_pieces(str(unknown), OCF_BLOCKS, piece_bytes=len(data) // 7) == [(0, None)]


def test_non_ocf_and_gzipped_files_of_ocf_formats_are_read_whole(tmp_path: Path):
    import gzip

    raw = tmp_path / "raw.avro"
    raw.write_bytes(b"\x02" * 5000)  # an Avro message stream: no header to repeat in front of pieces
    zipped = tmp_path / "ocf.avro.gz"
    zipped.write_bytes(gzip.compress(b"Obj\x01" + b"\x00" * 5000))
    for path in (raw, zipped):
        assert file_pieces(str(path), piece_test("goldengate-avro-op", {}), piece_bytes=100) == [(0, None)]


@pytest.mark.parametrize("format_id", ["goldengate-avro-op", "goldengate-json"])
def test_the_large_file_repeats_records_its_format_can_read_and_cut(tmp_path: Path, format_id):
    from cdclake.bench.scale import write_big_file

    path = tmp_path / "big"
    info = write_big_file(format_id, path, 1_000_000, tmp_path / "work", block_events=2_000)
    assert info["bytes"] == path.stat().st_size > 900_000
    pieces = file_pieces(str(path), piece_test(format_id, info["options"]), piece_bytes=200_000)
    assert len(pieces) >= 4
    rows = list(decode_files(format_id, info["options"], [("big", str(path), s, e) for s, e in pieces]))
    assert all(r["kind"] == "event" for r in rows)
    assert sum(r["op"] != "SCHEMA" for r in rows) == info["events"]


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


def test_history_report_gives_each_case_median_mean_and_both_ratios() -> None:
    """The long-history section lists every batch of both tables and states the ratio of the medians (the
    target's measure) beside the ratio of the means (which counts the maintenance overwrites)."""
    from cdclake.bench.report import render

    history = {"rows": 100_000, "events_per_key": 100, "history_batches": 1000, "log_rows": 10, "log_files": 2}
    for case, walls in (("short_row-state", [0.5, 1.5, 0.6]), ("long_row-state", [0.6, 0.7, 2.0]), ("long_log", [9.0])):
        history |= {f"{case}_s": sorted(walls)[len(walls) // 2], f"{case}_all_s": walls, f"{case}_fold": "driver"}
        history[f"{case}_mean_s"] = round(sum(walls) / len(walls), 2)
    history |= {"ratio": 1.17, "mean_ratio": 1.27}
    base = {"date": "2026-11-28", "command": "bench", "machine": {}, "formats": {}}
    base["settings"] = dict.fromkeys(
        ("buckets", "events", "file_events", "sample_events", "seed", "shuffle_partitions"), 1
    )
    text = render(base | {"history": history})
    assert "3 onto each table, the two tables' batches in turn" in text
    assert "| short | 0.6 | 0.87 | [0.5, 1.5, 0.6] | driver |" in text
    assert "| long | 0.7 | 1.1 | [0.6, 0.7, 2.0] | driver |" in text
    assert "Long ÷ short: **1.17** (medians); 1.27 (means)." in text


def _render_base() -> dict:
    base = {"date": "2026-11-29", "command": "bench", "machine": {}, "formats": {}}
    base["settings"] = dict.fromkeys(
        ("buckets", "events", "file_events", "sample_events", "seed", "shuffle_partitions"), 1
    )
    return base


def test_results_from_before_the_pairs_render_their_runs_as_pairs() -> None:
    """Results files written before the warm-until-steady change (run lists, no pairs) still render: every run
    as a pair, best-of and medians worked out from the lists, the worst run's wrong rows."""
    from cdclake.bench.report import render

    counts = {"expected": 10, "wrong": 0}
    entry = {
        "seconds": 20.0,
        "ours_s": 30.0,
        "compared_kinds": ["long"],
        "naive_vs_expected": {"expected": 10, "wrong": 4},
        "ours_vs_expected": counts,
        "rows_differing_ours_vs_naive": 4,
        "ours_runs_s": [30.0, 18.0, 19.0],
        "naive_runs_s": [20.0, 21.0, 25.0],
        "ours_runs_wrong": [0, 2, 0],
        "ours_median_s": 19.0,
        "naive_median_s": 21.0,
    }
    text = render(_render_base() | {"naive": {"datahub-blob": entry}})
    # best 18.0 / 20.0; pair ratios 1.50, 0.857, 0.76 -> median 0.857; medians 19.0 / 21.0
    assert "| datahub-blob | 3 | 18.0 | 20.0 | **0.90** | 0.86 | 19.0 | 21.0 | 0.90 | 4 of 10 | 2 | 4 | long |" in text
    assert "| 1 | 30.0 | 20.0 | 1.50 |" in text and "| 3 | 19.0 | 25.0 | 0.76 |" in text
    assert "| best-of-3 | 18.0 | 20.0 | **0.90** |" in text
    assert "| median | 19.0 | 21.0 | 0.90 (pair ratios: 0.86) |" in text
    assert "(wrong rows of ours per run: [0, 2, 0])" in text
    single = {k: v for k, v in entry.items() if not k.endswith(("_runs_s", "_runs_wrong", "_median_s"))}
    text = render(_render_base() | {"naive": {"datahub-blob": single}})
    assert "| datahub-blob | 1 | 30.0 | 20.0 | **1.50** | 1.50 | 30.0 | 20.0 | 1.50 | 4 of 10 | 0 | 4 | long |" in text


def test_pair_summary_gives_every_pair_best_of_and_medians() -> None:
    from cdclake.bench.pairs import pair_summary

    s = pair_summary([14.5, 15.3, 15.4], [20.7, 15.5, 13.5])
    assert [(p["ours_s"], p["naive_s"]) for p in s["pairs"]] == [(14.5, 20.7), (15.3, 15.5), (15.4, 13.5)]
    assert [round(p["ratio"], 3) for p in s["pairs"]] == [0.700, 0.987, 1.141]
    assert s["runs"] == 3 and s["ours_best_s"] == 14.5 and s["naive_best_s"] == 13.5
    assert round(s["best_ratio"], 3) == 1.074  # the steady-state figure the median of three hid
    assert round(s["pair_ratio_median"], 3) == 0.987
    assert s["ours_median_s"] == 15.3 and s["naive_median_s"] == 15.5 and round(s["median_ratio"], 3) == 0.987


def test_pair_summary_of_an_even_count_and_of_the_naive_side_alone() -> None:
    from cdclake.bench.pairs import pair_summary

    s = pair_summary([10.0, 12.0], [8.0, 12.0])
    assert s["ours_median_s"] == 11.0 and s["naive_median_s"] == 10.0
    assert s["pair_ratio_median"] == (10 / 8 + 1) / 2 and s["best_ratio"] == 10 / 8
    alone = pair_summary([], [9.0, 7.0, 8.0])  # the pipeline step skipped
    assert alone["naive_best_s"] == 7.0 and alone["naive_median_s"] == 8.0
    assert [p["ratio"] for p in alone["pairs"]] == [None] * 3
    assert alone["best_ratio"] is alone["pair_ratio_median"] is alone["median_ratio"] is alone["ours_best_s"] is None
    with pytest.raises(ValueError):
        pair_summary([1.0], [1.0, 2.0])


@pytest.mark.parametrize(
    ("times", "stopped", "falling"),
    [
        ([], False, False),
        ([20.7], False, False),
        ([20.7, 15.5], False, True),
        ([20.7, 15.5, 13.5], False, True),  # 13% faster than the run before: still warming
        ([15.5, 13.5, 13.0], True, False),  # 3.7% faster: within 5%
        ([13.5, 14.2], True, False),  # slower: stopped
        ([10.0, 9.5], True, False),  # exactly 5% faster counts as stopped
        ([10.0, 9.49], False, True),
    ],
)
def test_the_steady_rule_on_sequences_of_times(times, stopped, falling) -> None:
    from cdclake.bench.pairs import still_falling, stopped_falling

    assert stopped_falling(times) is stopped
    assert still_falling(times) is falling


def _fake_pairs(ours: list[float] | None, naive: list[float]):
    """A ``run_pair`` that hands out the given times in turn, and the calls it got."""
    calls: list[int] = []

    def run_pair(i: int) -> tuple[float | None, float]:
        calls.append(i)
        return (None if ours is None else ours[i]), naive[i]

    return run_pair, calls


def test_warm_up_runs_until_the_naive_job_stops_falling_with_equal_runs_each() -> None:
    from cdclake.bench.pairs import warm_until_steady

    run_pair, calls = _fake_pairs([14.5, 15.3, 15.4, 15.0, 15.1], [20.7, 15.5, 13.5, 13.2, 13.3])
    warm = warm_until_steady(run_pair, cap=5)
    assert calls == [0, 1, 2, 3]  # 13.2 is 2% under 13.5: steady after the fourth pair
    assert warm["naive_s"] == [20.7, 15.5, 13.5, 13.2] and warm["ours_s"] == [14.5, 15.3, 15.4, 15.0]
    assert warm["naive_steady"] is True and warm["ours_steady"] is True
    assert warm["cap"] == 5 and warm["tolerance"] == 0.05


def test_warm_up_waits_for_ours_too_and_needs_two_runs_of_each() -> None:
    from cdclake.bench.pairs import keep_warming, warm_until_steady

    assert keep_warming([], []) and keep_warming([9.0], [9.0])  # one run decides nothing
    assert keep_warming([9.0, 8.0], [9.0, 9.0])  # ours 11% faster: ours is still warming
    assert not keep_warming([9.0, 9.0], [9.0, 9.0])
    run_pair, calls = _fake_pairs([12.0, 10.0, 9.9], [9.0, 9.1, 9.0])
    warm = warm_until_steady(run_pair)
    assert calls == [0, 1, 2] and len(warm["ours_s"]) == len(warm["naive_s"]) == 3


def test_warm_up_stops_at_the_cap_and_says_it_was_not_steady() -> None:
    from cdclake.bench.pairs import keep_warming, warm_until_steady

    naive = [30.0, 25.0, 20.0, 16.0, 13.0, 11.0, 9.0]
    run_pair, calls = _fake_pairs(None, naive)  # the naive job alone (pipeline step skipped)
    warm = warm_until_steady(run_pair, cap=5)
    assert calls == [0, 1, 2, 3, 4] and warm["naive_s"] == naive[:5]
    assert warm["naive_steady"] is False and warm["ours_steady"] is None and warm["ours_s"] == []
    run_pair, calls = _fake_pairs(None, naive)
    assert warm_until_steady(run_pair, cap=3, tolerance=0.5)["naive_s"] == naive[:2]  # 17% faster is in 50%
    assert not keep_warming([], [30.0, 25.0], cap=0) and keep_warming([], [30.0], cap=0)  # never under two


def test_the_printed_table_and_the_report_give_warm_ups_every_pair_best_of_and_medians() -> None:
    from cdclake.bench.pairs import pair_summary, pairs_text, warm_until_steady
    from cdclake.bench.report import render

    run_pair, _ = _fake_pairs([14.5, 15.3, 15.4], [20.7, 15.5, 15.0])
    warm = warm_until_steady(run_pair, cap=5)
    summary = pair_summary([15.0, 15.2, 14.8], [13.6, 13.5, 13.9])
    printed = "\n".join(pairs_text("goldengate-json", summary, warm))
    assert "warm-ups (untimed): ours 3 (14.5, 15.3, 15.4 s), naive 3 (20.7, 15.5, 15.0 s)" in printed
    assert "stopped falling: ours True, naive True" in printed
    for line in (
        "1     15.0     13.6        1.10",
        "2     15.2     13.5        1.13",
        "3     14.8     13.9        1.06",
    ):
        assert f"goldengate-json: {line:>38}" in printed
    assert "best     14.8     13.5        1.10  <- best-of-3 ratio (headline)" in printed
    assert "median     15.0     13.6        1.10  (medians' ratio); median of the pair ratios 1.10" in printed

    entry = {
        "seconds": 13.6,
        "compared_kinds": ["long"],
        "warm_up_s": sum(warm["naive_s"]),
        "warm_ups": warm,
        "naive_runs_s": [13.6, 13.5, 13.9],
        "naive_timed_still_falling": False,
        "naive_vs_expected": {"expected": 10, "wrong": 4},
        "ours_vs_expected": {"expected": 10, "wrong": 0},
        "ours_s": 15.0,
        "ours_runs_s": [15.0, 15.2, 14.8],
        "ours_runs_wrong": [0, 0, 0],
        "rows_differing_ours_vs_naive": 4,
    } | summary
    text = render(_render_base() | {"naive": {"goldengate-json": entry}})
    assert "**Headline: the best-of-N ratio**" in text
    assert (
        "| goldengate-json | 3 | 14.8 | 13.5 | **1.10** | 1.10 | 15.0 | 13.6 | 1.10 | 4 of 10 | 0 | 4 | long |" in text
    )
    assert (
        "- warm-ups (untimed), until each side's last run is at most 5% faster than the one before, at most 5: "
        "ours 3 (14.5, 15.3, 15.4 s; the first is the pipeline step's run), the naive job 3 (20.7, 15.5, 15.0 s); "
        "stopped falling: ours yes, the naive job yes"
    ) in text
    assert "| 2 | 15.2 | 13.5 | 1.13 |" in text and "| best-of-3 | 14.8 | 13.5 | **1.10** |" in text
    assert "still fell" not in text
    falling = render(_render_base() | {"naive": {"goldengate-json": entry | {"naive_timed_still_falling": True}}})
    assert "**the naive job's timed runs still fell run after run**" in falling and "of ours still" not in falling
    falling = render(_render_base() | {"naive": {"goldengate-json": entry | {"ours_timed_still_falling": True}}})
    assert "**the timed runs of ours still fell run after run**" in falling and "naive job's timed" not in falling
