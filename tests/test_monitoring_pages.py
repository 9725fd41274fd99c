"""The overview and drill-down: models from the index, thresholds and lake table; the HTML they render."""

from __future__ import annotations

import re
from pathlib import Path

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

from cdclake.monitoring import html as monitoring_html
from cdclake.monitoring import models as monitoring_models
from cdclake.monitoring import views as monitoring_views
from cdclake.monitoring.charts import sparkline
from cdclake.runtime.settings import Settings


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    build_staging(tmp_path / "staging")
    add_late_source(tmp_path / "staging")
    settings = Settings.from_env(page_settings(tmp_path))
    build_index(settings)
    write_lake_table(settings.warehouse)
    return settings


def test_overview_states_worst_first_with_counts(settings: Settings) -> None:
    model = monitoring_views.overview_model(settings, now=NOW)
    assert [(t["source"], t["table"], t["state"]) for t in model["tables"]] == [
        ("billing", "BILL.INVOICES", "failing"),
        ("legacy", "LEG.ACCOUNTS", "late"),
        ("orders", "SHOP.ORDERS", "quarantining"),
        ("orders", "SHOP.ITEMS", "healthy"),
    ]
    assert model["table_counts"] == {"failing": 1, "late": 1, "quarantining": 1, "healthy": 1}
    assert [(s["source"], s["state"]) for s in model["sources"]] == [
        ("billing", "failing"),
        ("legacy", "late"),
        ("orders", "quarantining"),
    ]
    billing = model["sources"][0]
    assert billing["reasons"][0] == "last run scheduled__2024-05-01T11:59:30+00:00 failed in decode_normalize"
    legacy = model["tables"][1]
    assert legacy["reasons"] == ["lag 3.0 d > 60.0 min"] and legacy["lag_now_seconds"] == 3 * 86400 + 5.0
    orders = model["tables"][2]
    assert orders["reasons"] == ["25.0% of the last batch quarantined > 10.0%"]
    assert orders["trend"]["applied"] == [1, 10, 5]


def test_overview_page_links_filters_and_draws_trends(settings: Settings) -> None:
    model = monitoring_views.overview_model(settings, now=NOW)
    html = monitoring_html.render_overview(model, user="<b>eve</b>", base="/", index="idx")
    assert "&lt;b&gt;eve&lt;/b&gt;" in html and "<script" not in html and CANARY not in html
    assert not re.search(r"(src|href)=\"(https?:)?//", html)  # nothing loaded from elsewhere
    assert html.count('<svg class="spark"') == 3 * 4
    assert 'href="table?source=orders&amp;table=SHOP.ORDERS"' in html
    assert f'href="/dags/cdc_orders/runs/{ORDERS_RUN.replace(":", "%3A").replace("+", "%2B")}"' in html
    rows = re.findall(r'<tr data-table="([^"]+)" data-source="[^"]+" data-state="([^"]+)"', html)
    assert rows == [
        ("BILL.INVOICES", "failing"),
        ("LEG.ACCOUNTS", "late"),
        ("SHOP.ORDERS", "quarantining"),
        ("SHOP.ITEMS", "healthy"),
    ]
    late_only = monitoring_html.render_overview(model, user="u", base="/", index="idx", state="late")
    assert re.findall(r'<tr data-table="([^"]+)"', late_only) == ["LEG.ACCOUNTS"]


def test_overview_pages_through_many_tables() -> None:
    tables = [
        {
            "source": "s",
            "table": f"T{i:03d}",
            "state": "healthy",
            "reasons": [],
            "lag_now_seconds": 1.0,
            "trend": {"applied": [], "quarantined": [], "lag_seconds": []},
        }
        for i in range(250)
    ]
    model = {"generated_at": NOW.isoformat(), "table_counts": {}, "source_counts": {}, "sources": [], "tables": tables}
    pages = [monitoring_html.render_overview(model, user="u", base="/", index="i", page=p) for p in range(3)]
    assert [len(re.findall(r"<tr data-table=", p)) for p in pages] == [100, 100, 50]
    assert 'rel="next" href="./?page=1"' in pages[0] and 'rel="next"' not in pages[2]


