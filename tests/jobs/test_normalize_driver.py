"""Normalize in the driver (``cdclake.events.batch``, Arrow) writes and reports what the Spark job does.

Each batch is decoded once and normalized both ways, from copies of the decoded batch; the report,
the layouts, the schema changes, the change log as Spark reads it back and the quarantine must match.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cdclake.events.batch import (
    column_kinds,
    event_chunks,
    merged_column_kinds,
    merged_op_summary,
    op_summary,
    read_events,
)
from cdclake.events.change import EVENT_SCHEMA, to_json
from cdclake.jobs import decode, normalize
from cdclake.staging.batch import Manifest
from cdclake.staging.stage import stage_files

pytestmark = pytest.mark.spark

WEIRD = "DEC.we/ird=na me?%"


def gg(table: str, op: str, pos: int, row: dict, **extra) -> str:
    image = "before" if op == "D" else "after"
    body = {"table": table, "op_type": op, "op_ts": f"2024-01-01 00:00:{pos % 60:02d}.000000", "pos": f"{pos:020d}"}
    return json.dumps({**body, image: row, **extra})


def datahub(op: str, seq: int, after=None, ddl: str | None = None) -> dict:
    body: dict = {"op": op, "sequenceId": str(seq), "timestamp": {"eventTime": 1700000000000 + seq}}
    if after is not None:
        body["after"] = {"dataColumn": after}
    if ddl is not None:
        body["ddl"] = {"text": ddl}
    schema = {
        "dataColumn": [{"name": "id", "type": "LONG"}, {"name": "name", "type": "STRING"}],
        "primaryKey": ["id"],
        "source": {"dbType": "MySQL", "dbName": "db", "tableName": "t"},
    }
    return {"schema": schema, "payload": body, "version": "0.0.1"}


KINDS = {"id": 1, "n": None, "b": True, "i": -12, "f": 1.5, "s": "x", "o": {"a": [1, 2]}, "l": [1, "y"], "h": 2**64}
PLAIN = [
    gg("DEC.A", "I", 1, KINDS),
    gg("DEC.A", "U", 2, {"id": 1, "s": "y", "extra": 7}),
    gg("DEC.A", "D", 3, {"id": 1}),
    gg(WEIRD, "I", 4, {"id": 2, "f": 3}),
    gg(WEIRD, "I", 5, {"id": 3, "f": 2.25}),
    gg("DEC.B", "I", 6, {"id": 9, "i": 1}),
]
MIXED = [
    *PLAIN,
    gg("DEC.NOKEY", "I", 7, {"v": 1}),  # no key configured or given: quarantined
    gg("DEC.A", "I", 8, {"id": 5, "_cdc_bad": 1}),  # a name the lake refuses: quarantined
]
CASES = {
    "plain": ("goldengate-json", [PLAIN], {"DEC.A": ["id"], "DEC.B": ["id"], WEIRD: ["id"]}),
    "quarantines": ("goldengate-json", [MIXED], {"DEC.A": ["id"], "DEC.B": ["id"], WEIRD: ["id"]}),
    "hints": (
        "datahub-blob",
        [[to_json(datahub("INSERT", 1, {"id": 1, "name": "a"})), to_json(datahub("INSERT", 2, {"id": 2}))]],
        {},
    ),
    "truncate-statement": (
        "datahub-blob",
        [
            [
                to_json(datahub("INSERT", 1, {"id": 1, "name": "a"})),
                to_json(datahub("QUERY", 2, ddl="TRUNCATE TABLE t")),
            ],
            [to_json(datahub("INSERT", 3, {"id": 3, "name": "c"}))],
        ],
        {},
    ),
}


def decoded_batch(spark, root: Path, fmt: str, files: list[list[str]], keys: dict) -> Path:
    paths = []
    for index, lines in enumerate(files):
        path = root / f"landing-{index}.json"
        path.write_text("".join(line + "\n" for line in lines))
        paths.append(str(path))
    manifest = Manifest(source="nd", batch_id="b1", format=fmt, options={}, keys=keys)
    stage_files(paths, root / "staging", manifest)
    batch_dir = root / "staging" / "b1"
    decode.run(spark, batch_dir)
    return batch_dir


def outputs(spark, batch_dir: Path) -> dict:
    def rows(folder: Path) -> list[dict]:
        if not folder.exists():
            return []
        found = [r.asDict(recursive=True) for r in spark.read.parquet(str(folder)).collect()]
        return sorted(found, key=lambda r: json.dumps(r, sort_keys=True, default=str))

    report = json.loads((batch_dir / "reports" / "normalize.json").read_text())
    return {
        "report": report,
        "tables": json.loads((batch_dir / "tables.json").read_text()),
        "schema_changes": json.loads((batch_dir / "schema_changes.json").read_text()),
        "changelog_folders": sorted(p.name for p in (batch_dir / "changelog").iterdir() if p.is_dir()),
        "changelog": rows(batch_dir / "changelog"),
        "quarantine": {q: rows(batch_dir / "quarantine" / q) for q in ("normalize", "ddl")},
    }


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_small_batch_normalizes_in_the_driver_as_the_spark_job_would(spark, tmp_path, monkeypatch, case):
    fmt, files, keys = CASES[case]
    decoded = decoded_batch(spark, tmp_path, fmt, files, keys)
    results = {}
    # "chunked": the driver reads the batch two events at a time and merges what each chunk says
    for way, limit in (("driver", "50000"), ("chunked", "2"), ("spark", "0")):
        batch_dir = tmp_path / way / "b1"
        shutil.copytree(decoded, batch_dir)
        monkeypatch.setenv("CDCLAKE_DRIVER_NORMALIZE_ROWS", limit)
        normalize.run(spark, batch_dir)
        results[way] = outputs(spark, batch_dir)
    assert results["driver"] == results["spark"]
    assert results["chunked"] == results["spark"]
    out = results["driver"]
    assert out["report"]["events"] > 0 and out["changelog"]
    if case == "plain":  # the partition folder of an odd table name round-trips
        assert {r["table"] for r in out["changelog"]} == {"DEC.A", "DEC.B", WEIRD}
        assert dict(out["tables"]["DEC.A"]["columns"])["o"] == "string"
        assert dict(out["tables"][WEIRD]["columns"])["f"] == "double"
        assert dict(out["tables"]["DEC.A"]["columns"])["h"] == "decimal(38,0)"  # beyond bigint
    if case == "quarantines":
        # the keyless table's event and the one with a reserved column name; that name's announcement too
        assert len(out["quarantine"]["normalize"]) == 2 and len(out["quarantine"]["ddl"]) == 1
        assert out["report"]["quarantined"] == 3
    if case == "truncate-statement":
        assert out["report"]["ddl_truncates"] == 1


INTEGER_EDGES = [
    "0",
    "-0",
    "007",
    str(2**63 - 1),
    str(2**63),
    str(-(2**63)),
    str(-(2**63) - 1),
    "1" * 38,
    "-" + "9" * 38,
    "1" * 39,
    "0" * 30 + "1",
    "1.5",
    "1e3",
    '"12"',
    "true",
    "null",
]


def test_the_arrow_kinds_are_the_sql_case(spark):
    """Integers beyond bigint suggest ``decimal(38,0)`` up to 38 digits and ``string`` past it, the same in
    the driver (Arrow) as in the Spark job's SQL ``CASE``; and ``unify`` widens a column of them."""
    import pyarrow as pa

    from cdclake.events.batch import _kind
    from cdclake.jobs.normalize import _KIND_SQL
    from cdclake.schema.coltypes import unify

    frame = spark.createDataFrame([(v,) for v in INTEGER_EDGES], "v string")
    sql = [r["kind"] for r in frame.selectExpr(f"{_KIND_SQL} AS kind").collect()]
    arrow = _kind(pa.array(INTEGER_EDGES, pa.string())).to_pylist()
    assert arrow == sql
    assert dict(zip(INTEGER_EDGES, arrow, strict=True))[str(2**63)] == "decimal(38,0)"
    assert dict(zip(INTEGER_EDGES, arrow, strict=True))["1" * 39] == "string"
    assert unify({"bigint", "decimal(38,0)"}) == "decimal(38,0)" and unify({"decimal(38,0)", "double"}) == "double"


