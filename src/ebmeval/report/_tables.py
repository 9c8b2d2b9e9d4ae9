"""A small table type rendered to Markdown, LaTeX (booktabs), HTML and CSV."""

from __future__ import annotations

import csv
import html
import io
from dataclasses import dataclass, field

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


@dataclass
class Table:
    """Rows of already formatted cells under a header, with a caption and notes."""

    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    numeric: set[int] = field(default_factory=set)
    """Indexes of columns aligned right."""

    def add(self, *cells: object) -> None:
        """Append a row (cells are converted with ``str``)."""
        if len(cells) != len(self.columns):
            raise ValueError(f"table '{self.title}' has {len(self.columns)} columns, row has {len(cells)}")
        self.rows.append([str(c) for c in cells])

    def markdown(self) -> str:
        """A GitHub-flavoured Markdown table with its title and notes."""
        align = ["---:" if i in self.numeric else "---" for i in range(len(self.columns))]
        lines = [f"**{self.title}**", "", _md_row(self.columns), _md_row(align)]
        lines += [_md_row(r) for r in self.rows]
        lines += [""] + [f"_{n}_" for n in self.notes]
        return "\n".join(lines).rstrip() + "\n"

    def latex(self) -> str:
        """A booktabs ``table`` environment."""
        spec = "".join("r" if i in self.numeric else "l" for i in range(len(self.columns)))
        body = [" & ".join(latex_escape(c) for c in row) + r" \\" for row in self.rows]
        notes = [r"\par\smallskip{\footnotesize " + latex_escape(n) + "}" for n in self.notes]
        return "\n".join(
            [
                r"\begin{table}[ht]",
                r"\centering",
                r"\caption{" + latex_escape(self.title) + "}",
                r"\begin{tabular}{" + spec + "}",
                r"\toprule",
                " & ".join(latex_escape(c) for c in self.columns) + r" \\",
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
        """An HTML ``table`` with a caption."""
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>"
            + "".join(
                f'<td class="num">{html.escape(c)}</td>' if i in self.numeric else f"<td>{html.escape(c)}</td>"
                for i, c in enumerate(row)
            )
            + "</tr>"
            for row in self.rows
        )
        notes = "".join(f'<p class="note">{html.escape(n)}</p>' for n in self.notes)
        return (
            f"<table><caption>{html.escape(self.title)}</caption><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table>{notes}"
        )

    def csv(self) -> str:
        """The rows as CSV with a header line."""
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(self.columns)
        writer.writerows(self.rows)
        return buffer.getvalue()


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"
