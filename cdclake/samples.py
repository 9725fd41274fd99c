"""Sample landing files for the demo and the end-to-end tests.

The GoldenGate JSON history for ``GG.TCUSTORD`` starts from the vendor
document's sample messages (section 6.3.2) and adds what a real trail holds
around them: more inserts, a partial update (missing columns keep their
values), a delete and a re-insert of the deleted key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TABLE = "GG.TCUSTORD"
KEYS = ["CUST_CODE", "ORDER_DATE", "PRODUCT_CODE", "ORDER_ID"]


def _msg(
    op: str, pos: int, ts: str, before: dict | None = None, after: dict | None = None, tokens: dict | None = None
) -> dict[str, Any]:
    msg: dict[str, Any] = {
        "table": TABLE,
        "op_type": op,
        "op_ts": ts,
        "current_ts": ts.replace(" ", "T"),
        "pos": f"{pos:020d}",
        "tokens": tokens or {"R": f"AADPkvAAEAAEq{pos:05d}"},
    }
    if before is not None:
        msg["before"] = before
    if after is not None:
        msg["after"] = after
    return msg


def _row(cust: str, date: str, product: str, order: str, price: str, amount: int, tx: str) -> dict[str, Any]:
    return {
        "CUST_CODE": cust,
        "ORDER_DATE": date,
        "PRODUCT_CODE": product,
        "ORDER_ID": order,
        "PRODUCT_PRICE": _Raw(price),
        "PRODUCT_AMOUNT": amount,
        "TRANSACTION_ID": tx,
    }


class _Raw(str):
    """A JSON number written exactly as given (17520.00 stays 17520.00)."""


WILL = _row("WILL", "1994-09-30:15:33:00", "CAR", "144", "17520.00", 3, "100")
BILL = _row("BILL", "1995-12-31:15:00:00", "CAR", "765", "15000.00", 3, "100")
DAVE = _row("DAVE", "1993-11-03:07:51:35", "PLANE", "600", "135000.00", 2, "200")
JANE = _row("JANE", "1995-11-11:12:00:00", "TRUCK", "800", "23000.00", 1, "300")


def history() -> list[list[dict[str, Any]]]:
    """Two batches of GoldenGate JSON messages."""
    batch1 = [
        _msg("I", 1444, "2013-06-02 22:14:36.000000", after=WILL),
        _msg("I", 1500, "2013-06-02 22:14:37.000000", after=BILL),
        _msg("I", 1600, "2013-06-02 22:14:38.000000", after=DAVE),
        _msg("U", 2891, "2013-06-02 22:14:41.000000", before=BILL, after={**BILL, "PRODUCT_PRICE": _Raw("14000.00")}),
    ]
    dave_key = {k: DAVE[k] for k in KEYS}
    batch2 = [
        _msg(
            "D",
            4338,
            "2013-06-02 22:14:41.000000",
            before=dave_key,
            tokens={"L": "206080450", "6": "9.0.80330", "R": "AADPkvAAEAAEqLzAAC"},
        ),
        # partial update: only the key and the changed column are present
        _msg(
            "U",
            4600,
            "2013-06-02 22:15:00.000000",
            before={k: WILL[k] for k in KEYS},
            after={**{k: WILL[k] for k in KEYS}, "PRODUCT_AMOUNT": 5},
        ),
        _msg("I", 4700, "2013-06-02 22:15:10.000000", after=JANE),
        _msg(
            "I",
            4800,
            "2013-06-02 22:15:20.000000",
            after={**DAVE, "PRODUCT_PRICE": _Raw("99000.00"), "TRANSACTION_ID": "400"},
        ),
    ]
    return [batch1, batch2]


#: Rows of GG.TCUSTORD after both batches (what the demo must print).
EXPECTED_ROWS = [
    {**BILL, "PRODUCT_PRICE": 14000.0},
    {**DAVE, "PRODUCT_PRICE": 99000.0, "TRANSACTION_ID": "400"},
    {**JANE, "PRODUCT_PRICE": 23000.0},
    {**WILL, "PRODUCT_PRICE": 17520.0, "PRODUCT_AMOUNT": 5},
]


def encode_messages(messages: list[dict[str, Any]]) -> bytes:
    """One JSON object per line; prices written as exact JSON numbers."""
    lines = []
    for msg in messages:
        text = json.dumps(msg, cls=_ExactEncoder)
        lines.append(text)
    return ("\n".join(lines) + "\n").encode("utf-8")


class _ExactEncoder(json.JSONEncoder):
    def encode(self, o: Any) -> str:
        return _encode(o)


def _encode(o: Any) -> str:
    if isinstance(o, _Raw):
        return str.__str__(o)
    if isinstance(o, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{_encode(v)}" for k, v in o.items()) + "}"
    if isinstance(o, list):
        return "[" + ",".join(_encode(v) for v in o) + "]"
    return json.dumps(o)


def write_goldengate_json_batch(landing_dir: Path, batch: int) -> Path:
    """Write batch ``batch`` (1-based) of the history as one landing file."""
    landing_dir.mkdir(parents=True, exist_ok=True)
    path = landing_dir / f"gg_tcustord_{batch:04d}.json"
    path.write_bytes(encode_messages(history()[batch - 1]))
    return path
