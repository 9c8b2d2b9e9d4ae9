from __future__ import annotations

import csv
import io
import math

import pytest
from rich.console import Console

from ebmeval.tables import MISSING, Column, Estimate, Table


def example() -> Table:
    table = Table(
        "Scores",
        [
            "run",
            Column("value", "number"),
            Column("95% CI", "interval"),
            Column("p", "number", fmt="p"),
            Column("r [95% CI]", "estimate"),
            Column("cost", "number", fmt="${:.4f}"),
        ],
        notes=["a note"],
    )
    table.add("a_1", 0.5123, (0.51, 0.594), 0.0004, Estimate(0.25, (0.1, 0.4)), 0.00123)
    table.add("b", None, (math.nan, math.nan), 0.2, None, None)
    return table


def test_text_renderings_format_numbers_and_spell_missing_once() -> None:
    table = example()
    assert table.texts() == [
        ["a_1", "0.512", "[0.510, 0.594]", "<0.001", "0.250 [0.100, 0.400]", "$0.0012"],
        ["b", MISSING, MISSING, "0.200", MISSING, MISSING],
    ]
    markdown = table.markdown()
    assert markdown.splitlines()[:4] == [
        "**Scores**",
        "",
        "| run | value | 95% CI | p | r [95% CI] | cost |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    assert "_a note_" in markdown
    assert r"a\_1 & 0.512 & [0.510, 0.594] & <0.001" in table.latex() and r"\toprule" in table.latex()
    assert '<td class="num">&lt;0.001</td>' in table.html() and "<caption>Scores</caption>" in table.html()


def test_csv_holds_numbers_with_an_interval_as_two_columns() -> None:
    rows = list(csv.reader(io.StringIO(example().csv())))
    assert rows[0] == [
        "run",
        "value",
        "95% CI low",
        "95% CI high",
        "p",
        "r [95% CI]",
        "r [95% CI] low",
        "r [95% CI] high",
        "cost",
    ]
    assert [float(v) for v in rows[1][1:]] == [0.5123, 0.51, 0.594, 0.0004, 0.25, 0.1, 0.4, 0.00123]
    assert rows[2] == ["b", "", "", "", "0.2", "", "", "", ""]


def test_estimate_missing_count_is_shown_and_exported_where_the_column_asks() -> None:
    table = Table("", [Column("rubric", "estimate", fmt="{:.2f}", missing=True)])
    table.add(Estimate(3.0, (2.5, 3.5), missing=2))
    assert table.texts() == [["3.00 [2.50, 3.50] (2 missing)"]]
    assert table.csv().splitlines() == ["rubric,rubric low,rubric high,rubric missing", "3.0,2.5,3.5,2"]
    assert not table.markdown().startswith("**")  # no title line without a title


def test_terminal_table_right_aligns_numbers_and_shows_notes() -> None:
    console = Console(width=120, record=True)
    console.print(example().rich())
    text = console.export_text()
    assert "Scores" in text and "a note" in text and "[0.510, 0.594]" in text and MISSING in text


def test_rows_must_fit_the_columns() -> None:
    table = example()
    with pytest.raises(ValueError, match="6 columns"):
        table.add("only one")
    with pytest.raises(TypeError, match="95% CI"):
        table.add("c", 1.0, 0.5, 0.1, None, None)


def test_markdown_escapes_pipes() -> None:
    table = Table("t", ["a", Column("b", "number")])
    table.add("x|y", 3)
    assert "x\\|y" in table.markdown() and "---:" in table.markdown()


def test_terminal_table_shows_labels_and_names_as_written_never_as_markup() -> None:
    table = Table("pubmedqa · ev[/b]il · run [bold]x", ["scorer", Column("value", "number")], notes=["[red]note"])
    table.add("judge/x[judge=qwen]", 0.5)
    table.add("judge/x[judge=llama]", 0.25)
    console = Console(width=120, record=True, color_system=None)
    console.print(table.rich())  # a closing tag with no opening one raised MarkupError here
    shown = console.export_text()
    for text in ("ev[/b]il", "[bold]x", "judge/x[judge=qwen]", "judge/x[judge=llama]", "[red]note"):
        assert text in shown
