"""Decode tasks in local Python processes: the process side of local mode's runner of the decode job's tasks.

In local mode Spark's executor is this machine, so a Spark job only adds its own start-up to the
decode: the Python daemon and workers, Arrow's JVM classes, the job itself (about 6 s in an
application's first decode, 0.7-1 s after). Here each of ``processes`` fresh interpreters
(``python -m cdclake.jobs.decode_processes``) takes task after task from the driver over a pipe
and runs :func:`cdclake.jobs.decode.decode_task`, so tasks are handed out as processes free up,
as Spark's scheduler does; the driver's side, which starts them and hands out the tasks, is
:func:`cdclake.jobs.decode_pool.run_tasks`. Fresh interpreters, not ``multiprocessing``: its spawned or
forkserver children re-run the parent's main script (``python -m cdclake apply`` has no main guard), and a
fork would copy the JVM gateway's threads.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any


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
    # imported after the finder is in place: the decode job's imports would otherwise take pandas in
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
