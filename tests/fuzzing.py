"""Budgets of the differential fuzz tests (issue 56): one place says how many examples a law or a format gets.

CI (``make test``, the ``fixed`` profile) draws a small, derandomized set, so that a commit's CI run tests what
its author's run tested. ``make fuzz`` (``CDCLAKE_HYPOTHESIS=fuzz``, fresh seed per run, printed) runs every test
marked ``fuzz`` with at least :data:`FUZZ_MIN_EXAMPLES` examples (``CDCLAKE_FUZZ_EXAMPLES`` raises it) and prints
the shrunk input and the reproduce blob of any failure; what it finds becomes a fixed example in the suite.
"""

from __future__ import annotations

import os

#: Examples per law and per format in the long profile, at least.
FUZZ_MIN_EXAMPLES = 1000
LONG = os.environ.get("CDCLAKE_HYPOTHESIS") == "fuzz"


def examples(ci: int) -> int:
    """``ci`` examples in CI; in ``make fuzz``, ``CDCLAKE_FUZZ_EXAMPLES`` (default :data:`FUZZ_MIN_EXAMPLES`)
    or ``ci``, whichever is more."""
    if not LONG:
        return ci
    return max(ci, int(os.environ.get("CDCLAKE_FUZZ_EXAMPLES", str(FUZZ_MIN_EXAMPLES))))