def test_column_kinds_follow_the_sql_case_and_first_sightings(tmp_path):
    """Pure Arrow (no Spark): the kinds of JSON text values, where a column was first seen, the hints."""
    rows = [
        {"table": "t", "op": "INSERT", "seq": "2", "after": [("a", "1"), ("b", "null"), ("c", '"x"')]},
        {"table": "t", "op": "UPDATE", "seq": "1", "before": [("a", "2")], "after": [("a", "2.5"), ("d", "true")]},
        {"table": "t", "op": "HEARTBEAT", "seq": "0", "after": [("z", "1")]},
        {"table": "u", "op": "INSERT", "seq": "3", "after": [("a", "[1]")], "meta": '{"column_types":{"a":"LONG"}}'},
    ]
    full = [
        {**{f.name: None for f in EVENT_SCHEMA}, "source_file": "f", "source_offset": i, **r}
        for i, r in enumerate(rows)
    ]
    path = tmp_path / "part-0.parquet"
    import pyarrow as pa

    pq.write_table(pa.Table.from_pylist(full, schema=EVENT_SCHEMA), path)
    events = read_events([path])
    kinds = {(r["table"], r["col"]): r for r in column_kinds(events)}
    assert set(kinds) == {("t", "a"), ("t", "b"), ("t", "c"), ("t", "d"), ("u", "a")}  # no heartbeat column
    assert sorted(kinds[("t", "a")]["kinds"]) == ["bigint", "double"]
    assert kinds[("t", "b")]["kinds"] == []  # null suggests nothing
    assert kinds[("t", "c")]["kinds"] == ["string"] and kinds[("t", "d")]["kinds"] == ["boolean"]
    assert kinds[("t", "a")]["first"] == ("1", "f", 1, 0, 0)  # the lowest seq; its before image
    assert json.loads(kinds[("u", "a")]["hints"]) == {"a": "LONG"} and kinds[("u", "a")]["kinds"] == ["string"]
    counts = {(r["table"], r["op"]): r["count"] for r in op_summary(events)}
    assert counts == {("t", "INSERT"): 1, ("t", "UPDATE"): 1, ("t", "HEARTBEAT"): 1, ("u", "INSERT"): 1}


