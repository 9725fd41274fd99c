"""What each page needs, gathered from settings: the index store, the sources config, the lake.

The plugin's routes call these two functions and nothing else, so a request costs one summary
read per source for the overview, and one summary, one history document and the table's
Iceberg metadata for a drill-down, however many batches there are.
"""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path
from typing import Any

from cdclake.monitoring import index as monitor_index
from cdclake.monitoring import models as monitoring_models
from cdclake.monitoring.index_store import IndexStore, open_store
from cdclake.monitoring.lake_history import lake_history
from cdclake.runtime.settings import Settings
from cdclake.runtime.sources import ConfigError, SourceConfig, load_sources

log = logging.getLogger(__name__)

_config_cache: dict[tuple[str, float], dict[str, SourceConfig]] = {}


def sources_config(settings: Settings) -> dict[str, SourceConfig]:
    """The sources config (thresholds), reloaded when the file changes; empty (defaults) if unreadable."""
    path = Path(settings.sources_file)
    try:
        key = (str(path), path.stat().st_mtime)
    except OSError:
        return {}
    if key not in _config_cache:
        try:
            config = load_sources(path)
        except ConfigError as exc:  # the DAG import error says the same; the page uses default thresholds
            log.warning("sources config unusable for the monitoring page: %s", exc)
            config = {}
        _config_cache.clear()
        _config_cache[key] = config
    return _config_cache[key]


_stores: dict[str, IndexStore] = {}


def index_store(settings: Settings) -> IndexStore:
    """The index store, made once per location (an S3 client is costly to build per request)."""
    key = str(settings.monitor_index)
    if key not in _stores:
        _stores[key] = open_store(settings.monitor_index)
    return _stores[key]


def overview_model(settings: Settings, now: dt.datetime | None = None) -> dict[str, Any]:
    """The overview's model: every source's summary with the configured thresholds."""
    return monitoring_models.overview(monitor_index.summaries(index_store(settings)), sources_config(settings), now)


def table_model(
    settings: Settings, source: str, table: str, page: int = 0, now: dt.datetime | None = None
) -> dict[str, Any] | None:
    """One table's drill-down model, or None if the index does not know the source or table."""
    store = index_store(settings)
    if source not in store.folders():
        return None
    summary = monitor_index.summary(store, source)
    if not summary or table not in (summary.get("tables") or {}):
        return None
    entry = summary["tables"][table]
    history = monitor_index.history(store, source, table, entry.get("batches", 0), page)
    return monitoring_models.table_detail(
        summary,
        table,
        history,
        lake_history(settings.warehouse, entry.get("lake_table")),
        sources_config(settings),
        staging=settings.staging,
        warehouse=settings.warehouse,
        page=page,
        now=now,
    )
