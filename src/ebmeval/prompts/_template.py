"""Named, versioned prompt templates.

A template's text uses ``str.format`` fields. Its ``version`` is bumped whenever the
text changes; tasks fold the versions they use into their own version and scorers
record theirs in their spec, so results obtained with different wording never mix.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._util.registry import Registry


@dataclass(frozen=True)
class PromptTemplate:
    """A prompt text with ``{field}`` placeholders."""

    name: str
    """Registry name, e.g. ``mcq/direct``."""
    version: int
    """Bumped whenever ``text`` changes."""
    text: str
    """The template; fields are filled with :meth:`render`."""
    description: str = ""
    """What the template is for."""

    @property
    def id(self) -> str:
        """``name@vN``, the identifier recorded with results."""
        return f"{self.name}@v{self.version}"

    def render(self, **fields: str) -> str:
        """The text with every ``{field}`` replaced."""
        return self.text.format(**fields)


templates: Registry[PromptTemplate] = Registry("prompt template")
"""Every built-in prompt template by name."""


def add_template(name: str, version: int, text: str, description: str) -> PromptTemplate:
    """Create a template and register it under ``name``."""
    template = PromptTemplate(name, version, text, description)
    templates.register(name)(template)
    return template


def list_templates() -> list[PromptTemplate]:
    """Every registered template, sorted by name."""
    return [templates.get(name) for name in templates]
