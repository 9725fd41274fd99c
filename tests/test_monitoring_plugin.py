"""The monitoring page: cdclake.monitoring.batches on a staging tree written here, then the plugin for real
(Airflow API server + headless Chromium: log in, read the page, and be refused without a login)."""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from monitoring_fixture import (
    CANARY,
    NOW,
    ORDERS_RUN,
    add_late_source,
    build_index,
    build_staging,
    page_settings,
    write_lake_table,
)

from cdclake.airflow.env import airflow_env, migrate
from cdclake.monitoring import batches as monitoring
from cdclake.runtime.settings import Settings


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    build_staging(tmp_path / "staging")
    return Settings.from_env({"CDCLAKE_HOME": str(tmp_path), "CDCLAKE_STAGING": str(tmp_path / "staging")})


# ---------------------------------------------------------------------------
# cdclake.monitoring.batches
# ---------------------------------------------------------------------------


def test_each_table_shows_its_last_batch(settings: Settings) -> None:
    rows = {(r["source"], r["table"]): r for r in monitoring.table_status(settings, now=NOW)}
    assert sorted(rows) == [("billing", "BILL.INVOICES"), ("orders", "SHOP.ITEMS"), ("orders", "SHOP.ORDERS")]
    orders = rows[("orders", "SHOP.ORDERS")]
    assert orders["last_batch"] == "run_2"  # by finished_at, not by folder mtime (run_0 is newest on disk)
    assert (orders["applied"], orders["stale"], orders["quarantined"], orders["deleted_keys"]) == (5, 1, 2, 1)
    assert orders["lake_table"] == "shop.orders"
    assert orders["lag_seconds"] == 60.0
    assert orders["lag_now_seconds"] == 660.0  # 60 s at the end of the batch + 10 min since
    assert orders["schema_version"] == 3  # carried forward from run_1
    assert orders["schema_changes"] == ["SHOP.ORDERS: add column NOTE string"]  # the DDL text is left out
    assert (orders["batches"], orders["total_applied"], orders["total_quarantined"]) == (3, 16, 2)
    items = rows[("orders", "SHOP.ITEMS")]
    assert items["lake_table"] == "shop.items"  # from tables.json when the report has none
    assert items["lag_seconds"] is None and items["schema_version"] is None and items["schema_changes"] is None


def test_sources_count_finished_and_unfinished_batches(settings: Settings) -> None:
    rows = {r["source"]: r for r in monitoring.source_status(settings)}
    assert rows["orders"]["last_batch"] == "run_2"
    assert (rows["orders"]["batches"], rows["orders"]["unfinished"]) == (3, 1)
    assert (rows["orders"]["read"], rows["orders"]["quarantined"], rows["orders"]["balanced"]) == (14, 3, True)
    assert rows["billing"]["held"] is None


def test_quarantine_lists_reasons_newest_first_and_never_raw(settings: Settings) -> None:
    records = monitoring.quarantine_reasons(settings)
    orders = [r for r in records if r["source"] == "orders"]
    assert [(r["batch_id"], r["step"], r["table"], r["source_offset"]) for r in orders] == [
        ("run_2", "decode", None, 42),
        ("run_2", "compact", "shop.orders", 100),
        ("run_2", "compact", "shop.orders", 200),
        ("run_1", "decode", None, 7),
    ]
    assert orders[1]["error"] == "key column ID is null" and orders[1]["source_file"] == "orders_0002.json"
    billing = [r for r in records if r["source"] == "billing"]
    assert [(r["step"], r["error"]) for r in billing] == [("normalize", "table BILL.X has no primary key")]
    assert all("raw" not in r for r in records)
    assert CANARY not in json.dumps(records)
    assert monitoring.quarantine_count(settings) == {"billing": 1, "orders": 4}


def test_quarantine_is_bounded_per_source_and_filtered(settings: Settings) -> None:
    records = monitoring.quarantine_reasons(settings, limit=2)
    assert [(r["source"], r["source_offset"]) for r in records] == [("billing", 3), ("orders", 42), ("orders", 100)]
    only = monitoring.quarantine_reasons(settings, source="billing")
    assert {r["source"] for r in only} == {"billing"}
    assert monitoring.quarantine_reasons(settings, source="../orders") == []
    assert monitoring.quarantine_count(settings, "orders") == {"orders": 4}


def test_staging_refusals_are_listed(settings: Settings) -> None:
    batch = settings.staging / "billing" / "b_1"
    manifest = json.loads((batch / "manifest.json").read_text())
    manifest["rejected"] = [{"key": "bill_2.csv", "reason": "not a CSV file"}]
    (batch / "manifest.json").write_text(json.dumps(manifest))
    records = monitoring.quarantine_reasons(settings, source="billing")
    assert (records[0]["step"], records[0]["source_file"], records[0]["error"]) == (
        "stage",
        "bill_2.csv",
        "not a CSV file",
    )
    assert monitoring.quarantine_count(settings, "billing") == {"billing": 2}


