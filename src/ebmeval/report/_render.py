"""Write a report as self-contained HTML, Markdown, LaTeX and CSV files."""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from ..tables import Table
from ._build import Report
from ._plots import all_figures

if TYPE_CHECKING:
    from jinja2 import Template


@dataclass(frozen=True)
class ReportFiles:
    """Paths of the files a report was written to."""

    html: Path
    markdown: Path
    latex: Path
    csv: list[Path]
    figures: list[Path]


def write_report(report: Report, out: str | Path, *, title: str = "ebmeval report") -> ReportFiles:
    """Render ``report`` into the directory ``out`` (created if needed)."""
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    tables = report.tables()
    figures = all_figures(report)

    figure_paths: list[Path] = []
    for stem, png in figures.items():
        path = directory / f"{file_stem(stem, {p.stem for p in figure_paths})}.png"
        path.write_bytes(png)
        figure_paths.append(path)

    csv_paths = []
    for table in tables:
        path = directory / f"{_slug(table.title)}.csv"
        path.write_text(table.csv(), encoding="utf-8")
        csv_paths.append(path)

    html_path = directory / "report.html"
    html_path.write_text(_html(title, tables, figures), encoding="utf-8")
    markdown_path = directory / "report.md"
    markdown_path.write_text(_markdown(title, tables, figure_paths), encoding="utf-8")
    latex_path = directory / "tables.tex"
    latex_path.write_text("\n".join(t.latex() for t in tables), encoding="utf-8")
    return ReportFiles(html_path, markdown_path, latex_path, csv_paths, figure_paths)


def _html(title: str, tables: list[Table], figures: dict[str, bytes]) -> str:
    """The report page from its template (autoescaped: run labels and notes are text, never markup)."""
    legend, *rest = tables
    images = [{"name": stem, "data": base64.b64encode(png).decode()} for stem, png in figures.items()]
    return _template().render(title=title, legend=legend, tables=rest, figures=images)


@cache
def _template() -> Template:
    from jinja2 import Environment, PackageLoader, StrictUndefined

    environment = Environment(
        loader=PackageLoader("ebmeval.report", "templates"), autoescape=True, undefined=StrictUndefined
    )
    return environment.get_template("report.html")


def _markdown(title: str, tables: list[Table], figures: list[Path]) -> str:
    parts = [f"# {title}", ""]
    parts += [f"![{p.stem}]({p.name})" for p in figures]
    parts += [""] + [t.markdown() for t in tables]
    return "\n".join(parts)


def file_stem(name: str, taken: set[str]) -> str:
    """``name`` as a portable file name: letters, digits, ``.``, ``_`` and ``-`` only, unique among ``taken``."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "figure"
    unique, n = stem, 2
    while unique in taken:
        unique, n = f"{stem}-{n}", n + 1
    return unique


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "table"
