"""Each compiled helper (``cdclake/native/_*.c``; ``cdclake/_native/`` before the move) beside the best way a
well-kept library does the same job, on realistic inputs: same answer? how much slower? (issue 57, item 5; results:
``benchmarks/results/2026-12-07-native-vs-library.md``).

    .venv/bin/python benchmarks/scripts/native_vs_library.py [--scale 1.0] [--repeat 5] [--markdown PATH]
        [--only first_entries bracket ...]

For every C function: a library equivalent (pyarrow.compute, numpy, msgspec, zlib), a check that the two
answers are identical on the same inputs (values synthesized as the bench stream writes them, with a sprinkle
of edge cases), and the best of ``--repeat`` warm runs of each, interleaved, in this one process (wall time, and
this process's CPU time as a cross-check on a shared machine). Each side is timed from what its caller holds (a
``pa.Array``, a list of ``Raw`` texts) to what its caller goes on with (numpy arrays, Arrow arrays), so the
buffer plumbing the C call needs is counted on the C side.

Verdict (issue 57): "replace with library" where an identical library way takes at most 1.2x the C time, else
"keep C". The script imports nothing of cdclake but the compiled modules (it ran while the package was moved).
"""

from __future__ import annotations

import argparse
import base64
import gc
import glob
import importlib
import importlib.machinery
import importlib.util
import sys
import time
import zlib
from collections.abc import Callable
from itertools import chain, pairwise
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------------------------------------------
# The compiled modules, wherever they are now


def _native(name: str) -> ModuleType:
    """``cdclake._native.<name>`` or ``cdclake.native.<name>`` (with or without the underscore); failing those
    (the package half moved), the built extension file itself."""
    for package in ("cdclake.native", "cdclake._native"):
        for module in (name, name.lstrip("_")):
            try:
                return importlib.import_module(f"{package}.{module}")
            except Exception:
                continue
    for folder in ("native", "_native"):
        for path in sorted(glob.glob(str(ROOT / "cdclake" / folder / f"{name}.*.so"))):
            loader = importlib.machinery.ExtensionFileLoader(name, path)
            spec = importlib.util.spec_from_file_location(name, path, loader=loader)
            module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
            loader.exec_module(module)
            return module
    raise SystemExit(f"{name}: not built (make setup) under cdclake/native or cdclake/_native")


IMAGE_INDEX = _native("_image_index")
JSON_OBJECTS = _native("_json_objects")
TEXT_FORMS = _native("_text_forms")
VALUE_TEXTS = _native("_value_texts")


# --------------------------------------------------------------------------------------------------------------
# Helpers the callers use (copied: the script must not import the package being moved)


