"""Routing keys and types events column-wise (``arrow_typing``); held here to the reference, ``merge.prepare``
run event by event, on the same batches: same rows, keys, old keys, buckets, roles and error texts."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from fuzzing import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdclake.compaction.lake_tables import ROUTED_SCHEMA
from cdclake.compaction.routing import _prepare_event, _prepare_row, prepared_rows, route_events
from cdclake.events.change import IMAGE_TYPE, ROW_OPS
from cdclake.merge import bucket_of
from cdclake.schema.coltypes import CastError
from cdclake.schema.evolution import ColumnMap

TYPES = {
    "id": "bigint",
    "name": "string",
    "score": "double",
    "flag": "boolean",
    "price": "decimal(5,2)",
    "ratio": "decimal(3,3)",
    "at": "timestamp",
    "day": "date",
}
BUCKETS = 8

#: Texts a decoder may write, valid or not for each type: the patterns' edges (digits, signs, escapes,
#: control characters, exponents, overflow) and the reference's own lenient casts (quoted numbers, 0/1).
TEXTS = [
    "null",
    "0",
    "-0",
    "1",
    "-17",
    "123456789012345678",
    "9223372036854775807",
    "99999999999999999999",
    "1" + "0" * 310,
    "1.5",
    "-2.25",
    "123.45",
    "1234.5",
    "0.125",
    "1e3",
    "2.5E-2",
    '""',
    '"abc"',
    '"é ü"',
    '"a\\"b"',
    '"a\\nb"',
    '"\\u00e9"',
    '"\\ud800"',  # a lone surrogate: valid JSON, not text
    '"\\ud83d\\ude00"',  # a pair: text
    '"x\ty"',
    '"12"',
    '"true"',
    "true",
    "false",
    "[1]",
    '{"a":1}',
    '"2024-01-02 03:04:05"',
    '"2024-13-01"',
    '"2024-01-02"',
]
OPS = ["INSERT", "UPDATE", "DELETE", "UPSERT", "TRUNCATE", None]
KEY_SETS = [["id"], ["name"], ["id", "name"], ["price"]]

#: Texts each type's cast takes (and a few at its edges it refuses), drawn more often than any text, so
#: that most events are ones the column-wise path keys itself.
VALID = {
    "bigint": ["0", "-0", "1", "2", "-17", "123456789012345678", "9223372036854775807", "null"],
    "string": ['""', '"abc"', '"a"', '"é ü"', '"a\\"b"', '"\\u00e9"', '"x\ty"', '"12"', "1.5", "true", "null"],
    "double": ["1.5", "-2.25", "0", "7", "1e3", "2.5E-2", "1" + "0" * 310, "null"],
    "boolean": ["true", "false", "null"],
    "decimal(5,2)": ["123.45", "1.5", "0", "-2.25", "1234.5", "0.125", "null"],
    "decimal(3,3)": ["0.125", "0", "-0.5", "1.5", "null"],
    "timestamp": [
        '"2024-01-02 03:04:05"',
        '"2024-01-02T03:04:05.123Z"',
        '"2024-02-29T23:59:59.5+05:30"',
        '"2023-02-29T00:00:00Z"',
        '"1899-12-31T23:00:00-01:00"',
        '"2024-01-02T24:00:00"',
        '"9999-12-31T23:00:00-05:00"',  # beyond datetime's range once in UTC
        '"0001-01-01T00:30:00+01:00"',
        "null",
    ],
    "date": [
        '"2024-01-02"',
        '"2024-02-29"',
        '"2023-02-29"',
        '"2024-04-31"',
        '"2024-01-02junk"',
        '"0999-01-01"',
        "null",
    ],
}


def _text(name: str):
    return st.sampled_from(VALID[TYPES[name]] * 30 + TEXTS)


def _image(values: dict[str, str | None], extra: tuple[str, str], odd: bool) -> list[tuple[str, str]]:
    return [(n, t) for n, t in values.items() if t is not None] + ([extra] if odd else [])


entry = st.tuples(st.sampled_from([*TYPES, "ghost"]), st.sampled_from(TEXTS))
image = st.none() | st.builds(
    _image,
    st.fixed_dictionaries({n: st.none() | _text(n) for n in TYPES}),
    entry,
    st.sampled_from([False] * 9 + [True]),  # now and then a repeated column, or one the table lacks
)
event = st.tuples(st.sampled_from(OPS), image, image)


def _batch(events: list[tuple]) -> pa.Table:
    count = len(events)
    return pa.table(
        {
            "op": pa.array([e[0] for e in events], pa.string()),
            "seq": pa.array([f"{i:04d}" for i in range(count)], pa.string()),
            "event_ts": pa.array([dt.datetime(2024, 1, 1, tzinfo=dt.UTC)] * count, pa.timestamp("us", tz="UTC")),
            "tx_id": pa.array([None] * count, pa.string()),
            "tx_pos": pa.array(range(count), pa.int64()),
            "before": pa.array([e[1] for e in events], IMAGE_TYPE),
            "after": pa.array([e[2] for e in events], IMAGE_TYPE),
            "meta": pa.array(["{}"] * count, pa.string()),
            "source_file": pa.array(["f.json"] * count, pa.string()),
            "source_offset": pa.array(range(count), pa.int64()),
        }
    )


def _reference(
    table: pa.Table, keys: list[str], cmap: ColumnMap | None = None, chunk: int | None = None
) -> list[tuple]:
    """The routed rows event by event, as routing computed them before ``arrow_typing``, laid out as routing
    lays them out: per record batch of ``chunk`` events, each event's main or error row in order, then the
    batch's link rows in order, in a batch of their own (``routing._routed_batches``)."""
    rows = table.to_pylist()
    chunk = chunk or max(1, len(rows))
    out = []
    for start in range(0, len(rows), chunk):
        mains, links = _reference_rows(rows[start : start + chunk], keys, cmap)
        out += mains + links
    return out


