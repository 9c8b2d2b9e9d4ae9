"""Running the ``ebmeval`` command as a user does: a subprocess, its exit code, stdout and stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def ebmeval(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``ebmeval ARGS`` in ``cwd``, importing the same ebmeval as the test process."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-c", "from ebmeval.cli import main; main()", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
