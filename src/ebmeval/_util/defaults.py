"""Defaults shared by the CLI and the library, kept import-light for fast start-up."""

DEFAULT_STORE = "runs/ebmeval.sqlite"
"""Where runs are stored unless a store path is given."""

VIEW_PORT = 8766
"""The port ``ebmeval view`` serves on; reports link to it."""
VIEW_URL = f"http://127.0.0.1:{VIEW_PORT}"
"""Where ``ebmeval view`` serves by default."""
