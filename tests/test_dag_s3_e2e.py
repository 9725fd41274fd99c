"""Three formats from an S3 bucket (a real S3 API over HTTP) through `airflow dags test`:
exact tables; then the same interval again (a re-run with a new run id, as a backfill or a
retry does) gives identical tables and stages nothing twice. Task retries of a committed
batch are covered by tests/reliability (the same code path: batch reuse + committed-batch no-ops)."""

from __future__ import annotations

import datetime as dt
import json
import time

import boto3
import pytest
import yaml
from hostile_files import write_hostile

from cdclake import samples
from cdclake.airflow.env import airflow, airflow_env, migrate
from cdclake.bench.model import TABLES
from cdclake.events.change import to_json
from cdclake.lake.tables import read_rows, snapshot_summaries
from cdclake.monitoring import index as monitor_index
from cdclake.monitoring import views as monitoring_views
from cdclake.monitoring.index_store import open_store
from cdclake.runtime.settings import Settings

pytestmark = pytest.mark.airflow

BUCKET = "cdc-landing"
SECRET = "canary-Secret-7f3a9c"  # must never appear in logs, XCom or reports


def datahub(op: str, seq: int, after=None, before=None) -> dict:
    body: dict = {"op": op, "sequenceId": str(seq), "timestamp": {"eventTime": 1700000000000 + seq}}
    if after is not None:
        body["after"] = {"dataColumn": after}
    if before is not None:
        body["before"] = {"dataColumn": before}
    schema = {
        "dataColumn": [{"name": "id", "type": "LONG"}, {"name": "city", "type": "STRING"}],
        "primaryKey": ["id"],
        "source": {"dbType": "MySQL", "dbName": "crm", "tableName": "customers"},
    }
    return {"schema": schema, "payload": body, "version": "0.0.1"}


def debezium(op: str, lsn: int, before=None, after=None) -> dict:
    return {
        "op": op,
        "before": before,
        "after": after,
        "source": {"lsn": lsn, "db": "inv", "schema": "public", "table": "products"},
        "ts_ms": 1700000000000 + lsn,
    }


def lines(messages: list[dict]) -> bytes:
    return "".join(to_json(m) + "\n" for m in messages).encode()


def corrupt_datahub() -> bytes:
    """Two inserts the decoder must quarantine: a member name that is not UTF-8, a BYTES column holding a number."""
    insert = lines([datahub("INSERT", 5, after={"id": 3, "city": "Pisa"})])
    bytes_typed = insert.replace(b'{"name":"city","type":"STRING"}', b'{"name":"city","type":"BYTES"}')
    assert bytes_typed != insert
    return insert.replace(b'"city":"Pisa"', b'"ci\xffty":"Pisa"') + bytes_typed.replace(b'"Pisa"', b"12345")


def corrupt_debezium() -> bytes:
    """Two inserts the decoder must quarantine: invalid UTF-8 in a member name and in a value."""
    insert = lines([debezium("c", 13, after={"id": 3, "name": "washer", "qty": 1})])
    return insert.replace(b'"name":', b'"na\xffme":') + insert.replace(b'"washer"', b'"wash\xc3er"')


