"""Parity of the GoldenGate text formats: one logical history, written by small writers of our own
as goldengate-json, goldengate-delimited (several option combinations) and goldengate-xml, decodes
to the same canonical events; what a format cannot carry is asserted as an explicit difference.

The writers follow the vendor doc (§6.2 delimited, §6.3 JSON, §6.7 XML). Delimited text is a row
formatter (§6.1.2): an update carries its after image only, a primary-key update is either a
delete plus an insert at one pos (``pkUpdateHandling=delete-insert``) or a plain update whose old
key is lost (``update``), and with the default representations an empty string is written like a
missing value.
"""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.events.change import ChangeEvent, Rejected, to_json
from cdclake.merge import apply_events, prepare
from cdclake.options import Options
from cdclake.registry import get_decoder

UTC = dt.UTC
TABLES: dict[str, list[tuple[str, str, bool]]] = {
    "GG.CUSTOMER": [
        ("ID", "bigint", True),
        ("NAME", "string", False),
        ("BALANCE", "decimal(10,2)", False),
        ("ACTIVE", "boolean", False),
        ("NOTE", "string", False),
    ],
    "GG.ORDERS": [("ORDER_ID", "bigint", True), ("CUST_ID", "bigint", False), ("AMOUNT", "decimal(12,2)", False)],
}
COLUMNS_OPTION = ";".join(
    f"{table}({','.join(f'{n}:{t}' + (':key' if k else '') for n, t, k in cols)})" for table, cols in TABLES.items()
)


def key_of(table: str) -> str:
    return next(n for n, _, k in TABLES[table] if k)


@dataclass
class Change:
    """One logical change (GoldenGate trail operation)."""

    table: str
    op: str  # I U D T
    pos: int
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    tokens: dict[str, str] = field(default_factory=dict)

    @property
    def op_ts(self) -> str:
        return (dt.datetime(2024, 3, 1, 12, 0, tzinfo=UTC) + dt.timedelta(seconds=self.pos)).strftime(
            "%Y-%m-%d %H:%M:%S.%f"
        )

    @property
    def key_change(self) -> bool:
        key = key_of(self.table)
        return (
            self.op == "U"
            and self.before is not None
            and self.after is not None
            and (self.before.get(key) != self.after.get(key))
        )


CUST, ORDERS = "GG.CUSTOMER", "GG.ORDERS"
ANN = {"ID": 1, "NAME": "Ann", "BALANCE": Decimal("10.50"), "ACTIVE": True, "NOTE": None}  # a NULL value
BOB = {"ID": 2, "NAME": "Bob <b&b>", "BALANCE": Decimal("0.00"), "ACTIVE": False, "NOTE": "vip"}
HISTORY = [
    Change(CUST, "I", 101, after=ANN, tokens={"R": "AAA1"}),
    Change(CUST, "I", 102, after=BOB, tokens={"R": "AAA2", "L": "206080450"}),
    Change(ORDERS, "I", 103, after={"ORDER_ID": 100, "CUST_ID": 1, "AMOUNT": Decimal("99.99")}),
    # an update of non-key columns: NAME and ACTIVE missing from the after image
    Change(
        CUST,
        "U",
        104,
        before={"ID": 1, "NAME": "Ann", "BALANCE": Decimal("10.50")},
        after={"ID": 1, "BALANCE": Decimal("12.00"), "NOTE": "Zoë paid"},
    ),
    # a primary-key update with full images (full supplemental logging)
    Change(CUST, "U", 105, before=BOB, after={**BOB, "ID": 3}),
    # a delete with only the key column present
    Change(ORDERS, "D", 106, before={"ORDER_ID": 100}),
    Change(ORDERS, "I", 107, after={"ORDER_ID": 101, "CUST_ID": 3, "AMOUNT": None}),
    Change(ORDERS, "T", 108),
    Change(ORDERS, "I", 109, after={"ORDER_ID": 102, "CUST_ID": 1, "AMOUNT": Decimal("5.00")}),
    # an empty string: the default delimited representations cannot tell it from missing
    Change(CUST, "I", 110, after={"ID": 5, "NAME": "Eve", "BALANCE": Decimal("-1.25"), "ACTIVE": True, "NOTE": ""}),
]


def text(value: Any) -> str:
    if value is True or value is False:
        return str(value).lower()
    return str(value)


# --- writers ---------------------------------------------------------------------------------------


