"""``import ebmeval`` and ``ebmeval --help`` load neither numpy nor scipy (they are imported when needed)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
HEAVY = ("numpy", "scipy", "pandas", "pyarrow", "httpx", "aiohttp")


HELP = (
    "import sys\nsys.argv = ['ebmeval', {args}]\nfrom ebmeval.cli import main\n"
    "try:\n    main()\nexcept SystemExit:\n    pass"
)


@pytest.mark.parametrize(
    "code",
    ["import ebmeval", HELP.format(args="'--help'"), HELP.format(args="'run', '--help'")],
    ids=["import", "help", "run-help"],
)
def test_start_loads_no_heavy_package(code: str) -> None:
    probe = code + "\nimport sys\nprint(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=ENV)
    modules = set(loaded.stdout.split("\n")[-2].split())
    assert not modules & set(HEAVY), f"loaded at start: {sorted(modules & set(HEAVY))}"


def test_public_names_still_import_on_use() -> None:
    import ebmeval

    assert ebmeval.RunConfig(task="pubmedqa").task == "pubmedqa"
    assert set(ebmeval.__all__) <= set(dir(ebmeval))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = ebmeval.nope  # type: ignore[attr-defined]