def test_no_staging_yet(tmp_path: Path) -> None:
    settings = Settings.from_env({"CDCLAKE_HOME": str(tmp_path), "CDCLAKE_STAGING": str(tmp_path / "missing")})
    assert monitoring.table_status(settings) == []
    assert monitoring.source_status(settings) == []
    assert monitoring.quarantine_reasons(settings) == []


# ---------------------------------------------------------------------------
# The plugin in a running Airflow API server, through headless Chromium
# ---------------------------------------------------------------------------

from local_stack.browser import CHROMIUM, CHROMIUM_ARGS  # noqa: E402  (one list of browser flags)


def _chromium() -> str:
    """Debian's Chromium (``make setup`` installs it); installed here if missing and apt-get can."""
    if not os.access(CHROMIUM, os.X_OK) and shutil.which("apt-get") and os.geteuid() == 0:
        subprocess.run(
            "apt-get update -qq && apt-get install -y -qq chromium", shell=True, capture_output=True, check=False
        )
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"{CHROMIUM} is missing and could not be installed (run `make browser` as root)")
    return CHROMIUM


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _http(url: str, headers: dict[str, str] | None = None, data: bytes | None = None) -> tuple[int, dict, str]:
    """One request, redirects not followed: (status, headers, body)."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.build_opener(NoRedirect).open(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


@pytest.fixture(scope="module")
def api_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """``airflow api-server`` on a free port with our plugins folder, a staging tree, its monitoring index
    (times relative to now: one table of each state) and a lake table."""
    _chromium()
    home = tmp_path_factory.mktemp("monitoring-home")
    now = dt.datetime.now(dt.UTC)
    build_staging(home / "staging", now)
    add_late_source(home / "staging", now)
    settings_env = page_settings(home)
    settings = Settings.from_env(settings_env)
    build_index(settings, now)
    write_lake_table(settings.warehouse)
    password = secrets.token_urlsafe(12)
    passwords = home / "airflow" / "passwords.json"
    env = airflow_env(
        home,
        {
            **settings_env,
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
            "AIRFLOW__API__BASE_URL": "",
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(64),
        },
    )
    passwords.write_text(json.dumps({"admin": password}))
    log = home / "api-server.log"
    migrate(env, log)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with open(log, "a") as out:
        server = subprocess.Popen(
            [str(Path(sys.executable).parent / "airflow"), "api-server", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 90  # ~15 s when idle; more on a busy machine
        while True:
            if server.poll() is not None:
                pytest.fail(f"api-server exited ({server.returncode}):\n{log.read_text()[-4000:]}")
            try:
                if _http(f"{base}/api/v2/monitor/health")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"api-server did not answer within 90 s:\n{log.read_text()[-4000:]}")
            time.sleep(0.5)
        yield {"base": base, "user": "admin", "password": password, "log": str(log), "home": str(home)}
    finally:
        os.killpg(server.pid, 15)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, 9)
            server.wait(timeout=5)


SHOTS = os.environ.get("CDCLAKE_SCREENSHOTS")  # where the screenshots go (default: the test's tmp folder)


def _states(page: Any, kind: str) -> list[tuple[str, str]]:
    """(name, state) of each row of the overview's ``kind`` table (tables or sources), top to bottom."""
    attr = "data-table" if kind == "tables" else "data-source"
    rows = page.locator(f"table.{kind} tbody tr")
    return [(r.get_attribute(attr), r.get_attribute("data-state")) for r in rows.all()]