@pytest.fixture(scope="module")
def stack(s3_server, tmp_path_factory):
    home = tmp_path_factory.mktemp("cdclake-s3-home")
    config = {
        "sources": {
            "s3_gg": {
                "format": "goldengate-json",
                "landing": f"s3://{BUCKET}/gg/",
                "keys": {samples.TABLE: ["CUST_CODE", "ORDER_DATE", "PRODUCT_CODE", "ORDER_ID"]},
                "schedule": "@daily",
            },
            "s3_dh": {"format": "datahub-blob", "landing": f"s3://{BUCKET}/datahub/", "schedule": "@daily"},
            "s3_dbz": {
                "format": "debezium-json",
                "landing": f"s3://{BUCKET}/debezium/",
                "options": {"table": "inv.products"},
                "keys": {"inv.products": ["id"]},
                "schedule": "@daily",
                "max_quarantined": 2,  # its two corrupt records (more would fail the run)
            },
        }
    }
    sources = home / "sources.yaml"
    sources.write_text(yaml.safe_dump(config))
    connection = {
        "conn_type": "aws",
        "login": "testing-key",
        "password": SECRET,
        "extra": {"endpoint_url": s3_server, "region_name": "us-east-1"},
    }
    env = airflow_env(home, extra={"CDCLAKE_SOURCES": str(sources), "AIRFLOW_CONN_AWS_DEFAULT": json.dumps(connection)})
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        env.pop(name, None)
    log = home / "airflow.log"
    migrate(env, log)
    s3 = boto3.client(
        "s3",
        endpoint_url=s3_server,
        region_name="us-east-1",
        aws_access_key_id="testing-key",
        aws_secret_access_key=SECRET,
    )
    s3.create_bucket(Bucket=BUCKET)
    return home, env, log, s3


def run(dag_id: str, stamp: str, env, log, conf: dict) -> None:
    result = airflow(["dags", "test", dag_id, stamp, "--conf", json.dumps(conf)], env, log)
    assert result.returncode == 0, log.read_text()[-6000:]


def staged_names(home, source: str) -> list[str]:
    manifests = sorted((home / "staging" / source).glob("*/manifest.json"))
    return sorted(f["name"] for m in manifests for f in json.loads(m.read_text())["files"])


