"""Airflow: the only package that imports it.

Owns the DAGs built from the sources configuration and their tasks (`dags`), freshness and failure alerts and
the ``cdc_health`` DAG (`alerts`), the dates every DAG shares (`dates`), and running DAGs on the embedded
defaults (`env`).

The names other packages import are exported here (``__all__``), each loaded from its module when first
asked for (PEP 562): importing the package alone loads none of its modules.
"""

import importlib

#: Modules of this package exported as themselves.
_MODULES = ("alerts",)
#: The other public names, by the module of this package that defines them.
_NAMES = {
    "dags": ("build_dags", "report_task", "run_java_options", "step_java_options"),
    "env": ("airflow", "airflow_env", "dags_test", "migrate"),
}
_HOME = {name: module for module, names in _NAMES.items() for name in names} | {m: m for m in _MODULES}

__all__ = [
    "airflow",
    "airflow_env",
    "alerts",
    "build_dags",
    "dags_test",
    "migrate",
    "report_task",
    "run_java_options",
    "step_java_options",
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
