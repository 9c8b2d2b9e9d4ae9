"""``ebmeval reproduce factuality``: Tables 1, 2, 3 and 5 from the user's summaries, labels and/or a judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import ebmeval

GENERATED = (
    "ReviewID,Generated\n"
    'r1,"<s>Statins lower mortality in adults with heart disease.</s>"\n'
    'r2,"<s>There is insufficient evidence to support aspirin for stroke.</s>"\n'
    'r3,"<s>The results of this systematic review suggest that exercise lowers blood pressure.</s>"\n'
    'r4,"<s>Vitamin D prevents fractures in older women.</s>"\n'
)
TARGETS = (
    "ReviewID,Target,Background\n"
    "r1,Statins reduce mortality in adults with heart disease.,"
    "<background> We review <int> statins </int> . </background>\n"
    "r2,Aspirin reduces stroke in older adults.,<background> Aspirin and <out> stroke </out> . </background>\n"
    "r3,Exercise lowers blood pressure in adults.,<background> <pop> Adults </pop> exercising . </background>\n"
    "r4,Vitamin D does not prevent fractures in older adults.,<background> Vitamin D and fractures . </background>\n"
)
CATEGORIES = ("population", "intervention", "outcome", "direction", "modality", "grammar", "lexical", "non_redundancy")
MAIN = {"r1": "11111111", "r2": "011 0111", "r3": "11110111", "r4": "01100111"}
SECOND = {"r1": "01111111", "r2": "011 0111", "r3": "11111111", "r4": "01100111"}
JUDGE = json.dumps(
    {"direction": "positive", "modality": "moderate", "population": "yes", "intervention": "yes", "outcome": "no",
     "grammar": "yes", "lexical": "yes", "non_redundancy": "yes"}
)  # fmt: skip


def write_inputs(folder: Path) -> list[str]:
    (folder / "gen.csv").write_text(GENERATED)
    (folder / "targets.csv").write_text(TARGETS)
    header = ",".join(f"{c}__{who}" for who in ("main", "b") for c in CATEGORIES)
    lines = [f"ReviewID,{header}"]
    for review in MAIN:
        cells = [x.strip() for x in MAIN[review] + SECOND[review]]
        lines.append(",".join([review, *cells]))
    (folder / "labels.csv").write_text("\n".join(lines) + "\n")
    return ["--preset-arg", "generated=gen.csv", "--preset-arg", "targets=targets.csv"]


def table(payload: dict[str, Any], source: str) -> dict[str, Any]:
    return next(t for t in payload["tables"] if source in t["title"])


def cell(found: dict[str, Any], row: str, column: str) -> dict[str, Any]:
    return next(c for c in found["cells"] if c["row"] == row and c["column"] == column)


def test_tables_from_the_users_labels_beside_the_published_ones(tmp_path: Path) -> None:
    files = write_inputs(tmp_path)
    labels = ["--preset-arg", "labels=labels.csv", "--preset-arg", "annotator=main", "--preset-arg", "judge=false"]
    done = ebmeval("reproduce", "factuality", "--model", "external:BART", *files, *labels, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert [t["title"].rsplit("(", 1)[1] for t in payload["tables"]] == [
        "Table 1, transposed)", "Table 2)", "Table 3)", "Table 5)",
    ]  # fmt: skip
    pico = cell(table(payload, "Table 1"), "pico", "% agreement")  # b differs from main on r1's population
    assert pico["value"] == pytest.approx(0.75) and pico["published"] == 0.87
    assert pico["difference"] == pytest.approx(0.75 - 0.87) and pico["run_id"] == payload["runs"][0]["run_id"]
    table_2 = table(payload, "Table 2")
    assert "graded by the annotator's labels" in table_2["title"]
    factual = cell(table_2, "BART", "Factually correct")  # main: only r1 has P, I, O, direction and modality right
    assert factual["value"] == pytest.approx(0.25) and factual["published"] == 0.09
    assert factual["scorer"] == "human/factuality" and factual["score_set"]
    assert cell(table(payload, "Table 3"), "BART", "Patient")["value"] == pytest.approx(0.5)
    rouge = cell(table(payload, "Table 5"), "BART", "Background R-1")
    assert rouge["published"] == 0.3736 and rouge["scorer"] == "factuality/copying" and rouge["n"] == 4
    assert [row[1] for row in table_2["rows"]] == ["BART", "LED"]  # LED: published only, ours empty

    shown = ebmeval("reproduce", "factuality", "--model", "external:BART", *files, *labels, "--format", "markdown",
                    cwd=tmp_path)  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "| pico | 0.750 | 0.87 | -0.120 |" in shown.stdout


def test_tables_2_3_and_5_from_a_judge_and_table_1_asks_for_labels(tmp_path: Path) -> None:
    files = write_inputs(tmp_path)
    judge = ["--role", f"judge=scripted:{JUDGE}"]
    done = ebmeval("reproduce", "factuality", "--model", "external:LED", *files, *judge, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    table_2 = table(payload, "Table 2")
    assert "graded by the judge" in table_2["title"]
    assert cell(table_2, "LED", "PICO")["value"] == 0.0 and cell(table_2, "LED", "PICO")["scorer"].startswith(
        "judge/factuality"
    )
    assert cell(table(payload, "Table 3"), "LED", "Patient")["value"] == 1.0
    table_1 = table(payload, "Table 1")
    assert table_1["cells"] == [] and any("labels=FILE" in note for note in table_1["notes"])


def test_the_summaries_file_is_asked_for_before_any_run(tmp_path: Path) -> None:
    write_inputs(tmp_path)
    done = ebmeval("reproduce", "factuality", "--model", "external:BART", "--preset-arg", "targets=targets.csv",
                   cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2 and "needs --preset-arg generated=…" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "runs").exists()


def test_listed_with_what_it_cannot_cover_and_the_inputs_it_takes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = ebmeval("reproduce", "--list", "--json", cwd=tmp_path)
    found = next(p for p in json.loads(done.stdout) if p["name"] == "factuality")
    assert any("Table 1" in c for c in found["covers"]) and any("not public" in x for x in found["limits"])
    assert found["options"]["generated"]["required"] and not found["options"]["labels"]["required"]
    assert found["conditions"][0]["inputs"] == ["generated", "targets", "labels", "annotator", "judge"]
    monkeypatch.setenv("COLUMNS", "2000")
    shown = ebmeval("reproduce", "--list", cwd=tmp_path)
    assert "generated (required): the system's summaries" in shown.stdout