def test_sparkline_scales_and_breaks_on_missing_values() -> None:
    svg = sparkline([0, 10, None, 5], title="t <x>", width=100, height=20)
    assert svg.count("<polyline") == 1 and svg.count("<circle") == 2  # a run of two, a lone point, the newest
    assert 'points="2.0,18.0 34.0,2.0"' in svg and "t &lt;x&gt;" in svg
    assert "<line" in sparkline([None, None], title="empty")


def test_drill_down_shows_batches_snapshots_schema_and_quarantine(settings: Settings) -> None:
    model = monitoring_views.table_model(settings, "orders", "SHOP.ORDERS", now=NOW)
    assert model["state"] == "quarantining" and model["lake_error"] is None
    assert [e["batch_id"] for e in model["history"]] == ["run_2", "run_1", "run_0"]
    assert model["history"][0]["wall_seconds"] == 600.0
    assert [(s["batch_id"], s["counts"]["applied"], s["added_data_files"]) for s in model["snapshots"]] == [
        ("run_2", 5, 1),
        ("run_1", 10, 1),
    ]
    assert [(s["data_files"], s["delete_files"], s["records"]) for s in model["snapshots"]] == [(2, 0, 4), (1, 0, 2)]
    assert model["schema_history"] == [
        {
            "kind": "add_column",
            "column": "NOTE",
            "new_name": None,
            "type": "string",
            "batch": "run_2",
            "schema_id": 1,
            "applied_at": "2024-05-01T11:45:00+00:00",
        }
    ]
    staging, warehouse = settings.staging, settings.warehouse
    assert model["quarantine"] == [
        {
            "step": "compact",
            "reason": "key column ID is null",
            "count": 2,
            "batches": ["run_2"],
            "replay": f"python -m cdclake replay --warehouse {warehouse} --batch-dir {staging}/orders/run_2",
        }
    ]
    assert [(g["reason"], g["replay"]) for g in model["source_quarantine"]][1] == (
        "old batch: bad json",
        f"python -m cdclake replay --warehouse {warehouse} --batch-dir {staging}/orders/run_1",
    )
    html = monitoring_html.render_table(model, user="eve", base="/airflow/")
    assert CANARY not in html and "<script" not in html
    run = "/airflow/dags/cdc_orders/runs/manual__2024-05-01T11%3A40%3A00%2B00%3A00"
    assert f'href="{run}"' in html and f'href="{run}/tasks/decode_normalize"' in html
    assert f'href="{run}/tasks/compact/mapped"' in html  # the mapped task's instances
    assert html.count('<figure class="chart">') == 5
    assert monitoring_views.table_model(settings, "orders", "NOPE") is None


def test_replay_commands_per_step() -> None:
    cmd = monitoring_models.replay_command
    assert (
        cmd("decode", "s", ["b1", "b2"], "/st", "/wh") == "python -m cdclake replay --warehouse /wh --source-dir /st/s"
    )
    assert cmd("compact", "s", ["b 1"], "/st", "/w h") == (
        "python -m cdclake replay --warehouse '/w h' --batch-dir '/st/s/b 1'"
    )
    assert cmd("ddl", "s", ["b"], "/st", "/wh").startswith("not replayed")
    assert cmd("stage", "s", ["b"], "/st", "/wh").startswith("not replayed")


def test_files_piling_up_are_flagged(settings: Settings) -> None:
    model = monitoring_views.table_model(settings, "orders", "SHOP.ORDERS", now=NOW)
    assert "Files pile up" not in monitoring_html.render_table(model, user="u", base="/")
    model["snapshots"][0]["delete_files"] = 3  # more delete files than data files
    assert "Files pile up: 2 data and 3 delete files" in monitoring_html.render_table(model, user="u", base="/")