def text_buffers(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """As ``arrow_text.text_buffers``: int64 offsets and the data bytes of a string / large_string array."""
    buffers = texts.buffers()
    width = np.int64 if texts.type == pa.large_string() else np.int32
    offsets = np.frombuffer(buffers[1], width)[texts.offset : texts.offset + len(texts) + 1].astype(np.int64)
    data = np.frombuffer(buffers[2], np.uint8) if buffers[2] is not None and len(buffers[2]) else np.zeros(1, np.uint8)
    return offsets, data


def large(texts: list[str]) -> pa.Array:
    return pa.array(texts, pa.large_string())


def bools(mask: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(mask, False).to_numpy(zero_copy_only=False), bool)


def from_texts(offsets: bytes | np.ndarray, data: bytes, count: int) -> pa.Array:
    return pa.Array.from_buffers(pa.large_string(), count, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


# --------------------------------------------------------------------------------------------------------------
# Synthetic values, as the bench stream (``cdclake/bench/model.py``, ``generate.py``) writes them

BASE_MS = 1_717_200_000_000  # 2024-06-01T00:00:00Z
PLACEHOLDER = '"__debezium_unavailable_value"'
FIRST = ["Anna", "Bernd", "Chloé", "Dmitri", "Eva", "François", "Günther", "Hana", "Ines", "José", "Kai", "Łukasz"]
LAST = ["Müller", "Smith", "García", "Rossi", "Nowak", "Dubois", "Sørensen", "Tanaka", "O'Brien", "Kovač", "Lee"]
CITY = ["Berlin", "São Paulo", "Kraków", "Zürich", "Lyon", "Osaka", "Austin", "Reykjavík", "Porto", "Tallinn"]
WORDS = ["fast", "blue", "steel", "organic", "compact", "wireless", "heavy-duty", "vintage", "smart", "eco", "größe"]
STATUS = ["NEW", "PAID", "PICKING", "SHIPPED", "DELIVERED", "RETURNED", "CANCELLED"]
#: A few strings a real column holds now and then: escapes, a control character written raw by no writer.
ODD_STRINGS = ['"say \\"hi\\""', '"a\\\\b"', '"line\\nbreak"', '"tab\\tin"', '"\\u00e9t\\u00e9"', '""']

#: Per table (``bench/model.py``'s): its columns as ``NAME:kind`` (``?``: nullable, ``*``: a LOB Debezium sends as
#: a placeholder when unchanged) and its share of the changes; kinds: long, decimal (12,2), double, string, bool,
#: ts, date.
_TABLE_SPECS = {
    "SHOP.CUSTOMERS": (
        "CUSTOMER_ID:long FIRST_NAME:string LAST_NAME:string EMAIL:string PHONE:string? CITY:string COUNTRY:string "
        "ADDRESS:string?* CREATED_AT:ts BIRTH_DATE:date? CREDIT_LIMIT:decimal IS_ACTIVE:bool LOYALTY_SCORE:double?",
        0.15,
    ),
    "SHOP.PRODUCTS": (
        "PRODUCT_ID:long SKU:string NAME:string CATEGORY:string PRICE:decimal WEIGHT_KG:double IN_STOCK:bool "
        "STOCK_QTY:long UPDATED_AT:ts DESCRIPTION:string?*",
        0.15,
    ),
    "SHOP.ORDERS": (
        "ORDER_ID:long CUSTOMER_ID:long STATUS:string ORDER_TS:ts SHIP_DATE:date? AMOUNT:decimal TAX:decimal "
        "DISCOUNT:double ITEM_COUNT:long CURRENCY:string CHANNEL:string IS_GIFT:bool PRIORITY:long WAREHOUSE:string "
        "NOTE:string?* UPDATED_AT:ts",
        0.30,
    ),
    "SHOP.ORDER_LINES": (
        "ORDER_ID:long LINE_NO:long PRODUCT_ID:long QTY:long UNIT_PRICE:decimal LINE_TOTAL:decimal "
        "DISCOUNT_PCT:double TAX_RATE:double STATUS:string SHIPPED:bool SHIP_TS:ts? RETURN_REASON:string? "
        "WAREHOUSE:string BIN:string PICKER:string CREATED_AT:ts UPDATED_AT:ts GIFT_WRAP:bool COMMENT:string?* "
        "PROMO_CODE:string?",
        0.40,
    ),
}
#: Per table: its columns as (name, kind, nullable, lob), and its share of the changes.
TABLES = {
    table: (
        [
            (name, kind.rstrip("?*"), int("?" in kind), int("*" in kind))
            for name, kind in (column.split(":") for column in spec.split())
        ],
        share,
    )
    for table, (spec, share) in _TABLE_SPECS.items()
}
OUR_TYPES = {"long": "bigint", "decimal": "decimal(12,2)", "double": "double", "string": "string"}
OUR_TYPES |= {"bool": "boolean", "ts": "timestamp", "date": "date"}


def _quoted(texts: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise('"', texts, '"', "")


def _pool(rng: np.random.Generator, pool: list[str], n: int) -> list[str]:
    encoded = np.array([msgspec.json.encode(s).decode() for s in pool], object)
    return encoded[rng.integers(0, len(encoded), n)].tolist()


def kind_values(kind: str, enc: str, n: int, rng: np.random.Generator) -> list[str]:
    """``n`` JSON value texts of a column kind as the encoding writes them (``gg``: GoldenGate JSON, ``dbz``:
    Debezium JSON with Connect decimals and epoch integers)."""
    if kind == "long":
        small = rng.integers(0, 100, n)
        wide = rng.integers(1, 2_000_000, n)
        return pa.array(np.where(rng.random(n) < 0.4, small, wide)).cast(pa.string()).to_pylist()
    if kind == "decimal":
        unscaled = rng.integers(0, 10**8, n)
        unscaled[rng.random(n) < 0.03] *= -1
        if enc == "dbz":
            return [
                '"' + base64.b64encode(int(v).to_bytes(int(v).bit_length() // 8 + 1, "big", signed=True)).decode() + '"'
                for v in unscaled.tolist()
            ]
        return [msgspec.json.encode(v / 100).decode() for v in unscaled.tolist()]  # dec_float: a double's repr
    if kind == "double":
        factor = 10.0 ** rng.integers(0, 4, n)
        values = np.round(rng.uniform(0, 1000, n) * factor) / factor
        values[rng.random(n) < 0.01] = 0.0
        return [msgspec.json.encode(v).decode() for v in values.tolist()]
    if kind == "string":
        choice = rng.integers(0, 5, n)
        names = _pool(rng, [f"{a} {b}" for a in FIRST for b in LAST], n)
        cities = _pool(rng, CITY, n)
        words = _pool(rng, [f"{a} {b} {c}" for a in WORDS for b in WORDS for c in ("kit", "set", "Stück")], n)
        status = _pool(rng, STATUS, n)
        mails = [f'"user{i}@example.com"' for i in rng.integers(0, 10**6, n).tolist()]
        out = np.select([choice == 0, choice == 1, choice == 2, choice == 3], [names, cities, words, status], mails)
        out = out.astype(object)
        odd = np.flatnonzero(rng.random(n) < 0.003)
        out[odd] = np.array(ODD_STRINGS, object)[rng.integers(0, len(ODD_STRINGS), len(odd))]
        return out.tolist()
    if kind == "bool":
        return np.where(rng.random(n) < 0.5, "true", "false").tolist()
    if kind == "ts":
        ms = BASE_MS - rng.integers(0, 5 * 365 * 86_400_000, n)
        if enc == "dbz":
            return pa.array(ms * 1000).cast(pa.string()).to_pylist()  # MicroTimestamp
        return _quoted(pa.array(ms * 1000, pa.timestamp("us")).cast(pa.string())).to_pylist()  # ts_text
    if kind == "date":
        days = 19_875 - rng.integers(0, 30_000, n)
        if enc == "dbz":
            return pa.array(days).cast(pa.string()).to_pylist()
        return _quoted(pa.array(days.astype(np.int32), pa.date32()).cast(pa.string())).to_pylist()
    raise ValueError(kind)


class Images:
    """Image objects of a stream of changes over :data:`TABLES` (before and after images as the encoding writes
    them: whole rows for Debezium, with the LOB placeholder; key and changed columns of partial updates for
    GoldenGate), with per member its column's kind and our type."""

    def __init__(self, enc: str, records: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        names = list(TABLES)
        weights = np.array([TABLES[t][1] for t in names])
        table_of = rng.choice(len(names), records, p=weights / weights.sum())
        ops = rng.choice(4, records, p=[0.4, 0.2, 0.3, 0.1])  # insert, full update, partial update, delete
        self.texts: list[bytes | None] = []  # per image: its object text (None: no image)
        self.members: list[list[tuple[str, str, str]]] = []  # per image: (name, value text, kind)
        columns: dict[str, dict[str, list[str]]] = {}
        for t, name in enumerate(names):
            count = int(np.count_nonzero(table_of == t)) * 2 + 1
            columns[name] = {c: kind_values(k, enc, count, rng) for c, k, _, _ in TABLES[name][0]}
            for c, _, nullable, _ in TABLES[name][0]:
                if nullable:
                    values = columns[name][c]
                    for i in np.flatnonzero(rng.random(count) < 0.1).tolist():
                        values[i] = "null"
        used = {name: 0 for name in names}
        for t, op in zip(table_of.tolist(), ops.tolist(), strict=True):
            name = names[t]
            cols = TABLES[name][0]
            for side in ("before", "after"):
                if (side == "before" and op == 0) or (side == "after" and op == 3):
                    self._add(None)
                    continue
                row = used[name]
                used[name] += 1
                chosen = range(len(cols))
                if op == 2 and enc == "gg":
                    changed = rng.choice(np.arange(1, len(cols)), rng.integers(1, 4), replace=False)
                    chosen = [0, *sorted(changed.tolist())]  # the key and the changed columns
                members = []
                for i in chosen:
                    c, kind, _, lob = cols[i]
                    text = columns[name][c][row]
                    if enc == "dbz" and lob and op in (1, 2) and rng.random() < 0.7:
                        text = PLACEHOLDER
                    members.append((c, text, kind))
                self._add(members)

    def _add(self, members: list[tuple[str, str, str]] | None) -> None:
        self.members.append(members or [])
        if members is None:
            self.texts.append(None)
        else:
            self.texts.append(("{" + ",".join(f'"{c}":{v}' for c, v, _ in members) + "}").encode())

    def flat(self, start: int = 0, stop: int | None = None) -> tuple[pa.Array, pa.Array, np.ndarray]:
        """The members of images ``start:stop``: names, value texts (``large_string``) and kinds."""
        members = list(chain.from_iterable(self.members[start:stop]))
        names = large([m[0] for m in members])
        texts = large([m[1] for m in members])
        return names, texts, np.array([m[2] for m in members], object)


# --------------------------------------------------------------------------------------------------------------
# Timing


def best_of(pairs: list[tuple[str, Callable[[], Any]]], repeat: int) -> dict[str, tuple[float, float]]:
    """Best wall time and best CPU time (this process) of each callable, warmed once, the callables' runs
    interleaved (noise shared). CPU time is the cross-check on a shared machine: another process taking the core
    stretches the wall time of a run, not its CPU time."""
    for _, fn in pairs:
        fn()
    wall = {name: float("inf") for name, _ in pairs}
    cpu = dict(wall)
    for _ in range(repeat):
        for name, fn in pairs:
            gc.collect()
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            cpu[name] = min(cpu[name], time.process_time() - start_cpu)
            wall[name] = min(wall[name], time.perf_counter() - start)
    return {name: (wall[name], cpu[name]) for name, _ in pairs}


def same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and bool(np.array_equal(a, b))
    if isinstance(a, pa.Array) and isinstance(b, pa.Array):
        return (
            a.cast(pa.large_string()).equals(b.cast(pa.large_string()))
            if pa.types.is_string(a.type) or pa.types.is_large_string(a.type)
            else a.equals(b)
        )
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


RESULTS: list[dict[str, Any]] = []
#: ``--only``: the functions measured (a part of the name each); empty: all.
ONLY: list[str] = []


def measure(
    function: str,
    what: str,
    library: str,
    size: str,
    c_way: Callable[[], Any],
    lib_way: Callable[[], Any],
    repeat: int,
    note: str = "",
) -> None:
    if ONLY and not any(word in function for word in ONLY):
        return
    identical = same(c_way(), lib_way())
    times = best_of([("c", c_way), ("lib", lib_way)], repeat)
    (c_wall, c_cpu), (lib_wall, lib_cpu) = times["c"], times["lib"]
    ratio = lib_wall / c_wall
    if not identical:
        verdict = "keep C (library not identical)"
    elif ratio > 1.2:
        verdict = "keep C"
    else:
        verdict = "replace with library"
    row = dict(function=function, what=what, library=library, size=size, c=c_wall, lib=lib_wall, ratio=ratio)
    row |= dict(cpu_ratio=lib_cpu / c_cpu, identical=identical, verdict=verdict, note=note)
    RESULTS.append(row)
    print(
        f"{function:<30} {size:<44} C {c_wall * 1e3:8.2f} ms  lib {lib_wall * 1e3:8.2f} ms  x{ratio:5.2f} "
        f"(CPU x{lib_cpu / c_cpu:5.2f})  identical={identical}  {verdict}",
        flush=True,
    )


# --------------------------------------------------------------------------------------------------------------
# _image_index.first_entries


def c_first_entries(codes, row_offsets, sorted_of_row, low, high, m) -> np.ndarray:
    found = IMAGE_INDEX.first_entries(codes, row_offsets, sorted_of_row, low, high, m)
    return np.frombuffer(found, np.int64).reshape(high - low, m)


def lib_first_entries(codes, row_offsets, sorted_of_row, low, high, m) -> np.ndarray:
    """numpy: each entry's sorted event (a repeat of the rows'), its (name, event) slot (entries outside the block
    or of an unread row sent to a spare slot), and one scatter of the entries' indexes written last to first, so
    that a name's first entry wins."""
    size = (high - low) * m
    sorted_of_entry = np.repeat(sorted_of_row, np.diff(row_offsets))
    slots = (codes - low) * m + sorted_of_entry
    outside = (codes < low) | (codes >= high) | (sorted_of_entry < 0)
    if outside.any():
        slots[outside] = size
    out = np.full(size + 1, -1, np.int64)
    out[slots[::-1]] = np.arange(len(codes) - 1, -1, -1, dtype=np.int64)
    return out[:-1].reshape(high - low, m)


def bench_first_entries(scale: float, repeat: int, rng: np.random.Generator) -> None:
    events, names = int(400_000 * scale), 20
    # a table of 20 columns, 40% of its images partial (the key and 1-3 changed columns), in the events' order;
    # a name twice in a few maps (the first wins, as a map lookup)
    sizes = np.where(rng.random(events) < 0.4, rng.integers(2, 5, events), names)
    matrix = np.empty((events, names), np.int64)
    matrix[:, 0] = 0
    matrix[:, 1:] = np.argsort(rng.random((events, names - 1)), axis=1) + 1  # the changed columns, at random
    full = sizes == names
    matrix[full] = np.arange(names)
    codes = matrix[np.arange(names)[None, :] < sizes[:, None]]  # row by row
    dup = rng.integers(0, len(codes), 50)
    codes[dup] = codes[np.maximum(dup - 1, 0)]
    codes = codes.astype(np.int64)
    row_offsets = np.zeros(events + 1, np.int64)
    np.cumsum(sizes, out=row_offsets[1:])
    order = rng.permutation(events)  # sorted position -> row (sorted by key and sequence)
    sorted_of_row = np.full(events, -1, np.int64)
    sorted_of_row[order] = np.arange(events, dtype=np.int64)
    args = (codes, row_offsets, sorted_of_row, 0, names, events)
    measure(
        "_image_index.first_entries",
        "per column name and sorted event, the flat index of its first map entry (-1: none)",
        "numpy: np.repeat + one scatter (last-to-first)",
        f"{events:,} maps x {names} names, {len(codes):,} entries",
        lambda: c_first_entries(*args),
        lambda: lib_first_entries(*args),
        repeat,
    )


# --------------------------------------------------------------------------------------------------------------
# _json_objects.split_objects


def c_split(images: list[bytes | None]) -> tuple:
    """As ``columnar.split_images`` (up to its Arrow arrays and layouts)."""
    texts = [b"null" if image is None else image for image in images]
    lengths = np.fromiter(map(len, texts), np.int64, len(texts))
    offsets = np.zeros(len(texts) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    counts, layout_of, name_offsets, name_data, value_offsets, value_data, firsts, entries = JSON_OBJECTS.split_objects(
        b"".join(texts), offsets
    )
    names = from_texts(name_offsets, name_data, entries)
    values = from_texts(value_offsets, value_data, entries)
    names.validate(full=True)
    values.validate(full=True)
    layouts = [names.slice(first, count).to_pylist() for first, count in firsts]
    return np.frombuffer(counts, np.int32), np.frombuffer(layout_of, np.int32), names, values, layouts


_IMAGES = msgspec.json.Decoder(list[dict[str, msgspec.Raw] | None])


def lib_split(images: list[bytes | None]) -> tuple:
    """msgspec: every image read at once as ``dict[str, Raw]`` (one decode of the images joined into a JSON
    list), then the names, the values' raw texts and each image's layout gathered in Python."""
    objects = _IMAGES.decode(b"[" + b",".join(b"null" if i is None else i for i in images) + b"]")
    counts = np.fromiter((-1 if o is None else len(o) for o in objects), np.int32, len(objects))
    index: dict[tuple[str, ...], int] = {}
    layout_of = np.fromiter(
        (-1 if o is None else index.setdefault(tuple(o), len(index)) for o in objects), np.int32, len(objects)
    )
    present = [o for o in objects if o]
    names = pa.array(list(chain.from_iterable(present)), pa.large_string())
    raws = list(chain.from_iterable(o.values() for o in present))
    lengths = np.fromiter(map(len, raws), np.int64, len(raws))
    offsets = np.zeros(len(raws) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    values = from_texts(offsets, b"".join(raws), len(raws))
    values.validate(full=True)
    return counts, layout_of, names, values, [list(layout) for layout in index]


# --------------------------------------------------------------------------------------------------------------
# _json_objects.bracket_counts


def c_brackets(text: bytes, froms: np.ndarray, ends: np.ndarray) -> np.ndarray:
    return np.frombuffer(JSON_OBJECTS.bracket_counts(text, froms, ends), np.int64)


def lib_brackets(text: bytes, froms: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """numpy: the positions of the span's ``{`` and ``[`` bytes, counted between each range's bounds."""
    data = np.frombuffer(text, np.uint8)
    at = np.flatnonzero((data == 123) | (data == 91))
    return np.searchsorted(at, ends) - np.searchsorted(at, froms)


def lib_brackets_count(text: bytes, froms: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Python's ``bytes.count`` of each bracket per range (``_shallow_lines``' way)."""
    count = text.count
    return np.fromiter(
        (count(b"{", a, b) + count(b"[", a, b) for a, b in zip(froms.tolist(), ends.tolist(), strict=True)),
        np.int64,
        len(froms),
    )


def lib_brackets_arrow(text: bytes, froms: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """pyarrow: the ranges as values of a binary array (gaps between them as values too), ``count_substring``."""
    bounds = np.empty(2 * len(froms), np.int64)
    bounds[0::2], bounds[1::2] = froms, ends
    pieces = pa.Array.from_buffers(pa.large_binary(), len(bounds) - 1, [None, pa.py_buffer(bounds), pa.py_buffer(text)])
    counts = pc.add(pc.count_substring(pieces, "{"), pc.count_substring(pieces, "["))
    return counts.to_numpy()[0::2].astype(np.int64)


# --------------------------------------------------------------------------------------------------------------
# _text_forms: forms scanned vs. Arrow's RE2 (``match_substring_regex``): the patterns of ``arrow_typing``

LONG = r"^-?(?:0|[1-9][0-9]{0,17})$"
LONG_KEY = r"^(?:0|-?[1-9][0-9]{0,17})$"
NUMBER = r"^-?(?:0|[1-9][0-9]{0,299})(?:\.[0-9]+)?(?:[eE][+-]?[0-9]{1,3})?$"
DOUBLE = (
    r"^(?:0|-?[1-9][0-9]{0,20})(?:\.[0-9]{1,20})?(?:[eE][+-]?[0-9]{1,2})?$"
    r"|^-0(?:\.[0-9]{1,20}(?:[eE][+-]?[0-9]{1,2})?|[eE][+-]?[0-9]{1,2})$"
)
DECIMAL_12_2 = r"^-?(?:0|[1-9][0-9]{0,9})(?:\.[0-9]{1,2})?$"
PLAIN_DECIMAL_INNER = r"^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?$"  # ``_PLAIN_DECIMAL`` without its quotes
UNESCAPED_STRING = r'^"[^"\\]*"$'
PLAIN_STRING = r'^"[^"\\\x00-\x1f]*"$'
YMD = r"(?:19|2[0-9])[0-9]{2}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
ISO_DATE = rf'^"{YMD}"$'
ISO_TIMESTAMP = (
    rf'^"{YMD}[T ](?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{{1,6}})?'
    r'(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])?"$'
)
#: ``number_forms``' parameters of each pattern (``arrow_typing._FORMS``, ``columnar._plain_decimals``).
NUMBER_FORMS = {
    LONG: (18, 0, 0, 1),
    LONG_KEY: (18, 0, 0, 0),
    NUMBER: (300, -1, 3, 1),
    DOUBLE: (21, 20, 2, 0),
    DECIMAL_12_2: (10, 2, 0, 1),
    PLAIN_DECIMAL_INNER: (2**31 - 1, -1, 0, 1),
}
# fmt: off
#: Texts that sit on the edges of the forms, mixed into each input (a few hundred per million).
NUMBER_EDGES = [
    "0", "-0", "-0.0", "00", "01", "-", "", "1.", ".5", "1e5", "1E+05", "1e-100", "1e1000", "-0e1", "1.5e3", "+1",
    "123456789012345678", "1234567890123456789", "-123456789012345678", "12345678901.5", "1.123", "9" * 301,
    "1.00000000000000000001", "1.000000000000000000001", " 1", "1 ", "0x1", "NaN", "true", "null", '"1"',
]
STRING_EDGES = ['""', '"', '"a"b"', '"a\\"', '"\x01"', '"\x1f"', '"\x7f"', '"é"', "'a'", 'a"', '"\u2028"', "null"]
ISO_EDGES = [
    '"2024-02-30"', '"1899-12-31"', '"1900-01-01"', '"2999-12-31"', '"3000-01-01"', '"2024-00-10"', '"2024-13-01"',
    '"2024-01-00"', '"2024-01-32"', '"2024-1-01"', "2024-01-01", '"2024-01-01T00:00:00"', '"2024-01-01 24:00:00"',
    '"2024-01-01 23:59:59.1234567"', '"2024-01-01 23:59:59."', '"2024-01-01T23:59:59Z"', '"2024-01-01T23:59:59+24:00"',
    '"2024-01-01T23:59:59-02:30"', '"2024-01-01T23:59:59+02"', '"2024-01-01 12:60:00"', '"2024-01-01 12:00:60.5"',
    '"2024-01-01 12:00:00.000001Z"', '"2024-01-01x12:00:00"', '"2024-01-01 12:00:00 "', "null",
]
#: Valid JSON values on the edges of the shapes and kinds (``shape_bits`` and ``kind_codes`` read valid JSON).
JSON_EDGES = [
    "-0", "-0.0", "0.0000001", "-0.0000005", "0.000001", "1e5", "1E-7", "12345678901234567890", "-123456789012345678",
    "-1234567890123456789", '""', "[]", "{}", '{"a":[1]}', '"\\n"', '"a\\"b"', "[1,2]", "true", "false", "null",
]
# fmt: on


def with_edges(values: list[str], edges: list[str], rng: np.random.Generator, share: float = 3e-4) -> list[str]:
    out = list(values)
    for i in np.flatnonzero(rng.random(len(out)) < share).tolist():
        out[i] = edges[i % len(edges)]
    return out


def c_number_forms(texts: pa.Array, form: tuple[int, ...]) -> np.ndarray:
    offsets, data = text_buffers(texts)
    return np.frombuffer(TEXT_FORMS.number_forms(data, offsets, *form), np.bool_)


def c_quoted_forms(texts: pa.Array, controls: int) -> np.ndarray:
    offsets, data = text_buffers(texts)
    return np.frombuffer(TEXT_FORMS.quoted_forms(data, offsets, controls), np.bool_)


def c_iso_forms(texts: pa.Array, with_time: int) -> np.ndarray:
    offsets, data = text_buffers(texts)
    return np.frombuffer(TEXT_FORMS.iso_forms(data, offsets, with_time), np.bool_)


def lib_regex(texts: pa.Array, pattern: str) -> np.ndarray:
    return bools(pc.match_substring_regex(texts, pattern))


def lib_long_digits(texts: pa.Array) -> np.ndarray:
    """pyarrow without a regular expression, for ``_LONG``: ``ascii_is_decimal`` of the text after an optional
    ``-``, at most 18 digits, no leading zero unless the text is ``0`` / ``-0``."""
    negative = bools(pc.starts_with(texts, "-"))
    digits = pc.if_else(pa.array(negative), pc.utf8_slice_codeunits(texts, 1), texts)
    offsets, data = text_buffers(digits)
    length = np.diff(offsets)
    first = np.zeros(len(texts), np.uint8)
    present = length > 0
    first[present] = data[offsets[:-1][present]]
    return bools(pc.ascii_is_decimal(digits)) & (length <= 18) & ((first != ord("0")) | (length == 1))


# --------------------------------------------------------------------------------------------------------------
# _text_forms.shape_bits (the numpy passes ``formats/_json_shapes.json_shapes`` holds the C to)

_EXPONENT, _POINT = 1, 2
_SPECIAL = np.zeros(256, np.uint8)
_SPECIAL[[ord("e"), ord("E")]] = _EXPONENT
_SPECIAL[ord(".")] = _POINT
_NUMBER_START = np.zeros(256, bool)
_NUMBER_START[np.frombuffer(b"-0123456789", np.uint8)] = True
_TINY = (b"0.000000", b"-0.000000")


def c_shapes(texts: pa.Array) -> tuple[np.ndarray, ...]:
    offsets, data = text_buffers(texts)
    bits = np.frombuffer(TEXT_FORMS.shape_bits(data, offsets), np.uint8)
    return tuple((bits & bit) != 0 for bit in (1, 2, 4, 8, 16, 32, 64))


def lib_shapes(texts: pa.Array) -> tuple[np.ndarray, ...]:
    """numpy (``_json_shapes.json_shapes``' own path without the C module): the first byte of each text, one
    comparison over every byte for backslashes, and the numbers' bytes alone for exponents and points."""
    offsets, data = text_buffers(texts)
    count = len(texts)
    starts, lengths = offsets[:-1], np.diff(offsets)
    present = lengths > 0
    first = np.zeros(count, np.uint8)
    first[present] = data[starts[present]]
    backslash = np.zeros(count, bool)
    if count and offsets[-1] > offsets[0]:
        at = np.flatnonzero(data[offsets[0] : offsets[-1]] == ord("\\")) + offsets[0]
        backslash[np.searchsorted(offsets, at, side="right") - 1] = True
        backslash &= present
    numeric = _NUMBER_START[first] & present
    exponent, point = np.zeros(count, bool), np.zeros(count, bool)
    rows = np.flatnonzero(numeric)
    if len(rows):
        widths = lengths[rows]
        ends = np.cumsum(widths)
        at = np.arange(int(ends[-1])) + np.repeat(starts[rows] - (ends - widths), widths)
        marks = _SPECIAL[data[at]]
        heads = ends - widths
        exponent[rows] = np.logical_or.reduceat((marks & _EXPONENT) != 0, heads)
        point[rows] = np.logical_or.reduceat((marks & _POINT) != 0, heads)
    spelt = backslash | (first == ord("{")) | (first == ord("[")) | (numeric & exponent)
    if numeric.any():
        tiny = np.zeros(count, bool)
        two = np.flatnonzero(numeric & (first == ord("-")) & (lengths == 2))
        tiny[two[data[starts[two] + 1] == ord("0")]] = True
        for prefix in _TINY:
            width = len(prefix)
            rows = np.flatnonzero(numeric & (first == prefix[0]) & (lengths >= width))
            if len(rows):
                heads = data[starts[rows, None] + np.arange(width)]
                tiny[rows[(heads == np.frombuffer(prefix, np.uint8)).all(axis=1)]] = True
        spelt |= tiny
    spelt &= present
    number = numeric & ~spelt
    null = (first == ord("n")) & (lengths == 4)
    boolean = (first == ord("t")) | (first == ord("f"))
    return null, boolean, first == ord('"'), number, number & ~point, spelt, backslash


# --------------------------------------------------------------------------------------------------------------
# _text_forms.kind_codes (the Arrow path of ``batch_events._kind_codes``, long integers left as code 5)


def c_kind_codes(values: pa.Array) -> np.ndarray:
    offsets, data = text_buffers(values)
    return np.frombuffer(TEXT_FORMS.kind_codes(data, offsets), np.int8)


_OPENERS = np.zeros(256, bool)
_OPENERS[[ord('"'), ord("{"), ord("[")]] = True
_BOOLS = pa.array(["true", "false"])


def lib_kind_codes(values: pa.Array) -> np.ndarray:
    """pyarrow: ``ascii_is_decimal`` of the text (or of its rest after one ``-``), the opening byte, ``is_in``
    true/false and ``equal`` null (``_kind_codes``' Arrow path)."""
    codes = np.zeros(len(values), np.int8)
    offsets, data = text_buffers(values)
    lengths = np.diff(offsets)
    first = np.zeros(len(values), np.uint8)
    present = lengths > 0
    first[present] = data[offsets[:-1][present]]
    integer = bools(pc.ascii_is_decimal(values))
    negative = np.flatnonzero(first == ord("-"))
    if len(negative):
        rest = pc.utf8_slice_codeunits(values.take(pa.array(negative)), 1)
        integer[negative] = bools(pc.ascii_is_decimal(rest))
    digits = lengths - (first == ord("-"))
    codes[integer] = np.where(digits[integer] > 18, 5, 1)
    codes[_OPENERS[first]] = 3
    codes[bools(pc.is_in(values, _BOOLS))] = 4
    codes[bools(pc.equal(values, "null"))] = -1
    return codes


# --------------------------------------------------------------------------------------------------------------
# _text_forms.judge (``arrow_typing._valid_values``' verdicts, per type by Arrow's regular expressions)

_JUDGE_NONE, _JUDGE_NUMBER, _JUDGE_STRING, _JUDGE_BOOL, _JUDGE_ASK = range(5)
_TYPE_FORM = {"bigint": LONG, "double": NUMBER, "decimal(12,2)": DECIMAL_12_2}


def judgements(types: dict[str, str]) -> tuple[np.ndarray, np.ndarray]:
    kinds = np.zeros(len(types), np.int8)
    params = np.zeros((len(types), 4), np.int32)
    for index, type_name in enumerate(types.values()):
        if type_name == "string":
            kinds[index] = _JUDGE_STRING
        elif type_name == "boolean":
            kinds[index] = _JUDGE_BOOL
        elif type_name in _TYPE_FORM:
            kinds[index], params[index] = _JUDGE_NUMBER, NUMBER_FORMS[_TYPE_FORM[type_name]]
        elif type_name in ("timestamp", "date"):
            kinds[index] = _JUDGE_ASK
    return kinds, params


def c_judge(texts: pa.Array, column: np.ndarray, types: dict[str, str]) -> np.ndarray:
    offsets, data = text_buffers(texts)
    kinds, params = judgements(types)
    return np.frombuffer(TEXT_FORMS.judge(data, offsets, column, kinds, params), np.int8)


def lib_judge(texts: pa.Array, column: np.ndarray, types: dict[str, str]) -> np.ndarray:
    """pyarrow: ``equal`` null, then per column type its entries taken and judged by the type's regular
    expression (``match_substring_regex``) or ``is_in`` true/false (``_valid_values``' path)."""
    verdict = np.zeros(len(texts), np.int8)
    null = bools(pc.equal(texts, "null"))
    type_names = list(dict.fromkeys(types.values()))
    type_of = np.array([type_names.index(t) for t in types.values()] + [-1], np.int64)  # column -1: none
    codes = type_of[column]
    codes[null] = -1
    order = np.argsort(codes, kind="stable")
    cuts = np.searchsorted(codes[order], np.arange(len(type_names) + 1))
    for code, type_name in enumerate(type_names):
        rows = order[cuts[code] : cuts[code + 1]]
        if not len(rows):
            continue
        if type_name in ("timestamp", "date"):
            verdict[rows] = 2
            continue
        chosen = texts.take(pa.array(rows))
        if type_name == "string":
            verdict[rows] = np.where(lib_regex(chosen, UNESCAPED_STRING), 1, 2)
        elif type_name == "boolean":
            verdict[rows] = bools(pc.is_in(chosen, _BOOLS))
        elif type_name in _TYPE_FORM:
            verdict[rows] = lib_regex(chosen, _TYPE_FORM[type_name])
    verdict[null] = 3
    return verdict


# --------------------------------------------------------------------------------------------------------------
# _text_forms.crc32_buckets


def c_buckets(texts: pa.Array, buckets: int) -> np.ndarray:
    offsets, data = text_buffers(texts)
    return np.frombuffer(TEXT_FORMS.crc32_buckets(data, offsets, buckets), np.int64)


def lib_buckets_distinct(texts: pa.Array, buckets: int) -> np.ndarray:
    """zlib.crc32 once per distinct text (``pc.dictionary_encode``), taken back per value (``text_buckets``'
    own path without the C module)."""
    encoded = pc.dictionary_encode(texts)
    per_text = [zlib.crc32(t.encode("utf-8")) % buckets for t in encoded.dictionary.to_pylist()]
    return np.array(per_text, np.int64)[encoded.indices.to_numpy(zero_copy_only=False)]


def lib_buckets_each(texts: pa.Array, buckets: int) -> np.ndarray:
    """zlib.crc32 of each value's bytes, sliced from the data buffer (no str, no dictionary)."""
    offsets, data = text_buffers(texts)
    raw = data.tobytes()
    bounds = offsets.tolist()
    crc = zlib.crc32
    return np.fromiter((crc(raw[a:b]) for a, b in pairwise(bounds)), np.int64, len(texts)) % buckets


# --------------------------------------------------------------------------------------------------------------
# _value_texts.epoch_texts, connect_decimals, splice

DATE_DAYS, TS_MILLIS, TS_MICROS, TS_NANOS = range(6, 10)
_DAY_US = 86_400_000_000
_MIN_US, _MAX_US = -30_610_224_000_000_000, 253_402_300_799_999_999


def c_epoch(texts: pa.Array, rows: np.ndarray, kinds: np.ndarray) -> tuple[np.ndarray, pa.Array]:
    offsets, data = text_buffers(texts)
    done, out_offsets, out_data = VALUE_TEXTS.epoch_texts(data, offsets, rows, kinds)
    done = np.frombuffer(done, np.bool_)
    return done, from_texts(out_offsets, out_data, int(np.count_nonzero(done)))


def lib_epoch(texts: pa.Array, rows: np.ndarray, kinds: np.ndarray) -> tuple[np.ndarray, pa.Array]:
    """pyarrow casts (``_with_epoch_texts``' own path): the integers by ``cast(int64)``, the instants by numpy,
    their texts by ``cast`` of timestamp[us] / date32 to string, quoted and ``T``/``Z`` added by joins."""
    chosen = texts.take(pa.array(rows))
    offsets, _ = text_buffers(chosen)
    integral = np.diff(offsets) <= 16  # the rows are JSON integers (json_shapes' integer)
    numbers = np.zeros(len(rows), np.int64)
    numbers[integral] = pc.cast(chosen.filter(pa.array(integral)), pa.int64()).to_numpy()
    safe = (kinds != DATE_DAYS) | (np.abs(numbers) <= 4_000_000)
    numbers[~safe] = 0
    micros = np.select(
        [kinds == DATE_DAYS, kinds == TS_MILLIS, kinds == TS_MICROS],
        [numbers * _DAY_US, numbers * 1_000, numbers],
        np.floor_divide(numbers, 1_000),
    )
    done = integral & safe & (micros >= _MIN_US) & (micros <= _MAX_US)
    at = micros[done]
    stamps = pa.array(at, pa.int64()).cast(pa.timestamp("us")).cast(pa.string())
    days = pa.array(at // _DAY_US, pa.int64()).cast(pa.int32()).cast(pa.date32()).cast(pa.string())
    spelt = pc.if_else(
        pa.array(kinds[done] == DATE_DAYS),
        pc.binary_join_element_wise('"', days, '"', ""),
        pc.binary_join_element_wise('"', pc.replace_substring(stamps, " ", "T", max_replacements=1), 'Z"', ""),
    )
    return done, spelt.cast(pa.large_string())


def c_decimals(texts: pa.Array, rows: np.ndarray, scales: np.ndarray) -> tuple[np.ndarray, pa.Array]:
    offsets, data = text_buffers(texts)
    done, out_offsets, out_data = VALUE_TEXTS.connect_decimals(data, offsets, rows, scales)
    done = np.frombuffer(done, np.bool_)
    return done, from_texts(out_offsets, out_data, int(np.count_nonzero(done)))


_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_PAD, _BAD = 64, 255
_SIXES = np.full(256, _BAD, np.uint8)
_SIXES[np.frombuffer(_ALPHABET, np.uint8)] = np.arange(64, dtype=np.uint8)
_SIXES[ord("=")] = _PAD


def base64_numbers(chosen: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """``_connect_decimals._base64_numbers``: the quoted canonical base64 of 1-8 bytes read 4/8/12 characters at
    a time in numpy (no library decodes base64 column-wise: ``binascii`` takes one text a call)."""
    offsets, data = text_buffers(chosen)
    lengths = np.diff(offsets)
    numbers = np.zeros(len(chosen), np.int64)
    read = np.zeros(len(chosen), bool)
    for width in (4, 8, 12):
        rows = np.flatnonzero(lengths == width + 2)
        if not len(rows):
            continue
        chars = data[offsets[rows, None] + np.arange(width + 2)]
        sixes = _SIXES[chars[:, 1:-1]]
        quoted = (chars[:, 0] == ord('"')) & (chars[:, -1] == ord('"'))
        head_ok = (sixes[:, :-2] < 64).all(axis=1)
        last2, last1 = sixes[:, -2], sixes[:, -1]
        pads = np.where(last1 != _PAD, 0, np.where(last2 != _PAD, 1, 2))
        tail_ok = (last1 != _BAD) & (last2 != _BAD) & ~((last2 == _PAD) & (last1 != _PAD))
        ok = quoted & head_ok & tail_ok
        for pad in (0, 1, 2):
            used = width - pad
            size, spare = divmod(6 * used, 8)
            group = np.flatnonzero(ok & (pads == pad))
            if not len(group) or size > 8:
                continue
            last = sixes[group, used - 1]
            canonical = (last & ((1 << spare) - 1)) == 0
            group, last = group[canonical], last[canonical]
            value = np.zeros(len(group), np.uint64)
            for column in range(used - 1):
                value = (value << np.uint64(6)) | sixes[group, column].astype(np.uint64)
            value = (value << np.uint64(6 - spare)) | (last >> spare).astype(np.uint64)
            if size == 8:
                signed = value.view(np.int64)
                keep = signed != np.iinfo(np.int64).min
                group, signed = group[keep], signed[keep]
            else:
                signed = value.astype(np.int64)
                signed = np.where(signed >= 1 << (8 * size - 1), signed - (1 << (8 * size)), signed)
            numbers[rows[group]] = signed
            read[rows[group]] = True
    return numbers, read


def decimal_texts(numbers: np.ndarray, scale: int) -> tuple[np.ndarray, pa.Array]:
    """Which unscaled ``numbers`` ``str(Decimal)`` writes without an exponent, and their texts: Arrow's own
    decimal to string cast of the numbers as decimal128(38, scale) (two int64 words a value, no arithmetic)."""
    magnitude = np.abs(numbers)
    digits = np.ones(len(numbers), np.int64)
    for power in range(1, 19):
        digits += magnitude >= 10**power
    plain = digits - 1 - scale >= -6
    chosen = numbers[plain]
    words = np.empty((len(chosen), 2), np.int64)
    words[:, 0], words[:, 1] = chosen, chosen >> 63  # little-endian int128: the sign extended
    type_ = pa.decimal128(38, scale) if scale <= 38 else pa.decimal256(76, scale)
    if scale > 38:
        words = np.concatenate([words, np.repeat(words[:, 1:], 2, axis=1)], axis=1)
    decimals = pa.Array.from_buffers(type_, len(chosen), [None, pa.py_buffer(words)])
    return plain, decimals.cast(pa.string())


def lib_decimals(texts: pa.Array, rows: np.ndarray, scales: np.ndarray) -> tuple[np.ndarray, pa.Array]:
    """numpy reads the base64, Arrow's decimal cast spells the numbers (one cast per scale)."""
    chosen = texts.take(pa.array(rows))
    numbers, done = base64_numbers(chosen)
    spelt: list[pa.Array] = []
    at: list[np.ndarray] = []
    for scale in np.unique(scales[done]).tolist():
        group = np.flatnonzero(done & (scales == scale))
        plain, text = decimal_texts(numbers[group], scale)
        done[group[~plain]] = False
        at.append(group[plain])
        spelt.append(text)
    if len(spelt) == 1:
        return done, spelt[0].cast(pa.large_string())
    order = np.argsort(np.concatenate(at) if at else np.zeros(0, np.int64), kind="stable")
    joined = pa.concat_arrays([t.cast(pa.large_string()) for t in spelt]) if spelt else large([])
    return done, joined.take(pa.array(order))


def c_splice(texts: pa.Array, rows: np.ndarray, replacements: pa.Array) -> pa.Array:
    """``arrow_text.replaced``' C path."""
    offsets, data = text_buffers(texts)
    new_offsets, new_data = text_buffers(replacements)
    out_offsets, out_data = VALUE_TEXTS.splice(data, offsets, rows, new_offsets, new_data)
    return from_texts(out_offsets, out_data, len(texts))


def lib_splice_mask(texts: pa.Array, rows: np.ndarray, replacements: pa.Array) -> pa.Array:
    """``pc.replace_with_mask`` (``arrow_text.replaced``' own path without the C module)."""
    mask = np.zeros(len(texts), bool)
    mask[rows] = True
    return pc.replace_with_mask(texts, pa.array(mask), replacements)


def lib_splice_take(texts: pa.Array, rows: np.ndarray, replacements: pa.Array) -> pa.Array:
    """pyarrow: the column and the replacements concatenated and taken (each replaced row from the tail)."""
    index = np.arange(len(texts), dtype=np.int64)
    index[rows] = len(texts) + np.arange(len(rows))
    return pa.concat_arrays([texts, replacements]).take(pa.array(index))


# --------------------------------------------------------------------------------------------------------------
# The runs


def spans_of(images: Images, values_per_span: int) -> list[tuple[int, int]]:
    """Images cut into spans of about ``values_per_span`` members (a decode span: 4 MB of records)."""
    cuts, count, start = [], 0, 0
    for i, members in enumerate(images.members):
        count += len(members)
        if count >= values_per_span:
            cuts.append((start, i + 1))
            start, count = i + 1, 0
    if start < len(images.members):
        cuts.append((start, len(images.members)))
    return cuts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="input sizes (1.0: about 1M values)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--markdown", type=Path, help="also write the results table here")
    parser.add_argument("--seed", type=int, default=57)
    parser.add_argument("--only", nargs="*", default=[], help="measure only these functions (parts of names)")
    args = parser.parse_args()
    ONLY.extend(args.only)
    scale, repeat = args.scale, args.repeat
    rng = np.random.default_rng(args.seed)
    n = int(1_000_000 * scale)
    print(
        f"pyarrow {pa.__version__}, numpy {np.__version__}, msgspec {msgspec.__version__}, "
        f"Python {sys.version.split()[0]}"
    )
    print(f"modules: {IMAGE_INDEX.__file__}\n")

    # --- decode side (per 4 MB span of Debezium records: ~1,500 images, ~20k values a call) -------------------
    started = time.perf_counter()
    dbz = Images("dbz", int(36_000 * scale), args.seed)
    gg = Images("gg", int(100_000 * scale), args.seed + 1)
    print(
        f"synthesized {len(dbz.texts):,} Debezium and {len(gg.texts):,} GoldenGate images "
        f"in {time.perf_counter() - started:.1f} s\n"
    )
    dbz_spans = spans_of(dbz, 20_000)

    def per_span(fn: Callable[[int, int], Any]) -> Callable[[], list]:
        return lambda: [fn(a, b) for a, b in dbz_spans]

    members = sum(len(m) for m in dbz.members)
    measure(
        "_json_objects.split_objects",
        "image object texts split into member-name and value-text Arrow columns + layouts",
        "msgspec: decode as list[dict[str, Raw]] + Python gather",
        f"{len(dbz_spans)} spans, {len(dbz.texts):,} images, {members:,} members",
        per_span(lambda a, b: c_split(dbz.texts[a:b])),
        per_span(lambda a, b: lib_split(dbz.texts[a:b])),
        repeat,
    )

    # bracket_counts: the records of each span as Kafka Connect writes them, their schema block skipped
    schema = msgspec.json.encode(
        {
            "type": "struct",
            "fields": [
                {
                    "type": "struct",
                    "fields": [{"type": "int64", "optional": i > 0, "field": f"COLUMN_{i}"} for i in range(16)],
                    "optional": True,
                    "field": f,
                }
                for f in ("before", "after")
            ]
            + [
                {
                    "type": "struct",
                    "fields": [{"type": "string", "optional": False, "field": f"f{i}"} for i in range(19)],
                    "optional": False,
                    "field": "source",
                }
            ],
            "optional": False,
            "name": "server1.SHOP.ORDERS.Envelope",
            "version": 2,
        }
    )
    source = msgspec.json.encode(
        {"version": "2.7.3.Final", "connector": "oracle", "name": "server1", "ts_ms": 1717200000001}
        | {"snapshot": "false", "db": "ORCLPDB1", "sequence": None, "ts_us": 1717200000001000}
        | {"ts_ns": 1717200000001000000, "schema": "SHOP", "table": "ORDERS", "txId": "0000000000000001"}
        | {"scn": "1000000001", "commit_scn": "1000000002", "lcr_position": None, "rs_id": None, "ssn": 0}
        | {"redo_thread": 1, "user_name": "APP"}
    )
    span_inputs = []
    for a, b in dbz_spans:
        lines = []
        for before, after in zip(dbz.texts[a:b:2], dbz.texts[a + 1 : b : 2], strict=False):
            payload = (
                b'{"before":'
                + (before or b"null")
                + b',"after":'
                + (after or b"null")
                + b',"source":'
                + source
                + b',"op":"u","ts_ms":1717200000121,"ts_us":1717200000121000,"ts_ns":1717200000121000000}'
            )
            lines.append(b'{"schema":' + schema + b',"payload":' + payload + b"}\n")
        text = b"".join(lines)
        starts = np.concatenate(([0], np.cumsum([len(line) for line in lines])[:-1])).astype(np.int64)
        ends = np.append(starts[1:], len(text)).astype(np.int64)
        froms = np.minimum(starts + len(b'{"schema":') + len(schema), ends)
        span_inputs.append((text, froms, ends))
    span_bytes = sum(len(t) for t, _, _ in span_inputs)
    for label, lib in (
        ("bytes.count x2 per range (Python loop)", lib_brackets_count),
        ("numpy: flatnonzero({ or [) + searchsorted", lib_brackets),
        ("pyarrow: count_substring x2 on range slices", lib_brackets_arrow),
    ):
        measure(
            "_json_objects.bracket_counts",
            "per byte range of a span, how many bytes are { or [ (the depth bound)",
            label,
            f"{len(span_inputs)} spans, {span_bytes / 2**20:.0f} MiB, "
            f"{sum(len(f) for _, f, _ in span_inputs):,} records",
            lambda: [c_brackets(*s) for s in span_inputs],
            lambda lib=lib: [lib(*s) for s in span_inputs],
            repeat,
        )

    # the span's value column, its kinds as the Debezium decoder gives them
    span_columns = []
    for a, b in dbz_spans:
        names, texts, kinds = dbz.flat(a, b)
        span_columns.append((texts, kinds))
    total_values = sum(len(t) for t, _ in span_columns)
    measure(
        "_text_forms.shape_bits",
        "per JSON value text: null/bool/string/number/integer/respelt/backslash bits",
        "numpy: first byte, backslash scan, numbers' bytes (json_shapes' path)",
        f"{len(span_columns)} spans, {total_values:,} values",
        lambda: [c_shapes(t) for t, _ in span_columns],
        lambda: [lib_shapes(t) for t, _ in span_columns],
        repeat,
    )

    epoch_inputs, decimal_inputs, splice_inputs = [], [], []
    for texts, kinds in span_columns:
        integer = c_shapes(texts)[4]
        code = np.select([kinds == "date", kinds == "ts"], [DATE_DAYS, TS_MICROS], 0)
        rows = np.flatnonzero((code > 0) & integer).astype(np.int64)
        epoch_inputs.append((texts, rows, code[rows].astype(np.int8)))
        rows = np.flatnonzero(kinds == "decimal").astype(np.int64)
        decimal_inputs.append((texts, rows, np.full(len(rows), 2, np.int8)))
    measure(
        "_value_texts.epoch_texts",
        "JSON integer days/µs since epoch -> quoted ISO date / timestamp text",
        "pyarrow: cast(int64), numpy, cast timestamp[us]/date32 -> string, joins",
        f"{len(epoch_inputs)} spans, {sum(len(r) for _, r, _ in epoch_inputs):,} values",
        lambda: [c_epoch(*e) for e in epoch_inputs],
        lambda: [lib_epoch(*e) for e in epoch_inputs],
        repeat,
    )
    measure(
        "_value_texts.connect_decimals",
        "quoted base64 two's-complement bytes + scale -> str(Decimal) text",
        "numpy base64 + pyarrow cast decimal128(38,s) -> string",
        f"{len(decimal_inputs)} spans, {sum(len(r) for _, r, _ in decimal_inputs):,} values",
        lambda: [c_decimals(*d) for d in decimal_inputs],
        lambda: [lib_decimals(*d) for d in decimal_inputs],
        repeat,
    )
    for (texts, rows, kinds), (_, drows, scales) in zip(epoch_inputs, decimal_inputs, strict=True):
        done, spelt = c_epoch(texts, rows, kinds)
        ddone, dspelt = c_decimals(texts, drows, scales)
        at = np.concatenate([rows[done], drows[ddone]])
        order = np.argsort(at)
        splice_inputs.append((texts, at[order], pa.concat_arrays([spelt, dspelt]).take(pa.array(order))))
    for label, lib in (
        ("pyarrow: replace_with_mask", lib_splice_mask),
        ("pyarrow: concat_arrays + take", lib_splice_take),
    ):
        measure(
            "_value_texts.splice",
            "a string column with some rows' texts replaced",
            label,
            f"{len(splice_inputs)} spans, {total_values:,} values, "
            f"{sum(len(r) for _, r, _ in splice_inputs):,} replaced",
            lambda: [c_splice(*s) for s in splice_inputs],
            lambda lib=lib: [lib(*s) for s in splice_inputs],
            repeat,
        )

    # --- one call over a column of ~1M values ------------------------------------------------------------------
    _, mixed, _ = gg.flat()
    mixed = large(with_edges(mixed.slice(0, n).to_pylist(), JSON_EDGES, rng))
    long_texts = large(with_edges(kind_values("long", "gg", n, rng), NUMBER_EDGES, rng))
    double_texts = large(with_edges(kind_values("double", "gg", n, rng), NUMBER_EDGES, rng))
    decimal_texts_ = large(with_edges(kind_values("decimal", "gg", n, rng), NUMBER_EDGES, rng))
    string_texts = large(with_edges(kind_values("string", "gg", n, rng), STRING_EDGES, rng))
    ts_texts = large(with_edges(kind_values("ts", "gg", n, rng), ISO_EDGES, rng))
    date_texts = large(with_edges(kind_values("date", "gg", n, rng), ISO_EDGES, rng))
    inner_decimals = decimal_texts_  # what _plain_decimals scans: a quoted decimal text's inside

    measure(
        "_text_forms.shape_bits",
        "per JSON value text: null/bool/string/number/integer/respelt/backslash bits",
        "numpy: first byte, backslash scan, numbers' bytes (json_shapes' path)",
        f"1 call, {len(mixed):,} GoldenGate values",
        lambda: c_shapes(mixed),
        lambda: lib_shapes(mixed),
        repeat,
    )
    for pattern, texts, label in (
        (LONG, long_texts, "bigint values, _LONG (18,0,0,1)"),
        (LONG_KEY, long_texts, "bigint keys, _LONG_KEY (18,0,0,0)"),
        (NUMBER, double_texts, "double values, _NUMBER (300,-1,3,1)"),
        (DOUBLE, double_texts, "double values, _DOUBLE (21,20,2,0)"),
        (DECIMAL_12_2, decimal_texts_, "decimal(12,2) values (10,2,0,1)"),
        (PLAIN_DECIMAL_INNER, inner_decimals, "decimal text insides (2^31-1,-1,0,1)"),
    ):
        measure(
            "_text_forms.number_forms",
            "per text, whether it is a JSON number of a bounded form",
            "pyarrow: match_substring_regex (RE2)",
            f"{len(texts):,} {label}",
            lambda texts=texts, pattern=pattern: c_number_forms(texts, NUMBER_FORMS[pattern]),
            lambda texts=texts, pattern=pattern: lib_regex(texts, pattern),
            repeat,
        )
    measure(
        "_text_forms.number_forms",
        "(_LONG without a regular expression)",
        "pyarrow: starts_with, utf8_slice, ascii_is_decimal + numpy",
        f"{len(long_texts):,} bigint values, _LONG",
        lambda: c_number_forms(long_texts, NUMBER_FORMS[LONG]),
        lambda: lib_long_digits(long_texts),
        repeat,
    )
    for pattern, controls in ((UNESCAPED_STRING, 1), (PLAIN_STRING, 0)):
        measure(
            "_text_forms.quoted_forms",
            'per text, whether it is "..." without quote/backslash (and controls)',
            "pyarrow: match_substring_regex (RE2)",
            f"{len(string_texts):,} string values, controls={controls}",
            lambda controls=controls: c_quoted_forms(string_texts, controls),
            lambda pattern=pattern: lib_regex(string_texts, pattern),
            repeat,
        )
    for pattern, texts, with_time in ((ISO_TIMESTAMP, ts_texts, 1), (ISO_DATE, date_texts, 0)):
        measure(
            "_text_forms.iso_forms",
            "per text, whether it is a quoted ISO date / timestamp of 1900-2999",
            "pyarrow: match_substring_regex (RE2)",
            f"{len(texts):,} {'timestamp' if with_time else 'date'} values",
            lambda texts=texts, with_time=with_time: c_iso_forms(texts, with_time),
            lambda texts=texts, pattern=pattern: lib_regex(texts, pattern),
            repeat,
        )
    # strptime is the library's calendar parser; it does not say the same (no form check, no 1-6 fraction
    # digits, no zone suffix, no year range): shown as a non-equivalent for the record
    ts_inner = pc.utf8_slice_codeunits(ts_texts, 1, -1)
    measure(
        "_text_forms.iso_forms",
        "(strptime instead of the form)",
        "pyarrow: strptime(%Y-%m-%d %H:%M:%S, error_is_null) is_valid",
        f"{len(ts_texts):,} timestamp values",
        lambda: c_iso_forms(ts_texts, 1),
        lambda: bools(pc.is_valid(pc.strptime(ts_inner, "%Y-%m-%d %H:%M:%S", "us", error_is_null=True))),
        repeat,
    )
    measure(
        "_text_forms.kind_codes",
        "per text, normalize's kind: null/bool/string/≤18-digit integer/longer integer/other",
        "pyarrow: ascii_is_decimal, is_in, equal + numpy (_kind_codes' path)",
        f"{len(mixed):,} GoldenGate values",
        lambda: c_kind_codes(mixed),
        lambda: lib_kind_codes(mixed),
        repeat,
    )
    # judge: the entries of the ORDER_LINES images (20 columns) with the table's types; a few unknown names
    names, texts, kinds = gg.flat()
    types = {c: OUR_TYPES[k] for c, k, _, _ in TABLES["SHOP.ORDER_LINES"][0]}
    column = (
        pc.fill_null(pc.index_in(names, value_set=pa.array(list(types), pa.large_string())), -1)
        .to_numpy(zero_copy_only=False)
        .astype(np.int64)
    )
    mine = np.flatnonzero(column >= 0)
    extra = np.flatnonzero(column < 0)[: len(mine) // 50]
    take = np.sort(np.concatenate([mine, extra]))[:n]
    judged_texts, judged_column = texts.take(pa.array(take)), np.ascontiguousarray(column[take])
    measure(
        "_text_forms.judge",
        "per map entry, routing's verdict of its text by its column's type",
        "pyarrow: equal, per-type take + match_substring_regex / is_in",
        f"{len(judged_texts):,} entries (20 columns, 7 types)",
        lambda: c_judge(judged_texts, judged_column, types),
        lambda: lib_judge(judged_texts, judged_column, types),
        repeat,
    )
    # crc32 buckets: the canonical key texts of a batch's events ([id] / [order,line]), a key changed often
    ids = rng.integers(1, 400_000, n)
    lines = rng.integers(1, 6, n)
    keys = pc.binary_join_element_wise("[", pa.array(ids).cast(pa.string()), "]", "")
    pairs = pc.binary_join_element_wise(
        "[", pa.array(ids).cast(pa.string()), ",", pa.array(lines).cast(pa.string()), "]", ""
    )
    key_texts = pc.if_else(pa.array(rng.random(n) < 0.4), pairs, keys)
    for label, lib in (
        ("zlib.crc32 per distinct text (dictionary_encode)", lib_buckets_distinct),
        ("zlib.crc32 per value (bytes slices)", lib_buckets_each),
    ):
        measure(
            "_text_forms.crc32_buckets",
            "per key text, zlib.crc32(text) % buckets (merge.bucket_of)",
            label,
            f"{len(key_texts):,} key texts, {len(pc.unique(key_texts)):,} distinct",
            lambda: c_buckets(key_texts, 64),
            lambda lib=lib: lib(key_texts, 64),
            repeat,
        )
    bench_first_entries(scale, repeat, rng)
    # the decode-side functions in one call over ~1M values too (the per-call set-up of Arrow counts less)
    big_texts = pa.concat_arrays([t for t, _ in span_columns])
    offsets = np.cumsum([0] + [len(t) for t, _ in span_columns])
    big_rows = np.concatenate([r + o for (_, r, _), o in zip(epoch_inputs, offsets[:-1], strict=True)])
    big_kinds = np.concatenate([k for _, _, k in epoch_inputs])
    measure(
        "_value_texts.epoch_texts",
        "JSON integer days/µs since epoch -> quoted ISO date / timestamp text",
        "pyarrow: cast(int64), numpy, cast timestamp[us]/date32 -> string, joins",
        f"1 call, {len(big_rows):,} values",
        lambda: c_epoch(big_texts, big_rows, big_kinds),
        lambda: lib_epoch(big_texts, big_rows, big_kinds),
        repeat,
    )
    big_drows = np.concatenate([r + o for (_, r, _), o in zip(decimal_inputs, offsets[:-1], strict=True)])
    big_scales = np.full(len(big_drows), 2, np.int8)
    measure(
        "_value_texts.connect_decimals",
        "quoted base64 two's-complement bytes + scale -> str(Decimal) text",
        "numpy base64 + pyarrow cast decimal128(38,s) -> string",
        f"1 call, {len(big_drows):,} values",
        lambda: c_decimals(big_texts, big_drows, big_scales),
        lambda: lib_decimals(big_texts, big_drows, big_scales),
        repeat,
    )
    big_at = np.concatenate([s[1] + o for s, o in zip(splice_inputs, offsets[:-1], strict=True)])
    big_new = pa.concat_arrays([s[2] for s in splice_inputs])
    for label, lib in (
        ("pyarrow: replace_with_mask", lib_splice_mask),
        ("pyarrow: concat_arrays + take", lib_splice_take),
    ):
        measure(
            "_value_texts.splice",
            "a string column with some rows' texts replaced",
            label,
            f"1 call, {len(big_texts):,} values, {len(big_at):,} replaced",
            lambda: c_splice(big_texts, big_at, big_new),
            lambda lib=lib: lib(big_texts, big_at, big_new),
            repeat,
        )

    table = summary_table(RESULTS) + "\n\nEvery measurement:\n\n" + markdown_table(RESULTS)
    print("\n" + table)
    if args.markdown:
        args.markdown.write_text(table + "\n")


def summary_table(rows: list[dict[str, Any]]) -> str:
    """One row per C function: its best identical library way (the lowest library / C ratio of every input size
    and variant measured), the range of the ratios of its identical ways, and the verdict on the best."""
    head = "| function | what it does | best library equivalent | input | C ms | library ms | library / C "
    head += "| range (all identical ways) | identical | verdict |"
    lines = [head, "|" + "---|" * 10]
    for function in dict.fromkeys(r["function"] for r in rows):
        mine = [r for r in rows if r["function"] == function]
        what = mine[0]["what"]
        same_ways = [r for r in mine if r["identical"]]
        if not same_ways:
            lines.append(f"| `{function}` | {what} | none identical | | | | | | no | keep C |")
            continue
        best = min(same_ways, key=lambda r: r["ratio"])
        low, high = min(r["ratio"] for r in same_ways), max(r["ratio"] for r in same_ways)
        verdict = "replace with library" if best["ratio"] <= 1.2 else "keep C"
        lines.append(
            f"| `{function}` | {what} | {best['library']} | {best['size']} | {best['c'] * 1e3:.2f} | "
            f"{best['lib'] * 1e3:.2f} | {best['ratio']:.2f} | {low:.2f}-{high:.2f} | yes | {verdict} |"
        )
    return "\n".join(lines)


def markdown_table(rows: list[dict[str, Any]]) -> str:
    head = "| function | what it does | library equivalent | input | C ms | library ms | library / C | (CPU time) "
    head += "| identical | verdict |"
    lines = [head, "|" + "---|" * 10]
    for r in rows:
        lines.append(
            f"| `{r['function']}` | {r['what']} | {r['library']} | {r['size']} | {r['c'] * 1e3:.2f} | "
            f"{r['lib'] * 1e3:.2f} | {r['ratio']:.2f} | {r['cpu_ratio']:.2f} | {'yes' if r['identical'] else 'no'} "
            f"| {r['verdict']} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
