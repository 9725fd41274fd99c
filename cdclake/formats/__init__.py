"""One module per vendor format; importing this package registers them all.

Modules are discovered, not listed, so adding a format is adding a module.
"""

import importlib
import pkgutil

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")):
    importlib.import_module(f"{__name__}.{_module}")