def write_json(history: list[Change]) -> bytes:
    out = []
    for change in history:
        record: dict[str, Any] = {
            "table": change.table,
            "op_type": change.op,
            "op_ts": change.op_ts,
            "current_ts": "2024-03-02T00:00:00.000000",
            "pos": f"{change.pos:020d}",
            "primary_keys": [key_of(change.table)],
            "tokens": change.tokens,
        }
        if change.before is not None:
            record["before"] = change.before
        if change.after is not None:
            record["after"] = change.after
        out.append(to_json(record))
    return ("\n".join(out) + "\n").encode()


def write_delimited(history: list[Change], options: dict[str, str]) -> bytes:
    """The delimited text formatter (§6.2.1), configured by the same options the decoder gets."""
    opts = Options(options)
    fd, ld = opts.str("fieldDelimiter", "\u0001"), opts.str("lineDelimiter", "\n")
    null, missing = opts.str("nullValueRepresentation", "NULL"), opts.str("missingValueRepresentation", "")
    kv, pair = opts.str("keyValueDelimiter", "="), opts.str("keyValuePairDelimiter", ",")
    keys = {op: opts.str(name, op) for op, name in (("I", "insertOpKey"), ("U", "updateOpKey"), ("D", "deleteOpKey"))}
    keys["T"] = opts.str("truncateOpKey", "T")
    names = opts.bool("includeColumnNames", False)
    mode = opts.str("pkUpdateHandling", "abend")

    def record(change: Change, op: str, image: dict[str, Any] | None) -> str:
        fields = [keys[op], change.table]
        if opts.bool("includeOpTimestamp", True):
            fields.append(change.op_ts)
        if opts.bool("includeCurrentTimestamp", True):
            fields.append("2024-03-02T00:00:00.000000")
        fields.append(f"{change.pos:020d}")
        if opts.bool("includeTokens", False):
            fields.append(pair.join(f"{k}{kv}{v}" for k, v in change.tokens.items()))
        for name, _, _ in TABLES[change.table]:
            image = image or {}
            value = missing if name not in image else null if image[name] is None else text(image[name])
            fields.extend([name, value] if names else [value])
        return fd.join(fields) + ld

    out = []
    for change in history:
        if change.key_change and mode == "delete-insert":
            out += [record(change, "D", change.before), record(change, "I", change.after)]
        elif change.key_change and mode == "abend":
            raise AssertionError("with pkUpdateHandling=abend the writer stops at a primary-key update")
        else:
            out.append(record(change, change.op, change.before if change.op == "D" else change.after))
    return "".join(out).encode()


def write_xml(history: list[Change], prolog: bool, encoding: str) -> bytes:
    def cdata(value: Any) -> str:
        return "<![CDATA[" + text(value).replace("]]>", "]]]]><![CDATA[>") + "]]>"

    out = []
    for change in history:
        cols = []
        for index, (name, _, _) in enumerate(TABLES[change.table]):
            parts = []
            for tag, image in (("before", change.before or {}), ("after", change.after or {})):
                if name not in image:
                    parts.append(f"<{tag} missing='true'/>")
                elif image[name] is None:
                    parts.append(f"<{tag} isNull='true'/>")
                else:
                    parts.append(f"<{tag}>{cdata(image[name])}</{tag}>")
            if all("missing='true'" in p for p in parts):
                parts = ["<missing/>"]
            cols.append(f" <col name='{name}' index='{index}'>\n   {''.join(parts)}\n </col>\n")
        tokens = "".join(
            f"   <token>\n     <Name>{cdata(k)}</Name>\n     <Value>{cdata(v)}</Value>\n   </token>\n"
            for k, v in change.tokens.items()
        )
        head = f"<?xml version='1.0' encoding='{encoding}'?>\n" if prolog else ""
        out.append(
            f"{head}<operation table='{change.table}' type='{change.op}' ts='{change.op_ts}'"
            f" current_ts='2024-03-02T00:00:00.000000' pos='{change.pos:020d}' numCols='{len(cols)}'>\n"
            + "".join(cols)
            + (f" <tokens>\n{tokens} </tokens>\n" if change.tokens else "")
            + "</operation>\n"
        )
    return "".join(out).encode(encoding)


# --- expectations -----------------------------------------------------------------------------------

_OPS = {"I": "INSERT", "U": "UPDATE", "D": "DELETE", "T": "TRUNCATE"}


