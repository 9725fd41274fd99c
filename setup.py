"""The package's optional C extension modules (``cdclake/native``): ``pip install .`` and a wheel build and carry
them where a C compiler is; without one the install still succeeds and the Python equivalents run. The metadata is
``pyproject.toml``'s; the list of modules is ``cdclake/native/build.py``'s (read without importing the package)."""

import runpy
from pathlib import Path

from setuptools import Extension, setup

_BUILD = runpy.run_path(str(Path(__file__).resolve().parent / "cdclake" / "native" / "build.py"))

setup(
    ext_modules=[
        Extension(name, [source], optional=True, extra_compile_args=list(_BUILD["COMPILE_ARGS"]))
        for name, source in _BUILD["EXTENSIONS"]
    ]
)