def _reference_rows(rows: list[dict], keys: list[str], cmap: ColumnMap | None) -> tuple[list[tuple], list[tuple]]:
    """The main / error rows and the link rows of ``rows``, each in event order."""
    out, links = [], []
    for row in rows:
        if row["op"] not in ROW_OPS:
            continue
        source = (row["source_file"], row["source_offset"])
        try:
            prepared = _prepare_event(
                row["op"], row["seq"], row["event_ts"], row["before"], row["after"], source, keys, TYPES, cmap
            )
        except CastError as exc:
            out.append((row["source_offset"], None, None, None, "error", str(exc)))
            continue
        bucket = bucket_of(prepared.key, BUCKETS)
        out.append((row["source_offset"], prepared.key, prepared.old_key, bucket, "main", None))
        if prepared.old_key is not None and bucket_of(prepared.old_key, BUCKETS) != bucket:
            link = bucket_of(prepared.old_key, BUCKETS)
            links.append((row["source_offset"], prepared.key, prepared.old_key, link, "link", None))
    return out, links


def _routed(table: pa.Table, keys: list[str], chunk: int, cmap: ColumnMap | None = None) -> list[tuple]:
    batches = table.to_batches(max_chunksize=chunk)  # slices of one array: map offsets not starting at 0
    out = list(route_events(iter(batches), keys, TYPES, BUCKETS, "b1", cmap))
    routed = pa.Table.from_batches(out, schema=ROUTED_SCHEMA)
    names = ("source_offset", "_key", "_old_key", "_cdc_bucket", "_role", "_error")
    assert routed["_cdc_batch"].to_pylist() == ["b1"] * routed.num_rows
    return list(zip(*[routed[n].to_pylist() for n in names], strict=True))


@pytest.mark.fuzz
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.lists(event, max_size=25), keys=st.sampled_from(KEY_SETS), chunk=st.integers(1, 30))
def test_routing_is_the_reference_event_by_event(events, keys, chunk):
    table = _batch(events)
    assert _routed(table, keys, chunk) == _reference(table, keys, chunk=chunk)


