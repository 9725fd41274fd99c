"""Names from data reach Spark SQL and the catalog only quoted or validated (issue 7).

A column named ``x`; DROP TABLE y --`` (and backticks, quotes, dots, spaces, unicode,
backslashes, names of cdclake's internal columns) must be stored as a column of exactly that
name, whether it arrives in a record (drift) or in a DDL statement; a table name with such
characters must become a plain identifier. Names the lake cannot hold (empty, NUL, the
reserved ``_cdc_`` prefix, a letter-case twin of another column) are quarantined with the
reason, and the batch goes on. The catalog's tables are listed before and after: nothing is
dropped or created besides the batch's own tables.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cdclake.lake.naming import iceberg_identifier
from cdclake.lake.tables import TableNotFound, load_table, open_catalog, read_rows
from cdclake.pipeline import run_batch
from cdclake.staging.batch import Manifest
from cdclake.staging.stage import stage_files

pytestmark = pytest.mark.spark

NS = "ident"
INJECTION = "x`; DROP TABLE y --"
IN_DDL = "d`; DROP TABLE y --"
DRIFTED = "new.drift`col"
NASTY = [INJECTION, "a.b", "sp ace", "quo'te", 'dq"uote', "ünïcødé", "back\\slash", "_part", "_kind"]
EVIL_TABLE = "t`; DROP TABLE y --"


def blob(table: str, op: str, seq: int, after=None, before=None, ddl=None, **types) -> str:
    body: dict = {"op": op, "sequenceId": str(seq), "timestamp": {"eventTime": 1700000000000 + seq}}
    if after is not None:
        body["after"] = {"dataColumn": after}
    if before is not None:
        body["before"] = {"dataColumn": before}
    if ddl is not None:
        body["ddl"] = {"text": ddl}
    schema = {
        "dataColumn": [{"name": n, "type": t} for n, t in types.items()],
        "primaryKey": ["id"],
        "source": {"dbType": "MySQL", "dbName": "db", "tableName": table},
    }
    return json.dumps({"schema": schema, "payload": body})


def apply(spark, source: Path, path: Path, lines: list[str]) -> dict:
    path.write_text("\n".join(lines) + "\n")
    stage_files([str(path)], source, Manifest(source.name, path.stem, "datahub-blob", {}, namespace=NS))
    report = run_batch(spark, source / path.stem, buckets=4)
    assert report["balanced"], report
    return report


def catalog_tables(warehouse) -> set[str]:
    try:
        catalog = open_catalog(warehouse)
    except TableNotFound:  # no table in this warehouse yet
        return set()
    return {".".join(t) for ns in catalog.list_namespaces() for t in catalog.list_tables(ns)}


def columns(warehouse, table: str) -> list[str]:
    return [f.name for f in load_table(warehouse, table, NS).schema().fields if not f.name.startswith("_cdc_")]


def quarantine_reasons(source: Path, report: dict) -> list[str]:
    batch = source / report["batch_id"]
    return sorted(r["error"] for p in (batch / "quarantine").glob("*") for r in pq.read_table(p).to_pylist())


def test_nasty_names_are_stored_exactly_and_nothing_else_happens(spark, warehouse, tmp_path):
    types = {"id": "LONG", **dict.fromkeys(NASTY, "STRING")}
    src = tmp_path / "staging" / "ident"
    before = catalog_tables(warehouse)

    # 1. drift: a first record with every nasty column; unsafe names quarantine their records only
    r1 = apply(
        spark,
        src,
        tmp_path / "b1.json",
        [
            blob("y", "INSERT", 1, after={"id": 1}, id="LONG"),  # the table the injection text names
            blob("t", "INSERT", 2, after={"id": 1, **{n: f"v {n}" for n in NASTY}}, **types),
            blob("t", "INSERT", 3, after={"id": 2, "_cdc_op": "evil"}, id="LONG", _cdc_op="STRING"),
            blob("t", "INSERT", 4, after={"id": 3, "nul\x00": "x"}, **{"id": "LONG", "nul\x00": "STRING"}),
            blob("t", "INSERT", 5, after={"id": 4, "ID": 4}, id="LONG", ID="LONG"),
            blob("t", "INSERT", 6, after={"id": 5, "": "x"}, **{"id": "LONG", "": "STRING"}),
            blob(
                EVIL_TABLE,
                "INSERT",
                7,
                after={"id": 1, INJECTION: "in an evil table"},
                id="LONG",
                **{INJECTION: "STRING"},
            ),
        ],
    )
    assert (r1["read"], r1["applied"], r1["quarantined"]) == (7, 3, 4), r1
    reasons = quarantine_reasons(src, r1)
    assert any("'_cdc_op' starts with _cdc_, which is reserved" in r for r in reasons), reasons
    assert any("contains a NUL character" in r for r in reasons), reasons
    assert any("'ID' differs only in letter case from column 'id'" in r for r in reasons), reasons
    assert any("'' is empty" in r for r in reasons), reasons
    assert columns(warehouse, "db.t") == ["id", *NASTY]
    assert read_rows(warehouse, "db.t", namespace=NS) == [{"id": 1, **{n: f"v {n}" for n in NASTY}}]
    evil = f"db.{EVIL_TABLE}"
    assert iceberg_identifier(evil, NS) == (NS, "t_drop_table_y")
    assert load_table(warehouse, evil, NS).properties["cdclake.source-table"] == evil
    assert read_rows(warehouse, evil, namespace=NS) == [{"id": 1, INJECTION: "in an evil table"}]

    # 2. a quoted nasty name in DDL text, a reserved one (quarantined), drift with a dot and a backtick,
    #    an update through the injection column, and the evil table again (its source-name check)
    quoted = IN_DDL.replace("`", "``")
    r2 = apply(
        spark,
        src,
        tmp_path / "b2.json",
        [
            blob("t", "ALTER", 8, ddl=f"ALTER TABLE t ADD COLUMN `{quoted}` varchar(20)"),
            blob("t", "ALTER", 9, ddl="ALTER TABLE t ADD COLUMN `_cdc_seq` int"),
            blob("t", "ALTER", 10, ddl=f"ALTER TABLE t RENAME COLUMN `{quoted}` TO `_CDC_x`"),
            blob(
                "t",
                "UPDATE",
                11,
                before={"id": 1},
                after={"id": 1, INJECTION: "v2", IN_DDL: "via ddl", DRIFTED: "drifted"},
                **{"id": "LONG", INJECTION: "STRING", IN_DDL: "STRING", DRIFTED: "STRING"},
            ),
            blob(EVIL_TABLE, "INSERT", 12, after={"id": 2, INJECTION: "again"}, id="LONG", **{INJECTION: "STRING"}),
        ],
    )
    assert (r2["read"], r2["applied"], r2["non_row"], r2["quarantined"]) == (5, 2, 1, 2), r2
    reasons = quarantine_reasons(src, r2)
    assert any("'_cdc_seq' of db.t starts with _cdc_" in r for r in reasons), reasons
    assert any("'_CDC_x' of db.t starts with _cdc_" in r for r in reasons), reasons
    applied = [c["kind"] for c in r2["tables"]["db.t"]["schema_changes"]]
    assert applied == ["add_column", "add_column"], r2["tables"]["db.t"]
    assert columns(warehouse, "db.t") == ["id", *NASTY, IN_DDL, DRIFTED]
    row = read_rows(warehouse, "db.t", namespace=NS)[0]
    assert (row[INJECTION], row[IN_DDL], row[DRIFTED], row["a.b"]) == ("v2", "via ddl", "drifted", "v a.b")
    assert [r["id"] for r in read_rows(warehouse, evil, namespace=NS)] == [1, 2]
    # the same names through Spark SQL (quoted) and the DataFrame API
    name = "lake.ident.t"
    got = spark.sql(f"SELECT `{INJECTION.replace('`', '``')}` AS v FROM {name}").first()["v"]
    assert got == "v2"
    assert read_rows(warehouse, "db.y", namespace=NS) == [{"id": 1}]
    created = {f"{NS}.{t}{suffix}" for t in ("y", "t", "t_drop_table_y") for suffix in ("", "__changes")}
    assert catalog_tables(warehouse) == before | created  # y survived "DROP TABLE y"; nothing else appeared


def test_name_rules_without_spark():
    from cdclake.jobs.normalize import unsafe_columns
    from cdclake.lake.naming import column_name_problem
    from cdclake.schema.events import changes_from_events

    # table names that Spark's lexer reads as numbers get a leading underscore; others are unchanged
    assert [iceberg_identifier(n)[1] for n in ("123", "1e5", "10l", "12bd", "1e5l", "2024_x")] == [
        "_123",
        "_1e5",
        "_10l",
        "_12bd",
        "1e5l",
        "2024_x",
    ]
    assert column_name_problem(INJECTION) is None and column_name_problem("_Part") is None
    assert "SCD2 history" in column_name_problem("Valid_From", scd2=True)
    assert column_name_problem("valid_from") is None
    # a renamed column's old name is not a new column; first seen wins a letter-case clash
    assert unsafe_columns(["old", "Id", "new", "NEW"], ["id"], {"old"}) == {
        "Id": "differs only in letter case from column 'id' (Spark resolves names case-insensitively)",
        "NEW": "differs only in letter case from column 'new' (Spark resolves names case-insensitively)",
    }
    event = {"table": "db.t", "op": "DDL", "seq": "1", "source_file": "f", "source_offset": 0}
    ddl = "ALTER TABLE t ADD COLUMN ok int, ADD COLUMN `_cdc_op` int"
    result = changes_from_events(
        [{**event, "ddl": {"text": ddl}}],
        {"db.t": [("id", "bigint")]},
        column_problem=lambda table, name, others: column_name_problem(name, others),
    )
    assert result.changes == {} and len(result.rejects) == 1  # the statement is not half applied
    assert "column '_cdc_op' of db.t starts with _cdc_" in result.rejects[0]["error"]
