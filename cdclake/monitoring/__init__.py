"""What operators see: batches, quarantine, health and the pages.

Owns reading batches and quarantined records from staging (`batches`), the monitoring index and where it is
stored (`index`, `index_store`), health states (`health`), a table's lake history (`lake_history`), and the
pages: their data (`models`, `views`) and HTML (`html`, `charts`).

The names other packages import are exported here (``__all__``), each loaded from its module when first
asked for (PEP 562): importing the package alone loads none of its modules.
"""

from cdclake import lazy_exports

#: Modules of this package exported as themselves.
_MODULES = ("batches", "health", "html", "index", "models", "views")
#: The other public names, by the module of this package that defines them.
_NAMES = {
    "charts": ("sparkline",),
    "health": ("Health",),
    "index": ("record_run",),
    "index_store": ("LocalStore", "open_store"),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _NAMES, _MODULES)
