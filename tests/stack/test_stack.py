"""docker-compose.yaml's topology as local processes, driven as users drive it (``make stack-test``).

PostgreSQL (Airflow's metadata DB and the Iceberg JDBC catalog), moto's S3 server (landing bucket
and ``s3://warehouse/lake``), a Spark standalone master and worker, and Airflow's api-server,
scheduler and dag-processor with the LocalExecutor, each started from the compose file's own
settings (``local_stack``). Runs are started through the REST API and the ``airflow`` CLI;
the lake is read with pyiceberg through the PostgreSQL catalog and S3; the monitoring page is
opened in headless Chromium after a real login. Nothing is mocked.

The tests run in file order on one stack: the page test looks for the runs the others made.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from local_stack.airflow_api import AirflowApi
from local_stack.stack import LocalStack, environment, require_tools

from cdclake import samples
from cdclake.events.change import to_json
from cdclake.runtime.settings import REPO_ROOT

pytestmark = pytest.mark.stack

ARTIFACTS = Path(os.environ.get("CDCLAKE_STACK_ARTIFACTS", REPO_ROOT / "var" / "stack-test"))
SCHEDULED = "orders_hourly"  # a scheduled source added to the compose sources for the backfill
ORDERS_TABLE = "shop.orders"
FAULT_POINT = "compact:after-log-append"  # the change log is written, the table not yet committed


def debezium(op: str, lsn: int, before: dict | None = None, after: dict | None = None) -> dict:
    return {
        "op": op,
        "before": before,
        "after": after,
        "source": {"lsn": lsn, "db": "shop", "schema": "public", "table": "orders"},
        "ts_ms": 1700000000000 + lsn,
    }


def lines(messages: list[dict]) -> bytes:
    return "".join(to_json(m) + "\n" for m in messages).encode()


#: Three files of the scheduled source, landed one a minute; the table after all three.
BOLT, NUT, GEAR = {"id": 1, "item": "bolt", "qty": 5}, {"id": 2, "item": "nut", "qty": 7}, {"id": 3, "item": "gear"}
ORDER_FILES = [
    lines([debezium("c", 10, after=BOLT), debezium("c", 11, after=NUT)]),
    lines([debezium("u", 20, before=BOLT, after={**BOLT, "qty": 4}), debezium("c", 21, after={**GEAR, "qty": 1})]),
    lines([debezium("d", 30, before=NUT), debezium("u", 31, before={**GEAR, "qty": 1}, after={**GEAR, "qty": 2})]),
]
ORDERS_EXPECTED = [{"id": 1, "item": "bolt", "qty": 4}, {"id": 3, "item": "gear", "qty": 2}]


def set_schedule(sources: Path, schedule: str) -> None:
    """Edit the scheduled source's schedule in the sources file (the dag-processor re-reads it)."""
    config = yaml.safe_load(sources.read_text())
    config["sources"][SCHEDULED]["schedule"] = schedule
    tmp = sources.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(config, sort_keys=False))
    tmp.replace(sources)


def wait_for_schedule(api: AirflowApi, dag_id: str, schedule: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while (summary := api.call("GET", f"/dags/{dag_id}").get("timetable_summary")) != schedule:
        assert time.monotonic() < deadline, f"{dag_id} still scheduled {summary!r}, not {schedule!r}"
        time.sleep(3)


def stack_sources(home: Path) -> Path:
    """The compose sources file plus one scheduled source (what a user adds to config/)."""
    config = yaml.safe_load((REPO_ROOT / "config" / "sources.compose.yaml").read_text())
    config["sources"][SCHEDULED] = {
        "format": "debezium-json",
        "landing": "s3://landing/orders/",
        "options": {"table": ORDERS_TABLE},
        "keys": {ORDERS_TABLE: ["id"]},
        "schedule": "@hourly",  # made three minutes an hour by the backfill test
    }
    path = home / "sources.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    require_tools()
    home = tmp_path_factory.mktemp("stack")
    faults = home / "faults"
    overrides = {"CDCLAKE_SOURCES": str(stack_sources(home)), "CDCLAKE_FAULT_FILE": str(faults)}
    started = time.monotonic()
    with LocalStack(home, overrides=overrides) as local:
        print(f"stack up in {time.monotonic() - started:.0f} s; logs in {local.logs}")
        api = AirflowApi(local.api_url, "admin", local.admin_password)
        try:
            with environment(local.lake_env()):  # the lake as `python -m cdclake show` sees it in the scheduler
                yield {
                    "local": local,
                    "api": api,
                    "s3": local.s3_client(),
                    "faults": faults,
                    "sources": Path(overrides["CDCLAKE_SOURCES"]),
                    "runs": [],
                }
        finally:
            api.close()
            local.keep_logs(ARTIFACTS / "logs")


def warehouse() -> str:
    return os.environ["CDCLAKE_WAREHOUSE"]


def read_rows(table: str) -> list[dict[str, Any]]:
    from cdclake.lake.tables import read_rows as read

    return read(warehouse(), table)


def snapshots(table: str) -> list[dict[str, str]]:
    from cdclake.lake.tables import snapshot_summaries

    return snapshot_summaries(warehouse(), table)


def staged(local: LocalStack, source: str) -> dict[str, list[str]]:
    """batch id -> the landing files staged into it (batches that staged something)."""
    root = Path(local.env("airflow-scheduler")["CDCLAKE_HOME"]) / "staging" / source
    batches = {m.parent.name: json.loads(m.read_text())["files"] for m in sorted(root.glob("*/manifest.json"))}
    return {batch: sorted(f["name"] for f in files) for batch, files in batches.items() if files}


def spark_apps(local: LocalStack) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"{local.spark_ui_url}/json/", timeout=10) as response:
        status = json.load(response)
    return status.get("completedapps", []) + status.get("activeapps", [])


