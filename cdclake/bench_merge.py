"""Kept for ``python -m cdclake.bench_merge --rows N``: the merge curve now lives in
:mod:`cdclake.bench.merge_curve` (and runs as part of ``python -m cdclake.bench``)."""

from __future__ import annotations

from cdclake.bench.merge_curve import main, write_changes, write_inserts

__all__ = ["main", "write_changes", "write_inserts"]

if __name__ == "__main__":
    raise SystemExit(main())
