"""What the compaction reads of ``Settings`` (bounds and switches), read from the environment at each
table, so a change applies to the next table without a restart (and a test's ``setenv`` to its run)."""

from __future__ import annotations


def driver_fold_rows() -> int:
    """The driver-fold bound (``Settings.driver_fold_rows``; docs/decisions.md, "Small batches fold in the driver")."""
    from cdclake.runtime.settings import Settings

    return Settings.from_env().driver_fold_rows


def row_state_enabled() -> bool:
    """``Settings.row_state`` (docs/decisions.md, "Row state")."""
    from cdclake.runtime.settings import Settings

    return Settings.from_env().row_state


def driver_commits_enabled() -> bool:
    """``Settings.driver_commits`` (docs/decisions.md, "The driver fold commits its own files")."""
    from cdclake.runtime.settings import Settings

    return Settings.from_env().driver_commits


def native_fold_enabled() -> bool:
    """``Settings.native_fold``: the Arrow fold, else the reference (docs/decisions/0074)."""
    from cdclake.runtime.settings import Settings

    return Settings.from_env().native_fold
