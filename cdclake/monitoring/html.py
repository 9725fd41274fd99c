"""The operators' pages as HTML: the health overview and one table's drill-down (cdclake.monitoring.models).

Server-rendered with inline SVG charts (cdclake.monitoring.charts), every value escaped, no script and
nothing loaded from elsewhere, so the pages work offline and inside the Airflow UI's frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any
from urllib.parse import quote, urlencode

from cdclake.monitoring import health
from cdclake.monitoring.batches import format_seconds, format_time
from cdclake.monitoring.charts import chart, sparkline
from cdclake.monitoring.index import table_tasks

#: Tables per overview page (worst first, so the first page holds what needs attention).
PAGE_SIZE = 100

#: A table with more data + delete files than this (or more delete than data files) is flagged.
PILE_UP_FILES = 500

_DASH = "—"

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1rem 1.5rem;color:#1f2933}
h1{font-size:1.35rem;margin:.2rem 0}h2{font-size:1.1rem;margin-top:1.4rem}
table{border-collapse:collapse;font-size:.83rem;margin:.4rem 0}
th,td{border:1px solid #d3d8de;padding:.2rem .45rem;text-align:left;vertical-align:middle}
th{background:#f1f4f7}td.n{text-align:right;font-variant-numeric:tabular-nums}
.muted{color:#6b7785}a{color:#1d4ed8}code{font-size:.8rem;background:#f4f6f8;padding:.05rem .25rem}
.state{display:inline-block;border-radius:.7rem;padding:.05rem .55rem;font-weight:600;font-size:.78rem;color:#fff}
.failing{background:#b42318}.late{background:#c2580a}.quarantining{background:#7a3fb0}.healthy{background:#2e7d32}
.counts .state{margin-right:.3rem}.counts{margin:.3rem 0}.why{font-size:.78rem;color:#3c4650;max-width:28rem}
figure.chart{display:inline-block;margin:0 1rem .6rem 0}figcaption{font-size:.78rem;color:#3c4650}
nav a{margin-right:.6rem}.warn{color:#b42318;font-weight:600}svg.spark{margin-right:.4rem;vertical-align:middle}
"""


def _page(title: str, body: str, *, refresh: bool = True) -> str:
    meta = '<meta http-equiv="refresh" content="60">' if refresh else ""
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">{meta}<title>{escape(title)}</title>'
        f"<style>{_STYLE}</style></head><body>{body}</body></html>"
    )


def _cell(value: Any, numeric: bool = False, raw_html: bool = False) -> str:
    text = value if raw_html else escape(_DASH if value is None or value == "" else str(value))
    return f'<td class="n">{text}</td>' if numeric else f"<td>{text}</td>"


def _table(headers: Sequence[str], rows: list[str], empty: str, css: str = "") -> str:
    if not rows:
        return f'<p class="muted">{escape(empty)}</p>'
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _badge(state: str) -> str:
    return f'<span class="state {escape(state)}" data-state="{escape(state)}">{escape(state)}</span>'


def _counts(label: str, counts: dict[str, int], link: str | None = None) -> str:
    parts = []
    for state in health.STATES:
        badge = f"{_badge(state)} {counts.get(state, 0)}"
        if link is not None:
            badge = f'<a href="{escape(link)}?{urlencode({"state": state})}">{badge}</a>'
        parts.append(f'<span class="count" data-count="{state}">{badge}</span> ')
    return f'<p class="counts"><b>{escape(label)}:</b> {"".join(parts)}</p>'


def airflow_links(base: str, dag_id: str | None, run_id: str | None, tasks: list[str]) -> dict[str, str]:
    """Airflow UI links of a run: ``run`` and one per task (``compact`` opens its mapped instances)."""
    if not dag_id or not run_id:
        return {}
    run = f"{base}dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}"
    links = {"run": run}
    for task in tasks:
        links[task] = f"{run}/tasks/{quote(task, safe='')}" + ("/mapped" if task == "compact" else "")
    return links


def _run_links(base: str, entry: dict[str, Any]) -> str:
    links = airflow_links(base, entry.get("dag_id"), entry.get("run_id"), table_tasks(entry))
    if not links:
        return _DASH
    parts = [f'<a target="_top" class="run-link" href="{escape(links.pop("run"))}">run</a>']
    parts += [
        f'<a target="_top" class="log-link" href="{escape(href)}">{escape(task)}</a>' for task, href in links.items()
    ]
    return " ".join(parts)


