"""The monitoring page: cdclake.monitoring on a staging tree written here, then the plugin for real
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

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cdclake import monitoring
from cdclake.airflow_env import airflow_env, migrate
from cdclake.settings import Settings

CANARY = "RAW-CANARY-4111111111111111"  # a raw value that must never reach the page
NOW = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)
REJECT_SCHEMA = pa.schema(
    [("error", pa.string()), ("source_file", pa.string()), ("source_offset", pa.int64()), ("raw", pa.binary())]
)


def _write_rejects(folder: Path, rows: list[tuple[str, str, int]]) -> None:
    """Quarantined records the way Spark leaves them: part files, _SUCCESS and a .crc beside them."""
    folder.mkdir(parents=True, exist_ok=True)
    table = pa.table(
        {
            "error": [r[0] for r in rows],
            "source_file": [r[1] for r in rows],
            "source_offset": [r[2] for r in rows],
            "raw": [f"{CANARY}-{i}".encode() for i in range(len(rows))],
        },
        schema=REJECT_SCHEMA,
    )
    pq.write_table(table, folder / "part-00000-abc.snappy.parquet")
    (folder / "_SUCCESS").write_text("")
    (folder / ".part-00000-abc.snappy.parquet.crc").write_bytes(b"\x00crc")


def _write_batch(
    staging: Path,
    source: str,
    batch_id: str,
    finished_at: dt.datetime | None,
    tables: dict[str, dict[str, Any]] | None,
    **totals: Any,
) -> Path:
    """A batch folder; ``tables=None`` leaves it without a report (still running or failed)."""
    batch = staging / source / batch_id
    batch.mkdir(parents=True)
    (batch / "manifest.json").write_text(json.dumps({"source": source, "batch_id": batch_id, "rejected": []}))
    if tables is not None:
        report = {"batch_id": batch_id, "tables": tables, "balanced": True, **totals}
        if finished_at is not None:
            report["finished_at"] = finished_at.isoformat()
        (batch / "reports").mkdir()
        (batch / "reports" / "batch.json").write_text(json.dumps(report))
    return batch


def build_staging(staging: Path) -> None:
    """Two sources; orders has three batches whose folder mtimes disagree with finished_at."""
    b1 = _write_batch(
        staging,
        "orders",
        "run_1",
        NOW - dt.timedelta(hours=2),
        {"SHOP.ORDERS": {"applied": 10, "stale": 0, "quarantined": 0, "schema_version": 3, "schema_changes": []}},
        read=10,
        applied=10,
        quarantined=0,
    )
    _write_rejects(b1 / "decoded" / "kind=rejected", [("old batch: bad json", "orders_0001.json", 7)])
    b2 = _write_batch(
        staging,
        "orders",
        "run_2",
        NOW - dt.timedelta(minutes=10),
        {
            "SHOP.ORDERS": {
                "applied": 5,
                "stale": 1,
                "quarantined": 2,
                "deleted_keys": 1,
                "truncates": 0,
                "lake_table": "shop.orders",
                "newest_event_ts": (NOW - dt.timedelta(minutes=11)).isoformat(),
                "lag_seconds": 60.0,
                "schema_changes": [{"change": "SHOP.ORDERS: add column NOTE string", "source_event": "ALTER ..."}],
            },
            "SHOP.ITEMS": {"applied": 4, "stale": 0, "quarantined": 0},
        },
        read=14,
        applied=9,
        stale=1,
        quarantined=3,
    )
    (b2 / "tables.json").write_text(json.dumps({"SHOP.ITEMS": {"identifier": "shop.items"}}))
    _write_rejects(
        b2 / "decoded" / "kind=rejected", [("invalid JSON <script>alert(1)</script>", "orders_0002.json", 42)]
    )
    _write_rejects(
        b2 / "quarantine" / "compact" / "shop.orders",
        [("key column ID is null", "orders_0002.json", 100), ("key column ID is null", "orders_0002.json", 200)],
    )
    _write_batch(staging, "orders", "run_3", None, None)  # still running: no report
    # written last (newest mtime) but finished first: finished_at decides the order
    _write_batch(
        staging,
        "orders",
        "run_0",
        NOW - dt.timedelta(days=1),
        {"SHOP.ORDERS": {"applied": 1, "stale": 0, "quarantined": 0}},
        read=1,
    )
    b = _write_batch(staging, "billing", "b_1", NOW - dt.timedelta(minutes=1), {"BILL.INVOICES": {"applied": 7}})
    _write_rejects(b / "quarantine" / "normalize", [("table BILL.X has no primary key", "bill_1.csv", 3)])
    (staging / "orders" / "ledger.db").write_bytes(b"")  # files next to batches are ignored


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    build_staging(tmp_path / "staging")
    return Settings.from_env({"CDCLAKE_HOME": str(tmp_path), "CDCLAKE_STAGING": str(tmp_path / "staging")})


# ---------------------------------------------------------------------------
# cdclake.monitoring
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
    assert "no finished batch yet" in monitoring.render_page([], [], [], {}, user="u")


def test_page_escapes_everything_and_shows_dashes(settings: Settings) -> None:
    page = monitoring.render_page(
        monitoring.table_status(settings, now=NOW),
        monitoring.source_status(settings),
        monitoring.quarantine_reasons(settings),
        monitoring.quarantine_count(settings),
        user="<b>eve</b>",
        limit=200,
    )
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;b&gt;eve&lt;/b&gt;" in page
    assert CANARY not in page
    assert "orders: 4 quarantined record(s), all shown" in page
    assert "11.0 min" in page and "—" in page  # lag now of SHOP.ORDERS; SHOP.ITEMS has no lag
    assert monitoring.format_seconds(30) == "30 s" and monitoring.format_seconds(3 * 86400) == "3.0 d"
    assert "2024-05-01 11:50:00" in page  # SHOP.ORDERS' last batch, in UTC
    assert monitoring.format_time("2024-05-01T14:00:00+02:00") == "2024-05-01 12:00:00"


# ---------------------------------------------------------------------------
# The plugin in a running Airflow API server, through headless Chromium
# ---------------------------------------------------------------------------

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


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
    """``airflow api-server`` on a free port with our plugins folder and a fixture staging tree."""
    _chromium()
    home = tmp_path_factory.mktemp("monitoring-home")
    build_staging(home / "staging")
    password = secrets.token_urlsafe(12)
    passwords = home / "airflow" / "passwords.json"
    env = airflow_env(
        home,
        {
            "CDCLAKE_STAGING": str(home / "staging"),
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
        yield {"base": base, "user": "admin", "password": password, "log": str(log)}
    finally:
        os.killpg(server.pid, 15)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, 9)
            server.wait(timeout=5)


@pytest.mark.airflow
def test_plugin_page_needs_an_airflow_login(api_server: dict[str, str]) -> None:
    from playwright.sync_api import expect, sync_playwright

    base = api_server["base"]
    # plain HTTP, no token: the API refuses, the page sends to the login
    assert _http(f"{base}/cdclake/api/tables")[0] == 401
    assert _http(f"{base}/cdclake/api/quarantine")[0] == 401
    assert _http(f"{base}/cdclake/api/tables", {"Authorization": "Bearer not-a-jwt"})[0] == 403
    assert _http(f"{base}/cdclake/api/tables", {"Cookie": "_token=forged"})[0] in (401, 403)
    status, headers, body = _http(f"{base}/cdclake/")
    assert status == 303 and "/auth/login" in headers["location"], (status, headers)
    assert "SHOP.ORDERS" not in body
    # a token from Airflow's own login endpoint opens the JSON API
    login = json.dumps({"username": api_server["user"], "password": api_server["password"]}).encode()
    status, _, body = _http(f"{base}/auth/token", {"Content-Type": "application/json"}, login)
    assert status == 201, body
    bearer = {"Authorization": "Bearer " + json.loads(body)["access_token"]}
    status, _, body = _http(f"{base}/cdclake/api/tables", bearer)
    assert status == 200 and {r["table"] for r in json.loads(body)} == {"SHOP.ORDERS", "SHOP.ITEMS", "BILL.INVOICES"}
    status, _, body = _http(f"{base}/cdclake/api/quarantine?source=orders", bearer)
    assert status == 200 and json.loads(body)["counts"] == {"orders": 4} and CANARY not in body
    assert _http(f"{base}/cdclake/api/quarantine?source=nope", bearer)[0] == 404

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
        try:
            # a fresh browser: refused, then logged in through Airflow's login page and sent back
            context = browser.new_context()
            page = context.new_page()
            assert page.request.get(f"{base}/cdclake/api/tables").status == 401
            page.goto(f"{base}/cdclake/")
            page.wait_for_url("**/auth/login**", timeout=20_000)
            assert "SHOP.ORDERS" not in page.content()
            page.locator("input[name=username]").fill(api_server["user"])
            page.locator("input[name=password]").fill(api_server["password"])
            page.locator("button[type=submit]").click()
            page.wait_for_url(f"{base}/cdclake/", timeout=20_000)
            text = page.locator("body").inner_text()
            for expected in (
                "SHOP.ORDERS",
                "SHOP.ITEMS",
                "BILL.INVOICES",
                "shop.orders",
                "run_2",
                "key column ID is null",
            ):
                assert expected in text, expected
            assert "orders: 4 quarantined record(s), all shown" in text
            assert "invalid JSON <script>alert(1)</script>" in text  # shown as text, not run
            assert CANARY not in page.content()
            assert page.request.get(f"{base}/cdclake/api/tables").status == 200  # the login cookie works for the API
            # the same page inside the Airflow UI (external view in the navigation)
            page.goto(f"{base}/plugin/cdclake")
            frame = page.frame_locator("iframe")
            expect(frame.get_by_text("key column ID is null").first).to_be_visible(timeout=30_000)
            context.close()

            # another fresh browser, no login: still refused
            other = browser.new_context()
            assert other.request.get(f"{base}/cdclake/api/quarantine").status == 401
            stranger = other.new_page()
            stranger.goto(f"{base}/cdclake/")
            stranger.wait_for_url("**/auth/login**", timeout=20_000)
            assert "SHOP.ORDERS" not in stranger.content()
            other.close()
        finally:
            browser.close()
