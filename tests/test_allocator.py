"""The allocator settings reach the libraries that read them (cdclake.runtime.allocator)."""

from __future__ import annotations

import os
import subprocess
import sys

from cdclake.runtime import allocator as _allocator


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in _allocator.ALLOCATOR_ENV}
    return subprocess.run(
        [sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True, check=True, timeout=120
    )


def test_configure_sets_only_what_the_environment_leaves_unset() -> None:
    environ = {"MIMALLOC_PURGE_DELAY": "1000"}
    _allocator.configure(environ)
    assert environ == {**_allocator.ALLOCATOR_ENV, "MIMALLOC_PURGE_DELAY": "1000"}


def test_arrows_mimalloc_reads_the_settings_when_cdclake_is_imported_first() -> None:
    done = _run("import cdclake, pyarrow as pa; pa.array([1])", MIMALLOC_VERBOSE="1")
    options = dict(
        line.split("'")[1:3] for line in done.stderr.splitlines() if line.startswith("option '") and ": " in line
    )
    assert options["allow_thp"].strip(": ") == "0"
    assert options["purge_delay"].strip(": ") == _allocator.ALLOCATOR_ENV["MIMALLOC_PURGE_DELAY"]


def test_numpy_asks_for_no_huge_pages() -> None:
    code = "import cdclake, numpy as np; print(np._core.multiarray._get_madvise_hugepage())"
    assert _run(code).stdout.strip() == "False"
    assert _run(code, NUMPY_MADVISE_HUGEPAGE="1").stdout.strip() == "True"  # an operator's setting wins


def test_executors_python_workers_get_the_settings(monkeypatch) -> None:
    from cdclake.runtime.spark import session_conf

    monkeypatch.setenv("MIMALLOC_PURGE_DELAY", "5000")  # an operator's value travels as it is
    conf = session_conf()
    assert conf["spark.executorEnv.MIMALLOC_PURGE_DELAY"] == "5000"
    assert conf["spark.executorEnv.MIMALLOC_ALLOW_THP"] == "0"
    assert conf["spark.executorEnv.NUMPY_MADVISE_HUGEPAGE"] == "0"