def _reference_kinds(rows: list[dict]) -> dict:
    """What ``column_kinds`` must answer, entry by entry in Python: per (table, column), the first entry in
    (table, column, seq, source file, source offset, image, position) order, nulls first, ties in row order."""
    import pyarrow as pa

    from cdclake.events.batch import _column_hints, _kind
    from cdclake.events.change import ROW_OPS

    hints = _column_hints(pa.array([r.get("meta") for r in rows], pa.string())).to_pylist()
    entries = []
    for index, r in enumerate(rows):
        if r["op"] not in ROW_OPS:
            continue
        for image_index, image in enumerate(("before", "after")):
            for pos, (col, value) in enumerate(r.get(image) or []):
                kind = _kind(pa.array([value], pa.string()))[0].as_py()
                where = (r["seq"], r["source_file"], r["source_offset"], image_index, pos)
                order = (
                    r["table"] is not None,
                    r["table"] or "",
                    col,
                    *((v is not None, v or 0) for v in where),
                    index,
                )
                entries.append((order, r["table"], col, where, kind, hints[index]))
    out: dict = {}
    for _, table, col, where, kind, hint in sorted(entries, key=lambda e: e[0]):
        first, kinds, first_hint = out.get((table, col), (where, set(), None))
        out[(table, col)] = (first, kinds | ({kind} - {None}), first_hint or hint)
    return out