def test_links_follow_their_batchs_main_rows():
    """Found by hypothesis on a fresh clone: a key change that crosses buckets, then another event in the same
    record batch. Its link row comes after every main and error row of that batch, not right after its own."""
    events = [("UPDATE", [("price", "123.45")], [("price", "1.5")]), ("INSERT", None, None)]
    table = _batch(events)
    routed = _routed(table, ["price"], 2)
    assert [r[4] for r in routed] == ["main", "error", "link"]
    assert routed == _reference(table, ["price"], chunk=2)
    assert [r[4] for r in _routed(table, ["price"], 1)] == ["main", "link", "error"]  # a batch per event


def test_a_key_change_is_logged_under_both_buckets():
    events = [("UPDATE", [("id", "1"), ("name", '"a"')], [("id", "2"), ("name", '"a"')])]
    keys = next(k for k in (["id"],) if bucket_of("[1]", BUCKETS) != bucket_of("[2]", BUCKETS))
    routed = _routed(_batch(events), keys, 10)
    assert [(r[1], r[2], r[4]) for r in routed] == [("[2]", "[1]", "main"), ("[2]", "[1]", "link")]


@pytest.mark.parametrize(
    ("column", "text", "error"),
    [
        ("id", '"x"', 'column id: value "x" is not a valid bigint'),
        ("id", "1.5", "column id: value 1.5 is not a valid bigint"),
        # beyond bigint: quarantined, not left to fail the table's write
        ("id", "9" * 20, f"column id: value {'9' * 20} is not a valid bigint"),
        ("score", "1" + "0" * 310, "column score: value 1" + "0" * 79 + " is not a valid double"),
        ("price", "1234.5", "column price: value 1234.5 is not a valid decimal(5,2)"),
        # JSON, but not text: Arrow refused it and the table's whole commit failed, every retry
        ("name", '"\\ud800"', 'column name: value "\\ud800" is not a valid string'),
    ],
)
def test_a_bad_value_is_quarantined_with_the_reference_s_words(column, text, error):
    image = [("id", "1"), (column, text)] if column != "id" else [("id", text)]
    routed = _routed(_batch([("INSERT", None, image)]), ["id"], 10)
    assert routed == [(0, None, None, None, "error", error)]


@pytest.mark.parametrize(
    ("op", "key", "old_key"), [("DELETE", "[1]", None), ("UPDATE", "[2]", "[1]"), ("UPSERT", "[2]", None)]
)
def test_which_image_keys_an_event(op, key, old_key):
    routed = _routed(_batch([(op, [("id", "1")], [("id", "2")])]), ["id"], 10)
    assert (routed[0][1], routed[0][2]) == (key, old_key)


def test_unknown_columns_and_missing_keys_are_errors():
    events = [("INSERT", None, [("ghost", "1"), ("id", "1")]), ("INSERT", None, [("name", '"a"')])]
    routed = _routed(_batch(events), ["id"], 10)
    assert [r[5] for r in routed] == [
        "column ghost is not in the table's schema",
        "INSERT event has no value for key column(s) id",
    ]


def test_renamed_columns_go_through_the_reference():
    cmap = ColumnMap({"old_name": "name"}, set())
    events = [("INSERT", None, [("id", "3"), ("old_name", '"z"')]), ("DELETE", [("id", "4")], None)]
    table = _batch(events)
    assert _routed(table, ["id"], 10, cmap) == _reference(table, ["id"], cmap)
    assert [r[1] for r in _routed(table, ["id"], 10, cmap)] == ["[3]", "[4]"]


@pytest.mark.fuzz
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.lists(event, max_size=25), keys=st.sampled_from(KEY_SETS))
def test_prepared_rows_are_the_reference_s_events(events, keys):
    """What a fold reads of the log (events routing let through): the same typed events, to the repr."""
    table = _batch(events)
    good = [i for i, row in enumerate(table.to_pylist()) if _prepares(row, keys)]
    logged = table.take(pa.array(good, pa.int64()))
    expected = [_prepare_row(row, keys, TYPES) for row in logged.to_pylist()]
    assert repr(prepared_rows(logged, keys, TYPES)) == repr(expected)


def _prepares(row: dict, keys: list[str]) -> bool:
    try:
        _prepare_row(row, keys, TYPES)
    except CastError:
        return False
    return row["op"] in ROW_OPS