@pytest.mark.airflow
def test_plugin_pages_need_an_airflow_login(api_server: dict[str, str], tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    base = api_server["base"]
    shots = Path(SHOTS) if SHOTS else tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    # plain HTTP, no token: the API refuses, the pages send to the login
    for route in ("api/tables", "api/quarantine", "api/health", "api/table?source=orders&table=SHOP.ORDERS"):
        assert _http(f"{base}/cdclake/{route}")[0] == 401, route
    assert _http(f"{base}/cdclake/api/health", {"Authorization": "Bearer not-a-jwt"})[0] == 403
    assert _http(f"{base}/cdclake/api/tables", {"Cookie": "_token=forged"})[0] in (401, 403)
    for route in ("", "table?source=orders&table=SHOP.ORDERS"):
        status, headers, body = _http(f"{base}/cdclake/{route}")
        assert status == 303 and "/auth/login" in headers["location"], (status, headers)
        assert "SHOP.ORDERS" not in body
    # a token from Airflow's own login endpoint opens the JSON API
    login = json.dumps({"username": api_server["user"], "password": api_server["password"]}).encode()
    status, _, body = _http(f"{base}/auth/token", {"Content-Type": "application/json"}, login)
    assert status == 201, body
    bearer = {"Authorization": "Bearer " + json.loads(body)["access_token"]}
    status, _, body = _http(f"{base}/cdclake/api/tables", bearer)
    assert status == 200 and {r["table"] for r in json.loads(body)} >= {"SHOP.ORDERS", "SHOP.ITEMS", "BILL.INVOICES"}
    status, _, body = _http(f"{base}/cdclake/api/quarantine?source=orders", bearer)
    assert status == 200 and json.loads(body)["counts"] == {"orders": 4} and CANARY not in body
    assert _http(f"{base}/cdclake/api/quarantine?source=nope", bearer)[0] == 404
    status, _, body = _http(f"{base}/cdclake/api/health", bearer)
    assert status == 200 and json.loads(body)["table_counts"] == {
        "failing": 1,
        "late": 1,
        "quarantining": 1,
        "healthy": 1,
    }
    assert _http(f"{base}/cdclake/api/table?source=orders&table=NOPE", bearer)[0] == 404

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
        try:
            # a fresh browser: refused, then logged in through Airflow's login page and sent back
            context = browser.new_context(viewport={"width": 1360, "height": 860})
            page = context.new_page()
            assert page.request.get(f"{base}/cdclake/api/health").status == 401
            page.goto(f"{base}/cdclake/")
            page.wait_for_url("**/auth/login**", timeout=20_000)
            assert "SHOP.ORDERS" not in page.content()
            page.locator("input[name=username]").fill(api_server["user"])
            page.locator("input[name=password]").fill(api_server["password"])
            page.locator("button[type=submit]").click()
            page.wait_for_url(f"{base}/cdclake/", timeout=20_000)
            # the overview: one table of each state, worst first, counted
            assert _states(page, "tables") == [
                ("BILL.INVOICES", "failing"),
                ("LEG.ACCOUNTS", "late"),
                ("SHOP.ORDERS", "quarantining"),
                ("SHOP.ITEMS", "healthy"),
            ]
            assert _states(page, "sources")[:3] == [
                ("billing", "failing"),
                ("legacy", "late"),
                ("orders", "quarantining"),
            ]
            counts = page.locator("p.counts").first.inner_text()
            assert "failing 1" in counts and "healthy 1" in counts, counts
            assert page.locator("table.tables svg.spark").count() == 12  # applied, quarantined, lag per table
            text = page.locator("body").inner_text()
            assert "last run scheduled__" in text and "failed in decode_normalize" in text
            assert CANARY not in page.content()
            run_link = page.locator("table.sources a.run-link").first
            assert run_link.get_attribute("href").startswith(
                "/dags/cdc_billing/runs/scheduled__2024-05-01T11%3A59%3A30"
            )
            page.screenshot(path=str(shots / "monitoring-overview.jpg"), type="jpeg", quality=55, full_page=True)
            assert page.request.get(f"{base}/cdclake/api/health").status == 200  # the login cookie works for the API

            # one table's drill-down, from its link
            page.locator("a.table-link", has_text="SHOP.ORDERS").click()
            page.wait_for_url("**/cdclake/table?source=orders&table=SHOP.ORDERS", timeout=20_000)
            expect(page.locator("h1 [data-state=quarantining]")).to_be_visible()
            assert [r.get_attribute("data-batch") for r in page.locator("table.history tbody tr").all()] == [
                "run_2",
                "run_1",
                "run_0",
            ]
            links = page.locator("table.history tbody tr").first.locator("a")
            hrefs = {a.inner_text(): a.get_attribute("href") for a in links.all()}
            run = f"/dags/cdc_orders/runs/{ORDERS_RUN.replace(':', '%3A').replace('+', '%2B')}"
            assert hrefs == {
                "run": run,
                "stage": f"{run}/tasks/stage",
                "decode_normalize": f"{run}/tasks/decode_normalize",
                "apply_ddl": f"{run}/tasks/apply_ddl",  # the batch changed this table's schema
                "compact": f"{run}/tasks/compact/mapped",
                "report": f"{run}/tasks/report",
            }
            assert page.request.get(base + hrefs["report"]).status == 200  # a route of Airflow's UI
            snapshots = page.locator("table.snapshots tbody tr")
            assert snapshots.count() == 2 and "run_2" in snapshots.first.inner_text()
            text = page.locator("body").inner_text()
            assert "add_column" in text and "key column ID is null" in text
            assert f"--batch-dir {home_of(api_server)}/staging/orders/run_2" in text  # the replay command
            assert page.locator("figure.chart svg").count() == 5
            assert CANARY not in page.content()
            page.screenshot(path=str(shots / "monitoring-table.jpg"), type="jpeg", quality=55, full_page=True)

            # the overview inside the Airflow UI (external view in the navigation)
            page.goto(f"{base}/plugin/cdclake")
            frame = page.frame_locator("iframe")
            expect(frame.locator("table.tables tbody tr").first).to_have_attribute(
                "data-state", "failing", timeout=30_000
            )
            context.close()

            # another fresh browser, no login: still refused
            other = browser.new_context()
            assert other.request.get(f"{base}/cdclake/api/quarantine").status == 401
            stranger = other.new_page()
            stranger.goto(f"{base}/cdclake/table?source=orders&table=SHOP.ORDERS")
            stranger.wait_for_url("**/auth/login**", timeout=20_000)
            assert "SHOP.ORDERS" not in stranger.content()
            other.close()
        finally:
            browser.close()
    assert (shots / "monitoring-overview.jpg").stat().st_size > 10_000 and (
        shots / "monitoring-table.jpg"
    ).stat().st_size > 10_000


def home_of(api_server: dict[str, str]) -> str:
    return str(Path(api_server["home"]).resolve())
