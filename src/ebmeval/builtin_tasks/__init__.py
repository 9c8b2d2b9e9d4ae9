"""Built-in tasks; importing this package registers them."""

from . import (
    caremedeval,
    extraction,
    factuality,
    lfqa,
    mcq_file,
    medthink,
    medthink_reasoning,
    mirage,
    pubmedqa,
    relation_mcq,
    synthesis,
    text_file,
)

__all__ = [
    "caremedeval",
    "extraction",
    "factuality",
    "lfqa",
    "mcq_file",
    "medthink",
    "medthink_reasoning",
    "mirage",
    "pubmedqa",
    "relation_mcq",
    "synthesis",
    "text_file",
]
