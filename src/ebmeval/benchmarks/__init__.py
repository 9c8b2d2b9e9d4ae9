"""Built-in tasks; importing this package registers them."""

from . import caremedeval, factuality, mcq_file, medthink, mirage, pubmedqa, relation_mcq

__all__ = ["caremedeval", "factuality", "mcq_file", "medthink", "mirage", "pubmedqa", "relation_mcq"]
