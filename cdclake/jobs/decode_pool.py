"""The driver side of local mode's decode processes: tasks handed to ``python -m cdclake.jobs.decode_processes``.

Each of ``processes`` fresh interpreters takes task after task from the driver over a pipe, so tasks are
handed out as processes free up, as Spark's scheduler does (:mod:`cdclake.jobs.decode_processes` tells why
processes and how one runs its tasks).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import traceback
from typing import Any


def run_tasks(args: dict[str, Any], slices: list[list], processes: int) -> list[dict[str, int]]:
    """Each slice through ``decode_task(**args, items=slice)`` in ``processes`` local processes; the
    results in slice order. A task that fails fails the call with its traceback."""
    todo: queue.Queue[int] = queue.Queue()
    for i in range(len(slices)):
        todo.put(i)
    results: list[dict[str, int] | None] = [None] * len(slices)
    errors: list[str] = []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}

    def serve() -> None:
        try:
            feed()
        except Exception:  # e.g. a broken pipe: the call fails with it
            errors.append(traceback.format_exc())

    def feed() -> None:
        with subprocess.Popen(
            [sys.executable, "-m", "cdclake.jobs.decode_processes"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        ) as child:
            assert child.stdin is not None and child.stdout is not None
            try:
                while not errors:
                    try:
                        i = todo.get_nowait()
                    except queue.Empty:
                        break
                    child.stdin.write(json.dumps({**args, "items": slices[i]}) + "\n")
                    child.stdin.flush()
                    answer = json.loads(child.stdout.readline() or '{"error": "the decode process exited"}')
                    if "error" in answer:
                        errors.append(answer["error"])
                    else:
                        results[i] = answer["counts"]
            finally:
                child.stdin.close()

    threads = [threading.Thread(target=serve, daemon=True) for _ in range(min(processes, len(slices)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise RuntimeError(f"a decode task failed in its local process:\n{errors[0]}")
    return results  # type: ignore[return-value]
