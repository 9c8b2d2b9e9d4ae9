"""Keep third-party libraries from writing to the user's terminal or logging set-up."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def no_hf_progress_bars() -> Iterator[None]:
    """Hide transformers' progress bars (e.g. "Loading weights") inside the block, then restore them."""
    hf_logging = importlib.import_module("transformers.utils.logging")
    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if shown:
            hf_logging.enable_progress_bar()
