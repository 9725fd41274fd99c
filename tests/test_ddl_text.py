"""DDL text and announced column lists -> SchemaChange lists (cdclake.schema.ddl_text); no Spark."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import sqlglot
from sqlglot import exp

from cdclake.schema.changes import (
    ADD_COLUMN,
    CREATE_TABLE,
    DROP_COLUMN,
    DROP_TABLE,
    MODIFY_COLUMN,
    RENAME_COLUMN,
    RENAME_TABLE,
    TRUNCATE,
    SchemaChange,
)
from cdclake.schema.ddl_text import (
    MAX_DDL_BYTES,
    MAX_EVENT_CHARS,
    MAX_QUOTE_CHARS,
    DdlError,
    parse_ddl,
    schema_changes_from_columns,
)

SOURCE = {"seq": "000042", "source_file": "ddl/part-0001.json", "source_offset": 7}


def add(table: str, column: str, type_: str | None, keys: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"table": table, "kind": ADD_COLUMN, "column": column, "type": type_, "keys": keys}


def drop(table: str, column: str) -> dict[str, Any]:
    return {"table": table, "kind": DROP_COLUMN, "column": column}


def rename(table: str, old: str, new: str) -> dict[str, Any]:
    return {"table": table, "kind": RENAME_COLUMN, "column": old, "new_name": new}


def modify(table: str, column: str, type_: str) -> dict[str, Any]:
    return {"table": table, "kind": MODIFY_COLUMN, "column": column, "type": type_}


def create(table: str, columns: tuple[tuple[str, str | None], ...], keys: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"table": table, "kind": CREATE_TABLE, "columns": columns, "keys": keys}


def drop_table(table: str) -> dict[str, Any]:
    return {"table": table, "kind": DROP_TABLE}


def rename_table(table: str, new: str) -> dict[str, Any]:
    return {"table": table, "kind": RENAME_TABLE, "new_name": new}


def truncate(table: str) -> dict[str, Any]:
    return {"table": table, "kind": TRUNCATE}


def expected(sql: str, *changes: dict[str, Any]) -> list[SchemaChange]:
    return [SchemaChange(**change, **SOURCE, source_event=sql) for change in changes]


# (dialect, one statement, changes); dialect None = try mysql, postgres, oracle
FORMS: list[tuple[str | None, str, list[dict[str, Any]]]] = [
    # --- MySQL
    ("mysql", "ALTER TABLE shop.orders ADD COLUMN note VARCHAR(200)", [add("shop.orders", "note", "string")]),
    (
        "mysql",
        "ALTER TABLE orders ADD qty INT, ADD price DECIMAL(10,2)",
        [add("orders", "qty", "bigint"), add("orders", "price", "decimal(10,2)")],
    ),
    (
        "mysql",
        "ALTER TABLE orders ADD (a int, b varchar(10))",
        [add("orders", "a", "bigint"), add("orders", "b", "string")],
    ),
    (
        "mysql",
        "ALTER TABLE orders ADD COLUMN (a tinyint NOT NULL DEFAULT 0, b datetime(3))",
        [add("orders", "a", "bigint"), add("orders", "b", "timestamp")],
    ),
    (
        "mysql",
        "ALTER TABLE `Shop`.`Orders` ADD COLUMN `Order Id` BIGINT PRIMARY KEY FIRST",
        [add("Shop.Orders", "Order Id", "bigint", keys=("Order Id",))],
    ),
    ("mysql", "ALTER TABLE orders DROP COLUMN note", [drop("orders", "note")]),
    ("mysql", "ALTER TABLE orders DROP note, DROP COLUMN qty", [drop("orders", "note"), drop("orders", "qty")]),
    ("mysql", "ALTER TABLE orders RENAME COLUMN note TO remark", [rename("orders", "note", "remark")]),
    (
        "mysql",
        "ALTER TABLE orders CHANGE COLUMN note remark TEXT",
        [rename("orders", "note", "remark"), modify("orders", "remark", "string")],
    ),
    ("mysql", "ALTER TABLE orders CHANGE qty qty BIGINT NOT NULL AFTER id", [modify("orders", "qty", "bigint")]),
    ("mysql", "ALTER TABLE orders MODIFY COLUMN price DECIMAL(12,4)", [modify("orders", "price", "decimal(12,4)")]),
    ("mysql", "ALTER TABLE orders MODIFY flag BIT(1)", [modify("orders", "flag", "boolean")]),
    (
        "mysql",
        "CREATE TABLE shop.orders (id INT PRIMARY KEY, note VARCHAR(3), at TIMESTAMP) ENGINE=InnoDB",
        [create("shop.orders", (("id", "bigint"), ("note", "string"), ("at", "timestamp")), keys=("id",))],
    ),
    (
        "mysql",
        "CREATE TABLE IF NOT EXISTS `t` (a INT, b BLOB, KEY k (b), PRIMARY KEY (a, b(8)))",
        [create("t", (("a", "bigint"), ("b", "binary")), keys=("a", "b"))],
    ),
    (
        "mysql",
        "CREATE TABLE t (a INT PRIMARY KEY) PARTITION BY HASH(a) PARTITIONS 4",
        [create("t", (("a", "bigint"),), keys=("a",))],
    ),
    ("mysql", "DROP TABLE IF EXISTS shop.a, b", [drop_table("shop.a"), drop_table("b")]),
    ("mysql", "TRUNCATE TABLE shop.orders", [truncate("shop.orders")]),
    ("mysql", "TRUNCATE orders", [truncate("orders")]),
    ("mysql", "RENAME TABLE shop.a TO shop.b, c TO d", [rename_table("shop.a", "shop.b"), rename_table("c", "d")]),
    ("mysql", "ALTER TABLE a RENAME TO b", [rename_table("a", "b")]),
    ("mysql", "ALTER TABLE a RENAME AS b", [rename_table("a", "b")]),
    ("mysql", "ALTER TABLE a RENAME TO b, ADD x INT", [add("a", "x", "bigint"), rename_table("a", "b")]),
    ("mysql", "ALTER TABLE t ADD INDEX i (a), ADD COLUMN z INT, ALGORITHM=INPLACE", [add("t", "z", "bigint")]),
    ("mysql", 'ALTER TABLE "S"."T" ADD "A" NUMBER(10)', [add("S.T", "A", "bigint")]),
    # --- Oracle
    (
        "oracle",
        "ALTER TABLE HR.EMP ADD (BONUS NUMBER(10), NOTE VARCHAR2(20 CHAR))",
        [add("HR.EMP", "BONUS", "bigint"), add("HR.EMP", "NOTE", "string")],
    ),
    (
        "oracle",
        "ALTER TABLE HR.EMP ADD SALARY NUMBER(10,2) DEFAULT 0 NOT NULL",
        [add("HR.EMP", "SALARY", "decimal(10,2)")],
    ),
    (
        "oracle",
        'ALTER TABLE "HR"."Emp" ADD ("hired" DATE, "Photo" BLOB)',
        [add("HR.Emp", "hired", "timestamp"), add("HR.Emp", "Photo", "binary")],
    ),
    ("oracle", "ALTER TABLE HR.EMP DROP COLUMN BONUS", [drop("HR.EMP", "BONUS")]),
    (
        "oracle",
        "ALTER TABLE HR.EMP DROP (BONUS, NOTE) CASCADE CONSTRAINTS",
        [drop("HR.EMP", "BONUS"), drop("HR.EMP", "NOTE")],
    ),
    ("oracle", "ALTER TABLE HR.EMP SET UNUSED COLUMN NOTE", [drop("HR.EMP", "NOTE")]),
    ("oracle", "ALTER TABLE HR.EMP SET UNUSED (A, B)", [drop("HR.EMP", "A"), drop("HR.EMP", "B")]),
    ("oracle", "ALTER TABLE HR.EMP RENAME COLUMN BONUS TO PREMIUM", [rename("HR.EMP", "BONUS", "PREMIUM")]),
    (
        "oracle",
        "ALTER TABLE HR.EMP MODIFY (BONUS NUMBER(20), NOTE VARCHAR2(40) NOT NULL)",
        [modify("HR.EMP", "BONUS", "decimal(20,0)"), modify("HR.EMP", "NOTE", "string")],
    ),
    ("oracle", "ALTER TABLE HR.EMP MODIFY NOTE CLOB", [modify("HR.EMP", "NOTE", "string")]),
    ("oracle", "ALTER TABLE HR.EMP MODIFY (NOTE DEFAULT 'x')", []),
    ("oracle", "ALTER TABLE HR.EMP RENAME TO STAFF", [rename_table("HR.EMP", "STAFF")]),
    ("oracle", "RENAME EMP TO STAFF", [rename_table("EMP", "STAFF")]),
    (
        "oracle",
        "CREATE TABLE HR.EMP (ID NUMBER(10) NOT NULL, NAME NVARCHAR2(50), HIRED DATE, RATE BINARY_DOUBLE, "
        "TAG RAW(16), MEMO LONG, AMOUNT NUMBER, BIG NUMBER(*,0), CONSTRAINT EMP_PK PRIMARY KEY (ID)) TABLESPACE USERS",
        [
            create(
                "HR.EMP",
                (
                    ("ID", "bigint"),
                    ("NAME", "string"),
                    ("HIRED", "timestamp"),
                    ("RATE", "double"),
                    ("TAG", "binary"),
                    ("MEMO", "string"),
                    ("AMOUNT", "decimal(38,10)"),
                    ("BIG", "decimal(38,0)"),
                ),
                keys=("ID",),
            )
        ],
    ),
    (
        "oracle",
        "CREATE TABLE HR.DOC (ID NUMBER(18,0) PRIMARY KEY, BODY CLOB) LOB (BODY) STORE AS SECUREFILE",
        [create("HR.DOC", (("ID", "bigint"), ("BODY", "string")), keys=("ID",))],
    ),
    ("oracle", "DROP TABLE HR.EMP CASCADE CONSTRAINTS PURGE", [drop_table("HR.EMP")]),
    ("oracle", "TRUNCATE TABLE HR.EMP", [truncate("HR.EMP")]),
    ("oracle", "TRUNCATE TABLE HR.EMP REUSE STORAGE", [truncate("HR.EMP")]),
    # --- PostgreSQL
    (
        "postgres",
        "ALTER TABLE public.items ADD COLUMN price numeric(12,2)",
        [add("public.items", "price", "decimal(12,2)")],
    ),
    (
        "postgres",
        "ALTER TABLE IF EXISTS ONLY public.items ADD COLUMN IF NOT EXISTS ok boolean, ADD tags text",
        [add("public.items", "ok", "boolean"), add("public.items", "tags", "string")],
    ),
    ("postgres", "ALTER TABLE public.items DROP COLUMN IF EXISTS price CASCADE", [drop("public.items", "price")]),
    (
        "postgres",
        "ALTER TABLE public.items DROP price, DROP COLUMN ok",
        [drop("public.items", "price"), drop("public.items", "ok")],
    ),
    ("postgres", "ALTER TABLE public.items ALTER COLUMN qty TYPE bigint", [modify("public.items", "qty", "bigint")]),
    (
        "postgres",
        "ALTER TABLE public.items ALTER COLUMN price SET DATA TYPE numeric(14,2) USING price::numeric",
        [modify("public.items", "price", "decimal(14,2)")],
    ),
    (
        "postgres",
        "ALTER TABLE public.items ALTER qty TYPE int, ALTER COLUMN qty SET DEFAULT 0",
        [modify("public.items", "qty", "bigint")],
    ),
    (
        "postgres",
        'ALTER TABLE "Sales"."Items" RENAME COLUMN "Old Name" TO "New"',
        [rename("Sales.Items", "Old Name", "New")],
    ),
    ("postgres", "ALTER TABLE public.items RENAME qty TO quantity", [rename("public.items", "qty", "quantity")]),
    ("postgres", "ALTER TABLE public.items RENAME TO goods", [rename_table("public.items", "goods")]),
    (
        "postgres",
        "CREATE TABLE public.items (id bigserial PRIMARY KEY, body bytea, at timestamptz, "
        "ratio double precision, r real, d date, amount numeric)",
        [
            create(
                "public.items",
                (
                    ("id", "bigint"),
                    ("body", "binary"),
                    ("at", "timestamp"),
                    ("ratio", "double"),
                    ("r", "double"),
                    ("d", "date"),
                    ("amount", "decimal(38,10)"),
                ),
                keys=("id",),
            )
        ],
    ),
    (
        "postgres",
        "CREATE TABLE t (a int, b text, CONSTRAINT t_pk PRIMARY KEY (b, a))",
        [create("t", (("a", "bigint"), ("b", "string")), keys=("b", "a"))],
    ),
    ("postgres", "TRUNCATE TABLE public.a, b RESTART IDENTITY CASCADE", [truncate("public.a"), truncate("b")]),
    ("postgres", "DROP TABLE public.items CASCADE", [drop_table("public.items")]),
    # --- no dialect named: the first that reads the statement fully
    (None, "ALTER TABLE t CHANGE a b INT", [rename("t", "a", "b"), modify("t", "b", "bigint")]),
    (
        None,
        "ALTER TABLE HR.EMP ADD (A NUMBER(5), B VARCHAR2(9))",
        [add("HR.EMP", "A", "bigint"), add("HR.EMP", "B", "string")],
    ),
    (None, "ALTER TABLE HR.EMP MODIFY (A NUMBER(12,2))", [modify("HR.EMP", "A", "decimal(12,2)")]),
    (None, "ALTER TABLE s.t ALTER COLUMN a TYPE bigint", [modify("s.t", "a", "bigint")]),
    (None, "RENAME EMP TO STAFF", [rename_table("EMP", "STAFF")]),
    (None, "ALTER TABLE t ADD d DATE", [add("t", "d", "date")]),
]


@pytest.mark.parametrize(("dialect", "sql", "changes"), FORMS, ids=[f"{d or 'auto'}:{s[:60]}" for d, s, _ in FORMS])
def test_statement_forms(dialect: str | None, sql: str, changes: list[dict[str, Any]]) -> None:
    assert parse_ddl(sql, dialect=dialect, **SOURCE) == expected(sql, *changes)


def test_forms_cover_every_kind_in_every_dialect() -> None:
    """The table above keeps covering each change kind per dialect (guards against trimming it)."""
    kinds = {(d, c["kind"]) for d, _, changes in FORMS for c in changes}
    for dialect in ("mysql", "oracle", "postgres"):
        for kind in (ADD_COLUMN, DROP_COLUMN, RENAME_COLUMN, MODIFY_COLUMN, CREATE_TABLE, DROP_TABLE, TRUNCATE):
            assert (dialect, kind) in kinds
        assert (dialect, RENAME_TABLE) in kinds
    assert len(FORMS) >= 30


TYPES = [
    ("mysql", "TINYINT", "bigint"),
    ("mysql", "SMALLINT", "bigint"),
    ("mysql", "MEDIUMINT", "bigint"),
    ("mysql", "INTEGER", "bigint"),
    ("mysql", "INT UNSIGNED", "bigint"),
    ("mysql", "BIGINT UNSIGNED", "decimal(20,0)"),
    ("mysql", "DECIMAL", "decimal(10,0)"),
    ("mysql", "DECIMAL(18)", "decimal(18,0)"),
    ("mysql", "FLOAT", "double"),
    ("mysql", "DOUBLE(10,2)", "double"),
    ("mysql", "BOOL", "boolean"),
    ("mysql", "BIT", "boolean"),
    ("mysql", "CHAR(3)", "string"),
    ("mysql", "LONGTEXT", "string"),
    ("mysql", "JSON", "string"),
    ("mysql", "ENUM('a','b')", "string"),
    ("mysql", "DATE", "date"),
    ("mysql", "DATETIME(6)", "timestamp"),
    ("mysql", "TIMESTAMP", "timestamp"),
    ("mysql", "VARBINARY(16)", "binary"),
    ("mysql", "MEDIUMBLOB", "binary"),
    ("mysql", "YEAR", "bigint"),
    ("oracle", "NUMBER", "decimal(38,10)"),
    ("oracle", "NUMBER(18)", "bigint"),
    ("oracle", "NUMBER(18,0)", "bigint"),
    ("oracle", "NUMBER(19)", "decimal(19,0)"),
    ("oracle", "NUMBER(9,2)", "decimal(9,2)"),
    ("oracle", "DECIMAL(9)", "bigint"),
    ("oracle", "INTEGER", "bigint"),
    ("oracle", "FLOAT", "double"),
    ("oracle", "BINARY_FLOAT", "double"),
    ("oracle", "DATE", "timestamp"),
    ("oracle", "TIMESTAMP(6) WITH LOCAL TIME ZONE", "timestamp"),
    ("oracle", "CHAR(1)", "string"),
    ("oracle", "NCLOB", "string"),
    ("oracle", "RAW(2000)", "binary"),
    ("oracle", "LONG", "string"),
    ("postgres", "smallint", "bigint"),
    ("postgres", "serial", "bigint"),
    ("postgres", "numeric", "decimal(38,10)"),
    ("postgres", "numeric(5)", "decimal(5,0)"),
    ("postgres", "double precision", "double"),
    ("postgres", "bool", "boolean"),
    ("postgres", "bit(1)", "boolean"),
    ("postgres", "varchar", "string"),
    ("postgres", "uuid", "string"),
    ("postgres", "jsonb", "string"),
    ("postgres", "timestamp without time zone", "timestamp"),
    ("postgres", "date", "date"),
    ("postgres", "bytea", "binary"),
    (None, "NUMBER(10)", "bigint"),
    (None, "DECIMAL(10)", "decimal(10,0)"),
    (None, "DECIMAL", "decimal(38,10)"),
    (None, "DATE", "date"),
    (None, "RAW(8)", "binary"),
]


@pytest.mark.parametrize(("dialect", "source_type", "lake_type"), TYPES)
def test_type_mapping(dialect: str | None, source_type: str, lake_type: str, caplog: pytest.LogCaptureFixture) -> None:
    sql = f"ALTER TABLE t ADD c {source_type}"
    with caplog.at_level(logging.WARNING, logger="cdclake.schema.ddl_text"):
        assert parse_ddl(sql, dialect=dialect) == [
            SchemaChange("t", ADD_COLUMN, column="c", type=lake_type, source_event=sql)
        ]
    assert caplog.records == []  # a known type is not reported


@pytest.mark.parametrize(
    ("dialect", "source_type"),
    [
        ("postgres", "int[]"),
        ("postgres", "time"),
        ("postgres", "numeric(50,2)"),
        ("mysql", "BIT(8)"),
        ("oracle", "XMLTYPE2"),
    ],
)
def test_unknown_types_are_strings_and_reported(
    dialect: str, source_type: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="cdclake.schema.ddl_text"):
        changes = parse_ddl(f"ALTER TABLE s.t ADD c {source_type}", dialect=dialect)
    assert [(c.kind, c.column, c.type) for c in changes] == [(ADD_COLUMN, "c", "string")]
    assert len(caplog.records) == 1
    message = caplog.records[0].getMessage()
    assert "s.t column c" in message and "no cdclake equivalent" in message and "stored as string" in message


@pytest.mark.parametrize(
    ("dialect", "sql"),
    [
        ("mysql", "CREATE INDEX i ON t (a)"),
        ("mysql", "DROP INDEX i ON t"),
        ("mysql", "GRANT SELECT ON t TO u"),
        ("mysql", "ALTER TABLE t ENGINE=InnoDB"),
        ("mysql", "ALTER TABLE t ADD PRIMARY KEY (a), DROP INDEX i"),
        ("mysql", "ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4"),
        ("mysql", "CREATE TEMPORARY TABLE tmp (a INT)"),
        ("mysql", "DROP TEMPORARY TABLE tmp"),
        ("mysql", "CREATE VIEW v AS SELECT 1"),
        ("mysql", "RENAME USER a TO b"),
        ("mysql", "INSERT INTO t VALUES (1)"),
        ("oracle", "COMMENT ON TABLE HR.EMP IS 'staff; all of them'"),
        ("oracle", "ALTER TABLE HR.EMP ADD CONSTRAINT EMP_PK PRIMARY KEY (ID)"),
        ("oracle", "ALTER TABLE HR.EMP ADD SUPPLEMENTAL LOG DATA (ALL) COLUMNS"),
        ("oracle", "ALTER TABLE HR.EMP ENABLE ROW MOVEMENT"),
        ("oracle", "ALTER TABLE HR.EMP MODIFY CONSTRAINT EMP_PK DISABLE"),
        ("oracle", "ALTER TABLE HR.EMP DROP UNUSED COLUMNS"),
        ("oracle", "CREATE GLOBAL TEMPORARY TABLE G (A NUMBER) ON COMMIT DELETE ROWS"),
        ("oracle", "CREATE SEQUENCE S START WITH 1"),
        ("oracle", "CREATE PRIVATE TEMPORARY TABLE ORA$PTT_X (A NUMBER)"),
        ("postgres", "ALTER TABLE t OWNER TO admin"),
        ("postgres", "ALTER TABLE t REPLICA IDENTITY FULL"),
        ("postgres", "ALTER TABLE t ALTER COLUMN a SET NOT NULL"),
        ("postgres", "ALTER TABLE t RENAME CONSTRAINT a TO b"),
        ("postgres", "COMMENT ON COLUMN t.a IS 'x'"),
        ("postgres", "CREATE FUNCTION f() RETURNS int AS $$ BEGIN; RETURN 1; END $$ LANGUAGE plpgsql"),
        ("postgres", "ALTER INDEX i RENAME TO j"),
        (None, "GRANT SELECT ON t TO u"),
        (None, "ALTER TABLE HR.EMP ENABLE ROW MOVEMENT"),
        (None, "  -- only a comment\n"),
        (None, ""),
    ],
)
def test_statements_that_change_no_schema_give_nothing(dialect: str | None, sql: str) -> None:
    assert parse_ddl(sql, dialect=dialect) == []


def test_several_statements_in_order_each_with_its_own_text() -> None:
    text = (
        "-- migration 12\n"
        "ALTER TABLE t ADD a INT COMMENT 'x;y';\n"
        "/* rename; then drop */ RENAME TABLE t TO u;\n"
        "CREATE INDEX i ON u (a);\n"
        "ALTER TABLE u DROP b, CHANGE c d DOUBLE;;\n"
    )
    first = "ALTER TABLE t ADD a INT COMMENT 'x;y'"
    last = "ALTER TABLE u DROP b, CHANGE c d DOUBLE"
    assert parse_ddl(text, dialect="mysql", **SOURCE) == [
        *expected(first, add("t", "a", "bigint")),
        *expected("RENAME TABLE t TO u", rename_table("t", "u")),
        *expected(last, drop("u", "b"), rename("u", "c", "d"), modify("u", "d", "double")),
    ]


def test_several_statements_each_read_by_its_own_dialect() -> None:
    text = "ALTER TABLE t CHANGE a b INT; ALTER TABLE S.T MODIFY (C NUMBER(5)); ALTER TABLE p.q ALTER x TYPE text"
    assert [(c.kind, c.table, c.column, c.type) for c in parse_ddl(text)] == [
        (RENAME_COLUMN, "t", "a", None),
        (MODIFY_COLUMN, "t", "b", "bigint"),
        (MODIFY_COLUMN, "S.T", "C", "bigint"),
        (MODIFY_COLUMN, "p.q", "x", "string"),
    ]


def test_hash_is_a_comment_only_in_named_mysql() -> None:
    """Oracle names may hold ``#``; guessing must not read ``DROP COLUMN A#B`` as ``DROP COLUMN A``."""
    assert parse_ddl("ALTER TABLE T DROP COLUMN A#B") == [
        SchemaChange("T", DROP_COLUMN, column="A#B", source_event="ALTER TABLE T DROP COLUMN A#B")
    ]
    assert parse_ddl("ALTER TABLE t ADD a INT; # DROP TABLE t;\nALTER TABLE t DROP b", dialect="mysql") == [
        SchemaChange("t", ADD_COLUMN, column="a", type="bigint", source_event="ALTER TABLE t ADD a INT"),
        SchemaChange("t", DROP_COLUMN, column="b", source_event="ALTER TABLE t DROP b"),
    ]


