"""The logical change stream that every format's benchmark files encode.

One seeded stream of row changes over a few tables (10-20 columns of mixed types) is written
in each vendor encoding, so every format decodes the same changes and must end in the same
table; the stream also keeps that expected final state. Values are kept raw (decimals as
unscaled integers, timestamps as epoch milliseconds, dates as epoch days) and formatted by
each writer the way its vendor writes them.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

#: First event's time (epoch ms); events are 1 ms apart.
BASE_MS = 1_717_200_000_000  # 2024-06-01T00:00:00Z
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)

#: Share of each logical operation once a table has rows (the rest of the time: insert).
OP_MIX = (("insert", 0.37), ("full_update", 0.20), ("partial_update", 0.30), ("delete", 0.10), ("key_change", 0.03))


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    kind: str  # long | decimal | double | string | bool | ts | date
    nullable: bool = False
    #: A large text column: Debezium sends a placeholder for it when it did not change.
    lob: bool = False
    precision: int = 0
    scale: int = 0


@dataclass(frozen=True)
class Table:
    owner: str
    name: str
    columns: tuple[Column, ...]
    keys: tuple[str, ...]
    weight: float

    @functools.cached_property
    def full_name(self) -> str:
        return f"{self.owner}.{self.name}"

    @functools.cached_property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @functools.cached_property
    def key_idx(self) -> tuple[int, ...]:
        names = self.names
        return tuple(names.index(k) for k in self.keys)

    @functools.cached_property
    def value_idx(self) -> tuple[int, ...]:
        keys = set(self.key_idx)
        return tuple(i for i in range(len(self.columns)) if i not in keys)


def _c(name: str, kind: str, **kw) -> Column:
    return Column(name, kind, **kw)


TABLES: tuple[Table, ...] = (
    Table(
        "SHOP",
        "CUSTOMERS",
        (
            _c("CUSTOMER_ID", "long"),
            _c("FIRST_NAME", "string"),
            _c("LAST_NAME", "string"),
            _c("EMAIL", "string"),
            _c("PHONE", "string", nullable=True),
            _c("CITY", "string"),
            _c("COUNTRY", "string"),
            _c("ADDRESS", "string", nullable=True, lob=True),
            _c("CREATED_AT", "ts"),
            _c("BIRTH_DATE", "date", nullable=True),
            _c("CREDIT_LIMIT", "decimal", precision=12, scale=2),
            _c("IS_ACTIVE", "bool"),
            _c("LOYALTY_SCORE", "double", nullable=True),
        ),
        ("CUSTOMER_ID",),
        0.15,
    ),
    Table(
        "SHOP",
        "PRODUCTS",
        (
            _c("PRODUCT_ID", "long"),
            _c("SKU", "string"),
            _c("NAME", "string"),
            _c("CATEGORY", "string"),
            _c("PRICE", "decimal", precision=10, scale=2),
            _c("WEIGHT_KG", "double"),
            _c("IN_STOCK", "bool"),
            _c("STOCK_QTY", "long"),
            _c("UPDATED_AT", "ts"),
            _c("DESCRIPTION", "string", nullable=True, lob=True),
        ),
        ("PRODUCT_ID",),
        0.15,
    ),
    Table(
        "SHOP",
        "ORDERS",
        (
            _c("ORDER_ID", "long"),
            _c("CUSTOMER_ID", "long"),
            _c("STATUS", "string"),
            _c("ORDER_TS", "ts"),
            _c("SHIP_DATE", "date", nullable=True),
            _c("AMOUNT", "decimal", precision=12, scale=2),
            _c("TAX", "decimal", precision=10, scale=2),
            _c("DISCOUNT", "double"),
            _c("ITEM_COUNT", "long"),
            _c("CURRENCY", "string"),
            _c("CHANNEL", "string"),
            _c("IS_GIFT", "bool"),
            _c("PRIORITY", "long"),
            _c("WAREHOUSE", "string"),
            _c("NOTE", "string", nullable=True, lob=True),
            _c("UPDATED_AT", "ts"),
        ),
        ("ORDER_ID",),
        0.30,
    ),
    Table(
        "SHOP",
        "ORDER_LINES",
        (
            _c("ORDER_ID", "long"),
            _c("LINE_NO", "long"),
            _c("PRODUCT_ID", "long"),
            _c("QTY", "long"),
            _c("UNIT_PRICE", "decimal", precision=10, scale=2),
            _c("LINE_TOTAL", "decimal", precision=12, scale=2),
            _c("DISCOUNT_PCT", "double"),
            _c("TAX_RATE", "double"),
            _c("STATUS", "string"),
            _c("SHIPPED", "bool"),
            _c("SHIP_TS", "ts", nullable=True),
            _c("RETURN_REASON", "string", nullable=True),
            _c("WAREHOUSE", "string"),
            _c("BIN", "string"),
            _c("PICKER", "string"),
            _c("CREATED_AT", "ts"),
            _c("UPDATED_AT", "ts"),
            _c("GIFT_WRAP", "bool"),
            _c("COMMENT", "string", nullable=True, lob=True),
            _c("PROMO_CODE", "string", nullable=True),
        ),
        ("ORDER_ID", "LINE_NO"),
        0.40,
    ),
)

# Text pools: some non-ASCII (real names are), nothing that needs escaping in any format
# (no delimiters, no ']]>', never the empty string or the text NULL).
_FIRST = ["Anna", "Bernd", "Chloé", "Dmitri", "Eva", "François", "Günther", "Hana", "Ines", "José", "Kai", "Łukasz"]
_LAST = ["Müller", "Smith", "García", "Rossi", "Nowak", "Dubois", "Sørensen", "Tanaka", "O'Brien", "Kovač", "Lee"]
_CITY = ["Berlin", "São Paulo", "Kraków", "Zürich", "Lyon", "Osaka", "Austin", "Reykjavík", "Porto", "Tallinn"]
_WORDS = [
    "fast",
    "blue",
    "steel",
    "organic",
    "compact",
    "wireless",
    "heavy-duty",
    "vintage",
    "smart",
    "eco",
    "premium",
    "bundle",
    "refill",
    "spare",
    "größe",
    "café",
]
_STATUS = ["NEW", "PAID", "PICKING", "SHIPPED", "DELIVERED", "RETURNED", "CANCELLED"]
_CATEGORY = ["tools", "garden", "kitchen", "toys", "books", "outdoor", "office", "audio"]


@functools.lru_cache(maxsize=4096)
def _day(days: int) -> str:
    return (_EPOCH_DATE + dt.timedelta(days=days)).isoformat()


def ts_text(ms: int, sep: str = " ") -> str:
    """``YYYY-MM-DD HH:MM:SS.ffffff`` in UTC (the way GoldenGate and Replicate write times)."""
    days, rest = divmod(ms, 86_400_000)
    hours, rest = divmod(rest, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    return f"{_day(days)}{sep}{hours:02d}:{minutes:02d}:{seconds:02d}.{millis:03d}000"


def time_digits(ms: int) -> str:
    """``YYYYMMDDhhmmssff``: the 16 time digits that start a Replicate ``changeSequence``."""
    d = _EPOCH + dt.timedelta(milliseconds=ms)
    return f"{d:%Y%m%d%H%M%S}{ms % 1000 // 10:02d}"


def date_text(days: int) -> str:
    return _day(days)


def dec_text(unscaled: int, scale: int) -> str:
    """An exact decimal's text from its unscaled integer (``123456``, 2 -> ``1234.56``)."""
    sign = "-" if unscaled < 0 else ""
    whole, frac = divmod(abs(unscaled), 10**scale)
    return f"{sign}{whole}.{frac:0{scale}d}" if scale else f"{sign}{whole}"


