"""Debian's Chromium for the browser tests (playwright drives it; playwright's own download is not used)."""

from __future__ import annotations

import os

CHROMIUM = "/usr/bin/chromium"
#: Headless, and nothing that reaches outside this machine.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    """The browser's path; an install hint if it is missing (`make test-deps` installs it)."""
    if not os.access(CHROMIUM, os.X_OK):
        raise FileNotFoundError(f"{CHROMIUM} missing: apt-get install chromium (`make test-deps` as root)")
    return CHROMIUM
