"""What operators see: batches, quarantine, health and the pages.

Owns reading batches and quarantined records from staging (`batches`), the monitoring index and where it is
stored (`index`, `index_store`), health states (`health`), a table's lake history (`lake_history`), and the
pages: their data (`models`, `views`) and HTML (`html`, `charts`).

The names other packages import are exported here (``__all__``), each loaded from its module when first
asked for (PEP 562): importing the package alone loads none of its modules.
"""

import importlib

#: Modules of this package exported as themselves.
_MODULES = ("batches", "health", "html", "index", "models", "views")
#: The other public names, by the module of this package that defines them.
_NAMES = {
    "charts": ("sparkline",),
    "health": ("Health",),
    "index": ("record_run",),
    "index_store": ("LocalStore", "open_store"),
}
_HOME = {name: module for module, names in _NAMES.items() for name in names} | {m: m for m in _MODULES}

__all__ = [
    "Health",
    "LocalStore",
    "batches",
    "health",
    "html",
    "index",
    "models",
    "open_store",
    "record_run",
    "sparkline",
    "views",
]


def __getattr__(name: str):  # -> Any (not annotated: the package imports nothing, not even ``typing``)
    """A name of :data:`__all__`, from its module, imported now if it was not yet."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    loaded = importlib.import_module(f"{__name__}.{module}")
    return loaded if module == name else getattr(loaded, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
