"""Each package's public face (issue 57): its ``__init__`` says what it owns and exports its names.

Every name of a package's ``__all__`` resolves to something of that package (a module, or an object one of its
modules defines), ``__all__`` is sorted as ruff sorts it (RUF022) without repeats, and the exports are lazy:
importing a package loads none of its modules (``cdclake.formats`` excepted: importing it registers every format),
so ``cdclake.runtime`` stays free of pyarrow and pyspark (``cdclake/__init__.py`` imports it before either).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import subprocess
import sys
import textwrap

import pytest

PACKAGES = [
    "cdclake.airflow",
    "cdclake.compaction",
    "cdclake.events",
    "cdclake.formats",
    "cdclake.jobs",
    "cdclake.lake",
    "cdclake.monitoring",
    "cdclake.native",
    "cdclake.runtime",
    "cdclake.schema",
    "cdclake.staging",
]
#: Packages whose ``__init__`` loads modules of its own on purpose.
EAGER = {"cdclake.formats"}


def _ruff_order(name: str) -> tuple:
    """RUF022's isort-style order: SCREAMING_CASE, then CamelCase, then the rest; natural order within each."""
    kind = 0 if len(name) > 1 and name.isupper() else 1 if name[:1].isupper() else 2
    return kind, [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _submodules(package) -> set[str]:
    return {info.name for info in pkgutil.iter_modules(package.__path__)}


@pytest.mark.parametrize("name", PACKAGES)
def test_docstring_says_what_the_package_owns(name):
    package = importlib.import_module(name)
    assert package.__doc__ and len(package.__doc__.strip().splitlines()) > 1, f"{name} needs a docstring"


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_sorted_and_unique(name):
    exported = importlib.import_module(name).__all__
    assert exported, f"{name} exports nothing"
    assert len(set(exported)) == len(exported), f"{name}.__all__ repeats a name"
    assert exported == sorted(exported, key=_ruff_order), f"{name}.__all__ is not sorted"


@pytest.mark.parametrize("name", PACKAGES)
def test_every_exported_name_resolves_inside_the_package(name):
    package = importlib.import_module(name)
    inside = name + "."
    submodules = _submodules(package)
    for exported in package.__all__:
        value = getattr(package, exported)
        if exported in submodules:  # a module exported as itself, never shadowed by a name of the same spelling
            assert value is importlib.import_module(inside + exported), f"{name}.{exported}"
        elif inspect.ismodule(value):
            pytest.fail(f"{name}.{exported} is a module that is not the package's")
        elif inspect.isclass(value) or inspect.isroutine(value):
            assert value.__module__.startswith(inside), f"{name}.{exported} comes from {value.__module__}"
        else:  # a constant: one of the package's modules holds this very object under this name
            holders = [m for m, module in list(sys.modules.items()) if m.startswith(inside)]
            holders = [m for m in holders if getattr(sys.modules[m], exported, None) is value]
            assert holders, f"{name}.{exported} is held by no module of {name}"
    assert set(package.__all__) <= set(dir(package))
    with pytest.raises(AttributeError):
        package.no_such_name  # noqa: B018


@pytest.mark.parametrize("name", PACKAGES)
def test_star_import_gives_all(name):
    namespace: dict = {}
    exec(f"from {name} import *", namespace)
    assert set(importlib.import_module(name).__all__) <= set(namespace)


def _run(code: str) -> None:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_importing_runtime_loads_neither_pyarrow_nor_pyspark():
    _run(
        """
        import sys
        import cdclake.runtime
        loaded = [m for m in ("pyarrow", "pyspark", "numpy") if m in sys.modules]
        assert not loaded, loaded
        """
    )


def test_importing_a_package_loads_none_of_its_modules():
    lazy = [name for name in PACKAGES if name not in EAGER]
    _run(
        f"""
        import importlib, sys
        import cdclake
        for name in {lazy!r}:
            before = set(sys.modules)
            importlib.import_module(name)
            new = set(sys.modules) - before - {{name}}
            assert not new, (name, sorted(new))
        """
    )


def test_importing_formats_still_loads_every_format():
    formats = importlib.import_module("cdclake.formats")
    public = {m for m in _submodules(formats) if not m.startswith("_")}
    assert public and all(f"cdclake.formats.{m}" in sys.modules for m in public)
