"""Cross-format parity through the real pipeline: one logical history rendered by our own
writers into each GoldenGate text format, applied with decode -> normalize -> compact, gives
the same lake tables (modulo the format limits the decoder tests document, asserted here)."""

from __future__ import annotations

import importlib.util
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from cdclake.lake.tables import read_rows
from cdclake.local_apply import apply_files
from cdclake.options import Options

pytestmark = pytest.mark.spark

_spec = importlib.util.spec_from_file_location(
    "gg_parity_writers", Path(__file__).resolve().parent.parent / "formats" / "test_goldengate_parity_text.py"
)
W = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = W  # dataclasses look their module up
_spec.loader.exec_module(W)


def normalized(rows: list[dict]) -> dict:
    """Numbers compared by value: JSON infers double where typed formats give decimal(p,s)."""
    out = {}
    for row in rows:
        clean = {k: Decimal(str(v)) if isinstance(v, (float, Decimal)) else v for k, v in row.items()}
        out[clean[next(iter(row))]] = clean
    return out


def test_every_text_format_gives_the_same_tables(spark, warehouse, tmp_path):
    renders = {
        "json": ("goldengate-json", W.write_json(W.HISTORY), {}),
        "xml": ("goldengate-xml", W.write_xml(W.HISTORY, True, "UTF-8"), {"columns": W.COLUMNS_OPTION}),
        "delimited": (
            "goldengate-delimited",
            W.write_delimited(W.HISTORY, W.DELIMITED_OPTIONS["defaults"]),
            {"columns": W.COLUMNS_OPTION, **W.DELIMITED_OPTIONS["defaults"]},
        ),
    }
    tables = {}
    for name, (format_id, data, options) in renders.items():
        path = tmp_path / f"history.{name}"
        path.write_bytes(data)
        report = apply_files(
            format_id, Options(options), [str(path)], warehouse, spark=spark, namespace=f"parity_{name}"
        )
        assert report["balanced"] and report["quarantined"] == 0, (name, report)
        tables[name] = {t: normalized(read_rows(warehouse, t, namespace=f"parity_{name}")) for t in (W.CUST, W.ORDERS)}
    expected = tables["json"]
    assert expected[W.ORDERS] == {102: {"ORDER_ID": 102, "CUST_ID": 1, "AMOUNT": Decimal("5.00")}}
    assert sorted(expected[W.CUST]) == [1, 3, 5]
    assert tables["xml"] == expected
    # the documented delimited limit: with the default representations "" is written like "missing"
    delimited = tables["delimited"]
    assert delimited[W.CUST][5]["NOTE"] is None and expected[W.CUST][5]["NOTE"] == ""
    delimited[W.CUST][5]["NOTE"] = ""
    assert delimited == expected
