"""Defaults shared by the CLI and the library, kept import-light for fast start-up."""

DEFAULT_STORE = "runs/ebmeval.sqlite"
"""Where runs are stored unless a store path is given."""