def test_column_kinds_equal_the_entry_by_entry_answer(tmp_path):
    """Property: ties on (seq, file, offset), null seqs and tables, hints on some events only, metas that
    mention hints without holding them."""
    import pyarrow as pa
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    image = st.lists(
        st.tuples(st.sampled_from(["x", "y", "z"]), st.sampled_from(["1", "null", '"s"', "true", "2.5", "[1]"])),
        max_size=3,
        unique_by=lambda e: e[0],
    )
    event = st.fixed_dictionaries(
        {
            "table": st.sampled_from(["a", "b", None]),
            "op": st.sampled_from(["INSERT", "UPDATE", "DELETE", "UPSERT", "HEARTBEAT"]),
            "seq": st.sampled_from([None, "1", "2", "10"]),
            "source_file": st.sampled_from(["f", "g"]),
            "source_offset": st.integers(0, 2),
            "before": st.one_of(st.none(), image),
            "after": st.one_of(st.none(), image),
            # metas that mention column_types without holding the object (a text, not a dict) are no hints
            "meta": st.sampled_from(
                [
                    None,
                    '{"column_types":{"x":"LONG"}}',
                    '{"column_types":{"y":"STRING"}}',
                    '{"note":"column_types"}',
                    '{"column_types":"LONG"}',
                ]
            ),
            # for op_summary: the first keys, the newest time and the transaction marks of each group
            "keys": st.sampled_from([None, ["x"], ["y", "z"], []]),
            "event_ts": st.sampled_from([None, *(dt.datetime(2024, 1, d, tzinfo=dt.UTC) for d in (1, 2, 3))]),
            "tx_last": st.sampled_from([None, None, True, False]),
        }
    )

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.lists(event, min_size=1, max_size=12))
    def check(rows):
        full = [{**{f.name: None for f in EVENT_SCHEMA}, **r} for r in rows]
        path = tmp_path / "part-0.parquet"
        pq.write_table(pa.Table.from_pylist(full, schema=EVENT_SCHEMA), path)
        events = read_events([path])
        got = {(r["table"], r["col"]): (r["first"], set(r["kinds"]), r["hints"]) for r in column_kinds(events)}
        assert got == _reference_kinds(rows)
        # the same batch read in chunks: each chunk's answers merged are the whole batch's
        for size in (1, 2, 5):
            chunks = list(event_chunks([path], size, 1 << 30))
            assert sum(c.num_rows for c in chunks) == len(rows) and all(c.num_rows <= size for c in chunks)
            merged = merged_column_kinds([column_kinds(c) for c in chunks])
            assert {(r["table"], r["col"]): (r["first"], set(r["kinds"]), r["hints"]) for r in merged} == got
            summary = merged_op_summary([op_summary(c) for c in chunks])
            assert _by_group(summary) == _by_group(op_summary(events))

    check()


def _by_group(summary: list[dict]) -> dict:
    return {(r["table"], r["op"]): (r["count"], r["keys"], r["newest"], r["marks"]) for r in summary}


def test_chunks_merge_ties_in_row_order(tmp_path):
    """Two events at the same (seq, file, offset) with the column at the same place: the first one's hint
    wins, whether the two are in one chunk or in two."""
    import pyarrow as pa

    base = {f.name: None for f in EVENT_SCHEMA}
    rows = [
        {**base, "table": "t", "op": "INSERT", "seq": "1", "source_file": "f", "source_offset": 0,
         "after": [("x", "1")], "meta": json.dumps({"column_types": {"x": hint}})}
        for hint in ("LONG", "STRING")
    ]  # fmt: skip
    path = tmp_path / "part-0.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=EVENT_SCHEMA), path)
    whole = column_kinds(read_events([path]))
    merged = merged_column_kinds([column_kinds(c) for c in event_chunks([path], 1, 1 << 30)])
    assert [json.loads(r["hints"]) for r in whole] == [{"x": "LONG"}]
    assert [(r["first"], r["hints"]) for r in merged] == [(r["first"], r["hints"]) for r in whole]
