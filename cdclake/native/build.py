"""Build the compiled helpers in place (``make setup``): each of :data:`EXTENSIONS` into an extension module beside
its source. ``setup.py`` declares the same list as the package's optional ``ext_modules`` (so ``pip install .`` and
a wheel carry them); this is the quick build of a checkout, atomic per module.

Uses the C compiler Python was built with (``sysconfig``'s ``CC``); without one it says so and exits 0, as the
helpers are optional (:mod:`cdclake.native`). A module newer than its source is left as is. Standard library only:
``setup.py`` reads :data:`EXTENSIONS` from this file without importing the package, and the Docker image's build
stage runs it as a script.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: The extension modules (dotted name, C source relative to the project root): the one list of them.
EXTENSIONS = (
    ("cdclake.native._image_index", "cdclake/native/_image_index.c"),
    ("cdclake.native._json_objects", "cdclake/native/_json_objects.c"),
    ("cdclake.native._text_forms", "cdclake/native/_text_forms.c"),
    ("cdclake.native._value_texts", "cdclake/native/_value_texts.c"),
)
#: What both builds pass the compiler besides its defaults.
COMPILE_ARGS = ("-O2",)


def build(force: bool = False) -> list[Path]:
    """The modules built or already up to date (one that does not compile is left out, and said so)."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
    if shutil.which(cc[0]) is None:
        cc = ["cc"]
    if shutil.which(cc[0]) is None:
        print(f"cdclake.native: no C compiler ({cc[0]}): the Python paths will run", file=sys.stderr)
        return []
    include = sysconfig.get_paths()["include"]
    built = []
    for _, path in EXTENSIONS:
        source = HERE / Path(path).name
        target = source.with_name(source.stem + suffix)
        if force or not target.exists() or target.stat().st_mtime < source.stat().st_mtime:
            temp = target.with_name(f".{target.name}.tmp")
            command = [*cc, *COMPILE_ARGS, "-shared", "-fPIC", "-Wall", f"-I{include}", str(source), "-o", str(temp)]
            if subprocess.run(command).returncode != 0:
                print(f"cdclake.native: {source.name} did not compile: the Python paths will run", file=sys.stderr)
                continue
            temp.replace(target)  # whole or absent: a process importing it never sees half a file
        built.append(target)
    return built


if __name__ == "__main__":
    for path in build(force="--force" in sys.argv):
        print(f"cdclake.native: {path.name}")
