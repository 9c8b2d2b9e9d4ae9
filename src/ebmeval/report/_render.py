"""Write a report as self-contained HTML, Markdown, LaTeX and CSV files."""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass
from pathlib import Path

from ..tables import Table
from ._build import Report
from ._plots import all_figures

_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#222;padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}
table{border-collapse:collapse;margin:1rem 0;font-size:.85rem}
caption{text-align:left;font-weight:600;padding:.3rem 0}
th,td{border-bottom:1px solid #ddd;padding:.3rem .6rem;text-align:left}
th{border-bottom:2px solid #444}td.num{text-align:right;font-variant-numeric:tabular-nums}
p.note{font-size:.8rem;color:#555;margin:.2rem 0}
figure{display:inline-block;margin:.5rem 1rem .5rem 0}img{max-width:100%}
"""


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
    images = "".join(
        f'<figure><img alt="{html.escape(stem)}" src="data:image/png;base64,{base64.b64encode(png).decode()}"></figure>'
        for stem, png in figures.items()
    )
    sections = "".join(f"<section>{t.html()}</section>" for t in tables)
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>"
        f"<h2>Figures</h2>{images or '<p>No figures.</p>'}<h2>Tables</h2>{sections}</body></html>"
    )


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
