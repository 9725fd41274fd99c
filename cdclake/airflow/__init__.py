"""Airflow: the only package that imports it.

Owns the DAGs built from the sources configuration and their tasks (`dags`), freshness and failure alerts and
the ``cdc_health`` DAG (`alerts`), the dates every DAG shares (`dates`), and running DAGs on the embedded
defaults (`env`).

The names other packages import are exported here (``__all__``), each loaded from its module when first
asked for (PEP 562): importing the package alone loads none of its modules.
"""

from cdclake import lazy_exports

#: Modules of this package exported as themselves.
_MODULES = ("alerts",)
#: The other public names, by the module of this package that defines them.
_NAMES = {
    "dags": ("build_dags", "report_task", "run_java_options", "step_java_options"),
    "env": ("airflow", "airflow_env", "dags_test", "migrate"),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _NAMES, _MODULES)
