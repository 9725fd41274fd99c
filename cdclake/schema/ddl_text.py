"""DDL text (MySQL, PostgreSQL, Oracle) and announced column lists as :class:`SchemaChange` values.

Why a real parser: DDL arrives as free text from the source database (DataHub BLOB ``ALTER``
events, binlog and GoldenGate DDL), with quoting, comments, type parameters, several actions per
``ALTER`` and several statements per event; regexes get those wrong silently. sqlglot reads the
three dialects into an AST, and only the AST is interpreted here: nothing is ever executed.

sqlglot 30 leaves some forms these streams carry as an opaque ``Command`` or rejects them, so
small grammar extensions are added to private copies of its dialects (nothing of sqlglot's own
dialects changes): MySQL ``ALTER TABLE t ADD [COLUMN] (a int, b int)``, ``RENAME TABLE a TO b``
(MySQL) and ``RENAME a TO b`` (Oracle), Oracle ``MODIFY (c type, ...)`` / ``MODIFY c type``,
``DROP (a, b)``, ``SET UNUSED`` (the column is gone for every reader: a drop),
``TRUNCATE TABLE t REUSE STORAGE``, and PostgreSQL ``RENAME a TO b`` without ``COLUMN``.

What is not a schema change (indexes, constraints, grants, comments, storage options, DML)
yields nothing. A statement that sqlglot still reads only as an opaque command yields nothing
when its clauses cannot touch columns or tables (``ALTER TABLE t ENABLE ROW MOVEMENT``), and is
refused with :class:`DdlError` when they might (``ALTER TABLE t ADD p POINT`` in MySQL): a schema
change must never be dropped without anyone knowing.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.dialects.mysql import MySQL
from sqlglot.dialects.oracle import Oracle
from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import SqlglotError, TokenError
from sqlglot.tokens import Token, TokenType

from cdclake.schema.changes import (  # DdlError, MAX_EVENT_CHARS, schema_changes_from_columns: re-exported
    ADD_COLUMN,
    CREATE_TABLE,
    DROP_COLUMN,
    DROP_TABLE,
    MAX_EVENT_CHARS,
    MODIFY_COLUMN,
    RENAME_COLUMN,
    RENAME_TABLE,
    TRUNCATE,
    DdlError,
    SchemaChange,
    bounded_text,
    schema_changes_from_columns,
)
from cdclake.schema.coltypes import BINARY, BOOLEAN, DATE, DOUBLE, LONG, STRING, TIMESTAMP, canonical_type

__all__ = ["MAX_DDL_BYTES", "MAX_EVENT_CHARS", "DdlError", "parse_ddl", "schema_changes_from_columns"]

logger = logging.getLogger(__name__)

#: Largest DDL text read (UTF-8 bytes); DDL events are small, anything bigger is not DDL.
MAX_DDL_BYTES = 1024 * 1024
#: Error messages quote this many characters of a statement.
MAX_QUOTE_CHARS = 200
#: AST nodes one statement may build (bounds parser work on hostile input).
MAX_AST_NODES = 200_000
#: Statements read from one DDL text (a DDL event holds a few; more is not a DDL event).
MAX_STATEMENTS = 10_000
#: Parentheses nest no deeper than this in DDL (deeper input is refused before parsing).
MAX_NESTING = 64
#: Dialects tried, in this order, when the caller does not name one.
DIALECTS = ("mysql", "postgres", "oracle")
_ALIASES = {"postgresql": "postgres", "pg": "postgres"}

#: ``DataType.meta`` key: the first word of the type as written (NUMBER, DECIMAL, LONG ...).
_SPELLED = "cdclake_spelled"

#: Words after ADD/DROP/MODIFY/CHANGE/RENAME that name something other than a column.
_NOT_COLUMNS = frozenset(
    "CONSTRAINT PRIMARY UNIQUE FOREIGN CHECK INDEX KEY FULLTEXT SPATIAL PARTITION SUBPARTITION SUPPLEMENTAL"
    " UNUSED LOB DEFAULT PERIOD OVERFLOW NESTED VARRAY TRIGGER RULE POLICY STATISTICS IDENTITY EXPRESSION".split()
)
#: Options of Oracle's TRUNCATE TABLE (storage and materialized view logs).
_ORACLE_TRUNCATE_OPTIONS = tuple("PRESERVE PURGE MATERIALIZED VIEW LOG DROP ALL REUSE STORAGE CASCADE".split())
#: Words that may come between CREATE and TABLE.
_TABLE_PREFIXES = frozenset("OR REPLACE GLOBAL LOCAL TEMPORARY TEMP UNLOGGED PRIVATE SHARDED DUPLICATED".split())


class _Unreadable(Exception):
    """One dialect's reading of a statement is not usable (another dialect may do better).

    ``risky``: the statement may change a column or table, so it must not be skipped.
    """

    def __init__(self, message: str, *, risky: bool = False) -> None:
        super().__init__(message)
        self.risky = risky


class _Harmless(Exception):
    """One dialect reads a statement only as an opaque command that changes no column or table."""


# --- grammar extensions ---------------------------------------------------------------------------


class _RenameTables(exp.Expression):
    """``RENAME TABLE a TO b, c TO d``: one ``ALTER TABLE a RENAME TO b`` per pair."""

    arg_types: ClassVar[dict[str, bool]] = {"expressions": True}


class _Extensions:
    """Grammar shared by the three dialects (mixed in before sqlglot's own parser)."""

    def _parse_types(self, *args: Any, **kwargs: Any) -> Any:
        # Oracle NUMBER and DECIMAL (and LONG and BIGINT) read as the same type: remember the spelling
        word = self._curr.text.upper().split()[0] if self._curr and self._curr.text.strip() else ""
        dtype = super()._parse_types(*args, **kwargs)
        if isinstance(dtype, exp.DataType):
            dtype.meta.setdefault(_SPELLED, word)
        return dtype

    def _parse_alter_table_add(self) -> Any:
        # MySQL's ADD [COLUMN] (a int, b int); sqlglot reads the parenthesized form for Oracle only
        index = self._index
        self._match(TokenType.COLUMN)
        if self._match(TokenType.L_PAREN, advance=False):
            schema = self._parse_schema()
            if isinstance(schema, exp.Schema):
                return [schema]
        self._retreat(index)
        return super()._parse_alter_table_add()

    def _parse_alter_table_rename(self) -> Any:
        if self._match(TokenType.ALIAS):  # MySQL: ALTER TABLE a RENAME AS b
            return self.expression(exp.AlterRename(this=self._parse_table_parts()))
        return super()._parse_alter_table_rename()

    def _warn_unsupported(self) -> None:
        """Silent: opaque commands are judged (and logged) by :func:`_opaque`, once per statement."""

    def _parse_rename_tables(self) -> Any:
        start = self._prev
        self._match(TokenType.TABLE)
        renames = self._parse_csv(self._parse_rename_pair)
        if self._curr or not renames:
            return self._parse_as_command(start)
        return self.expression(_RenameTables(expressions=renames))

    def _parse_rename_pair(self) -> Any:
        old = self._parse_table_parts()
        if old is None or not self._match_text_seq("TO"):
            return None
        new = self._parse_table_parts()
        if new is None:
            return None
        return exp.Alter(this=old, kind="TABLE", actions=[exp.AlterRename(this=new)])


def _with_rename(parser: type) -> dict[Any, Any]:
    return {**parser.STATEMENT_PARSERS, TokenType.RENAME: lambda self: self._parse_rename_tables()}


class _OracleExtensions:
    """Oracle clauses sqlglot 30 keeps as opaque commands."""

    def _parse_modify_columns(self) -> Any:
        if self._match(TokenType.L_PAREN):
            actions = self._parse_csv(self._parse_modify_column)
            if not self._match(TokenType.R_PAREN):
                return None
            return actions or None
        action = self._parse_modify_column()
        return [action] if action is not None else None

    def _parse_modify_column(self) -> Any:
        if not self._curr or self._curr.text.upper().split()[0] in _NOT_COLUMNS:
            return None
        column_def = self._parse_column_def(self._parse_field(any_token=True))
        if not isinstance(column_def, exp.ColumnDef):
            return None
        return self.expression(exp.ModifyColumn(this=column_def))

    def _parse_alter_drop_action(self) -> Any:
        index = self._index
        if self._match(TokenType.DROP) and self._match(TokenType.L_PAREN, advance=False):
            columns = self._parse_wrapped_csv(self._parse_column)
            cascade = self._match_text_seq("CASCADE", "CONSTRAINTS")
            return self.expression(exp.Drop(tables=columns, kind="COLUMN", cascade=cascade, constraints=cascade))
        self._retreat(index)
        return super()._parse_alter_drop_action()

    def _parse_alter_table_set(self) -> Any:
        if self._match_text_seq("UNUSED"):
            columns = [self._parse_column()] if self._match(TokenType.COLUMN) else None
            if columns is None:
                columns = self._parse_wrapped_csv(self._parse_column)
            self._match_text_seq("CASCADE", "CONSTRAINTS")
            self._match_text_seq("ONLINE")
            return self.expression(exp.Drop(tables=columns, kind="COLUMN"))
        return super()._parse_alter_table_set()

    def _parse_truncate_table(self) -> Any:
        index = self._index
        if self._match(TokenType.TABLE):
            table = self._parse_table_parts()
            while self._match_texts(_ORACLE_TRUNCATE_OPTIONS):
                pass
            if table is not None and not self._curr:
                return self.expression(exp.TruncateTable(expressions=[table]))
        self._retreat(index)
        return super()._parse_truncate_table()


class _CdclakeMySQL(MySQL):
    class Tokenizer(MySQL.Tokenizer):
        COMMANDS: ClassVar = MySQL.Tokenizer.COMMANDS - {TokenType.RENAME}

    class Parser(_Extensions, MySQL.Parser):
        STATEMENT_PARSERS: ClassVar = _with_rename(MySQL.Parser)


class _CdclakePostgres(Postgres):
    class Tokenizer(Postgres.Tokenizer):
        COMMANDS: ClassVar = Postgres.Tokenizer.COMMANDS - {TokenType.RENAME}

    class Parser(_Extensions, Postgres.Parser):
        STATEMENT_PARSERS: ClassVar = _with_rename(Postgres.Parser)
        ALTER_RENAME_REQUIRES_COLUMN: ClassVar = False  # ALTER TABLE t RENAME a TO b renames a column


class _CdclakeOracle(Oracle):
    class Tokenizer(Oracle.Tokenizer):
        COMMANDS: ClassVar = Oracle.Tokenizer.COMMANDS - {TokenType.RENAME}

    class Parser(_OracleExtensions, _Extensions, Oracle.Parser):
        STATEMENT_PARSERS: ClassVar = _with_rename(Oracle.Parser)
        ALTER_PARSERS: ClassVar = {**Oracle.Parser.ALTER_PARSERS, "MODIFY": lambda self: self._parse_modify_columns()}


class _CdclakeMySQLGuessing(_CdclakeMySQL):
    """MySQL when no dialect is named: ``#`` starts no comment, since Oracle names may hold it
    (``ORDER#``) and reading ``DROP COLUMN A#B`` as ``DROP COLUMN A`` would drop the wrong column."""

    class Tokenizer(_CdclakeMySQL.Tokenizer):
        COMMENTS: ClassVar = [c for c in MySQL.Tokenizer.COMMENTS if c != "#"]


_NAMED_DIALECTS: dict[str, Dialect] = {
    "mysql": _CdclakeMySQL(),
    "postgres": _CdclakePostgres(),
    "oracle": _CdclakeOracle(),
}
_GUESSED_DIALECTS: dict[str, Dialect] = {**_NAMED_DIALECTS, "mysql": _CdclakeMySQLGuessing()}


# --- types ----------------------------------------------------------------------------------------

_DT = exp.DataType.Type


def _type_set(names: str) -> frozenset[exp.DataType.Type]:
    return frozenset(_DT[name] for name in names.split())


_INTEGERS = _type_set(
    "TINYINT SMALLINT MEDIUMINT INT BIGINT UTINYINT USMALLINT UMEDIUMINT UINT SERIAL SMALLSERIAL BIGSERIAL YEAR"
)
_FLOATS = _type_set("FLOAT DOUBLE UDOUBLE")
_DECIMALS = _type_set("DECIMAL UDECIMAL BIGDECIMAL")
_STRINGS = _type_set(
    "CHAR NCHAR VARCHAR NVARCHAR BPCHAR TEXT TINYTEXT MEDIUMTEXT LONGTEXT NAME JSON JSONB UUID ENUM ENUM8 ENUM16"
    " SET XML"
)
_TIMESTAMPS = _type_set(
    "DATETIME DATETIME2 DATETIME64 SMALLDATETIME TIMESTAMP TIMESTAMPTZ TIMESTAMPLTZ TIMESTAMPNTZ"
    " TIMESTAMP_S TIMESTAMP_MS TIMESTAMP_NS"
)
_DATES = _type_set("DATE DATE32")
_BINARIES = _type_set("BINARY VARBINARY BLOB TINYBLOB MEDIUMBLOB LONGBLOB IMAGE")
#: Type names sqlglot keeps as user-defined (Oracle RAW, BINARY_DOUBLE when read by PostgreSQL ...).
_NAMED = {
    "RAW": BINARY,
    "BINARY_DOUBLE": DOUBLE,
    "BINARY_FLOAT": DOUBLE,
    "NCLOB": STRING,
    "XMLTYPE": STRING,
    "ROWID": STRING,
    "UROWID": STRING,
    "CITEXT": STRING,
    "NTEXT": STRING,
}
#: Largest precision whose integers all fit in a bigint (NUMBER(18) -> bigint).
_BIGINT_DIGITS = 18


def _params(dtype: exp.DataType) -> list[int | str | None]:
    """Numeric type parameters; ``"*"`` for Oracle's ``NUMBER(*, s)``; None for anything else."""
    values: list[int | str | None] = []
    for param in dtype.expressions:
        node = param.this if isinstance(param, exp.DataTypeParam) else param
        if isinstance(node, exp.Star):
            values.append("*")
        elif isinstance(node, exp.Literal) and not node.is_string:
            try:
                values.append(int(node.this))
            except ValueError:
                values.append(None)
        else:
            values.append(None)
    return values


def _decimal(precision: int, scale: int, *, integers_as_bigint: bool) -> str | None:
    """``decimal(p,s)`` (or bigint for small integers when asked); None when Iceberg cannot hold it."""
    if integers_as_bigint and scale == 0 and 0 < precision <= _BIGINT_DIGITS:
        return LONG
    try:
        return canonical_type(f"decimal({precision},{scale})")
    except ValueError:
        return None


def _lake_type(dtype: exp.DataType, flavor: str | None) -> tuple[str, bool]:
    """(cdclake type, known) for a source column type; unknown types are kept as string.

    ``flavor`` is the dialect the caller named (None: generic rules). Oracle's ``DATE`` holds a
    time of day, so it is a timestamp with ``flavor="oracle"``. ``NUMBER`` is Oracle's whatever the
    flavor: ``NUMBER(p[,0])`` with p <= 18 is a bigint and a bare ``NUMBER`` is ``decimal(38,10)``
    (the mapping Qlik Replicate and AWS DMS use). A bare ``DECIMAL`` is MySQL's ``DECIMAL(10,0)``
    with ``flavor="mysql"`` and ``decimal(38,10)`` otherwise.
    """
    kind = dtype.this
    spelled = str(dtype.meta.get(_SPELLED) or "")
    if spelled == "LONG":  # Oracle LONG and MySQL LONG are long text (sqlglot reads it as BIGINT)
        return STRING, True
    if kind in _INTEGERS:
        return LONG, True
    if kind == _DT.UBIGINT:
        return "decimal(20,0)", True
    if kind in _FLOATS:
        return DOUBLE, True
    if kind in _DECIMALS:
        oracle_number = spelled == "NUMBER" or flavor == "oracle"
        params = _params(dtype)
        if not params:
            if flavor == "mysql" and not oracle_number:
                return "decimal(10,0)", True
            return "decimal(38,10)", True
        precision = 38 if params[0] == "*" else params[0]
        scale = params[1] if len(params) > 1 else 0
        if isinstance(precision, int) and isinstance(scale, int):
            mapped = _decimal(precision, scale, integers_as_bigint=oracle_number)
            if mapped:
                return mapped, True
        return STRING, False
    if kind == _DT.BOOLEAN:
        return BOOLEAN, True
    if kind == _DT.BIT:
        return (BOOLEAN, True) if _params(dtype) in ([], [1]) else (STRING, False)
    if kind in _STRINGS:
        return STRING, True
    if kind in _DATES:
        return (TIMESTAMP if flavor == "oracle" else DATE), True
    if kind in _TIMESTAMPS:
        return TIMESTAMP, True
    if kind in _BINARIES:
        return BINARY, True
    if kind == _DT.USERDEFINED:
        name = dtype.args.get("kind")
        name = (name.name if isinstance(name, exp.Expression) else str(name or "")).upper()
        if name in _NAMED:
            return _NAMED[name], True
    return STRING, False


# --- reading one statement ------------------------------------------------------------------------


@dataclass
class _Statement:
    """Where the changes of one statement come from, and how to build them."""

    text: str
    number: int
    count: int
    flavor: str | None
    seq: str | None
    source_file: str | None
    source_offset: int | None

    @property
    def event(self) -> str:
        return bounded_text(self.text, MAX_EVENT_CHARS)

    def where(self) -> str:
        place = f"DDL statement {self.number} of {self.count}" if self.count > 1 else "DDL statement"
        if self.source_file is not None:
            place += f" in {self.source_file}"
            if self.source_offset is not None:
                place += f" at offset {self.source_offset}"
        return f"{place} {bounded_text(self.text, MAX_QUOTE_CHARS)!r}"

    def change(self, table: str, kind: str, **fields: Any) -> SchemaChange:
        return SchemaChange(
            table=table,
            kind=kind,
            seq=self.seq,
            source_file=self.source_file,
            source_offset=self.source_offset,
            source_event=self.event,
            **fields,
        )


def _plain_name(node: Any, what: str, statement: _Statement) -> str:
    """An identifier's text; MySQL reads ``"name"`` as a string (unless ANSI_QUOTES): take it too."""
    if isinstance(node, exp.Column) and not node.table:
        node = node.this
    if isinstance(node, exp.Identifier) or (isinstance(node, exp.Literal) and node.is_string):
        value = node.this
    else:
        shown = node.sql() if isinstance(node, exp.Expression) else repr(node)
        raise _Unreadable(f"{what} {bounded_text(shown, 80)} is not a plain name")
    if not isinstance(value, str) or not value:
        raise _Unreadable(f"{what} is empty")
    if "\x00" in value:
        raise DdlError(f"{statement.where()}: {what} {value!r} contains a NUL character")
    return value


def _table_name(table: Any, statement: _Statement) -> str:
    """``schema.table`` as written, without quotes (the caller maps source names to lake tables)."""
    if not isinstance(table, exp.Table):
        shown = table.sql() if isinstance(table, exp.Expression) else repr(table)
        raise _Unreadable(f"{bounded_text(shown, 80)} is not a table name")
    parts = [table.args.get(key) for key in ("catalog", "db", "this")]
    return ".".join(_plain_name(part, "table name", statement) for part in parts if part is not None)


def _column_type(column_def: exp.ColumnDef, table: str, name: str, statement: _Statement) -> str | None:
    dtype = column_def.args.get("kind")
    if not isinstance(dtype, exp.DataType):
        return None
    lake, known = _lake_type(dtype, statement.flavor)
    if not known:
        logger.warning(
            "%s column %s: source type %s has no cdclake equivalent; it is stored as %s (%s)",
            table,
            name,
            bounded_text(dtype.sql(), 80),
            lake,
            statement.where(),
        )
    return lake


def _is_key(column_def: exp.ColumnDef) -> bool:
    return any(
        isinstance(c, exp.ColumnConstraint) and isinstance(c.args.get("kind"), exp.PrimaryKeyColumnConstraint)
        for c in column_def.args.get("constraints") or []
    )


def _key_names(node: exp.Expression, statement: _Statement) -> list[str]:
    """Column names of a ``PRIMARY KEY (a, b)`` table constraint."""
    names = []
    for part in node.expressions:
        target = part.this if isinstance(part, (exp.Ordered, exp.ColumnPrefix)) else part  # MySQL: (name(10))
        names.append(_plain_name(target, "key column", statement))
    return names


def _interpret(tree: exp.Expression, dialect: Dialect, statement: _Statement) -> list[SchemaChange]:
    """The schema changes one parsed statement makes."""
    if isinstance(tree, _RenameTables):
        return [change for alter in tree.expressions for change in _alter(alter, dialect, statement)]
    if isinstance(tree, exp.Alter):
        return _alter(tree, dialect, statement)
    if isinstance(tree, exp.Create):
        return _create(tree, statement)
    if isinstance(tree, exp.Drop):
        if (tree.args.get("kind") or "").upper() != "TABLE" or tree.args.get("temporary"):
            return []
        return [statement.change(_table_name(t, statement), DROP_TABLE) for t in tree.args.get("tables") or []]
    if isinstance(tree, exp.TruncateTable):
        if tree.args.get("is_database"):
            return []
        return [statement.change(_table_name(t, statement), TRUNCATE) for t in tree.expressions]
    if isinstance(tree, exp.Command):
        if str(tree.this).upper() == "CREATE":
            create = _create_before_options(statement, dialect)
            if create is not None:
                return _create(create, statement)
        _opaque(str(tree.this), _command_text(tree.expression), dialect, top_level=True)
    return []  # not a schema change: index, view, grant, comment, DML ...


def _create_before_options(statement: _Statement, dialect: Dialect) -> exp.Create | None:
    """A CREATE TABLE whose table options sqlglot cannot read (MySQL ``PARTITION BY HASH``, Oracle
    ``LOB (c) STORE AS`` ...), read up to the end of its column list: options change no column."""
    try:
        tokens = dialect.tokenize(statement.text)
    except TokenError:
        return None
    depth = 0
    for token in tokens:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                head = statement.text[: token.end + 1]
                break
    else:
        return None
    try:
        trees = dialect.parse(head)
    except SqlglotError:
        return None
    tree = trees[0] if len(trees) == 1 else None
    if isinstance(tree, exp.Create) and isinstance(tree.this, exp.Schema):
        return tree
    return None


def _create(tree: exp.Create, statement: _Statement) -> list[SchemaChange]:
    if (tree.args.get("kind") or "").upper() != "TABLE":
        return []
    properties = tree.args.get("properties")
    if properties is not None and any(isinstance(p, exp.TemporaryProperty) for p in properties.expressions):
        return []  # temporary tables are not replicated
    schema = tree.this
    table_node = schema.this if isinstance(schema, exp.Schema) else schema
    table = _table_name(table_node, statement)
    columns: list[tuple[str, str | None]] = []
    keys: list[str] = []
    # CREATE TABLE ... LIKE / AS SELECT / PARTITION OF names no columns: the rows will show them
    for item in schema.expressions if isinstance(schema, exp.Schema) else []:
        if isinstance(item, exp.ColumnDef):
            name = _plain_name(item.this, "column name", statement)
            columns.append((name, _column_type(item, table, name, statement)))
            if _is_key(item):
                keys.append(name)
        elif isinstance(item, exp.PrimaryKey):
            keys.extend(_key_names(item, statement))
        elif isinstance(item, exp.Constraint):
            for part in item.expressions:
                if isinstance(part, exp.PrimaryKey):
                    keys.extend(_key_names(part, statement))
    return [statement.change(table, CREATE_TABLE, columns=tuple(columns), keys=tuple(dict.fromkeys(keys)))]


def _alter(tree: exp.Alter, dialect: Dialect, statement: _Statement) -> list[SchemaChange]:
    if (tree.args.get("kind") or "").upper() != "TABLE":
        return []
    table = _table_name(tree.this, statement)
    changes: list[SchemaChange] = []
    renames: list[SchemaChange] = []  # MySQL may rename and change columns at once: columns first

    def add(column_def: exp.ColumnDef) -> None:
        name = _plain_name(column_def.this, "column name", statement)
        column_type = _column_type(column_def, table, name, statement)
        keys = (name,) if _is_key(column_def) else ()
        changes.append(statement.change(table, ADD_COLUMN, column=name, type=column_type, keys=keys))

    for action in tree.args.get("actions") or []:
        if isinstance(action, exp.ColumnDef):
            add(action)
        elif isinstance(action, exp.Schema):  # ADD (a int, b int)
            for item in action.expressions:
                if isinstance(item, exp.ColumnDef):
                    add(item)
        elif isinstance(action, exp.Drop):
            if (action.args.get("kind") or "").upper() == "COLUMN":
                for column in action.args.get("tables") or []:
                    name = _plain_name(column, "column name", statement)
                    changes.append(statement.change(table, DROP_COLUMN, column=name))
        elif isinstance(action, exp.RenameColumn):
            old = _plain_name(action.this, "column name", statement)
            new = _plain_name(action.args.get("to"), "column name", statement)
            changes.append(statement.change(table, RENAME_COLUMN, column=old, new_name=new))
        elif isinstance(action, exp.ModifyColumn):  # MySQL MODIFY / CHANGE, Oracle MODIFY
            column_def = action.this
            if not isinstance(column_def, exp.ColumnDef):
                raise _Unreadable("MODIFY names no column definition", risky=True)
            name = _plain_name(column_def.this, "column name", statement)
            old_node = action.args.get("rename_from")
            old = _plain_name(old_node, "column name", statement) if old_node is not None else name
            if old != name:
                changes.append(statement.change(table, RENAME_COLUMN, column=old, new_name=name))
            column_type = _column_type(column_def, table, name, statement)
            if column_type is not None:
                changes.append(statement.change(table, MODIFY_COLUMN, column=name, type=column_type))
        elif isinstance(action, exp.AlterColumn):  # PostgreSQL ALTER COLUMN c [SET DATA] TYPE t
            dtype = action.args.get("dtype")
            if isinstance(dtype, exp.DataType):
                name = _plain_name(action.this, "column name", statement)
                column_type = _column_type(exp.ColumnDef(this=action.this, kind=dtype), table, name, statement)
                changes.append(statement.change(table, MODIFY_COLUMN, column=name, type=column_type))
        elif isinstance(action, exp.AlterRename):
            new_table = _table_name(action.this, statement)
            renames.append(statement.change(table, RENAME_TABLE, new_name=new_table))
        elif isinstance(action, exp.Command):
            _opaque(str(action.this), _command_text(action.expression), dialect, top_level=False)
        # anything else (constraints, indexes, defaults, table options) changes no column
    return changes + renames


# --- opaque commands ------------------------------------------------------------------------------


def _command_text(expression: Any) -> str:
    if isinstance(expression, exp.Literal):
        return str(expression.this)
    if isinstance(expression, exp.Expression):
        return expression.sql()
    return str(expression or "")


@dataclass(frozen=True)
class _Word:
    key: str  # first word, upper case (multi-word tokens such as PRIMARY KEY give PRIMARY)
    text: str
    token_type: TokenType


def _words(text: str, dialect: Dialect) -> list[_Word]:
    try:
        tokens = dialect.tokenize(text)
    except TokenError as exc:
        raise _Unreadable(f"cannot split it into words ({exc})") from None
    return [_Word((t.text.upper().split() or [""])[0], t.text, t.token_type) for t in tokens]


def _opaque(verb: str, rest: str, dialect: Dialect, *, top_level: bool) -> None:
    """Decide on a clause sqlglot reads only as an opaque command.

    Raises :class:`_Unreadable` (``risky``) when it may change a column or a table, and
    :class:`_Harmless` when it cannot (another dialect may still read the statement fully).
    """
    verb = verb.strip().upper()
    words = _words(rest, dialect)
    if top_level:
        keys = [w.key for w in words]
        if not keys:
            raise _Unreadable(f"{verb} names nothing")
        if verb == "RENAME" and keys[0] != "USER":
            raise _Unreadable("RENAME is not written in a form cdclake reads", risky=True)
        if verb == "TRUNCATE":
            raise _Unreadable("TRUNCATE is not written in a form cdclake reads", risky=True)
        if verb in ("CREATE", "DROP"):
            head = [k for k in keys[:6] if k not in _TABLE_PREFIXES]
            if "TABLE" in head[:2]:  # one unknown word allowed: CREATE BLOCKCHAIN TABLE
                raise _Unreadable(f"{verb} TABLE is not written in a form cdclake reads", risky=True)
        if verb != "ALTER" or keys[0] != "TABLE":
            raise _Harmless
        words = _skip_table_name(words[1:])
        if not words:
            raise _Unreadable("ALTER TABLE names no change")
    for clause in _clauses(words):
        first = clause[0].key
        second = clause[1].key if len(clause) > 1 else ""
        if (
            (first in ("ADD", "DROP", "MODIFY", "CHANGE", "RENAME") and second not in _NOT_COLUMNS)
            or (first == "ALTER" and any(w.key == "TYPE" for w in clause))
            or (first == "SET" and second in ("SCHEMA", "UNUSED"))
        ):
            shown = bounded_text(" ".join(w.text for w in clause), 80)
            raise _Unreadable(
                f"clause {shown!r} may change a column or the table but is not written in a form cdclake reads",
                risky=True,
            )
    raise _Harmless


def _skip_table_name(words: list[_Word]) -> list[_Word]:
    index = 0
    while index < len(words) and words[index].key in ("IF", "EXISTS", "ONLY"):
        index += 1
    index += 1  # the name, then .part pairs
    while index + 1 < len(words) and words[index].token_type == TokenType.DOT:
        index += 2
    return words[index:]


def _clauses(words: list[_Word]) -> Iterable[list[_Word]]:
    """Clauses of an ALTER TABLE: split at commas outside parentheses."""
    depth, current = 0, []
    for word in words:
        if word.token_type == TokenType.L_PAREN:
            depth += 1
        elif word.token_type == TokenType.R_PAREN:
            depth = max(depth - 1, 0)
        elif word.token_type == TokenType.COMMA and depth == 0:
            if current:
                yield current
            current = []
            continue
        current.append(word)
    if current:
        yield current


# --- statements -----------------------------------------------------------------------------------


def _split(text: str, dialects: dict[str, Dialect]) -> list[str]:
    """Statements of a DDL text, split at ``;`` tokens (not inside quotes or comments)."""
    problems = []
    for name, dialect in dialects.items():
        try:
            tokens = dialect.tokenize(text)
        except TokenError as exc:
            problems.append(f"{name}: {exc}")
            continue
        depth = deepest = 0
        for token in tokens:
            if token.token_type == TokenType.L_PAREN:
                depth += 1
                deepest = max(deepest, depth)
            elif token.token_type == TokenType.R_PAREN:
                depth -= 1
        if deepest > MAX_NESTING:
            raise DdlError(
                f"DDL text {bounded_text(text, MAX_QUOTE_CHARS)!r} nests parentheses {deepest} deep; "
                f"DDL needs at most {MAX_NESTING}"
            )
        statements: list[str] = []
        current: list[Token] = []
        for token in [*tokens, None]:
            if token is None or token.token_type == TokenType.SEMICOLON:
                if current:
                    statements.append(text[current[0].start : current[-1].end + 1])
                current = []
            else:
                current.append(token)
        if len(statements) > MAX_STATEMENTS:
            raise DdlError(
                f"DDL text {bounded_text(text, MAX_QUOTE_CHARS)!r} holds {len(statements)} statements; "
                f"cdclake reads at most {MAX_STATEMENTS} per event"
            )
        return statements
    raise DdlError(
        f"DDL text {bounded_text(text, MAX_QUOTE_CHARS)!r} cannot be split into statements: {'; '.join(problems)}"
    )


_TOKEN_REPR = re.compile(r"<Token token_type: [^,]*, text: (.*?), line: \d+, col: \d+, .*?>")


def _parse_problem(exc: SqlglotError) -> str:
    errors = getattr(exc, "errors", None) or []
    if errors and isinstance(errors[0], dict) and errors[0].get("description"):
        first = errors[0]
        description = str(first["description"])
        if "TokenType.SENTINEL" in description:  # sqlglot shows its end-of-input marker
            description = description.split(" but got ")[0] + " but the statement ends"
        description = _TOKEN_REPR.sub(lambda m: repr(m[1]), description)
        return f"{bounded_text(description, 120)} (line {first.get('line')}, column {first.get('col')})"
    return bounded_text(str(exc).splitlines()[0], 120) if str(exc) else type(exc).__name__


def _joined(problems: list[tuple[str, str]]) -> str:
    """``mysql, oracle: X; postgres: Y``: dialects that failed the same way are named together."""
    grouped: dict[str, list[str]] = {}
    for dialect, problem in problems:
        grouped.setdefault(problem, []).append(dialect)
    return "; ".join(f"{', '.join(dialects)}: {problem}" for problem, dialects in grouped.items())


def _read_statement(statement: _Statement, dialects: dict[str, Dialect]) -> list[SchemaChange]:
    """The changes of one statement, read with the first dialect that reads it fully."""
    problems: list[tuple[str, str]] = []
    harmless = risky = False
    for name, dialect in dialects.items():
        try:
            parser = dialect.parser(max_nodes=MAX_AST_NODES)
            trees = [t for t in parser.parse(dialect.tokenize(statement.text), statement.text) if t is not None]
        except SqlglotError as exc:
            problems.append((name, _parse_problem(exc)))
            continue
        except RecursionError:
            problems.append((name, "nested too deeply"))
            continue
        except (ValueError, TypeError, AttributeError, IndexError, KeyError) as exc:  # sqlglot on odd input
            problems.append((name, f"the parser failed ({type(exc).__name__}: {bounded_text(str(exc), 80)})"))
            continue
        if len(trees) != 1:
            problems.append((name, f"reads {len(trees)} statements"))
            continue
        try:
            return _interpret(trees[0], dialect, statement)
        except _Harmless:
            harmless = True
        except _Unreadable as exc:
            problems.append((name, str(exc)))
            risky = risky or exc.risky
    if harmless and not risky:
        logger.info("%s changes no column or table; skipped", statement.where())
        return []
    hint = "" if len(dialects) == 1 else " (naming the source dialect applies its own quoting and comment rules)"
    raise DdlError(f"cannot read {statement.where()}: {_joined(problems)}{hint}")


def parse_ddl(
    text: str,
    *,
    dialect: str | None = None,
    default_table: str | None = None,
    seq: str | None = None,
    source_file: str | None = None,
    source_offset: int | None = None,
) -> list[SchemaChange]:
    """The schema changes DDL text makes, in statement order (nothing is executed).

    ``dialect`` is ``mysql``, ``postgres`` or ``oracle``; None tries them in that order for each
    statement and takes the first that reads it fully. Guessing is for unknown sources: type rules
    are then the generic ones (name the dialect for Oracle's DATE-with-time and MySQL's bare
    DECIMAL) and ``#`` starts no comment (Oracle names may hold it). Table names are kept as
    written (``schema.table`` or ``table``, unquoted, original case; a quoted name containing a dot
    cannot be told apart from a qualified one): the caller maps them, so ``default_table`` (the
    event's table) only appears in error messages. Statements that change no column or table give
    nothing; text that cannot be read raises :class:`DdlError`.
    """
    if not isinstance(text, str):
        raise DdlError(f"DDL text must be a string, not {type(text).__name__}")
    size = len(text) if len(text) > MAX_DDL_BYTES else len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_DDL_BYTES:
        raise DdlError(
            f"DDL text of {size} bytes is larger than the {MAX_DDL_BYTES} bytes cdclake reads "
            f"(starts {bounded_text(text, MAX_QUOTE_CHARS)!r})"
        )
    flavor = None
    dialects = _GUESSED_DIALECTS
    if dialect is not None:
        flavor = _ALIASES.get(dialect.lower(), dialect.lower())
        if flavor not in DIALECTS:
            raise ValueError(f"unknown DDL dialect {dialect!r}: expected one of {', '.join(DIALECTS)}")
        dialects = {flavor: _NAMED_DIALECTS[flavor]}
    texts = _split(text, dialects)
    changes: list[SchemaChange] = []
    for number, statement_text in enumerate(texts, start=1):
        statement = _Statement(statement_text, number, len(texts), flavor, seq, source_file, source_offset)
        try:
            changes.extend(_read_statement(statement, dialects))
        except DdlError as exc:
            if default_table:
                raise DdlError(f"{exc} (event of table {default_table})") from None
            raise
    return changes