def expected_events(history: list[Change]) -> list[dict[str, Any]]:
    """The canonical events of the history (what the JSON formatter carries in full)."""
    out = []
    for change in history:
        truncate = change.op == "T"
        out.append(
            {
                "table": change.table,
                "op": _OPS[change.op],
                "seq": f"{change.pos:032d}",
                "event_ts": dt.datetime.strptime(change.op_ts, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC),
                "tx_id": None,
                "tx_pos": None,
                "tx_last": None,
                "keys": [key_of(change.table)],
                "before": None if truncate else copy.deepcopy(change.before),
                "after": None if truncate else copy.deepcopy(change.after),
                "ddl": None,
            }
        )
    return out


def canonical(items: list[ChangeEvent | Rejected]) -> list[dict[str, Any]]:
    """Row events without ``source`` and format-specific ``meta``."""
    assert all(isinstance(i, ChangeEvent) for i in items), [i for i in items if isinstance(i, Rejected)]
    out = []
    for event in items:
        if event.op == "SCHEMA":
            continue
        out.append(
            {
                "table": event.table,
                "op": event.op,
                "seq": event.seq,
                "event_ts": event.event_ts,
                "tx_id": event.tx_id,
                "tx_pos": event.tx_pos,
                "tx_last": event.tx_last,
                "keys": event.keys,
                "before": event.before,
                "after": event.after,
                "ddl": event.ddl,
            }
        )
    return out


def as_row_formatter(history: list[Change], options: dict[str, str]) -> list[dict[str, Any]]:
    """The expected events, changed only where delimited text cannot carry the history (see module doc)."""
    opts = Options(options)
    mode = opts.str("pkUpdateHandling", "abend")
    empty_is_missing = opts.str("missingValueRepresentation", "") == ""
    out = []
    for change, event in zip(history, expected_events(history), strict=True):
        if change.key_change and mode == "delete-insert":
            delete = {**event, "op": "DELETE", "after": None}
            insert = {**event, "op": "INSERT", "before": None}
            out += [delete, insert]
            continue
        if event["op"] == "UPDATE":
            event["before"] = None  # after image only
        for image in (event["before"], event["after"]):
            if image and empty_is_missing:
                for name in [n for n, v in image.items() if v == ""]:
                    del image[name]
        out.append(event)
    return out


def decode(format_id: str, data: bytes, **options: str) -> list[ChangeEvent | Rejected]:
    return list(get_decoder(format_id, Options(options)).decode(data, f"history.{format_id}"))


# --- the formats -------------------------------------------------------------------------------------

DELIMITED_OPTIONS = {
    "defaults": {"includeTokens": "true", "pkUpdateHandling": "delete-insert"},
    "custom delimiters (CDATA)": {
        "fieldDelimiter": "CDATA[ | ]",
        "lineDelimiter": "CDATA[\\r\\n]",
        "keyValueDelimiter": "CDATA[:]",
        "keyValuePairDelimiter": "CDATA[;]",
        "includeTokens": "true",
        "pkUpdateHandling": "delete-insert",
    },
    "includeColumnNames": {"includeColumnNames": "true", "fieldDelimiter": ",", "pkUpdateHandling": "delete-insert"},
    "custom op keys": {
        "insertOpKey": "INS",
        "updateOpKey": "UPD",
        "deleteOpKey": "DEL",
        "truncateOpKey": "CDATA[TRUNC]",
        "includeCurrentTimestamp": "false",
        "pkUpdateHandling": "delete-insert",
    },
    "custom NULL and missing": {
        "nullValueRepresentation": "CDATA[<null>]",
        "missingValueRepresentation": "CDATA[<missing>]",
        "fieldDelimiter": "|",
        "pkUpdateHandling": "delete-insert",
    },
    "pkUpdateHandling=update": {"pkUpdateHandling": "update"},
}


def test_json_carries_the_whole_history():
    items = decode("goldengate-json", write_json(HISTORY))
    assert canonical(items) == expected_events(HISTORY)
    assert [e.meta["tokens"] for e in items] == [c.tokens for c in HISTORY]
    assert not [e for e in items if e.op == "SCHEMA"]  # JSON announces no layout


