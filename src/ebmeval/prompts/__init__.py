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
from ._template import PromptTemplate, add_template, list_templates, templates

__all__ = [
    "CONTEXT",
    "COT",
    "COT_STRICT",
    "DIRECT",
    "FORMAT_MULTI",
    "FORMAT_MULTI_STRICT",
    "FORMAT_OPEN",
    "FORMAT_SINGLE",
    "FORMAT_SINGLE_STRICT",
    "OPTIONS",
    "PromptTemplate",
    "QUESTION",
    "REFINE",
    "REFINE_STRICT",
    "add_template",
    "list_templates",
    "templates",
]