def land(s3, key: str, body: bytes) -> dt.datetime:
    """Put a landing file; its S3 LastModified (what staging compares with an interval's end)."""
    s3.put_object(Bucket="landing", Key=key, Body=body)
    return s3.head_object(Bucket="landing", Key=key)["LastModified"].astimezone(dt.UTC)


def interval_params(end: dt.datetime, hours: int = 1) -> dict[str, str]:
    return {"interval_start": (end - dt.timedelta(hours=hours)).isoformat(), "interval_end": end.isoformat()}


def test_triggered_runs_with_params_dry_run_first(stack: dict[str, Any]) -> None:
    """The UI's trigger form through the REST API: an interval, a dry run, then the real run of that interval."""
    api, s3, local = stack["api"], stack["s3"], stack["local"]
    dag_id = "cdc_gg_json"
    api.wait_for_dag(dag_id)
    api.set_paused(dag_id, False)
    land(s3, "goldengate-json/gg_0001.json", samples.encode_messages(samples.history()[0]))
    time.sleep(1.1)
    params = interval_params(dt.datetime.now(dt.UTC).replace(microsecond=0))

    dry = api.trigger(dag_id, {**params, "dry_run": True})
    assert api.wait_for_run(dag_id, dry)["state"] == "success", api.task_states(dag_id, dry)
    report = api.xcom(dag_id, dry, "report")
    assert report["dry_run"] is True and report["read"] == 4 and report["quarantined"] == 0, report
    from cdclake.lake.tables import TableNotFound

    with pytest.raises(TableNotFound):
        read_rows(samples.TABLE)  # a dry run commits nothing

    real = api.trigger(dag_id, params)
    run = api.wait_for_run(dag_id, real)
    assert run["state"] == "success", api.task_states(dag_id, real)
    report = api.xcom(dag_id, real, "report")
    assert report["balanced"] and report["quarantined"] == 0 and not report["dry_run"], report
    rows = read_rows(samples.TABLE)
    assert [r["CUST_CODE"] for r in rows] == ["BILL", "DAVE", "WILL"], rows
    # the dry run and the real run share the interval's batch: the file was staged once
    assert list(staged(local, "gg_json").values()) == [["gg_0001.json"]]
    # the Spark steps ran as applications of the standalone cluster (executors in the worker's JVMs)
    names = {app["name"] for app in spark_apps(local)}
    assert {"cdclake-gg_json-decode_normalize", "cdclake-gg_json-compact"} <= names, names
    stack["runs"].append((dag_id, real))


def test_compact_fails_then_cleared_through_the_api_converges(stack: dict[str, Any]) -> None:
    """A compact task killed at a fault point (every try) fails the run; cleared, the run converges."""
    api, s3, local = stack["api"], stack["s3"], stack["local"]
    dag_id = "cdc_gg_json"
    land(s3, "goldengate-json/gg_0002.json", samples.encode_messages(samples.history()[1]))
    time.sleep(1.1)
    stack["faults"].write_text(FAULT_POINT)
    try:
        run_id = api.trigger(dag_id, interval_params(dt.datetime.now(dt.UTC).replace(microsecond=0)))
        assert api.wait_for_run(dag_id, run_id)["state"] == "failed"
    finally:
        stack["faults"].unlink()
    states = api.task_states(dag_id, run_id)
    assert states["compact[0]"] == "failed" and states["report"] == "upstream_failed", states
    assert len(read_rows(samples.TABLE)) == 3  # nothing of the batch was published

    cleared = api.clear_failed(dag_id, run_id, ["compact"])
    assert {ti["task_id"] for ti in cleared} >= {"compact", "report"}, cleared
    run = api.wait_for_run(dag_id, run_id)
    assert run["state"] == "success", api.task_states(dag_id, run_id)
    report = api.xcom(dag_id, run_id, "report")
    assert report["balanced"] and report["quarantined"] == 0, report
    assert read_rows(samples.TABLE) == samples.EXPECTED_ROWS  # nothing lost, nothing twice
    batches = staged(local, "gg_json")
    assert sorted(n for names in batches.values() for n in names) == ["gg_0001.json", "gg_0002.json"]
    stack["runs"].append((dag_id, run_id))