@pytest.mark.parametrize(("prolog", "encoding"), [(True, "UTF-8"), (False, "ISO-8859-1")])
def test_xml_equals_json(prolog, encoding):
    json_events = canonical(decode("goldengate-json", write_json(HISTORY)))
    items = decode("goldengate-xml", write_xml(HISTORY, prolog, encoding), columns=COLUMNS_OPTION, encoding=encoding)
    assert canonical(items) == json_events
    rows = [e for e in items if e.op != "SCHEMA"]
    assert [(e.meta["pos"], e.meta["op_ts"]) for e in rows] == [(f"{c.pos:020d}", c.op_ts) for c in HISTORY]
    assert [e.meta.get("tokens", {}) for e in rows] == [c.tokens for c in HISTORY]
    assert_schema_events(items)


@pytest.mark.parametrize("name", sorted(DELIMITED_OPTIONS))
def test_delimited_equals_json_where_it_can(name):
    options = DELIMITED_OPTIONS[name]
    items = decode("goldengate-delimited", write_delimited(HISTORY, options), columns=COLUMNS_OPTION, **options)
    decoded = canonical(items)
    assert decoded == as_row_formatter(HISTORY, options)
    assert_schema_events(items)
    json_events = canonical(decode("goldengate-json", write_json(HISTORY)))

    # the differences, one by one
    update = next(i for i, c in enumerate(HISTORY) if c.op == "U" and not c.key_change)
    pk = next(i for i, c in enumerate(HISTORY) if c.key_change)
    assert update < pk  # so the update's index is the same in both lists
    assert json_events[update]["before"] is not None and decoded[update]["before"] is None
    assert decoded[update]["after"] == json_events[update]["after"]  # missing columns stay missing
    if options["pkUpdateHandling"] == "delete-insert":
        delete, insert = decoded[pk], decoded[pk + 1]
        assert (delete["op"], insert["op"]) == ("DELETE", "INSERT") and delete["seq"] == insert["seq"]
        assert delete["before"] == json_events[pk]["before"] and insert["after"] == json_events[pk]["after"]
    else:
        assert decoded[pk]["op"] == "UPDATE" and decoded[pk]["before"] is None  # the old key is lost
        assert decoded[pk]["after"] == json_events[pk]["after"]
    eve = decoded[-1]["after"]
    if Options(options).str("missingValueRepresentation", "") == "":
        assert "NOTE" not in eve and json_events[-1]["after"]["NOTE"] == ""
    else:
        assert eve == json_events[-1]["after"]
    rows = [e for e in items if e.op != "SCHEMA"]
    if options.get("includeTokens") == "true":
        assert [e.meta["tokens"] for e in rows if "pk_update" not in e.meta] == [
            c.tokens for c in HISTORY if not (c.key_change and options["pkUpdateHandling"] == "delete-insert")
        ]
    else:
        assert all("tokens" not in e.meta for e in rows)


def assert_schema_events(items: list[ChangeEvent | Rejected]) -> None:
    """Each table's layout is announced once, before its first row, with the configured types and keys."""
    seen = []
    for index, event in enumerate(items):
        if event.op == "SCHEMA":
            assert items[index + 1].table == event.table and items[index + 1].op != "SCHEMA"
            assert event.source == items[index + 1].source and event.seq == items[index + 1].seq
            expected_columns = [{"name": n, "type": t} for n, t, _ in TABLES[event.table]]
            assert event.ddl == {"columns": expected_columns, "keys": [key_of(event.table)]}
            seen.append(event.table)
    assert seen == [CUST, ORDERS]


def test_pk_update_handling_abend_writes_nothing_and_a_pair_is_rejected():
    with pytest.raises(AssertionError, match="abend"):
        write_delimited(HISTORY, {"pkUpdateHandling": "abend"})
    data = write_delimited(HISTORY, {"pkUpdateHandling": "delete-insert"})
    items = decode("goldengate-delimited", data, columns=COLUMNS_OPTION)  # pkUpdateHandling=abend (default)
    rejected = [i for i in items if isinstance(i, Rejected)]
    assert len(rejected) == 2 and all("pkUpdateHandling=delete-insert" in r.error for r in rejected)
    assert len([i for i in items if isinstance(i, ChangeEvent) and i.op != "SCHEMA"]) == len(HISTORY) - 1


# --- the tables the formats lead to ------------------------------------------------------------------