def _pct(value: Any) -> str | None:
    return f"{value:.1%}" if isinstance(value, int | float) else None


_SOURCE_HEADERS = ("State", "Source", "Tables", "Last batch", "Finished", "Last run", "Max lag, quarantined", "Why")
_TABLE_HEADERS = (
    "State",
    "Source",
    "Table",
    "Lake table",
    "Last batch finished",
    "Lag now",
    "Applied",
    "Stale",
    "Quarantined",
    "Trends: applied · quarantined · lag",
    "Why",
)


def render_overview(
    model: dict[str, Any], *, user: str, base: str, index: str, state: str | None = None, page: int = 0
) -> str:
    """The overview: counts per state, sources and tables worst first, a few trend lines per table."""
    source_rows = [_source_row(s, base) for s in model["sources"]]
    tables = [t for t in model["tables"] if state is None or t["state"] == state]
    pages = max((len(tables) + PAGE_SIZE - 1) // PAGE_SIZE, 1)
    page = min(max(page, 0), pages - 1)
    table_rows = [_overview_table_row(t) for t in tables[page * PAGE_SIZE : (page + 1) * PAGE_SIZE]]
    nav = _overview_nav(state, page, pages)
    body = (
        "<h1>cdclake: health</h1>"
        f'<p class="muted">Signed in as {escape(user)}. Index {escape(index)}. Generated '
        f"{escape(format_time(model['generated_at']) or '')} UTC; refreshes every minute. JSON: "
        "<code>api/health</code>, <code>api/table?source=S&amp;table=T</code>.</p>"
        + _counts("Tables", model["table_counts"], "./")
        + _counts("Sources", model["source_counts"])
        + "<h2>Sources</h2>"
        + _table(_SOURCE_HEADERS, source_rows, "no source configured or reported yet", "sources")
        + f"<h2>Tables ({len(tables)}{' ' + escape(state) if state else ''}), worst first</h2>"
        + nav
        + _table(
            _TABLE_HEADERS,
            table_rows,
            "no table reported yet" if state is None else f"no {state} table",
            "tables",
        )
    )
    return _page("cdclake health", body)


def _source_row(s: dict[str, Any], base: str) -> str:
    """A source's row of the overview: its state, tables per state, last batch and run, thresholds, why."""
    run = s.get("last_run") or {}
    run_html = _DASH
    if run.get("run_id"):
        links = airflow_links(base, run.get("dag_id"), run.get("run_id"), [])
        run_html = (
            f'<a target="_top" class="run-link" href="{escape(links["run"])}">{escape(run.get("state") or "?")}</a>'
        )
    per_state = " ".join(f"{s['table_states'][x]} {x}" for x in health.STATES if s["table_states"].get(x))
    return (
        f'<tr data-source="{escape(s["source"])}" data-state="{escape(s["state"])}">'
        + _cell(_badge(s["state"]), raw_html=True)
        + _cell(s["source"])
        + _cell(per_state or _DASH)
        + _cell(s.get("last_batch"))
        + _cell(format_time(s.get("finished_at")))
        + _cell(run_html, raw_html=True)
        + _cell(f"{format_seconds(s['max_lag_seconds'])}, {_pct(s['max_quarantined_share'])}")
        + f'<td class="why">{escape("; ".join(s["reasons"]) or _DASH)}</td></tr>'
    )


def _overview_table_row(t: dict[str, Any]) -> str:
    """A table's row of the overview: its state, link to its page, last batch, counts, trend lines, why."""
    href = "table?" + urlencode({"source": t["source"], "table": t["table"]})
    trends = (
        sparkline(t["trend"]["applied"], title=f"applied per batch, last {len(t['trend']['applied'])}", label="applied")
        + sparkline(t["trend"]["quarantined"], title="quarantined per batch", color="#7a3fb0", label="quarantined")
        + sparkline(t["trend"]["lag_seconds"], title="lag at the end of each batch", color="#c2580a", label="lag")
    )
    return (
        f'<tr data-table="{escape(t["table"])}" data-source="{escape(t["source"])}" '
        f'data-state="{escape(t["state"])}">'
        + _cell(_badge(t["state"]), raw_html=True)
        + _cell(t["source"])
        + _cell(f'<a class="table-link" href="{escape(href)}">{escape(t["table"])}</a>', raw_html=True)
        + _cell(t.get("lake_table"))
        + _cell(format_time(t.get("finished_at")))
        + _cell(format_seconds(t.get("lag_now_seconds")), numeric=True)
        + "".join(_cell(t.get(k), numeric=True) for k in ("applied", "stale", "quarantined"))
        + _cell(trends, raw_html=True)
        + f'<td class="why">{escape("; ".join(t["reasons"]) or _DASH)}</td></tr>'
    )


def _overview_nav(state: str | None, page: int, pages: int) -> str:
    """The overview's state filters and, past one page, its page links."""
    filters = " ".join(
        f'<a href="./?{urlencode({"state": x})}">{escape(x)}</a>' if x != state else f"<b>{escape(x)}</b>"
        for x in health.STATES
    )
    nav = f'<nav>Show: <a href="./">all</a> {filters}'
    if pages > 1:
        query = {"state": state} if state else {}
        nav += f" · page {page + 1} of {pages}"
        if page > 0:
            nav += f' <a href="./?{urlencode({**query, "page": page - 1})}">newer…</a>'
        if page + 1 < pages:
            nav += f' <a rel="next" href="./?{urlencode({**query, "page": page + 1})}">next page</a>'
    return nav + "</nav>"


def _reason_table(groups: list[dict[str, Any]], empty: str) -> str:
    rows = [
        "<tr>"
        + _cell(g["step"])
        + _cell(g["reason"])
        + _cell(g["count"], numeric=True)
        + _cell(", ".join(reversed(g["batches"])))
        + _cell(f'<code class="replay">{escape(g["replay"])}</code>', raw_html=True)
        + "</tr>"
        for g in groups
    ]
    return _table(["Step", "Reason (values masked)", "Records", "Batches (newest first)", "Replay"], rows, empty)


_HISTORY_HEADERS = (
    "Batch",
    "Finished",
    "Wall time",
    "Status",
    "Applied",
    "Stale",
    "Quarantined",
    "Deleted keys",
    "Truncates",
    "Lag",
    "Schema version",
    "Airflow run and task logs",
)
_SNAPSHOT_HEADERS = (
    "Committed",
    "Snapshot",
    "Operation",
    "Batch",
    "Batch counts",
    "Records added",
    "Records deleted",
    "Data files added",
    "Data files removed",
    "Delete files added",
    "Delete files removed",
    "Data files",
    "Delete files",
)
_SNAPSHOT_FIGURES = (
    "added_records",
    "deleted_records",
    "added_data_files",
    "removed_data_files",
    "added_delete_files",
    "removed_delete_files",
    "data_files",
    "delete_files",
)
_SCHEMA_HEADERS = ("Applied", "Batch", "Schema id", "Change", "Column", "New name", "Type")


def render_table(model: dict[str, Any], *, user: str, base: str) -> str:
    """One table's drill-down."""
    source, table = model["source"], model["table"]
    trend = model["trend"]
    charts = _charts(trend)
    history_rows = [_history_row(e, base) for e in model["history"]]
    nav = _history_nav(model, {"source": source, "table": table})
    snapshots = model["snapshots"]
    files_note = _files_note(snapshots)
    snapshot_rows = [_snapshot_row(s) for s in snapshots]
    schema_rows = [
        "<tr>"
        + _cell(format_time(s.get("applied_at")))
        + "".join(_cell(s.get(k)) for k in ("batch", "schema_id", "kind", "column", "new_name", "type"))
        + "</tr>"
        for s in model["schema_history"]
    ]
    lake_error = (
        f'<p class="warn">Lake table not readable: {escape(model["lake_error"])}</p>' if model["lake_error"] else ""
    )
    body = (
        _table_summary(model, user, charts)
        + "<h2>Batches</h2>"
        + nav
        + _table(_HISTORY_HEADERS, history_rows, "no batch reported", "history")
        + "<h2>Iceberg snapshots (newest first)</h2>"
        + lake_error
        + files_note
        + _table(_SNAPSHOT_HEADERS, snapshot_rows, "no snapshot", "snapshots")
        + "<h2>Schema history (<code>cdclake.schema-history</code>)</h2>"
        + _table(_SCHEMA_HEADERS, schema_rows, "no schema change recorded")
        + "<h2>Quarantine of this table, by reason</h2>"
        + _reason_table(model["quarantine"], "nothing quarantined")
        + f"<h2>Quarantine of source {escape(source)} not tied to one table (staging, decode, normalize, DDL)</h2>"
        + _reason_table(model["source_quarantine"], "nothing quarantined")
    )
    return _page(f"cdclake {source} / {table}", body)


def _charts(trend: dict[str, Any]) -> str:
    """The table page's trend charts, one per figure of its batches."""
    return (
        chart(trend["applied"], title="Applied", label="applied")
        + chart(trend["stale"], title="Stale", label="stale", color="#6b7785")
        + chart(trend["quarantined"], title="Quarantined", label="quarantined", color="#7a3fb0")
        + chart(trend["lag_seconds"], title="Lag at batch end", label="lag", unit=" s", color="#c2580a")
        + chart(trend["wall_seconds"], title="Batch wall time", label="wall", unit=" s", color="#2e7d32")
    )


def _history_row(e: dict[str, Any], base: str) -> str:
    """A batch's row of the table page: its figures and the links to its Airflow run and task logs."""
    return (
        f'<tr data-batch="{escape(str(e.get("batch_id")))}">'
        + _cell(e.get("batch_id"))
        + _cell(format_time(e.get("finished_at")))
        + _cell(format_seconds(e.get("wall_seconds")), numeric=True)
        + _cell(e.get("status"))
        + "".join(
            _cell(e.get(k), numeric=True) for k in ("applied", "stale", "quarantined", "deleted_keys", "truncates")
        )
        + _cell(format_seconds(e.get("lag_seconds")), numeric=True)
        + _cell(e.get("schema_version"), numeric=True)
        + _cell(_run_links(base, e), raw_html=True)
        + "</tr>"
    )


def _history_nav(model: dict[str, Any], query: dict[str, str]) -> str:
    """The batch history's page links (newer, older)."""
    nav = f"<nav>page {model['page'] + 1} of {model['pages']}"
    if model["page"] > 0:
        nav += f' <a href="table?{urlencode({**query, "page": model["page"] - 1})}">newer</a>'
    if model["page"] + 1 < model["pages"]:
        nav += f' <a href="table?{urlencode({**query, "page": model["page"] + 1})}">older</a>'
    return nav + "</nav>"


def _files_note(snapshots: list[dict[str, Any]]) -> str:
    """A warning when the newest snapshot's files pile up (more delete than data files, or too many)."""
    if not snapshots:
        return ""
    head = snapshots[0]
    data, deletes = head.get("data_files") or 0, head.get("delete_files") or 0
    if deletes > data or data + deletes > PILE_UP_FILES:
        return (
            f'<p class="warn">Files pile up: {data} data and {deletes} delete files; '
            "the cdc_maintenance DAG rewrites them.</p>"
        )
    return ""


def _snapshot_row(s: dict[str, Any]) -> str:
    """An Iceberg snapshot's row of the table page: its batch, counts and file figures."""
    return (
        "<tr>"
        + _cell(format_time(s.get("committed_at")))
        + _cell(s.get("snapshot_id"))
        + _cell(s.get("operation"))
        + _cell(s.get("batch_id"))
        + _cell(", ".join(f"{k} {v}" for k, v in sorted(s["counts"].items())) or None)
        + "".join(_cell(s.get(k), numeric=True) for k in _SNAPSHOT_FIGURES)
        + "</tr>"
    )


def _table_summary(model: dict[str, Any], user: str, charts: str) -> str:
    """The table page's head: state, why, thresholds, totals and the trend charts."""
    source, table, trend = model["source"], model["table"], model["trend"]
    return (
        f'<p><a href="./">← all tables</a></p><h1>{escape(source)} / {escape(table)} {_badge(model["state"])}</h1>'
        f'<p class="summary">{escape("; ".join(model["reasons"]) or "within its thresholds")} '
        f"(max lag {escape(format_seconds(model['max_lag_seconds']) or '')}, max quarantined "
        f"{escape(_pct(model['max_quarantined_share']) or '')}). "
        f"Lake table <code>{escape(model.get('lake_table') or _DASH)}</code>; "
        f"{model['batches']} batch(es), {model.get('total_applied') or 0} applied and "
        f"{model.get('total_quarantined') or 0} quarantined in all. Signed in as {escape(user)}.</p>"
        f"<h2>Trends (last {len(trend['applied'])} batches)</h2>{charts}"
    )