def dec_float(unscaled: int, scale: int) -> float:
    """The decimal as the nearest double (a correctly rounded division: its repr is the decimal's text)."""
    return unscaled / 10**scale


def text_of(column: Column) -> Callable[[object], str]:
    """How the text formats (delimited, XML, CSV) write a non-null value of ``column``."""
    kind, scale = column.kind, column.scale
    if kind == "decimal":
        return lambda v: dec_text(v, scale)  # type: ignore[arg-type]
    if kind == "ts":
        return ts_text  # type: ignore[return-value]
    if kind == "date":
        return date_text  # type: ignore[return-value]
    if kind == "bool":
        return lambda v: "true" if v else "false"
    if kind == "double":
        return repr
    return str


def text(column: Column, value) -> str | None:
    """A value as text (None for NULL)."""
    return None if value is None else text_of(column)(value)


@dataclass(slots=True)
class Change:
    """One logical row change; each writer encodes it as its vendor would."""

    n: int  # position in the stream (1-based): every format's ordering field derives from it
    table: Table
    op: str  # I, U, D
    before: list | None  # the whole row before (U, D)
    after: list | None  # the whole row after (I, U)
    changed: tuple[int, ...]  # column indexes an update changed
    partial: bool = False  # the source logged only the key and the changed columns
    key_change: bool = False

    @property
    def ms(self) -> int:
        return BASE_MS + self.n