def test_source_event_is_bounded() -> None:
    sql = "ALTER TABLE t ADD c INT COMMENT '" + "x" * 2000 + "'"
    (change,) = parse_ddl(sql, dialect="mysql")
    assert len(change.source_event) == MAX_EVENT_CHARS
    assert change.source_event == sql[: MAX_EVENT_CHARS - 3] + "..."


def test_dialect_names() -> None:
    assert parse_ddl("ALTER TABLE t RENAME a TO b", dialect="PostgreSQL") == [
        SchemaChange("t", RENAME_COLUMN, column="a", new_name="b", source_event="ALTER TABLE t RENAME a TO b")
    ]
    with pytest.raises(ValueError, match=r"unknown DDL dialect 'tsql': expected one of mysql, postgres, oracle"):
        parse_ddl("ALTER TABLE t ADD a INT", dialect="tsql")


@pytest.mark.parametrize(
    ("dialect", "sql", "message"),
    [
        (
            None,
            "this is not sql at all",
            "cannot read DDL statement 'this is not sql at all': mysql, postgres, oracle: Invalid expression",
        ),
        (
            "mysql",
            "ALTER TABLE",
            "cannot read DDL statement 'ALTER TABLE': mysql: Expected table name but the statement ends",
        ),
        ("mysql", "ALTER", "cannot read DDL statement 'ALTER': mysql: ALTER names nothing"),
        ("mysql", "ALTER TABLE t ADD 'open", "cannot be split into statements: mysql: Error tokenizing"),
        ("mysql", "ALTER TABLE t ADD `` INT", "mysql: column name is empty"),
        (
            "mysql",
            "ALTER TABLE t ADD p POINT",
            "mysql: clause 'ADD p POINT' may change a column or the table but is not written in a form cdclake reads",
        ),
        (
            "postgres",
            "ALTER TABLE t SET SCHEMA archive",
            "postgres: clause 'SET SCHEMA archive' may change a column or the table",
        ),
        ("oracle", "ALTER TABLE t ADD (x NUMBER) MODIFY (y NUMBER)", "oracle: clause 'ADD ( x NUMBER ) MODIFY"),
        ("oracle", "CREATE TABLE t (a LONG RAW)", "oracle: Expecting )"),
        (
            "oracle",
            "CREATE SHARDED TABLE t (a NUMBER) TABLESPACE SET ts",
            "oracle: CREATE TABLE is not written in a form",
        ),
        ("oracle", "CREATE TABLE t OF person_typ", "oracle: CREATE TABLE is not written in a form cdclake reads"),
        ("mysql", "ALTER TABLE t ADD a INT; DROP TABLE", "cannot read DDL statement 2 of 2 'DROP TABLE'"),
        ("postgres", 'ALTER TABLE t ADD COLUMN "a\x00b" int', "column name 'a\\x00b' contains a NUL character"),
        ("postgres", 'ALTER TABLE "t\x00" DROP COLUMN a', "table name 't\\x00' contains a NUL character"),
        ("mysql", "(" * 100 + ")" * 100, "nests parentheses 100 deep; DDL needs at most 64"),
        # MySQL reads "--x" as code, the others as a comment: a possible change outweighs harmless readings
        (
            None,
            "ALTER TABLE t ENABLE ROW MOVEMENT --x, ADD p POINT",
            "mysql: clause 'ADD p POINT' may change a column or the table but is not written in a form cdclake "
            "reads (naming the source dialect applies its own quoting and comment rules)",
        ),
    ],
)
def test_errors_name_the_statement_and_the_problem(dialect: str | None, sql: str, message: str) -> None:
    with pytest.raises(DdlError) as caught:
        parse_ddl(sql, dialect=dialect)
    assert message in str(caught.value)


