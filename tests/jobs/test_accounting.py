"""Every record of a batch is accounted for, whatever happens to it (issue 7).

read + carried in = applied + stale + quarantined (decode, normalize, compact) + non-row + held
+ skipped, checked after every batch with the exact counts, for every kind of outcome: applied,
stale, quarantined at each step, heartbeats and schema events, a held transaction and its
release, Kafka tombstones, a truncate, and a replay of a quarantine after a fix.

Batches are staged into this test's own source folder (so held transactions and decoder state
are its own) and run with ``cdclake.pipeline.run_batch`` like the DAG's steps.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cdclake import replay
from cdclake.lake.tables import read_rows, snapshot_summaries
from cdclake.pipeline import run_batch
from cdclake.staging.batch import Manifest
from cdclake.staging.stage import stage_files

pytestmark = pytest.mark.spark

OUTCOMES = ("read", "carried_in", "applied", "stale", "quarantined", "non_row", "held", "skipped")


def run(spark, source: Path, batch: str, fmt: str, files: list[Path], ns: str, **manifest) -> dict:
    stage_files([str(f) for f in files], source, Manifest(source.name, batch, fmt, {}, namespace=ns, **manifest))
    return checked(run_batch(spark, source / batch, buckets=4))


def checked(report: dict) -> dict:
    """The invariant, written out (not only the report's own ``balanced``)."""
    inflow = report["read"] + report["carried_in"]
    outflow = sum(report[k] for k in ("applied", "stale", "quarantined", "non_row", "held", "skipped"))
    assert report["balanced"] and inflow == outflow, report
    return report


def counts(report: dict) -> tuple:
    return tuple(report[k] for k in OUTCOMES)


def blob(table: str | None, op: str, seq: int, after=None, before=None, ddl=None, keys=("id",), **types) -> str:
    """A DataHub BLOB message (``types``: column -> StreamX type)."""
    body: dict = {"op": op, "sequenceId": str(seq), "timestamp": {"eventTime": 1700000000000 + seq}}
    if after is not None:
        body["after"] = {"dataColumn": after}
    if before is not None:
        body["before"] = {"dataColumn": before}
    if ddl is not None:
        body["ddl"] = {"text": ddl}
    schema: dict = {"dataColumn": [{"name": n, "type": t} for n, t in types.items()], "primaryKey": list(keys)}
    if table:
        db, name = table.split(".")
        schema["source"] = {"dbType": "MySQL", "dbName": db, "tableName": name}
    return json.dumps({"schema": schema, "payload": body})


def debezium(op: str, after: dict | None, lsn: int) -> str:
    fields = [{"field": "id", "type": "int64"}, {"field": "v", "type": "string", "optional": True}]
    schema = {
        "type": "struct",
        "fields": [
            {"field": "before", "type": "struct", "optional": True, "fields": fields},
            {"field": "after", "type": "struct", "optional": True, "fields": fields},
        ],
    }
    source = {"db": "shop", "schema": "dbz", "table": "items", "lsn": lsn}
    payload = {"op": op, "after": after, "ts_ms": 1700000000000, "source": source}
    return json.dumps({"schema": schema, "payload": payload})


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def qlik():
    import importlib.util
    import sys

    path = Path(__file__).resolve().parent.parent / "formats" / "test_qlik_avro.py"
    spec = importlib.util.spec_from_file_location("qlik_writers_acct", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_every_outcome_is_counted_after_every_batch(spark, warehouse, tmp_path):
    ns, src = "acct", tmp_path / "staging" / "acct"
    cols = {"id": "LONG", "v": "STRING"}
    # 1. applied x2, heartbeat + DDL (non-row), a junk line (decode), a keyless table (normalize)
    b1 = write(
        tmp_path / "b1.json",
        [
            blob("db.t", "INSERT", 1, after={"id": 1, "v": "a"}, **cols),
            blob("db.t", "INSERT", 2, after={"id": 2, "v": "b"}, **cols),
            blob(None, "MHEARTBEAT", 3),
            blob("db.t", "ALTER", 4, ddl="ALTER TABLE t ADD COLUMN note varchar(10)"),
            "{this is not json",
            blob("db.nokey", "INSERT", 5, after={"a": 1, "b": "x"}, keys=(), a="LONG", b="STRING"),
        ],
    )
    r1 = run(spark, src, "b1", "datahub-blob", [b1], ns)
    assert counts(r1) == (6, 0, 2, 0, 2, 2, 0, 0), r1
    assert r1["schema_changes"] == 1
    # 2. stale (older than the row and than the truncate), a cast error (compact), truncate + insert applied
    b2 = write(
        tmp_path / "b2.json",
        [
            blob("db.t", "UPDATE", 0, before={"id": 1, "v": "a"}, after={"id": 1, "v": "old"}, **cols),
            blob("db.t", "INSERT", 11, after={"id": "abc", "v": "x"}, id="STRING", v="STRING"),
            blob("db.t", "TRUNCATE", 10),
            blob("db.t", "INSERT", 12, after={"id": 4, "v": "d"}, **cols),
        ],
    )
    r2 = run(spark, src, "b2", "datahub-blob", [b2], ns)
    assert counts(r2) == (4, 0, 2, 1, 1, 0, 0, 0), r2
    assert r2["truncates"] == 1
    assert read_rows(warehouse, "db.t", namespace=ns) == [{"id": 4, "v": "d", "note": None}]
    # 3. Kafka tombstones are skipped by design; the first record announces its schema (non-row)
    b3 = write(tmp_path / "b3.json", [debezium("c", {"id": 1, "v": "x"}, 10), "null", "null"])
    r3 = run(spark, src, "b3", "debezium-json", [b3], ns, keys={"*": ["id"]})
    assert counts(r3) == (4, 0, 1, 0, 0, 1, 0, 2), r3
    # 4. a transaction without its end is held back; 5. the next batch carries it in with its end
    q = qlik()
    table = q.customers()
    row = {"ID": 3, "NAME": "c", "CITY": "z", "BALANCE": "3.00"}
    first = table.metadata() + b"".join(
        [
            table.data("INSERT", {**row, "ID": 1}, q.seq(1), tx="T1", counter=1, last=True),
            table.data("INSERT", row, q.seq(3), tx="T2", counter=1, last=False),
        ]
    )
    (tmp_path / "q1.avro").write_bytes(first)
    r4 = run(spark, src, "b4", "qlik-avro", [tmp_path / "q1.avro"], ns)
    assert counts(r4) == (3, 0, 1, 0, 0, 1, 1, 0), r4
    (tmp_path / "q2.avro").write_bytes(
        table.data("UPDATE", {**row, "NAME": "c2"}, q.seq(4), before=row, tx="T2", counter=2, last=True)
    )
    r5 = run(spark, src, "b5", "qlik-avro", [tmp_path / "q2.avro"], ns)
    assert counts(r5) == (1, 1, 2, 0, 0, 0, 0, 0), r5
    # 6. replay of batch 1's quarantine once its key is declared: the keyless row applies,
    #    the junk line is quarantined again (nothing fixed it); the replay's read = what it replayed
    before = replay.quarantined_records(src / "b1")
    assert len(before) == r1["quarantined"]
    result = replay.replay_batch(spark, src / "b1", keys={"db.nokey": ["a"]}, buckets=4)
    assert (result["status"], result["records"], result["events"], result["not_replayable"]) == ("replayed", 1, 1, 0)
    r6 = checked(result["report"])
    assert r6["batch_id"] == result["replay_batch"] == "replay-b1-1"
    assert counts(r6) == (2, 0, 1, 0, 1, 0, 0, 0), r6
    assert read_rows(warehouse, "db.nokey", namespace=ns) == [{"a": 1, "b": "x"}]
    recorded = json.loads((src / "b1" / "reports" / "replay.json").read_text())["replays"]
    assert [(e["replay_batch"], e["records"], e["events"]) for e in recorded] == [("replay-b1-1", 1, 1)]
    # the same quarantine again: the same replay batch, nothing applied twice
    snapshots = len(snapshot_summaries(warehouse, "db.nokey", namespace=ns))
    again = replay.replay_batch(spark, src / "b1", keys={"db.nokey": ["a"]}, buckets=4)
    assert (again["status"], again["replay_batch"]) == ("already-replayed", "replay-b1-1")
    assert len(snapshot_summaries(warehouse, "db.nokey", namespace=ns)) == snapshots
    # a source-wide replay skips what was replayed; batch 2's cast error is quarantined again, balanced
    results = {r["batch"]: r for r in replay.replay_source(spark, src, buckets=4)}
    assert results["b1"]["status"] == "already-replayed" and results["b3"]["status"] == "nothing-to-replay"
    r7 = checked(results["b2"]["report"])
    assert counts(r7) == (1, 0, 0, 0, 1, 0, 0, 0), r7
    assert results["replay-b1-1"]["status"] == "replayed"  # its junk line, again
    checked(results["replay-b1-1"]["report"])
