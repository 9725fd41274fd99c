"""Hostile input for the line and markup formats: goldengate-delimited, goldengate-xml (with entity
expansion and XXE) and datahub-tuple as CSV. Records carry an ``ID`` column; see :mod:`._corpus`."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from ._corpus import Case, check, deep_json, huge_text
from ._truncation import sweep_truncations

# --- goldengate-delimited ------------------------------------------------------------------------

SEP = "\x01"
DELIMITED_OPTIONS = {"columns": "GG.T(ID:bigint:key,NAME:string)"}


def delimited(i: int, op: str = "I", table: str = "GG.T", ident: str | None = None, name: str = "name") -> bytes:
    fields = [op, table, "2024-01-01 00:00:00.000000", "2024-01-01T00:00:00.000000", f"{i:020d}"]
    return (SEP.join([*fields, ident if ident is not None else str(i), name]) + "\n").encode()


def delimited_named(i: int, columns: list[tuple[str, str]]) -> bytes:
    fields = ["I", "GG.T", "2024-01-01 00:00:00.000000", "2024-01-01T00:00:00.000000", f"{i:020d}"]
    return (SEP.join(fields + [part for pair in columns for part in pair]) + "\n").encode()


def delimited_cases() -> list[Case]:
    g = delimited

    def around(bad: bytes, **kw: object) -> list[tuple[str, bytes]]:
        return [("f.txt", g(1) + bad + g(3))]

    named = {"includeColumnNames": "true", **DELIMITED_OPTIONS}
    return [
        Case("empty-file", [("f.txt", b"")], [], []),
        Case("truncated-last-record", [("f.txt", g(1) + g(2) + g(3)[:-4])], [1, 2], ["truncated"]),
        Case("invalid-utf8", around(g(2, name="@@").replace(b"@@", b"\xff\xfe")), [1, 3], ["not valid UTF-8"]),
        Case(
            "wrong-encoding-declaration",
            around(g(2, name="café")),
            [1, 3],
            ["not valid US-ASCII"],
            options={"encoding": "US-ASCII"},
        ),
        Case("record-64mib", around(g(2, name=huge_text())), [1, 3], ["larger than the limit"], big=True),
        # closest equivalent: a 10,000-level JSON text in a column, never parsed: it decodes as text
        Case("deeply-nested", around(g(2, name=deep_json())), [1, 2, 3], []),
        Case("unknown-op", around(g(2, op="X")), [1, 3], ["unknown op type"]),
        Case("missing-table", around(g(2, table="")), [1, 3], ["empty table name"]),
        Case("wrong-value-types", around(g(2, ident="abc")), [1, 3], ["is not a valid bigint"]),
        Case(
            "duplicate-keys",
            [
                (
                    "f.txt",
                    delimited_named(1, [("ID", "1"), ("NAME", "a")])
                    + delimited_named(2, [("ID", "2"), ("ID", "22")])
                    + delimited_named(3, [("ID", "3"), ("NAME", "c")]),
                )
            ],
            [1, 3],
            ["appears twice"],
            options=named,
        ),
    ]


# --- goldengate-xml -------------------------------------------------------------------------------

XML_OPTIONS = {"columns": "GG.T(ID:bigint:key,NAME:string)"}


def xml(i: int, attrs: str | None = None, ident: str | None = None, name: str = "name", cols: str = "") -> bytes:
    attrs = attrs if attrs is not None else "table='GG.T' type='I'"
    head = f"<operation {attrs} ts='2024-01-01 00:00:00.000000' pos='{i:020d}'>"
    body = cols or (
        f"<col name='ID' index='0'><before missing='true'/><after><![CDATA[{ident or i}]]></after></col>"
        f"<col name='NAME' index='1'><before missing='true'/><after><![CDATA[{name}]]></after></col>"
    )
    return f"{head}{body}</operation>\n".encode()


def prolog(encoding: str) -> bytes:
    return f"<?xml version='1.0' encoding='{encoding}'?>\n".encode()


BILLION_LAUGHS = (
    b"<?xml version='1.0'?>\n<!DOCTYPE operation [\n <!ENTITY lol 'lol'>\n"
    + b"".join(
        f" <!ENTITY lol{n} '{('&lol' + str(n - 1) + ';') * 10 if n > 1 else '&lol;' * 10}'>\n".encode()
        for n in range(1, 10)
    )
    + b"]>\n<operation table='GG.T' type='I' ts='2024-01-01 00:00:00.000000' pos='2'>"
    + b"<col name='ID' index='0'><after>2</after></col><col name='NAME' index='1'><after>&lol9;</after></col>"
    + b"</operation>\n"
)


#: Documents with a construct that is never closed (CDATA, comment, PI, DOCTYPE, start tag, end tag).
UNCLOSED_UNITS = [
    b"<operation table='GG.T' type='I' pos='9' ts='2024-01-01 00:00:00'>" + tail
    for tail in (
        b"<!-- 9 <col name='ID'><after>9</after></col></operation>\n",
        b"<? 9 <col/></operation>\n",
        b"<!DOCTYPE x [ <col/></operation>\n",
        b"<col name='ID index='0'><after>9</after></col></operation>\n",
        b"</x \n",
    )
]
UNCLOSED = 3000
UNCLOSED_CDATA = b"<operation table='GG.T' type='I' pos='9' ts='2024-01-01 00:00:00'><col name='ID'><after><![CDATA[9"
UNCLOSED_CDATA += b"</after></col></operation>\n"
PLAIN_ID = "<col name='ID' index='0'><after>{}</after></col>"
TWO_IDS = "<col name='ID' index='0'><after>2</after></col><col name='ID' index='1'><after>9</after></col>"


def xml_cases() -> list[Case]:
    g = xml

    def around(bad: bytes) -> list[tuple[str, bytes]]:
        return [("f.xml", g(1) + bad + g(3))]

    deep = "<a>" * 10_000 + "x" + "</a>" * 10_000
    return [
        Case("empty-file", [("f.xml", b"")], [], []),
        Case("truncated-last-record", [("f.xml", g(1) + g(2) + g(3).rsplit(b"</col>", 1)[0])], [1, 2], ["truncated"]),
        Case("truncated-inside-a-value", [("f.xml", g(1) + g(2) + g(3)[:-40])], [1, 2], ["is not closed"]),
        Case("invalid-utf8", around(g(2, name="@@").replace(b"@@", b"\xff\xfe")), [1, 3], ["not valid UTF-8"]),
        Case(
            "wrong-encoding-declaration",
            [("f.xml", g(1) + prolog("US-ASCII") + g(2, name="café") + g(3) + prolog("x-klingon") + g(4) + g(5))],
            [1, 3, 5],
            ["not valid US-ASCII", "not a known character encoding"],
        ),
        Case("record-64mib", around(g(2, name=huge_text())), [1, 3], ["larger than the limit"], big=True),
        Case(
            "deeply-nested",
            around(g(2, cols=f"<col name='ID' index='0'><after>{deep}</after></col>")),
            [1, 3],
            ["nest deeper than 512"],
        ),
        Case("unknown-op", around(g(2, attrs="table='GG.T' type='X'")), [1, 3], ["unknown operation type"]),
        Case("missing-table", around(g(2, attrs="type='I'")), [1, 3], ["no table attribute"]),
        Case("wrong-value-types", around(g(2, ident="abc")), [1, 3], ["is not a valid bigint"]),
        Case(
            "duplicate-keys",
            [
                (
                    "f.xml",
                    g(1) + g(2, cols=TWO_IDS) + g(3) + g(4, attrs="table='GG.T' type='I' type='D'") + g(5),
                )
            ],
            [1, 3, 5],
            ["appears twice", "duplicate attribute"],
        ),
        Case("billion-laughs", around(BILLION_LAUGHS), [1, 3], ["entity expansion"]),
        # constructs left open in every document: each used to search to the end of the file again
        # (quadratic: hours for 64 MiB); now each stretch is searched once
        Case(
            "many-unclosed-constructs",
            [("f.xml", g(1) + b"".join(u * UNCLOSED for u in UNCLOSED_UNITS) + g(3))],
            [1, 3],
            ["is not closed"] * (UNCLOSED * len(UNCLOSED_UNITS)),
        ),
        # an unclosed CDATA section runs to the next ']]>' (it may hold XML text): with none after it,
        # each such document is rejected alone
        Case(
            "many-unclosed-cdata",
            [("f.xml", g(1) + UNCLOSED_CDATA * UNCLOSED + g(3, cols=PLAIN_ID.format(3)))],
            [1, 3],
            ["is not closed"] * UNCLOSED,
        ),
        # an end tag before any root, and one without its '>': rejected, never dropped or run past
        Case(
            "stray-end-tags",
            [("f.xml", g(1) + b"</x>\n" + g(3) + b"</y \n" + g(5))],
            [1, 3, 5],
            ["text outside any <operation> document", "is not closed"],
        ),
    ]


def xxe_case(tmp: Path) -> Case:
    """External entities (general, parameter, external DTD) pointing at a local canary file."""
    token = "CANARY-" + secrets.token_hex(8)
    canary = tmp / "canary.txt"
    url = canary.as_uri()
    attacks = [
        f"<!DOCTYPE operation [<!ENTITY xxe SYSTEM '{url}'>]>",
        f"<!DOCTYPE operation [<!ENTITY % p SYSTEM '{url}'> %p;]>",
        f"<!DOCTYPE operation SYSTEM '{url}'>",
    ]
    body = b""
    for n, doctype in enumerate(attacks):
        name = "&xxe;" if "xxe" in doctype else "n"
        attack = f"<?xml version='1.0'?>\n{doctype}\n".encode() + xml(10 + n, name="@@").replace(
            b"<![CDATA[@@]]>", name.encode()
        )
        body += xml(n + 1) + attack
    return Case(
        "xxe-local-file",
        [("f.xml", body + xml(4))],
        [1, 2, 3, 4],
        ["XXE", "XXE", "XXE"],
        aux={"canary.txt": token.encode()},
        forbidden=(token,),
        watched=("canary.txt",),
    )


# --- datahub-tuple as CSV --------------------------------------------------------------------------

CSV_HEADER = b"_sequence_id_,_operation_type_,_source_table_,_excute_time_,ID,NAME\n"


def row(i: int, op: str = "I", table: str = "shop.t", seq: str | None = None, name: str = "name") -> bytes:
    return f"{seq if seq is not None else 1000 + i},{op},{table},1700000000000,{i},{name}\n".encode()


def csv_cases() -> list[Case]:
    def around(bad: bytes) -> list[tuple[str, bytes]]:
        return [("f.csv", CSV_HEADER + row(1) + bad + row(3))]

    rows = row(1) + row(2) + row(3)
    no_header = "no usable CSV header"
    return [
        Case("empty-file", [("f.csv", b"")], [], []),
        Case("truncated-last-record", [("f.csv", CSV_HEADER + row(1) + row(2) + row(3)[:12])], [1, 2], ["truncated"]),
        Case("invalid-utf8", around(row(2, name="@@").replace(b"@@", b"\xff\xfe")), [1, 3], ["not valid UTF-8"]),
        # a UTF-16 byte order mark glued to the header: the header is unusable, so is every row
        Case(
            "wrong-encoding-declaration",
            [("f.csv", b"\xff\xfe" + CSV_HEADER + rows)],
            [],
            ["not valid UTF-8", no_header, no_header, no_header],
        ),
        Case("record-64mib", around(row(2, name=huge_text())), [1, 3], ["larger than"], big=True),
        # closest equivalent: a 10,000-level JSON text in a field; CSV values stay strings
        Case("deeply-nested", around(row(2, name=deep_json())), [1, 2, 3], []),
        Case("unknown-op", around(row(2, op="X")), [1, 3], ["unknown _operation_type_"]),
        Case("missing-table", around(row(2, table="")), [1, 3], ["no _source_table_"]),
        Case("wrong-value-types", around(row(2, seq="abc")), [1, 3], ["not a string of digits"]),
        # a header naming a column twice: which field is ID is ambiguous for every row
        Case(
            "duplicate-keys",
            [("f.csv", CSV_HEADER.replace(b",NAME", b",ID") + rows)],
            [],
            ["more than once", no_header, no_header, no_header],
        ),
    ]


ALL = (
    [("goldengate-delimited", c, DELIMITED_OPTIONS) for c in delimited_cases()]
    + [("goldengate-xml", c, XML_OPTIONS) for c in xml_cases()]
    + [("datahub-tuple:csv", c, {}) for c in csv_cases()]
)


@pytest.mark.parametrize(("label", "case", "options"), ALL, ids=[f"{label}:{c.name}" for label, c, _ in ALL])
def test_hostile_text(label: str, case: Case, options: dict[str, str], tmp_path: Path) -> None:
    case.options = {**options, **case.options}
    check(label.split(":")[0], case, tmp_path)


def test_xxe_never_reads_the_local_file(tmp_path: Path) -> None:
    check("goldengate-xml", xxe_case(tmp_path), tmp_path)


def test_truncated_file_delimited(tmp_path: Path) -> None:
    records = [delimited(i) for i in range(1, 5)]
    # a delimited record is complete only with its line delimiter (a cut last value is not taken)
    sweep_truncations("goldengate-delimited", records, tmp_path, complete_at=len, options=DELIMITED_OPTIONS)


def test_truncated_file_xml(tmp_path: Path) -> None:
    records = [xml(i) for i in range(1, 5)]
    sweep_truncations(
        "goldengate-xml", records, tmp_path, complete_at=lambda r: len(r) - 1, options=XML_OPTIONS, header=b""
    )


def test_truncated_file_csv(tmp_path: Path) -> None:
    """CSV cannot tell a last line cut inside its last field from a whole one (RFC 4180 lets the last
    line end without a line break): such a cut decodes with the field shortened; any other cut is
    rejected. Gzip-compressed landing files are protected by the gzip CRC (see the next test)."""
    records = [row(i) for i in range(1, 5)]
    sweep_truncations(
        "datahub-tuple",
        records,
        tmp_path,
        header=CSV_HEADER,
        complete_at=lambda r: len(r) - 1,
        silent_from=lambda r: r.rindex(b",") + 1,
        header_rejections=(0, 1),
    )


def test_truncated_gzip_file_is_quarantined_whole(tmp_path: Path) -> None:
    """A gzip landing file cut short fails its length/CRC check: the whole file is one rejection
    (the file is the unit that can be fetched again), never a silently shortened last record."""
    import gzip

    data = gzip.compress(CSV_HEADER + b"".join(row(i) for i in range(1, 200)))
    case = Case("truncated-gzip", [("f.csv.gz", data[: len(data) - 30])], [], ["gzip data is corrupt or truncated"])
    check("datahub-tuple", case, tmp_path)
