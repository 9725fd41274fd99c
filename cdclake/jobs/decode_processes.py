"""Decode tasks in local Python processes: local mode's runner of the decode job's tasks.

In local mode Spark's executor is this machine, so a Spark job only adds its own start-up to the
decode: the Python daemon and workers, Arrow's JVM classes, the job itself (about 6 s in an
application's first decode, 0.7-1 s after). Here each of ``processes`` fresh interpreters
(``python -m cdclake.jobs.decode_processes``) takes task after task from the driver over a pipe
and runs :func:`cdclake.jobs.decode.decode_task`, so tasks are handed out as processes free up,
as Spark's scheduler does. Fresh interpreters, not ``multiprocessing``: its spawned or forkserver
children re-run the parent's main script (``python -m cdclake apply`` has no main guard), and a
fork would copy the JVM gateway's threads.
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


class _NoPandas:
    """An import finder that refuses pandas: pyarrow imports it (0.4 s of CPU) the first time it converts
    Python values, only to ask whether they are pandas objects, and a decode process never holds one.
    (``sys.modules["pandas"] = None`` does not do: pyarrow's compiled import takes the None for a module.)"""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError("a decode process does not import pandas", name=name)
        return None


def main() -> None:
    """A decode process: one JSON task per line in, one JSON answer per line out, until stdin closes."""
    sys.meta_path.insert(0, _NoPandas())
    from cdclake.jobs.decode import decode_task

    out = sys.stdout
    sys.stdout = sys.stderr  # anything a task prints goes to the log, not into the answers
    for line in sys.stdin:
        task = json.loads(line)
        try:
            task["items"] = [tuple(item) for item in task["items"]]
            answer: dict[str, Any] = {"counts": decode_task(**task)}
        except Exception:  # the driver raises it, with this traceback
            answer = {"error": traceback.format_exc()}
        out.write(json.dumps(answer) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
