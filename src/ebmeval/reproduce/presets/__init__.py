"""Built-in presets: importing this package imports every module in it, and each registers its preset.

A new preset is one module here (``presets/<paper>.py``) that calls
:func:`ebmeval.reproduce.register_preset`; nothing else needs editing.
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