def _next_minute(after: dt.datetime) -> dt.datetime:
    return after.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)


def _sleep_until(moment: dt.datetime) -> None:
    time.sleep(max(0.0, (moment - dt.datetime.now(dt.UTC)).total_seconds()))


def test_backfill_of_a_scheduled_source_stages_each_file_once_and_repeats_as_a_no_op(stack: dict[str, Any]) -> None:
    """`airflow backfill create` over three triggers of a scheduled source whose files landed in an outage.

    Airflow 3's cron schedules trigger at points in time (``CronTriggerTimetable``: empty data
    intervals), so the run of trigger ``t`` stages what landed before ``t`` and after the previous
    trigger's run. The source's schedule is edited (as a user edits config/) to three minutes past
    each hour starting a minute from now; one file lands before each: the backfill's runs take one
    file each, and the next scheduled trigger is an hour later.
    """
    api, s3, local = stack["api"], stack["s3"], stack["local"]
    dag_id = f"cdc_{SCHEDULED}"
    api.wait_for_dag(dag_id)
    api.set_paused(dag_id, True)  # the outage: files land, no scheduled run takes them
    landed = [land(s3, "orders/orders-0001.json", ORDER_FILES[0])]
    triggers = [_next_minute(landed[0]) + dt.timedelta(minutes=1 + i) for i in range(3)]
    schedule = ",".join(str(t.minute) for t in triggers) + " * * * *"
    set_schedule(stack["sources"], schedule)
    for trigger, body in zip(triggers[:2], ORDER_FILES[1:], strict=True):
        _sleep_until(trigger + dt.timedelta(seconds=1))
        landed.append(land(s3, f"orders/orders-{len(landed) + 1:04d}.json", body))
    _sleep_until(triggers[-1] + dt.timedelta(seconds=2))  # backfills take triggers that are past
    wait_for_schedule(api, dag_id, schedule)
    first, last = triggers[0], triggers[-1]

    backfill = ["backfill", "create", "--dag-id", dag_id, "--from-date", first.isoformat()]
    backfill += ["--to-date", last.isoformat(), "--max-active-runs", "1"]
    local.airflow(backfill)
    created = max(api.backfills(dag_id), key=lambda b: b["id"])
    api.set_paused(dag_id, False)
    api.wait_for_backfill(created["id"])
    runs = api.runs(dag_id, run_type="backfill")
    assert len(runs) == 3 and all(r["state"] == "success" for r in runs), runs

    batches = staged(local, SCHEDULED)
    assert batches == {
        f"interval_{t:%Y%m%dT%H%M%S}_{t:%Y%m%dT%H%M%S}": [f"orders-{i + 1:04d}.json"] for i, t in enumerate(triggers)
    }, (batches, landed)  # each file staged once, by the run of the first trigger after it landed
    assert read_rows(ORDERS_TABLE) == ORDERS_EXPECTED  # as one run over all three files
    history = snapshots(ORDERS_TABLE)

    # the same backfill again, reprocessing the completed runs: nothing changes
    local.airflow([*backfill, "--reprocess-behavior", "completed"])
    again = max(api.backfills(dag_id), key=lambda b: b["id"])
    assert again["id"] != created["id"]
    api.wait_for_backfill(again["id"])
    api.set_paused(dag_id, True)
    rerun = api.runs(dag_id, run_type="backfill")
    assert len(rerun) == 3 and all(r["state"] == "success" for r in rerun), rerun
    assert staged(local, SCHEDULED) == batches
    assert snapshots(ORDERS_TABLE) == history
    assert read_rows(ORDERS_TABLE) == ORDERS_EXPECTED
    stack["runs"].append((dag_id, runs[-1]["dag_run_id"]))


def test_monitoring_page_after_a_real_login_shows_the_runs(stack: dict[str, Any]) -> None:
    """Headless Chromium logs in through Airflow's login page and reads the cdclake page; screenshot kept."""
    from local_stack.browser import CHROMIUM_ARGS, chromium
    from playwright.sync_api import sync_playwright

    local = stack["local"]
    assert stack["runs"], "the runs of the tests above are what the page must show"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "monitoring.png"
    shot.unlink(missing_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            page.goto(f"{local.api_url}/cdclake/")
            page.wait_for_url("**/auth/login**", timeout=30_000)
            page.locator("input[name=username]").fill("admin")
            page.locator("input[name=password]").fill(local.admin_password)
            page.locator("button[type=submit]").click()
            page.wait_for_url(f"{local.api_url}/cdclake/**", timeout=30_000)
            page.wait_for_load_state("networkidle")
            text = page.locator("body").inner_text()
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    for expected in ("gg_json", SCHEDULED, samples.TABLE, ORDERS_TABLE):
        assert expected in text, (expected, text[:3000])
    assert shot.stat().st_size > 10_000
