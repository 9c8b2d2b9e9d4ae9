"""Built-in model providers; importing this package registers them.

Each provider module imports its heavy dependencies only when a model is built.
"""

from . import baseline, external, llamacpp, openai_compatible, scripted

__all__ = ["baseline", "external", "llamacpp", "openai_compatible", "scripted"]
