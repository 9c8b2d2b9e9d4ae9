"""Judges that grade a rationale's reasoning steps with a model (role ``judge``).

They live in :mod:`ebmeval.judges` beside the other built-in judges; this package keeps the
names where scorers are looked for. Importing it registers ``judge/steps-with-reference``,
``judge/steps-with-reference-single`` and ``judge/steps-without-reference``; each can be
applied to a stored run with ``ebmeval rescore RUN --scorer NAME``.
"""

# A re-export: every name of __all__ but the two prompt tables is taken from ebmeval.judges as it is.
# ruff: noqa: F403, F405
from ...judges import *
from ...prompts import PROMPT_VARIANTS, STEP_PROMPTS

__all__ = [
    "LIST_MAX_TOKENS",
    "PROMPT_VARIANTS",
    "STEP_MAX_TOKENS",
    "STEP_PROMPTS",
    "StepsWithReference",
    "StepsWithReferenceSingle",
    "StepsWithoutReference",
    "expert_steps",
    "numbered",
    "parse_counts",
    "parse_verdict",
    "parse_verdicts",
    "rationale_of",
    "steps_with_reference",
    "steps_with_reference_single",
    "steps_without_reference",
]
