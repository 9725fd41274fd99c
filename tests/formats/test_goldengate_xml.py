"""goldengate-xml decoder: the vendor doc's samples (§6.7.2), framing, encodings, hostile XML."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.events.change import ChangeEvent, Rejected, Source
from cdclake.formats import goldengate_xml
from cdclake.formats.goldengate_xml import GoldenGateXmlDecoder
from cdclake.options import OptionError, Options
from cdclake.registry import get_decoder

FIXTURES = Path(__file__).parents[1] / "fixtures" / "goldengate_xml"
UTC = dt.UTC
NAMES = ("seed_insert.xml", "seed_update.xml", "seed_delete.xml", "seed_truncate.xml")
SEED_COLUMNS = (
    "CUST_CODE,ORDER_DATE,PRODUCT_CODE,ORDER_ID,PRODUCT_PRICE:decimal(10,2),PRODUCT_AMOUNT:bigint,TRANSACTION_ID"
)
SEED_TYPES = {
    "CUST_CODE": "string",
    "ORDER_DATE": "string",
    "PRODUCT_CODE": "string",
    "ORDER_ID": "string",
    "PRODUCT_PRICE": "decimal(10,2)",
    "PRODUCT_AMOUNT": "bigint",
    "TRANSACTION_ID": "string",
}


def decoder(**options: str) -> GoldenGateXmlDecoder:
    dec = get_decoder("goldengate-xml", Options(options))
    assert isinstance(dec, GoldenGateXmlDecoder)
    return dec


def decode(data: bytes, file: str = "f.xml", **options: str) -> list[ChangeEvent | Rejected]:
    return list(decoder(**options).decode(data, file))


def rows(items: list[ChangeEvent | Rejected]) -> list[ChangeEvent]:
    assert all(isinstance(i, ChangeEvent) for i in items), [i for i in items if isinstance(i, Rejected)]
    return [i for i in items if isinstance(i, ChangeEvent) and i.op != "SCHEMA"]


def kinds(items: list[ChangeEvent | Rejected]) -> list[str]:
    return [i.op if isinstance(i, ChangeEvent) else "REJECTED" for i in items]


def without_offsets(items: list[ChangeEvent]) -> list[dict[str, Any]]:
    out = []
    for event in items:
        d = event.to_dict()
        d.pop("source")
        out.append(d)
    return out


def seed(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def col(name: str, index: int, before: str | None = None, after: str | None = None) -> str:
    def image(tag: str, value: str | None) -> str:
        if value is None:
            return f"<{tag} missing='true'/>"
        if value == "NULL":
            return f"<{tag} isNull='true'/>"
        return f"<{tag}><![CDATA[{value}]]></{tag}>"

    return f"<col name='{name}' index='{index}'>{image('before', before)}{image('after', after)}</col>"


def doc(op: str = "I", pos: int = 1, cols: str | None = None, table: str = "GG.T", prolog: bool = True, **attrs) -> str:
    cols = cols if cols is not None else col("ID", 0, after="1") + col("NAME", 1, after="a")
    extra = "".join(f" {k}='{v}'" for k, v in attrs.items())
    head = "<?xml version='1.0' encoding='UTF-8'?>\n" if prolog else ""
    return (
        f"{head}<operation table='{table}' type='{op}' ts='2024-01-02 03:04:05.123456'"
        f" current_ts='2024-01-02T03:04:06.000000' pos='{pos:020d}'{extra}>{cols}</operation>\n"
    )


# --- the vendor doc's sample messages (§6.7.2) -----------------------------------------------------


def meta(pos: str, op_ts: str, current_ts: str, tokens: dict[str, str], typed: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"pos": pos, "op_ts": op_ts, "current_ts": current_ts, "tokens": tokens, "num_cols": 7}
    if typed:
        out["column_types"] = SEED_TYPES
    return out


def image(cust, date, product, order_id, price, amount, tx, typed):
    values = {
        "CUST_CODE": cust,
        "ORDER_DATE": date,
        "PRODUCT_CODE": product,
        "ORDER_ID": order_id,
        "PRODUCT_PRICE": price,
        "PRODUCT_AMOUNT": amount,
        "TRANSACTION_ID": tx,
    }
    values = {k: v for k, v in values.items() if v is not None}
    if not typed:
        return {k: str(v) for k, v in values.items()}
    return values


def expected_seeds(typed: bool) -> dict[str, ChangeEvent]:
    ts1 = dt.datetime(2013, 6, 2, 22, 14, 36, tzinfo=UTC)
    ts2 = dt.datetime(2013, 6, 2, 22, 14, 41, tzinfo=UTC)
    return {
        "seed_insert.xml": ChangeEvent(
            table="GG.TCUSTORD",
            op="INSERT",
            seq="00000000000000000000000000001444",
            event_ts=ts1,
            source=Source("seed_insert.xml", 0),
            before=None,
            after=image("WILL", "1994-09-30:15:33:00", "CAR", "144", Decimal("17520.00"), 3, "100", typed),
            meta=meta(
                "00000000000000001444",
                "2013-06-02 22:14:36.000000",
                "2015-10-06T12:21:50.100001",
                {"R": "AADPkvAAEAAEqL2AAA"},
                typed,
            ),
        ),
        "seed_update.xml": ChangeEvent(
            table="GG.TCUSTORD",
            op="UPDATE",
            seq="00000000000000000000000000002891",
            event_ts=ts2,
            source=Source("seed_update.xml", 0),
            before=image("BILL", "1995-12-31:15:00:00", "CAR", "765", Decimal("15000.00"), 3, "100", typed),
            after=image("BILL", "1995-12-31:15:00:00", "CAR", "765", Decimal("14000.00"), 3, "100", typed),
            meta=meta(
                "00000000000000002891",
                "2013-06-02 22:14:41.000000",
                "2015-10-06T12:21:50.413000",
                {"R": "AADPkvAAEAAEqLzAAA"},
                typed,
            ),
        ),
        "seed_delete.xml": ChangeEvent(
            table="GG.TCUSTORD",
            op="DELETE",
            seq="00000000000000000000000000004338",
            event_ts=ts2,
            source=Source("seed_delete.xml", 0),
            before=image("DAVE", "1993-11-03:07:51:35", "PLANE", "600", None, None, None, typed),
            after=None,
            meta=meta(
                "00000000000000004338",
                "2013-06-02 22:14:41.000000",
                "2015-10-06T12:21:50.415000",
                {"L": "206080450", "6": "9.0.80330", "R": "AADPkvAAEAAEqLzAAC"},
                typed,
            ),
        ),
        "seed_truncate.xml": ChangeEvent(
            table="GG.TCUSTORD",
            op="TRUNCATE",
            seq="00000000000000000000000000004515",
            event_ts=ts2,
            source=Source("seed_truncate.xml", 0),
            meta=meta(
                "00000000000000004515",
                "2013-06-02 22:14:41.000000",
                "2015-10-06T12:21:50.415001",
                {"R": "AADPkvAAEAAEqL2AAB"},
                typed,
            ),
        ),
    }


def test_registered_decoder_is_this_module():
    assert type(get_decoder("goldengate-xml")) is GoldenGateXmlDecoder
    assert GoldenGateXmlDecoder.format_id == "goldengate-xml"


@pytest.mark.parametrize("typed", [False, True])
@pytest.mark.parametrize("name", NAMES)
def test_seed_sample_every_field(name, typed):
    options = {"columns": SEED_COLUMNS} if typed else {}
    schema, event = decode(seed(name), name, **options)
    expected = expected_seeds(typed)[name]
    assert event == expected
    for field in ("table", "op", "seq", "event_ts", "tx_id", "tx_pos", "tx_last", "keys", "before", "after", "meta"):
        assert getattr(event, field) == getattr(expected, field), field
    assert event.ddl is None and event.event_ts.utcoffset() == dt.timedelta(0)
    types = SEED_TYPES if typed else dict.fromkeys(SEED_TYPES, "string")
    assert schema == ChangeEvent(
        table="GG.TCUSTORD",
        op="SCHEMA",
        seq=expected.seq,
        event_ts=expected.event_ts,
        source=Source(name, 0),
        ddl={"columns": [{"name": n, "type": t} for n, t in types.items()], "keys": []},
        meta={"column_source": "document's <col> names"},
    )


def test_seed_values_are_exact_with_types():
    [_, insert] = decode(seed("seed_insert.xml"), columns=SEED_COLUMNS)
    assert str(insert.after["PRODUCT_PRICE"]) == "17520.00" and type(insert.after["PRODUCT_AMOUNT"]) is int


def test_seed_all_concatenated_offsets_one_schema_event():
    data = seed("seed_all.xml")
    items = decode(data, "seed_all.xml")
    assert kinds(items) == ["SCHEMA", "INSERT", "UPDATE", "DELETE", "TRUNCATE"]
    assert [i.source.offset for i in items[1:]] == [0, 1096, 2268, 3414]
    assert all(data[i.source.offset :].startswith(b"<?xml version='1.0'") for i in items)
    expected = expected_seeds(False)
    assert without_offsets(items[1:]) == without_offsets([expected[n] for n in NAMES])


def compact(document: bytes) -> bytes:
    return b"".join(part.strip() for part in document.splitlines())


@pytest.mark.parametrize(
    "variant",
    ["no prolog", "compact", "compact no prolog", "no separator", "blank lines", "crlf"],
)
def test_framings_give_identical_events(variant):
    docs = [seed(n) for n in NAMES]
    if "no prolog" in variant:
        docs = [d.split(b"\n", 1)[1] for d in docs]
    if "compact" in variant:
        docs = [compact(d) for d in docs]
    if variant == "crlf":
        docs = [d.replace(b"\n", b"\r\n") for d in docs]
    joiner = b"\n\n\n" if variant == "blank lines" else b""
    data = joiner.join(docs)
    items = rows(decode(data))
    expected = expected_seeds(False)
    assert without_offsets(items) == without_offsets([expected[n] for n in NAMES])
    starts, at = [], 0
    for d in docs:
        starts.append(at)
        at += len(d) + len(joiner)
    assert [i.source.offset for i in items] == starts


def test_sample_configuration_iso_8859_1_without_prolog():
    """§6.7.5: encoding=ISO-8859-1, includeProlog=false."""
    options = {}
    for text in (FIXTURES / "sample_configuration.properties").read_text().splitlines():
        key, _, value = text.partition("=")
        if key.startswith("gg.handler.hdfs.format."):
            options[key.removeprefix("gg.handler.hdfs.format.")] = value
    assert options == {
        "insertOpKey": "I",
        "updateOpKey": "U",
        "deleteOpKey": "D",
        "truncateOpKey": "T",
        "encoding": "ISO-8859-1",
        "includeProlog": "false",
    }
    first = doc(cols=col("NAME", 0, after="Müller & Söhne"), prolog=False)
    second = doc(pos=2, cols=col("NAME", 0, after="Crème brûlée"), prolog=False)
    data = (first + second).encode("iso-8859-1")
    a, b = rows(decode(data, **options))
    assert a.after == {"NAME": "Müller & Söhne"} and b.after == {"NAME": "Crème brûlée"}
    assert b.source.offset == len(first)  # one byte per character


def test_declared_encoding_wins_per_document():
    latin = doc(cols=col("N", 0, after="Café")).replace("UTF-8", "ISO-8859-1").encode("iso-8859-1")
    utf8 = doc(pos=2, cols=col("N", 0, after="Café")).encode("utf-8")
    cp1252 = doc(pos=3, cols=col("N", 0, after="€uro")).replace("UTF-8", "windows-1252").encode("cp1252")
    a, b, c = rows(decode(latin + utf8 + cp1252))
    assert a.after == b.after == {"N": "Café"} and c.after == {"N": "€uro"}
    assert [a.source.offset, b.source.offset, c.source.offset] == [0, len(latin), len(latin) + len(utf8)]


def test_invalid_bytes_reject_only_their_document():
    good = doc().encode()
    bad = doc(pos=2, cols=col("N", 0, after="XX")).encode().replace(b"XX", b"\xe9t\xe9")
    items = decode(good + bad + good)
    assert kinds(items) == ["SCHEMA", "INSERT", "REJECTED", "INSERT"]
    rejected = items[2]
    assert rejected.source.offset == len(good) and rejected.raw == bad.rstrip(b"\n")
    first_bad = len(good) + bad.index(b"\xe9")
    assert rejected.error == (
        f"document at byte {len(good)}: bytes that are not valid UTF-8 (first bad byte 0xe9 at byte {first_bad});"
        " set the encoding option to the writer's encoding"
    )


def test_unknown_declared_encoding_rejected():
    data = doc().replace("UTF-8", "KLINGON-1").encode() + doc(pos=2).encode()
    items = decode(data)
    assert kinds(items) == ["REJECTED", "SCHEMA", "INSERT"]
    assert "the prolog declares encoding 'KLINGON-1', which is not a known character encoding" in items[0].error


def test_utf16_file_with_bom():
    text = doc(cols=col("N", 0, after="é")).replace("UTF-8", "UTF-16") + doc(pos=2, cols=col("N", 0, after="ü"))
    for data in (b"\xff\xfe" + text.encode("utf-16-le"), b"\xfe\xff" + text.encode("utf-16-be")):
        a, b = rows(decode(data))  # the byte order mark decides, whatever the option says
        assert a.after == {"N": "é"} and b.after == {"N": "ü"}
        assert a.source.offset == 2 and b.source.offset == 2 + 2 * len(text.split("\n<?xml")[0] + "\n")
    # UTF-16 named by the option, no BOM: big-endian
    assert len(rows(decode(text.encode("utf-16-be"), encoding="UTF-16"))) == 2


def test_utf16_invalid_bytes_rejected():
    good = doc().encode("utf-16-be")
    bad = doc(pos=2, cols=col("N", 0, after="XY")).encode("utf-16-be").replace("X".encode("utf-16-be"), b"\xd8\x00")
    items = decode(good + bad + good, encoding="UTF-16BE")
    assert kinds(items) == ["SCHEMA", "INSERT", "REJECTED", "INSERT"]
    bad_at = len(good) + bad.index(b"\xd8\x00")
    assert items[2].source.offset == len(good) and items[3].source.offset == len(good) + len(bad)
    assert items[2].error.startswith(
        f"document at byte {len(good)}: bytes that are not valid UTF-16BE (first bad byte 0xd8 at byte {bad_at})"
    )
    # bytes between documents that are not text: one rejected stretch
    items = decode(good + b"\xd8\x00\x00A" + good, encoding="UTF-16BE")
    assert kinds(items) == ["SCHEMA", "INSERT", "REJECTED", "INSERT"]
    assert items[2].error == f"document at byte {len(good)}: text outside any <operation> document"


def test_utf8_bom_skipped():
    items = rows(decode(b"\xef\xbb\xbf" + seed("seed_insert.xml")))
    assert items[0].source.offset == 3


# --- column states and values ----------------------------------------------------------------------


def test_value_null_missing_states():
    cols = (
        col("ID", 0, before="1", after="1")
        + col("A", 1, before="NULL", after="x")
        + col("B", 2, before=None, after="NULL")
        + "<col name='C' index='3'><missing/></col>"
        + "<col name='D' index='4'><before/><after></after></col>"
        + "<col name='E' index='5'><after>a &lt;b&gt; &amp; c</after></col>"
        + "<col name='F' index='6'><before><![CDATA[x]]]]><![CDATA[>y]]></before><after missing='TRUE'/></col>"
        + "<col name='G' index='7'><before isNull='true'/><after><![CDATA[  spaced  ]]></after></col>"
    )
    [event] = rows(decode(doc("U", cols=cols, numCols="8").encode()))
    assert event.before == {"ID": "1", "A": None, "D": "", "F": "x]]>y", "G": None}
    assert event.after == {"ID": "1", "A": "x", "B": None, "D": "", "E": "a <b> & c", "G": "  spaced  "}
    assert "C" not in event.before and "C" not in event.after and "B" not in event.before


def test_cdata_holding_xml_and_document_markers_is_one_value():
    """Real GoldenGate output carries XML documents inside column values."""
    inner = "<?xml version='1.0'?>\n<operation table='X' type='D'><row id=\"1\"><c1>100</c1></row></operation>"
    cols = col("ID", 0, after="1") + col("XMLRECORD", 1, after=inner)
    data = (doc(cols=cols) + doc(pos=2)).encode()
    a, b = rows(decode(data))
    assert a.after == {"ID": "1", "XMLRECORD": inner} and b.seq.endswith("2")


def test_comments_and_processing_instructions_between_and_inside():
    data = (
        "<!-- written by GoldenGate -->\n"
        + doc().replace("<col ", "<!-- <operation> --><?pi <operation>?><col ", 1)
        + "<!-- end -->"
        + doc(pos=2, prolog=False)
    )
    a, b = rows(decode(data.encode()))
    assert a.after == {"ID": "1", "NAME": "a"} and b.source.offset == data.index("<!-- end -->")


def test_types_and_keys_from_columns_option_and_schema_dir(tmp_path):
    cols = col("ID", 0, after="7") + col("PRICE", 1, after="1.50") + col("OK", 2, after="false")
    data = doc(cols=cols).encode()
    [schema, event] = decode(data, columns="GG.T(ID:bigint:key,PRICE:decimal(9,2),OK:boolean)")
    assert event.after == {"ID": 7, "PRICE": Decimal("1.50"), "OK": False} and event.keys == ["ID"]
    assert schema.ddl["keys"] == ["ID"] and schema.keys == ["ID"]
    fields = [{"name": "ID", "type": "long"}, {"name": "PRICE", "type": "double"}, {"name": "OK", "type": "boolean"}]
    (tmp_path / "GG.T.avsc").write_text(json.dumps({"type": "record", "name": "T", "fields": fields}))
    [_, event] = decode(data, schemaDir=str(tmp_path))
    assert event.after == {"ID": 7, "PRICE": Decimal("1.50"), "OK": False} and event.keys is None
    assert event.meta["column_types"] == {"ID": "bigint", "PRICE": "double", "OK": "boolean"}
    [_, event] = decode(data, schemaDir=str(tmp_path), keys="ID")
    assert event.keys == ["ID"]
    bad = doc(cols=col("ID", 0, after="seven")).encode()
    [rejected] = [i for i in decode(bad, columns="ID:bigint") if isinstance(i, Rejected)]
    assert rejected.error == "document at byte 0: column ID: value 'seven' is not a valid bigint (not an integer)"


def test_schema_event_when_columns_change_mid_stream():
    two = col("ID", 0, after="1") + col("NAME", 1, after="a")
    three = two + col("ADDED", 2, after="x")
    data = (
        doc(pos=1, cols=two)
        + doc(pos=2, cols=two, table="GG.OTHER")
        + doc(pos=3, cols=two)
        + doc(pos=4, cols=three)
        + doc(pos=5, cols=three)
        + doc(pos=6, cols=two)
    ).encode()
    items = decode(data)
    assert kinds(items) == [
        "SCHEMA",
        "INSERT",
        "SCHEMA",
        "INSERT",
        "INSERT",
        "SCHEMA",
        "INSERT",
        "INSERT",
        "SCHEMA",
        "INSERT",
    ]
    announced = [(i.table, i.seq[-1], [c["name"] for c in i.ddl["columns"]]) for i in items if i.op == "SCHEMA"]
    assert announced == [
        ("GG.T", "1", ["ID", "NAME"]),
        ("GG.OTHER", "2", ["ID", "NAME"]),
        ("GG.T", "4", ["ID", "NAME", "ADDED"]),
        ("GG.T", "6", ["ID", "NAME"]),
    ]
    assert items[5].source == items[6].source


def test_custom_op_keys_and_unknown_op():
    data = (doc("ins", 1) + doc("upd", 2) + doc("I", 3)).encode()
    items = decode(data, insertOpKey="ins", updateOpKey="CDATA[upd]")
    assert kinds(items) == ["SCHEMA", "INSERT", "UPDATE", "REJECTED"]
    assert items[3].error.startswith(
        f"document at byte {len(doc('ins', 1)) + len(doc('upd', 2))}: unknown operation type 'I';"
        " the configured op keys are insertOpKey='ins', updateOpKey='upd'"
    )


def test_table_option_overrides():
    [event] = rows(decode(doc().encode(), table="X.Y"))
    assert event.table == "X.Y"


# --- bad input ---------------------------------------------------------------------------------------


def test_malformed_document_between_good_ones():
    good1, good2 = doc(pos=1), doc(pos=3)
    bad = doc(pos=2).replace("</col>", "</cols>", 1)
    data = (good1 + bad + good2).encode()
    items = decode(data, "landing/a.xml")
    assert kinds(items) == ["SCHEMA", "INSERT", "REJECTED", "INSERT"]
    rejected = items[2]
    assert rejected.source == Source("landing/a.xml", len(good1))
    assert rejected.error.startswith(f"document at byte {len(good1)}: invalid XML at line 2, column ")
    assert "mismatched tag" in rejected.error and rejected.raw == bad.rstrip("\n").encode()
    assert items[3].source.offset == len(good1) + len(bad)


XXE = """<?xml version="1.0"?>
<!DOCTYPE operation [ <!ENTITY xxe SYSTEM "file:///etc/passwd"> ]>
<operation table='GG.T' type='I' ts='2024-01-02 03:04:05' pos='2' numCols='1'>
<col name='A' index='0'><after>&xxe;</after></col></operation>
"""
LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
    + "".join(
        f' <!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10 if i > 1 else "&lol;" * 10}">\n' for i in range(1, 10)
    )
    + "]>\n<operation table='GG.T' type='I' ts='2024-01-02 03:04:05' pos='3'>"
    + "<col name='A' index='0'><after>&lol9;</after></col></operation>\n"
)
EXTERNAL_DTD = (
    '<?xml version="1.0"?><!DOCTYPE operation SYSTEM "http://example.invalid/x.dtd">'
    "<operation table='GG.T' type='I' ts='2024-01-02 03:04:05' pos='4'/>\n"
)


@pytest.mark.parametrize("hostile", [XXE, LAUGHS, EXTERNAL_DTD], ids=["xxe", "billion-laughs", "external-dtd"])
def test_dtd_entities_and_external_references_rejected_never_expanded(hostile):
    good = doc(pos=1)
    data = (good + hostile + doc(pos=9)).encode()
    items = decode(data)
    assert kinds(items) == ["SCHEMA", "INSERT", "REJECTED", "INSERT"]
    rejected = items[2]
    assert rejected.source.offset == len(good) and rejected.raw == hostile.rstrip("\n").encode()
    assert rejected.error == (
        f"document at byte {len(good)}: it has a DTD (<!DOCTYPE ...>); DTDs, entities and external references are"
        " never read (protection against entity expansion and XXE), and GoldenGate does not write them"
    )


def test_undefined_entity_is_invalid_xml():
    data = doc(cols="<col name='A' index='0'><after>&secret;</after></col>").encode()
    [rejected] = decode(data)
    assert "invalid XML at line 2" in rejected.error and "undefined entity" in rejected.error


def test_truncated_last_document():
    good = doc(pos=1)
    cut = doc(pos=2).rsplit("</col>", 1)[0]
    items = decode((good + cut).encode())
    assert kinds(items) == ["SCHEMA", "INSERT", "REJECTED"]
    assert items[2].error == (
        f"document at byte {len(good)}: the file ends inside the document: it is truncated (its root element is not"
        " closed)"
    )
    assert items[2].raw == cut.encode()
    cut_in_tag = doc(pos=2)[:150]
    [rejected] = [i for i in decode((good + cut_in_tag).encode()) if isinstance(i, Rejected)]
    assert rejected.error == (
        f"document at byte {len(good)}: the start tag <operation at byte {len(good) + cut_in_tag.index('<operation')}"
        " is not closed; skipped up to the end of the file"
    )


def test_unclosed_cdata_at_the_end():
    good = doc(pos=1)
    complete = doc(pos=2)
    last = complete.rindex("]]>")
    unclosed = complete[:last] + complete[last + 3 :]
    items = decode((good + unclosed).encode())
    assert kinds(items) == ["SCHEMA", "INSERT", "REJECTED"]
    at = len(good) + unclosed.rindex("<![CDATA[")
    assert items[2].error == (
        f"document at byte {len(good)}: a CDATA section at byte {at} is not closed; skipped up to the end of the file"
    )


def test_unclosed_comment_resyncs_at_next_document():
    good = doc(pos=1)
    broken = doc(pos=2).replace("<col ", "<!-- oops <col ", 1)
    items = decode((good + broken + doc(pos=3) + doc(pos=4)).encode())
    assert kinds(items) == ["SCHEMA", "INSERT", "REJECTED", "INSERT", "INSERT"]
    assert "a comment at byte" in items[2].error and "skipped up to the next document" in items[2].error
    assert items[3].source.offset == len(good) + len(broken)


def test_only_comments_between_documents_are_no_record():
    data = ("<!-- a -->\n" + doc(pos=1) + "\n<!-- b --><?pi x?>\n").encode()
    assert kinds(decode(data)) == ["SCHEMA", "INSERT"]


def test_next_document_inside_an_unclosed_one():
    good = doc(pos=1)
    unclosed = doc(pos=2).replace("</operation>", "")
    for following in (doc(pos=3), doc(pos=3, prolog=False)):
        items = decode((good + unclosed + following).encode())
        assert kinds(items) == ["SCHEMA", "INSERT", "REJECTED", "INSERT"]
        assert items[2].source.offset == len(good) and items[3].source.offset == len(good) + len(unclosed)
        assert "starts before this one is closed" in items[2].error
        assert f"at byte {len(good) + len(unclosed)}" in items[2].error


def test_text_outside_documents_rejected():
    data = ("garbage line\n" + doc(pos=1) + "more junk" + doc(pos=2)).encode()
    items = decode(data)
    assert kinds(items) == ["REJECTED", "SCHEMA", "INSERT", "REJECTED", "INSERT"]
    assert items[0].error == "document at byte 0: text outside any <operation> document"
    assert items[0].raw == b"garbage line\n"
    assert items[3].raw == b"more junk"


def test_document_errors():
    cases = {
        "not operation": ("<?xml version='1.0'?><op table='GG.T'/>", "the root element is <op>, not <operation>"),
        "no table": (doc().replace("table='GG.T' ", ""), "<operation> has no table attribute"),
        "no pos": (doc().replace("pos='00000000000000000001'", ""), "<operation> has no pos attribute"),
        "bad ts": (doc().replace("2024-01-02 03:04:05.123456", "yesterday"), "ts 'yesterday' is not a timestamp"),
        "numCols": (doc(numCols="3"), "numCols='3' but the document has 2 <col> elements"),
        "numCols text": (doc(numCols="x"), "numCols='x' but the document has 2 <col> elements"),
        "no name": (doc(cols="<col index='0'><after>1</after></col>"), "<col> number 1 has no name attribute"),
        "twice": (doc(cols=col("A", 0, after="1") + col("A", 1, after="2")), "column A appears twice"),
        "odd child": (doc(cols="<col name='A'><value>1</value></col>"), "column A: unexpected element <value>"),
        "nested": (doc(cols="<col name='A'><after><b>1</b></after></col>"), "column A: <after> holds elements"),
        "bad token": (doc(cols="<tokens><tok/></tokens>"), "unexpected element <tok> in <tokens>"),
        "token name": (doc(cols="<tokens><token><Value>1</Value></token></tokens>"), "a <token> has no <Name>"),
    }
    data = "".join(d for d, _ in cases.values()).encode()
    items = decode(data)
    assert len(items) == len(cases)
    for item, (name, (document, message)) in zip(items, cases.items(), strict=True):
        assert isinstance(item, Rejected), name
        assert message in item.error, (name, item.error)
        assert item.raw == document.rstrip("\n").encode(), name


def test_extra_elements_kept_in_meta():
    [event] = rows(decode(doc(cols=col("A", 0, after="1") + "<source>x</source>").encode()))
    assert event.meta["extra"] == {"source": "x"}


def test_deep_nesting_rejected():
    deep = doc(pos=2, cols="<x>" * 600 + "</x>" * 600)
    items = decode((doc(pos=1) + deep + doc(pos=3)).encode())
    assert kinds(items) == ["SCHEMA", "INSERT", "REJECTED", "INSERT"]
    assert items[2].error.endswith("elements nest deeper than 512 levels")


def test_document_size_limit(monkeypatch):
    monkeypatch.setattr(goldengate_xml, "MAX_RECORD_BYTES", 400)
    big = doc(pos=2, cols=col("A", 0, after="x" * 500))
    items = decode((doc(pos=1) + big + doc(pos=3)).encode())
    assert kinds(items) == ["SCHEMA", "INSERT", "REJECTED", "INSERT"]
    assert f"{len(big) - 1} bytes, larger than the limit of 400" in items[2].error


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"fieldDelimiter": "|"}, "unknown option(s) fieldDelimiter for format goldengate-xml"),
        ({"includeProlog": "ture"}, "option includeProlog must be true or false"),
        ({"iso8601Format": "x"}, "option iso8601Format must be true or false"),
        ({"encoding": "KLINGON-1"}, "option encoding='KLINGON-1' is not a known character encoding"),
        ({"insertOpKey": "U"}, "op keys must differ"),
        ({"columns": "A:money"}, "unknown column type 'money'"),
    ],
)
def test_bad_options(options, message):
    with pytest.raises(OptionError) as info:
        get_decoder("goldengate-xml", Options(options))
    assert message in str(info.value)


def test_all_table_6_11_options_accepted():
    options = {
        "insertOpKey": "I",
        "updateOpKey": "U",
        "deleteOpKey": "D",
        "truncateOpKey": "T",
        "encoding": "UTF-8",
        "includeProlog": "true",
        "iso8601Format": "false",
        "columns": SEED_COLUMNS,
        "keys": "ORDER_ID",
    }
    items = rows(decode(seed("seed_all.xml"), **options))
    assert len(items) == 4 and all(e.keys == ["ORDER_ID"] for e in items)


# --- properties -----------------------------------------------------------------------------------------

_value = st.one_of(
    st.none(),  # NULL
    st.just(...),  # missing
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12),
)


def xml_text(value: str) -> str:
    """CDATA, split where the value holds ']]>' (as GoldenGate writers do)."""
    return "<![CDATA[" + value.replace("]]>", "]]]]><![CDATA[>") + "]]>"


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.tuples(st.lists(_value, min_size=3, max_size=3), st.lists(_value, min_size=3, max_size=3)), max_size=6),
    st.sampled_from(["UTF-8", "ISO-8859-1", "UTF-16"]),
    st.booleans(),
)
def test_property_write_decode_round_trip(records, encoding, prolog):
    """Any text (markup characters, ']]>', non-ASCII), NULL and missing states survive write -> decode."""
    names = ["A", "B", "C"]
    if encoding == "ISO-8859-1":
        records = [
            tuple(
                [v if not isinstance(v, str) else v.encode("latin-1", "replace").decode("latin-1") for v in image]
                for image in r
            )
            for r in records
        ]
    text = ""
    for pos, (before, after) in enumerate(records):
        cols = ""
        for index, name in enumerate(names):
            parts = []
            for tag, value in (("before", before[index]), ("after", after[index])):
                if value is ...:
                    parts.append(f"<{tag} missing='true'/>")
                elif value is None:
                    parts.append(f"<{tag} isNull='true'/>")
                else:
                    parts.append(f"<{tag}>{xml_text(value)}</{tag}>")
            cols += f"<col name='{name}' index='{index}'>{''.join(parts)}</col>"
        head = f"<?xml version='1.0' encoding='{encoding}'?>" if prolog else ""
        text += (
            f"{head}<operation table='S.T' type='U' ts='2020-01-01 00:00:00' pos='{pos}' numCols='3'>{cols}</operation>"
        )
    data = text.encode(encoding if encoding != "UTF-16" else "utf-16-be")
    items = rows(decode(data, encoding=encoding))
    assert len(items) == len(records)
    for event, (before, after) in zip(items, records, strict=True):
        for image, values in ((event.before, before), (event.after, after)):
            expected = {n: v for n, v in zip(names, values, strict=True) if v is not ...}
            assert (image or {}) == expected


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=300), st.sampled_from([{}, {"encoding": "UTF-16"}, {"encoding": "ISO-8859-1"}]))
def test_property_any_bytes_terminate_with_increasing_offsets(data, options):
    items = decode(data + doc(pos=1).encode(), **options)
    offsets = [i.source.offset for i in items if not (isinstance(i, ChangeEvent) and i.op == "SCHEMA")]
    assert offsets == sorted(set(offsets))
    assert all(0 <= o <= len(data) + 400 for o in offsets)


@settings(max_examples=50, deadline=None)
@given(st.text(alphabet="<>?!-[]/'\"= xmloperatinCDAT", max_size=80))
def test_property_markup_soup_terminates(soup):
    items = decode((soup + doc(pos=1)).encode())
    assert all(isinstance(i, (ChangeEvent, Rejected)) for i in items)
