"""A time zone offset that moves a timestamp past year 1 or 9999 is a rejected record, never an
exception out of the decoder (which would fail the whole decode task)."""

from __future__ import annotations

import json

import pytest

from cdclake.events.change import ChangeEvent, Rejected
from cdclake.formats._gg_common import parse_ts
from cdclake.options import Options
from cdclake.registry import get_decoder

EDGES = ["0001-01-01 00:00:00+01:00", "9999-12-31 23:59:59-01:00"]


@pytest.mark.parametrize("text", EDGES)
def test_parse_ts_gives_none(text):
    assert parse_ts(text) is None


@pytest.mark.parametrize("text", EDGES)
def test_goldengate_json_rejects_the_record_and_keeps_the_next(text):
    good = {"table": "S.T", "op_type": "I", "op_ts": "2024-01-01 00:00:00.000000", "pos": "2", "after": {"ID": 1}}
    bad = {**good, "op_ts": text, "pos": "1"}
    data = (json.dumps(bad) + "\n" + json.dumps(good) + "\n").encode()
    out = list(get_decoder("goldengate-json", Options({})).decode(data, "f.json"))
    assert isinstance(out[0], Rejected) and "op_ts" in out[0].error
    assert any(isinstance(e, ChangeEvent) and e.seq and e.after == {"ID": 1} for e in out[1:])
