"""The public surface: each package's ``__all__`` is pinned, and no package reaches into another's private modules.

A public folder re-exports from private ``_*.py`` modules; code in another folder imports the
folder, never its private modules. When ``__all__`` changes on purpose, regenerate the pin with
``python -m tests.test_api_surface``.
"""

from __future__ import annotations

import ast
import importlib
import json
import sys
from pathlib import Path

SRC = Path(__file__).parent.parent / "src"
PIN = Path(__file__).parent / "api_surface.json"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _packages() -> list[str]:
    found = []
    for init in sorted(SRC.glob("ebmeval/**/__init__.py")):
        name = _module_name(init)
        if not any(part.startswith("_") for part in name.split(".")):
            found.append(name)
    return found


def surface() -> dict[str, list[str]]:
    """Every public package and its ``__all__``."""
    return {name: sorted(getattr(importlib.import_module(name), "__all__", [])) for name in _packages()}


def _imports(path: Path) -> list[tuple[int, str]]:
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.append((node.lineno, target))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
    return found


def test_no_package_imports_another_packages_private_module() -> None:
    offences = []
    for path in sorted(SRC.glob("ebmeval/**/*.py")):
        module = _module_name(path)
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for line, target in _imports(path):
            parts = target.split(".")
            if parts[0] != "ebmeval":
                continue
            for index, part in enumerate(parts):
                if part.startswith("_"):
                    owner = ".".join(parts[:index])
                    if package != owner and not package.startswith(owner + "."):
                        offences.append(f"{path.relative_to(SRC)}:{line} imports {target}")
                    break
    assert offences == []


def test_every_public_package_pins_its_all() -> None:
    pinned = json.loads(PIN.read_text(encoding="utf-8"))
    assert surface() == pinned, "the public API changed: regenerate with python -m tests.test_api_surface"


if __name__ == "__main__":
    PIN.write_text(json.dumps(surface(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    sys.stdout.write(f"wrote {PIN}\n")
