# TEMPORARY scratch decoder for pipeline testing; removed once goldengate_json lands.
import datetime as dt
import json
from decimal import Decimal

from cdclake.events import ChangeEvent, Rejected, Source
from cdclake.registry import Decoder, register

OPS = {"I": "INSERT", "U": "UPDATE", "D": "DELETE", "T": "TRUNCATE"}


@register("goldengate-json")
class Scratch(Decoder):
    def decode(self, data, file):
        off = 0
        for line in data.split(b"\n"):
            start = off
            off += len(line) + 1
            if not line.strip():
                continue
            try:
                m = json.loads(line, parse_float=Decimal)
                ts = dt.datetime.strptime(m["op_ts"], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=dt.UTC)
                yield ChangeEvent(
                    table=m["table"],
                    op=OPS[m["op_type"]],
                    seq=m["pos"].zfill(32),
                    event_ts=ts,
                    source=Source(file, start),
                    keys=m.get("primary_keys") or self.keys,
                    before=m.get("before"),
                    after=m.get("after"),
                )
            except Exception as exc:
                yield Rejected(f"bad: {exc}", Source(file, start), line)
