from __future__ import annotations

import json
from pathlib import Path

import pytest

from ebmeval._util.errors import DataError
from ebmeval.synthesis import (
    JoinReport,
    SynthesisItem,
    load_jsonl,
    load_m3,
    load_medmeta,
    load_ms2,
    to_sample,
    write_jsonl,
)
from ebmeval.tasks import Document

DATA = Path("/work/shared/data")
needs_data = pytest.mark.skipif(not DATA.exists(), reason="project data folder not available")

ITEM = {
    "id": "x1",
    "title": "Drug X for condition Y",
    "background": "Y is common.",
    "reference_conclusion": "X helps.",
    "studies": [{"id": "1", "title": "T", "abstract": "X helped."}],
}


def test_jsonl_round_trip_and_sample_mapping(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    write_jsonl([SynthesisItem.model_validate(ITEM)], path)
    (item,) = load_jsonl(path)
    sample = to_sample(item)
    assert sample.input == "Drug X for condition Y"
    assert sample.target == "X helps."
    assert [(d.id, d.text, d.title) for d in sample.documents] == [("1", "X helped.", "T")]
    assert sample.metadata["background"] == "Y is common."


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "items.jsonl:2: invalid JSON"),
        (json.dumps({**ITEM, "id": "x2", "reference_conclusion": ""}), "items.jsonl:2: field 'reference_conclusion'"),
        (json.dumps({**ITEM, "id": "x2", "studies": [{"id": "1"}]}), "items.jsonl:2: field 'studies.0.abstract'"),
        (json.dumps(ITEM), "items.jsonl:2: field 'id'.*duplicate id"),
        ("[1, 2]", "items.jsonl:2: expected a JSON object"),
    ],
)
def test_malformed_jsonl_names_file_line_and_field(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps(ITEM) + "\n" + line + "\n")
    with pytest.raises(DataError, match=message) as caught:
        load_jsonl(path)
    assert caught.value.line == 2


def test_medmeta_join_reports_missing_pmids(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text(
        "Number,Meta Analysis Name,URL,PMID,Conclusion,References,Date,Number of refs\n"
        '1,Title one,u,99,Conclusion one.,"111, 222 333","May 31, 2024",3\n'
    )
    report = JoinReport()
    (item,) = load_medmeta(path, {"222": Document(id="222", text="Abstract 222", title="T222")}, report)
    assert [s.id for s in item.studies] == ["222"]
    assert item.metadata["missing_pmids"] == ["111", "333"]
    assert (report.reviews, report.pmids, report.joined) == (1, 3, 1)
    assert report.missing == {"medmeta-1": ["111", "333"]}
    assert (item.metadata["year"], item.metadata["url"], item.metadata["reference_count"]) == (2024, "u", 3)
    assert "data_issue" not in item.metadata


def test_medmeta_rows_that_contradict_themselves_are_flagged(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text(
        "Number,Meta Analysis Name,URL,PMID,Conclusion,References,Date,Number of refs\n"
        '8,Eight,u,99,C.,"1, 2, 3, 4, 5, 6, 7, 8, 9, 10","August 31, 2024",8\n'
        '13,Thirteen,u,98,C.,"11 12 11","December 30, 2024",3\n'
        '2,Two,u,97,C.,"21","March 31, 2025",1\n'
        '4,Four,u,96,C.,"31","x",1\n'
    )
    with pytest.raises(DataError, match="m.csv:5: field 'Date': no year"):
        load_medmeta(path, {})
    path.write_text("\n".join(path.read_text().splitlines()[:4]) + "\n")
    eight, thirteen, two = load_medmeta(path, {})
    assert eight.metadata["data_issue"] == "References lists 10 PMIDs for 8 references (Number of refs)"
    assert thirteen.metadata["data_issue"] == "PMID 11 listed twice in References"
    assert "does not match the title" in two.metadata["data_issue"]


def test_shipped_medmeta_items_carry_year_and_reference_count_and_their_issues() -> None:
    from ebmeval.tasks import create_task

    task = create_task("synthesis", source="medmeta", workflow="parametric-zero-shot", text_metrics=False)
    by_id = {s.id: s for s in task.dataset}
    assert {s.metadata["year"] for s in task.dataset} == {2024, 2025}
    assert (
        by_id["medmeta-8"].metadata["reference_count"] == 8 and "10 PMIDs" in by_id["medmeta-8"].metadata["data_issue"]
    )
    assert sorted(i for i, s in by_id.items() if s.metadata.get("data_issue")) == [
        "medmeta-13",
        "medmeta-2",
        "medmeta-8",
    ]


@needs_data
def test_real_medmeta_joins_no_abstract_from_an_empty_corpus() -> None:
    report = JoinReport()
    items = load_medmeta(DATA / "medmeta/MedMeta.csv", {}, report)
    assert len(items) == 20
    assert report.pmids == 205 and report.joined == 0


@needs_data
def test_m3_groups_conclusion_sentences_by_review() -> None:
    items = {i.id: i for i in load_m3(DATA / "m3/level2.jsonl", DATA / "m3/level3.jsonl")}
    assert len(items) == 229
    review = items["m3-26258610"]
    assert review.title == "H. pylori infection for OAG"
    assert review.reference_conclusion.startswith("The result of this meta-analysis suggested")
    assert "12038941" in {s.id for s in review.studies}
    untitled = load_m3(DATA / "m3/level2.jsonl")
    assert len(untitled) == 230 and untitled[0].title.startswith("Review PMID ")


@needs_data
def test_ms2_review_conclusion_and_included_studies() -> None:
    (item,), distractors = load_ms2(DATA / "ms2_sample/sample.json")
    assert item.title.startswith("Vitamin K and the prevention of fractures: systematic review and meta-analysis")
    assert item.reference_conclusion.startswith("This systematic review suggests")
    assert item.background is not None and item.background.startswith("Observational and some")
    assert "<int>" not in item.reference_conclusion and "<int>" not in item.studies[0].abstract
    assert len(item.studies) == 20
    assert len(distractors) == 14 and not {d.id for d in distractors} & {s.id for s in item.studies}


def test_shipped_sources_load() -> None:
    from ebmeval.builtin_tasks.synthesis import load_synthesis, noise_pool

    assert len(load_synthesis("m3")) == 229
    assert len(load_synthesis("ms2")[0].documents) == 20
    medmeta = load_synthesis("medmeta")
    assert len(medmeta) == 20 and all(not s.documents for s in medmeta)
    assert len(noise_pool()) > 1000