def fold(items: list[ChangeEvent | Rejected]) -> dict[str, dict[str, dict[str, Any]]]:
    """Apply the events with the merge (DESIGN §4): table -> key -> column values."""
    events = [i for i in items if isinstance(i, ChangeEvent) and i.op != "SCHEMA"]
    out = {}
    for table, cols in TABLES.items():
        types = {n: t for n, t, _ in cols}
        mine = [e for e in events if e.table == table]
        truncates = [e.seq for e in mine if e.op == "TRUNCATE"]
        prepared = [
            prepare(e.op, e.seq, e.event_ts, e.before, e.after, (e.source.file, e.source.offset), e.keys, types)
            for e in mine
            if e.op != "TRUNCATE"
        ]
        state: dict[str, dict[str, Any]] = {}
        apply_events(state, prepared, list(types), "b1", max(truncates, default=None))
        out[table] = {k: {c: v for c, v in row.items() if not c.startswith("_cdc_")} for k, row in state.items()}
    return out


def test_same_tables_from_every_format():
    expected = fold(decode("goldengate-json", write_json(HISTORY)))
    assert expected[CUST] == {
        "[1]": {"ID": 1, "NAME": "Ann", "BALANCE": Decimal("12.00"), "ACTIVE": True, "NOTE": "Zoë paid"},
        "[3]": {"ID": 3, "NAME": "Bob <b&b>", "BALANCE": Decimal("0.00"), "ACTIVE": False, "NOTE": "vip"},
        "[5]": {"ID": 5, "NAME": "Eve", "BALANCE": Decimal("-1.25"), "ACTIVE": True, "NOTE": ""},
    }
    assert expected[ORDERS] == {"[102]": {"ORDER_ID": 102, "CUST_ID": 1, "AMOUNT": Decimal("5.00")}}
    assert fold(decode("goldengate-xml", write_xml(HISTORY, True, "UTF-8"), columns=COLUMNS_OPTION)) == expected
    for name, options in DELIMITED_OPTIONS.items():
        tables = fold(
            decode("goldengate-delimited", write_delimited(HISTORY, options), columns=COLUMNS_OPTION, **options)
        )
        differences = copy.deepcopy(expected)
        if Options(options).str("missingValueRepresentation", "") == "":
            differences[CUST]["[5]"]["NOTE"] = None  # "" was written as missing: an insert leaves it NULL
        if options["pkUpdateHandling"] == "update":
            # the old key cannot be known: its row stays
            differences[CUST]["[2]"] = {"ID": 2, "NAME": "Bob <b&b>", "BALANCE": Decimal("0.00"), "ACTIVE": False}
            differences[CUST]["[2]"]["NOTE"] = "vip"
        assert tables == differences, name


# --- a law -----------------------------------------------------------------------------------------------

_name = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Cn")), max_size=10)
_customer_values = st.fixed_dictionaries(
    {},
    optional={
        "NAME": st.one_of(st.none(), _name),
        "BALANCE": st.one_of(st.none(), st.decimals(places=2, min_value=-(10**6), max_value=10**6)),
        "ACTIVE": st.one_of(st.none(), st.booleans()),
        "NOTE": st.one_of(st.none(), _name),
    },
)


@st.composite
def histories(draw) -> list[Change]:
    out = []
    for pos in range(1, draw(st.integers(1, 8)) + 1):
        op = draw(st.sampled_from("IUD"))
        key = {"ID": draw(st.integers(-5, 5))}
        after = {**key, **draw(_customer_values)} if op in "IU" else None
        before = {**key, **draw(_customer_values)} if op in "UD" else None
        out.append(Change(CUST, op, pos * 7, before=before, after=after, tokens={"R": f"T{pos}"}))
    return out


@settings(max_examples=40, deadline=None)
@given(histories())
def test_property_every_text_format_decodes_a_history_alike(history):
    """JSON == XML, and delimited (with representations that keep "" and NULL apart) == JSON less befores."""
    json_events = canonical(decode("goldengate-json", write_json(history)))
    assert json_events == expected_events(history)
    xml = write_xml(history, True, "UTF-8")
    assert canonical(decode("goldengate-xml", xml, columns=COLUMNS_OPTION)) == json_events
    options = {"nullValueRepresentation": "CDATA[\\u0002N]", "missingValueRepresentation": "CDATA[\\u0002M]"}
    delimited = write_delimited(history, options)
    decoded = canonical(decode("goldengate-delimited", delimited, columns=COLUMNS_OPTION, **options))
    assert decoded == [replace_before(e) for e in json_events]


def replace_before(event: dict[str, Any]) -> dict[str, Any]:
    return {**event, "before": None} if event["op"] == "UPDATE" else event
