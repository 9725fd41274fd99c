"""cdclake: CDC landing files from many replication products -> Apache Iceberg tables."""

import importlib
import re
import sys


def lazy_exports(package: str, names: dict, modules: tuple = ()) -> tuple:
    """A package's public face (PEP 562) from one table, for its ``__init__``:
    ``__all__, __getattr__, __dir__ = lazy_exports(__name__, NAMES, MODULES)``.

    ``names`` holds the exported names by the module of ``package`` that defines them; ``modules`` the modules
    exported as themselves. ``__all__`` comes in ruff's order (RUF022); ``__getattr__`` imports a name's module
    when the name is first asked for and keeps the value in the package, so importing a package loads none of
    its modules. (Not annotated further: this module imports nothing heavy, not even ``typing``.)
    """
    home = {name: module for module, exported in names.items() for name in exported} | {m: m for m in modules}

    def __getattr__(name: str):
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        loaded = importlib.import_module(f"{package}.{module}")
        value = loaded if module == name else getattr(loaded, name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list:
        return sorted({*vars(sys.modules[package]), *home})

    return sorted(home, key=_ruff_order), __getattr__, __dir__


def _ruff_order(name: str) -> tuple:
    """RUF022's isort-style order: SCREAMING_CASE, then CamelCase, then the rest; natural order within each."""
    kind = 0 if len(name) > 1 and name.isupper() else 1 if name[:1].isupper() else 2
    return kind, [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


# after lazy_exports, which the packages' faces call as they load
from cdclake.runtime.allocator import configure as _configure_allocator  # noqa: E402

_configure_allocator()  # before any module of the package loads pyarrow or numpy

__version__ = "0.1.0"