@dataclass
class Stream:
    """A seeded change stream of ``events`` changes; after iterating, ``rows`` is the final state."""

    events: int
    seed: int = 7
    tables: tuple[Table, ...] = TABLES
    rows: dict[str, dict[tuple, list]] = field(default_factory=dict)
    mix: Counter = field(default_factory=Counter)

    def __iter__(self) -> Iterator[Change]:
        rnd = random.Random(self.seed)
        self.rows = {t.full_name: {} for t in self.tables}
        self.mix = Counter()
        live: dict[str, list[tuple]] = {t.full_name: [] for t in self.tables}
        where: dict[str, dict[tuple, int]] = {t.full_name: {} for t in self.tables}
        counters = {t.full_name: 0 for t in self.tables}
        weights = [t.weight for t in self.tables]
        bounds, total = [], 0.0
        for _, share in OP_MIX:
            total += share
            bounds.append(total)

        def add(table: Table, key: tuple, row: list) -> None:
            name = table.full_name
            where[name][key] = len(live[name])
            live[name].append(key)
            self.rows[name][key] = row

        def remove(table: Table, key: tuple) -> None:
            name = table.full_name
            index = where[name].pop(key)
            last = live[name].pop()
            if index < len(live[name]):
                live[name][index] = last
                where[name][last] = index
            del self.rows[name][key]

        def new_key(table: Table) -> tuple:
            counters[table.full_name] += 1
            serial = counters[table.full_name]
            if len(table.keys) == 2:
                return (rnd.randrange(1, 400_000), serial)
            return (serial,)

        for n in range(1, self.events + 1):
            table = rnd.choices(self.tables, weights)[0]
            name = table.full_name
            roll = rnd.random()
            op = "insert"
            if live[name]:
                op = next(label for (label, _), bound in zip(OP_MIX, bounds, strict=True) if roll < bound)
            self.mix[op] += 1
            ms = BASE_MS + n
            if op == "insert":
                key = new_key(table)
                row = self._row(rnd, table, key, ms)
                add(table, key, row)
                yield Change(n, table, "I", None, list(row), tuple(range(len(table.columns))))
                continue
            key = live[name][rnd.randrange(len(live[name]))]
            old = self.rows[name][key]
            if op == "delete":
                remove(table, key)
                yield Change(n, table, "D", old, None, ())
                continue
            new = list(old)
            if op == "key_change":
                remove(table, key)
                fresh = new_key(table)
                for i, v in zip(table.key_idx, fresh, strict=True):
                    new[i] = v
                add(table, fresh, new)
                yield Change(n, table, "U", old, new, table.key_idx, key_change=True)
                continue
            partial = op == "partial_update"
            count = rnd.randint(1, 3) if partial else rnd.randint(2, 5)
            changed = tuple(sorted(rnd.sample(table.value_idx, count)))
            for i in changed:
                new[i] = self._value(rnd, table.columns[i], ms)
            self.rows[name][key] = new
            yield Change(n, table, "U", old, new, changed, partial=partial)

    def _row(self, rnd: random.Random, table: Table, key: tuple, ms: int) -> list:
        row = [self._value(rnd, c, ms) for c in table.columns]
        for i, v in zip(table.key_idx, key, strict=True):
            row[i] = v
        return row

    @staticmethod
    def _value(rnd: random.Random, column: Column, ms: int):
        if column.nullable and rnd.random() < 0.2:
            return None
        kind, name = column.kind, column.name
        if kind == "long":
            return rnd.randrange(1, 1_000_000)
        if kind == "decimal":
            return rnd.randrange(0, 10 ** (column.precision - 3))
        if kind == "double":
            return round(rnd.random() * 100, 4)
        if kind == "bool":
            return rnd.random() < 0.5
        if kind == "ts":
            return ms - rnd.randrange(0, 90 * 86_400_000)
        if kind == "date":
            return 19_000 + rnd.randrange(0, 1_200)
        if name in ("FIRST_NAME", "PICKER"):
            return rnd.choice(_FIRST)
        if name == "LAST_NAME":
            return rnd.choice(_LAST)
        if name == "CITY":
            return rnd.choice(_CITY)
        if name == "EMAIL":
            return f"{rnd.choice(_FIRST).lower()}.{rnd.randrange(10**6)}@example.com"
        if name == "STATUS":
            return rnd.choice(_STATUS)
        if name == "CATEGORY":
            return rnd.choice(_CATEGORY)
        if name in ("COUNTRY", "CURRENCY"):
            return rnd.choice(("DE", "FR", "US", "PL", "JP", "BR")) if name == "COUNTRY" else rnd.choice(("EUR", "USD"))
        if column.lob:
            return " ".join(rnd.choices(_WORDS, k=rnd.randint(8, 30)))
        return f"{rnd.choice(_WORDS)}-{rnd.randrange(10**5)}"