def test_error_names_the_event() -> None:
    with pytest.raises(DdlError) as caught:
        parse_ddl("ALTER TABLE", dialect="oracle", default_table="HR.EMP", **SOURCE)
    assert str(caught.value) == (
        "cannot read DDL statement in ddl/part-0001.json at offset 7 'ALTER TABLE': "
        "oracle: Expected table name but the statement ends (line 1, column 11) (event of table HR.EMP)"
    )


def test_error_quotes_a_bounded_prefix() -> None:
    sql = "ALTER TABLE t ADD p POINT COMMENT '" + "x" * 5000 + "'"
    with pytest.raises(DdlError) as caught:
        parse_ddl(sql, dialect="mysql")
    message = str(caught.value)
    assert repr(sql[: MAX_QUOTE_CHARS - 3] + "...") in message
    assert len(message) < 1000


def test_oversized_text_is_refused_before_parsing() -> None:
    text = "ALTER TABLE t ADD a INT;" + " " * MAX_DDL_BYTES
    with pytest.raises(DdlError, match=rf"DDL text of {len(text)} bytes is larger than the {MAX_DDL_BYTES} bytes"):
        parse_ddl(text)
    multibyte = "é" * (MAX_DDL_BYTES // 2 + 1)  # fewer characters than the limit, more bytes
    with pytest.raises(DdlError, match=rf"DDL text of {2 * len(multibyte)} bytes is larger"):
        parse_ddl(multibyte)


def test_text_must_be_a_string() -> None:
    with pytest.raises(DdlError, match="DDL text must be a string, not bytes"):
        parse_ddl(b"ALTER TABLE t ADD a INT")  # type: ignore[arg-type]


def test_sqlglot_dialects_are_left_as_they_were() -> None:
    """The grammar extensions live in private dialect copies: sqlglot's own MySQL is unchanged."""
    parse_ddl("RENAME TABLE a TO b", dialect="mysql")
    assert isinstance(sqlglot.parse_one("RENAME TABLE a TO b", read="mysql"), exp.Command)


# --- full column lists ----------------------------------------------------------------------------


def test_no_known_columns_is_a_create() -> None:
    announced = [("ID", "bigint"), ("NAME", "string"), ("NOTE", None)]
    assert schema_changes_from_columns("HR.EMP", None, announced, ["ID"], seq="9", source_event="SCHEMA v1") == [
        SchemaChange(
            "HR.EMP",
            CREATE_TABLE,
            columns=(("ID", "bigint"), ("NAME", "string"), ("NOTE", None)),
            keys=("ID",),
            seq="9",
            source_event="SCHEMA v1",
        )
    ]


def test_column_list_diff() -> None:
    previous = [("id", "bigint"), ("old", "string"), ("amount", "decimal(10,2)"), ("n", "long"), ("free", None)]
    announced = [
        ("id", "bigint"),
        ("z", "date"),
        ("amount", "decimal(12,2)"),
        ("n", "bigint"),
        ("free", "string"),
        ("a", None),
        ("k", "string"),
    ]
    fields = {"seq": "5", "source_file": "f.avro", "source_offset": 3, "source_event": "schema v2"}
    assert schema_changes_from_columns("s.t", previous, announced, keys=("id", "k"), **fields) == [
        SchemaChange("s.t", ADD_COLUMN, column="z", type="date", **fields),
        SchemaChange("s.t", ADD_COLUMN, column="a", type=None, **fields),
        SchemaChange("s.t", ADD_COLUMN, column="k", type="string", keys=("k",), **fields),
        SchemaChange("s.t", DROP_COLUMN, column="old", **fields),
        SchemaChange("s.t", MODIFY_COLUMN, column="amount", type="decimal(12,2)", **fields),
    ]


def test_same_columns_give_nothing() -> None:
    columns = [("a", "bigint"), ("b", None)]
    assert schema_changes_from_columns("t", columns, [("a", "long"), ("b", "string")]) == []


def test_a_rename_in_a_full_list_is_a_drop_and_an_add() -> None:
    assert schema_changes_from_columns(
        "t", [("id", "bigint"), ("old", "string")], [("id", "bigint"), ("new", "string")]
    ) == [
        SchemaChange("t", ADD_COLUMN, column="new", type="string"),
        SchemaChange("t", DROP_COLUMN, column="old"),
    ]


@pytest.mark.parametrize(
    ("previous", "announced", "message"),
    [
        (None, [("a", "bigint"), ("a", "string")], "table t: the announced columns name 'a' twice"),
        (None, [("a\x00", "bigint")], "table t: column name 'a\\x00' contains a NUL character"),
        ([("a", "bigint")], [("a", "varchar2")], "table t column a: 'varchar2' is not a cdclake column type"),
        (None, [("", "bigint")], "table t: column name '' is not a name"),
    ],
)
def test_column_list_errors(
    previous: list[tuple[str, str | None]] | None, announced: list[tuple[str, str | None]], message: str
) -> None:
    with pytest.raises(DdlError) as caught:
        schema_changes_from_columns("t", previous, announced)
    assert str(caught.value) == message
