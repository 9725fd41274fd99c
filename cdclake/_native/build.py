"""Build the compiled helpers in place (``make setup``): each ``*.c`` here into an extension module beside it.

Uses the C compiler Python was built with (``sysconfig``'s ``CC``); without one it says so and exits 0, as the
helpers are optional (:mod:`cdclake._native`). A module newer than its source is left as is.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

HERE = Path(__file__).resolve().parent


def build(force: bool = False) -> list[Path]:
    """The modules built or already up to date (one that does not compile is left out, and said so)."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
    if shutil.which(cc[0]) is None:
        cc = ["cc"]
    if shutil.which(cc[0]) is None:
        print(f"cdclake._native: no C compiler ({cc[0]}): the Python paths will run", file=sys.stderr)
        return []
    include = sysconfig.get_paths()["include"]
    built = []
    for source in sorted(HERE.glob("*.c")):
        target = source.with_name(source.stem + suffix)
        if force or not target.exists() or target.stat().st_mtime < source.stat().st_mtime:
            temp = target.with_name(f".{target.name}.tmp")
            command = [*cc, "-O2", "-shared", "-fPIC", "-Wall", f"-I{include}", str(source), "-o", str(temp)]
            if subprocess.run(command).returncode != 0:
                print(f"cdclake._native: {source.name} did not compile: the Python paths will run", file=sys.stderr)
                continue
            temp.replace(target)  # whole or absent: a process importing it never sees half a file
        built.append(target)
    return built


if __name__ == "__main__":
    for path in build(force="--force" in sys.argv):
        print(f"cdclake._native: {path.name}")
