"""Peak memory of the driver and of the Python workers, sampled in a thread.

Spark in local mode runs the driver as a JVM child of this Python process, and the Python
workers as children of the JVM (a ``pyspark.daemon`` that forks one worker per task). Only
this process's own descendants are counted, so other Spark applications on the machine
do not leak into the figures. RSS is sampled (every ``interval`` seconds), so a peak shorter
than that can be missed; ``resource`` gives the exact peak of this process only.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

import psutil


@dataclass
class Peaks:
    """Peak RSS in bytes over one window."""

    python_driver: int = 0
    jvm: int = 0
    worker_max: int = 0  # the largest single Python worker
    workers_total: int = 0  # all Python workers at once
    workers_seen: int = 0

    def update(self, other: Peaks) -> None:
        self.python_driver = max(self.python_driver, other.python_driver)
        self.jvm = max(self.jvm, other.jvm)
        self.worker_max = max(self.worker_max, other.worker_max)
        self.workers_total = max(self.workers_total, other.workers_total)
        self.workers_seen = max(self.workers_seen, other.workers_seen)

    def as_mib(self) -> dict[str, int]:
        mib = 1024 * 1024
        return {
            "python_driver_mib": self.python_driver // mib,
            "jvm_mib": self.jvm // mib,
            "worker_max_mib": self.worker_max // mib,
            "workers_total_mib": self.workers_total // mib,
        }


def snapshot(me: psutil.Process) -> Peaks:
    """One sample of this process tree."""
    peaks = Peaks(python_driver=me.memory_info().rss)
    workers = []
    for child in me.children(recursive=True):
        try:
            name = child.name()
            rss = child.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        if name.startswith("java"):
            peaks.jvm = max(peaks.jvm, rss)
        elif name.startswith("python"):
            workers.append(rss)
    if workers:
        peaks.worker_max = max(workers)
        peaks.workers_total = sum(workers)
        peaks.workers_seen = len(workers)
    return peaks


class Sampler:
    """Samples the process tree in a daemon thread; :meth:`window` returns and resets the peaks."""

    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self._me = psutil.Process(os.getpid())
        self._peaks = Peaks()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-memory", daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            sample = snapshot(self._me)
            with self._lock:
                self._peaks.update(sample)

    def window(self) -> Peaks:
        """Peaks since the previous call (one last sample included)."""
        sample = snapshot(self._me)
        with self._lock:
            self._peaks.update(sample)
            peaks, self._peaks = self._peaks, Peaks()
        return peaks
