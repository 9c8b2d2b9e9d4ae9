"""What a run records about where and with what it ran."""

from __future__ import annotations

import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

KEY_PACKAGES = (
    "ebmeval",
    "pydantic",
    "numpy",
    "scipy",
    "httpx",
    "aiohttp",
    "xllamacpp",
    "bm25s",
    "faiss-cpu",
    "sentence-transformers",
    "torch",
)


def package_versions(names: tuple[str, ...] = KEY_PACKAGES) -> dict[str, str]:
    """Installed versions of ``names`` (absent packages are left out)."""
    found: dict[str, str] = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def git_revision(directory: str | Path = ".") -> dict[str, Any] | None:
    """Commit and dirty flag of the git checkout containing ``directory``, if any."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=directory, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": bool(status.strip())}


def collect_provenance(models: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Versions, platform, git revision and model identities for a run row."""
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": package_versions(),
        "git": git_revision(),
        "models": models,
    }