def test_three_formats_from_s3_then_retry_and_backfill_change_nothing(stack):
    home, env, log, s3 = stack
    gg = [samples.encode_messages(batch) for batch in samples.history()]
    s3.put_object(Bucket=BUCKET, Key="gg/gg_0001.json", Body=gg[0])
    first = gg[1].split(b"\n", 1)[0]  # corrupt copies (issue 56): quarantined, the rest applied
    corrupt = [first.replace(b'"CUST_CODE"', b'"CUST\xff_CODE"', 1), first.replace(b'"DAVE"', b'"DA\xe2\x82VE"', 1)]
    s3.put_object(Bucket=BUCKET, Key="gg/gg_0002.json", Body=gg[1] + b"\n".join(corrupt) + b"\n")
    # and 3,000 changes over four more tables with their own corrupt records among them (tests/hostile_files.py)
    hostile, stream = write_hostile(home / "hostile", ("goldengate-json",))
    gg_hostile = hostile["goldengate-json"]
    s3.put_object(Bucket=BUCKET, Key="gg/gg_0003.json", Body=gg_hostile.path.read_bytes())
    s3.put_object(
        Bucket=BUCKET,
        Key="datahub/crm-0001.json",
        Body=lines(
            [
                datahub("INSERT", 1, after={"id": 1, "city": "Oslo"}),
                datahub("INSERT", 2, after={"id": 2, "city": "Rome"}),
                datahub("UPDATE", 3, before={"id": 1, "city": "Oslo"}, after={"id": 1, "city": "Bergen"}),
                datahub("DELETE", 4, before={"id": 2, "city": "Rome"}),
            ]
        )
        + corrupt_datahub(),
    )
    s3.put_object(
        Bucket=BUCKET,
        Key="debezium/products-0001.json",
        Body=lines(
            [
                debezium("c", 10, after={"id": 1, "name": "bolt", "qty": 5}),
                debezium("c", 11, after={"id": 2, "name": "nut", "qty": 7}),
                debezium(
                    "u", 12, before={"id": 1, "name": "bolt", "qty": 5}, after={"id": 1, "name": "bolt", "qty": 4}
                ),
            ]
        )
        + corrupt_debezium(),
    )
    s3.put_object(Bucket=BUCKET, Key="debezium/../escape.json", Body=b"{}")  # refused, never staged
    time.sleep(1.1)
    end = dt.datetime.now(dt.UTC).replace(microsecond=0)
    interval = {"interval_start": (end - dt.timedelta(days=1)).isoformat(), "interval_end": end.isoformat()}
    stamp = end.isoformat()
    for dag_id in ("cdc_s3_gg", "cdc_s3_dh", "cdc_s3_dbz"):
        run(dag_id, stamp, env, log, interval)

    warehouse = home / "warehouse"
    expected = {
        samples.TABLE: samples.EXPECTED_ROWS,
        "crm.customers": [{"id": 1, "city": "Bergen"}],
        "inv.products": [{"id": 1, "name": "bolt", "qty": 4}, {"id": 2, "name": "nut", "qty": 7}],
    }
    for table, rows in expected.items():
        assert read_rows(warehouse, table) == rows, table
    for model in TABLES:  # every row of the hostile file's stream is there, and no other (values: test_hostile_batches)
        lake = read_rows(warehouse, model.full_name)
        assert {tuple(r[k] for k in model.keys) for r in lake} == set(stream.rows[model.full_name]), model.full_name
    snapshots = {t: snapshot_summaries(warehouse, t) for t in expected}
    staged = {s: staged_names(home, s) for s in ("s3_gg", "s3_dh", "s3_dbz")}
    assert staged == {
        "s3_gg": ["gg_0001.json", "gg_0002.json", "gg_0003.json"],
        "s3_dh": ["crm-0001.json"],
        "s3_dbz": ["products-0001.json"],
    }
    reports = {p.parts[-4]: json.loads(p.read_text()) for p in (home / "staging").glob("*/*/reports/batch.json")}
    assert {source: (r["balanced"], r["quarantined"]) for source, r in reports.items()} == {
        "s3_gg": (True, 2 + len(gg_hostile.corrupt)),
        "s3_dh": (True, 2),
        "s3_dbz": (True, 2),
    }
    manifest = json.loads(next((home / "staging" / "s3_dbz").glob("*/manifest.json")).read_text())
    assert [r["key"] for r in manifest["rejected"]] == ["debezium/../escape.json"]

    # the same interval again, as a backfill / re-run does (a new run id, the interval's batch)
    run("cdc_s3_dbz", (end + dt.timedelta(seconds=1)).isoformat(), env, log, interval)
    assert read_rows(warehouse, "inv.products") == expected["inv.products"]
    assert snapshot_summaries(warehouse, "inv.products") == snapshots["inv.products"]  # no new commit
    assert staged_names(home, "s3_dbz") == ["products-0001.json"]  # nothing staged twice

    # each run's report task added its batch to the monitoring index, with the run for the page's links;
    # the re-run reported the same batch again: replaced, not added
    index = open_store(home / "staging" / "_monitor")
    dbz = monitor_index.summary(index, "s3_dbz")
    assert dbz["batches"] == 1 and dbz["last_run"]["state"] == "success" and dbz["last"]["dag_id"] == "cdc_s3_dbz"
    assert dbz["last_run"]["run_id"] == dbz["last"]["run_id"] and dbz["last"]["wall_seconds"] > 0
    assert sorted(index.folders()) == ["s3_dbz", "s3_dh", "s3_gg"]
    [table] = dbz["tables"]
    detail = monitoring_views.table_model(Settings.from_env(env), "s3_dbz", table)
    assert detail["lake_error"] is None and detail["snapshots"][0]["batch_id"] == dbz["last"]["batch_id"]
    assert detail["history"][0]["applied"] >= 2 and detail["state"] in ("healthy", "late")  # late: 1970 events

    # these small batches ran their Spark steps with the quick JIT, rendered from the stage task's XCom
    submits = [line for line in log.read_text().splitlines() if "Spark-Submit cmd" in line]
    assert submits and all("-XX:TieredStopAtLevel=1" in line for line in submits), submits[:2]

    # the secret of the AWS connection is in no log, report or XCom-bound output
    texts = [log.read_text()] + [p.read_text() for p in (home / "staging").rglob("*.json")]
    texts += [p.read_text(errors="replace") for p in (home / "airflow").rglob("*.log")]
    assert not any(SECRET in t for t in texts)
    assert SECRET.encode() not in (home / "airflow" / "airflow.db").read_bytes()  # XCom lives here
