"""One table type: typed cells under typed columns, rendered to terminal, Markdown, LaTeX, HTML and CSV."""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ._cells import Cell, Column, Estimate

if TYPE_CHECKING:
    from rich.table import Table as RichTable

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


@dataclass(init=False)
class Table:
    """Rows of typed cells under columns, with a title and notes.

    Cells keep their values (numbers stay numbers, an interval is a pair of numbers, missing is
    ``None``); each column says how they are written. Text renderings spell a missing value
    :data:`~ebmeval.tables.MISSING`; CSV writes numbers as numbers and missing as an empty field.
    """

    title: str
    columns: list[Column]
    rows: list[list[Cell]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    links: dict[tuple[int, int], str] = field(default_factory=dict)
    """(row, column) → URL the cell links to in HTML (other renderings have no links)."""

    def __init__(self, title: str, columns: Sequence[Column | str], *, notes: Sequence[str] = ()) -> None:
        self.title = title
        self.columns = [c if isinstance(c, Column) else Column(c) for c in columns]
        self.rows = []
        self.notes = list(notes)
        self.links = {}

    def add(self, *cells: Cell) -> None:
        """Append a row, one cell per column."""
        if len(cells) != len(self.columns):
            raise ValueError(f"table '{self.title}' has {len(self.columns)} columns, row has {len(cells)}")
        for column, cell in zip(self.columns, cells, strict=True):
            _check(column, cell, self.title)
        self.rows.append(list(cells))

    def link(self, column: str, url: str) -> None:
        """Make the cell of ``column`` in the last row added a link to ``url`` (in HTML)."""
        if not self.rows:
            raise ValueError(f"table '{self.title}' has no row to link")
        self.links[(len(self.rows) - 1, self.header.index(column))] = url

    @property
    def header(self) -> list[str]:
        """The column names."""
        return [c.name for c in self.columns]

    def texts(self) -> list[list[str]]:
        """Every row with its cells written as text."""
        return [[c.text(cell) for c, cell in zip(self.columns, row, strict=True)] for row in self.rows]

    def markdown(self, *, title: bool = True) -> str:
        """A GitHub-flavoured Markdown table, under its bold title (when ``title`` and set) and above its notes."""
        align = ["---:" if c.numeric else "---" for c in self.columns]
        lines = [f"**{self.title}**", ""] if title and self.title else []
        lines += [_md_row(self.header), _md_row(align)]
        lines += [_md_row(r) for r in self.texts()]
        if self.notes:
            lines += [""] + [f"_{n}_" for n in self.notes]
        return "\n".join(lines) + "\n"

    def latex(self) -> str:
        """A booktabs ``table`` environment."""
        spec = "".join("r" if c.numeric else "l" for c in self.columns)
        body = [" & ".join(latex_escape(c) for c in row) + r" \\" for row in self.texts()]
        notes = [r"\par\smallskip{\footnotesize " + latex_escape(n) + "}" for n in self.notes]
        return "\n".join(
            [
                r"\begin{table}[ht]",
                r"\centering",
                *([r"\caption{" + latex_escape(self.title) + "}"] if self.title else []),
                r"\begin{tabular}{" + spec + "}",
                r"\toprule",
                " & ".join(latex_escape(c) for c in self.header) + r" \\",
                r"\midrule",
                *body,
                r"\bottomrule",
                r"\end{tabular}",
                *notes,
                r"\end{table}",
                "",
            ]
        )

    def html(self) -> str:
        """An HTML ``table`` with a caption; numeric cells carry ``class="num"``, linked cells an ``a``."""
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.header)
        body = "".join(
            "<tr>"
            + "".join(
                ('<td class="num">' if column.numeric else "<td>") + self._cell_html(r, c, text) + "</td>"
                for c, (column, text) in enumerate(zip(self.columns, row, strict=True))
            )
            + "</tr>"
            for r, row in enumerate(self.texts())
        )
        caption = f"<caption>{html.escape(self.title)}</caption>" if self.title else ""
        notes = "".join(f'<p class="note">{html.escape(n)}</p>' for n in self.notes)
        return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{notes}"

    def _cell_html(self, row: int, column: int, text: str) -> str:
        url = self.links.get((row, column))
        escaped = html.escape(text)
        return escaped if url is None else f'<a href="{html.escape(url)}">{escaped}</a>'

    def csv(self) -> str:
        """The rows as CSV under a header line: numbers as numbers, an interval as two columns, missing empty."""
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow([name for c in self.columns for name in c.csv_names()])
        for row in self.rows:
            writer.writerow([v for c, cell in zip(self.columns, row, strict=True) for v in c.values(cell)])
        return buffer.getvalue()

    def rich(self) -> RichTable:
        """A :mod:`rich` table for the terminal, its notes as the caption (one line each).

        Every title, header, cell and note is plain text, never console markup: a label such
        as ``judge/x[judge=qwen]`` or a model named ``ev[/b]il`` is shown as written.
        """
        from rich.table import Table as RichTable
        from rich.text import Text

        title = Text(self.title) if self.title else None
        shown = RichTable(title=title, title_justify="left", caption_justify="left")
        for column in self.columns:
            shown.add_column(Text(column.name), justify="right" if column.numeric else "left")
        for row in self.texts():
            shown.add_row(*(Text(cell) for cell in row))
        if self.notes:
            shown.caption = Text("\n".join(self.notes))
        return shown


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"


def _check(column: Column, cell: Cell, title: str) -> None:
    """Reject a cell whose type the column cannot show (a formatted string where a number belongs is allowed)."""
    if cell is None or isinstance(cell, str):
        return
    allowed: dict[str, tuple[type, ...]] = {
        "text": (int, float),
        "number": (int, float),
        "interval": (tuple,),
        "estimate": (Estimate,),
    }
    if not isinstance(cell, allowed[column.kind]) or (isinstance(cell, tuple) and len(cell) != 2):
        raise TypeError(f"table '{title}', column '{column.name}' ({column.kind}): cannot hold {cell!r}")
