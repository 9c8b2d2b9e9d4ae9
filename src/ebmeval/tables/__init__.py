"""One table type with typed cells, rendered to the terminal, Markdown, LaTeX (booktabs), HTML and CSV."""

from ._cells import MISSING, Cell, Column, Estimate, is_missing
from ._table import Table, latex_escape

__all__ = ["MISSING", "Cell", "Column", "Estimate", "Table", "is_missing", "latex_escape"]
