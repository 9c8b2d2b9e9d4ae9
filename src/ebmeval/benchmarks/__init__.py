"""Built-in tasks; importing this package registers them."""

from . import (
    caremedeval,
    factuality,
    mcq_file,
    medthink,
    medthink_reasoning,
    mirage,
    pubmedqa,
    relation_mcq,
    synthesis,
)

__all__ = [
    "caremedeval",
    "factuality",
    "mcq_file",
    "medthink",
    "medthink_reasoning",
    "mirage",
    "pubmedqa",
    "relation_mcq",
    "synthesis",
]
