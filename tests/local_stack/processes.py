"""Long-running processes of the local stack: started in their own process group, stopped as a group.

A service's children (Airflow's task runners, spark-submit JVMs, Spark executors) share its
process group, so stopping a service leaves nothing of it running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path


def free_port() -> int:
    """A TCP port nobody listens on now (the stack runs beside other engineers' tests)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http_ok(url: str, timeout: float = 5.0) -> bool:
    """True when ``url`` answers 2xx/3xx."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status < 400
    except (OSError, urllib.error.URLError):
        return False


@dataclass
class Service:
    """One process of the stack, named for its compose service; output goes to ``log``."""

    name: str
    command: Sequence[str]
    env: Mapping[str, str]
    log: Path
    cwd: Path | None = None
    user: str | None = None  # run as this user (``runuser``), e.g. PostgreSQL, which refuses root
    process: subprocess.Popen | None = field(default=None, repr=False)

    def start(self) -> Service:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        command = list(self.command)
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                command,
                env=dict(self.env),
                cwd=self.cwd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        return self

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def wait_until(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        """Poll ``ready`` until true; fail with the log's tail if the process exits or time runs out."""
        deadline = time.monotonic() + timeout
        while not ready():
            if not self.running():
                raise RuntimeError(f"{self.name} exited ({self.returncode()}) before {what}:\n{self.tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name}: not {what} after {timeout:.0f} s:\n{self.tail()}")
            time.sleep(0.5)

    def returncode(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM to the process group, SIGKILL after ``grace`` seconds; also reaps the group's leftovers."""
        if self.process is None:
            return
        pgid = self.process.pid
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGTERM)
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)  # children that outlived their parent (task runners, JVMs)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)


def run(
    command: Sequence[str], env: Mapping[str, str], log: Path, user: str | None = None, timeout: float = 600
) -> None:
    """A one-shot step (``airflow-init``, ``initdb``): output appended to ``log``; raises if it fails."""
    log.parent.mkdir(parents=True, exist_ok=True)
    command = list(command) if user is None else ["runuser", "-u", user, "--", *command]
    with open(log, "ab") as out:
        out.write(f"\n$ {' '.join(command)}\n".encode())
        out.flush()
        result = subprocess.run(
            command, env=dict(env), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=timeout
        )
    if result.returncode != 0:
        raise RuntimeError(f"{command[0]} failed ({result.returncode}):\n{log.read_text(errors='replace')[-4000:]}")
