"""Named, versioned prompt templates, below the workflows and scorers that use them."""

from ._qa import (
    CONTEXT,
    COT,
    COT_STRICT,
    DIRECT,
    FORMAT_MULTI,
    FORMAT_MULTI_STRICT,
    FORMAT_OPEN,
    FORMAT_SINGLE,
    FORMAT_SINGLE_STRICT,
    OPTIONS,
    QUESTION,
    REFINE,
    REFINE_STRICT,
)
from ._sets import CAREMEDEVAL_EN, CAREMEDEVAL_FR, DEFAULT, PromptSet, add_prompt_set, prompt_sets
from ._template import PromptTemplate, add_template, list_templates, templates

__all__ = [
    "CAREMEDEVAL_EN",
    "CAREMEDEVAL_FR",
    "CONTEXT",
    "COT",
    "COT_STRICT",
    "DEFAULT",
    "DIRECT",
    "FORMAT_MULTI",
    "FORMAT_MULTI_STRICT",
    "FORMAT_OPEN",
    "FORMAT_SINGLE",
    "FORMAT_SINGLE_STRICT",
    "OPTIONS",
    "PromptSet",
    "PromptTemplate",
    "QUESTION",
    "REFINE",
    "REFINE_STRICT",
    "add_prompt_set",
    "add_template",
    "list_templates",
    "prompt_sets",
    "templates",
]
