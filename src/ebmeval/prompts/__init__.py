"""Named, versioned prompt templates, below the workflows and scorers that use them."""

from . import _qa as qa
from ._template import PromptTemplate, add_template, list_templates, templates

__all__ = ["PromptTemplate", "add_template", "list_templates", "qa", "templates"]
