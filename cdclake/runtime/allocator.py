"""How Arrow's and numpy's memory is taken from the OS, set before either library is loaded.

A batch step allocates and frees many large Arrow buffers and numpy arrays. Two library defaults make
the kernel clear far more memory than the step uses (docs/decisions.md, "Arrow and numpy memory: no
transparent huge pages, freed memory kept for a while"):

- mimalloc 3 (Arrow's default pool) asks for transparent huge pages on its 1 GiB arenas, and numpy on
  every array of 4 MiB or more: the first touch of a 2 MiB page clears all of it, however little is used;
- mimalloc hands pages freed for a second back to the OS, so the next buffer of the same size faults and
  is cleared again.

Values the environment already sets win (``setdefault``): an operator can restore any default.
"""

from __future__ import annotations

import os

#: The environment read by mimalloc (when ``libarrow`` loads) and numpy (when it is imported).
ALLOCATOR_ENV = {
    "MIMALLOC_ALLOW_THP": "0",
    # milliseconds a freed page stays with the process before it goes back to the OS (mimalloc: 1,000)
    "MIMALLOC_PURGE_DELAY": "30000",
    "NUMPY_MADVISE_HUGEPAGE": "0",
}


def configure(environ: os._Environ[str] | dict[str, str] = os.environ) -> None:
    """Set :data:`ALLOCATOR_ENV` where ``environ`` does not set it. It only takes effect in a process that
    has not loaded pyarrow or numpy yet, and in the processes it starts (decode's local processes)."""
    for name, value in ALLOCATOR_ENV.items():
        environ.setdefault(name, value)
