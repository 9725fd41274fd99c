"""CDCLAKE_FAULT_FILE: a point named in the file kills the process; no file, or another point, does nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path


def _hit(point: str, env: dict[str, str]) -> int:
    code = f"from cdclake.runtime.faults import fault_point; fault_point({point!r}); print('passed')"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CDCLAKE_FAULT", "CDCLAKE_PAUSE"))}
    return subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True).returncode


def test_fault_file_arms_and_disarms_points(tmp_path: Path) -> None:
    armed = tmp_path / "faults"
    env = {"CDCLAKE_FAULT_FILE": str(armed)}
    assert _hit("compact:before-commit", env) == 0  # no file yet
    armed.write_text("stage:after-copy\ncompact:before-commit")
    assert _hit("compact:before-commit", env) == -signal.SIGKILL
    assert _hit("compact:after-commit", env) == 0
    armed.unlink()
    assert _hit("compact:before-commit", env) == 0
