from pathlib import Path

import pytest

from ebmeval._util.errors import DataError
from ebmeval.factuality import (
    FactualityLabels,
    LabelMapping,
    analyze,
    read_generated,
    read_human_labels,
    read_pairs,
    read_targets,
)
from tests.helpers.cli import ebmeval

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
FIXTURES = SHARED / "ms2_sample" / "mslr_evaluator_fixtures"


def test_mslr_submission_and_targets_are_paired(tmp_path: Path) -> None:
    if not FIXTURES.exists():
        pytest.skip("shared data not available")
    pairs = read_pairs(FIXTURES / "test-predictions.csv", FIXTURES / "test-targets.csv")
    assert len(pairs) == 5
    first = pairs[0]
    assert first.review_id == "205832151"
    assert not first.generated.startswith("<s>") and not first.generated.endswith("</s>")
    assert first.background is not None and first.background.startswith("Necrotizing enterocolitis")
    assert "<pop>" not in first.background and "</background>" not in first.background


def test_mslr_tags_are_stripped_before_rouge_against_the_background() -> None:
    """With the tags left in, ROUGE-1/2/L against the background were 0.201/0.057/0.160."""
    if not FIXTURES.exists():
        pytest.skip("shared data not available")
    pairs = read_pairs(FIXTURES / "test-predictions.csv", FIXTURES / "test-targets.csv")
    report = analyze([], pairs=pairs)
    assert report.n_copying == report.n_background == 5
    assert report.rouge_background == pytest.approx({"rouge1": 0.219, "rouge2": 0.079, "rougeL": 0.174}, abs=5e-4)


def test_cochrane_targets_read() -> None:
    path = SHARED / "rct_summarization_cochrane" / "test-targets.csv"
    if not path.exists():
        pytest.skip("shared data not available")
    targets = read_targets(path)
    assert len(targets) == 470
    assert targets["CD000220"][0].startswith("Metronidazole") and targets["CD000220"][1] is None


def test_jsonl_files(tmp_path: Path) -> None:
    gen = tmp_path / "g.jsonl"
    gen.write_text('{"review_id": "r1", "generated": "<s>A works.</s>"}\n\n{"review_id": "r2", "generated": "B"}\n')
    assert read_generated(gen) == {"r1": "A works.", "r2": "B"}
    tgt = tmp_path / "t.jsonl"
    tgt.write_text('{"review_id": "r1", "target": "A"}\n{"review_id": "r2", "target": 3}\n')
    with pytest.raises(DataError, match=r"t.jsonl:2: field 'target'"):
        read_targets(tgt)


def test_missing_target_and_duplicates_are_data_errors(tmp_path: Path) -> None:
    gen = tmp_path / "g.csv"
    gen.write_text("ReviewID,Generated\nr1,x\nr2,y\n")
    tgt = tmp_path / "t.csv"
    tgt.write_text("ReviewID,Target\nr1,x\n")
    with pytest.raises(DataError, match="1 generated summaries have no target"):
        read_pairs(gen, tgt)
    gen.write_text("ReviewID,Generated\nr1,x\nr1,y\n")
    with pytest.raises(DataError, match=r"g.csv:3: field 'ReviewID': duplicate"):
        read_generated(gen)
    gen.write_text("ID,Generated\nr1,x\n")
    with pytest.raises(DataError, match="field 'ReviewID': missing column"):
        read_generated(gen)


def test_human_labels(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_text(
        "ReviewID,population__ann1,population__ann2,direction__ann1,target_direction__ann1\n"
        "r1,1,yes,0,increased\n"
        "r2,0,,true,\n"
    )
    human = read_human_labels(path)
    assert human.annotators == ["ann1", "ann2"]
    assert human.binary["ann1"]["r1"].population is True and human.binary["ann1"]["r1"].direction is False
    assert human.binary["ann2"]["r1"].population is True
    assert "r2" not in human.binary["ann2"]
    assert human.labels["ann1"]["r1"]["target_direction"] == "positive"
    assert human.labels["ann1"]["r2"]["target_direction"] is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("ReviewID,population__a\nr1,maybe\n", r"h.csv:2: field 'population__a': expected 1/0"),
        ("ReviewID,population\nr1,1\n", r"h.csv:1: field 'population': column must be named"),
        ("ReviewID,colour__a\nr1,1\n", r"h.csv:1: field 'colour__a': unknown category"),
        ("ReviewID,target_modality__a\nr1,sure\n", r"h.csv:2: field 'target_modality__a': expected a modality"),
        ("ReviewID,grammar__a\nr1,1\nr1,0\n", r"h.csv:3: field 'ReviewID': duplicate"),
        ("ReviewID,grammar__a\nr1,1,1\n", r"h.csv:2: more cells"),
    ],
)
def test_malformed_human_labels(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "h.csv"
    path.write_text(content)
    with pytest.raises(DataError, match=message):
        read_human_labels(path)


def labels_tsv(path: Path) -> Path:
    """A TSV from another tool: one row per review and rater, free-text answers, blanks."""
    path.write_text(
        "Review\tRater\tPatients OK?\tIntervention OK?\tOutcome OK?\tTarget direction\tSummary direction"
        "\tTarget certainty\tSummary certainty\tGrammar\n"
        "r1\tmain\t2: Yes\t2: Yes\t2: Yes\tPositive effect\tPositive effect\tModerate claim\tModerate claim\t2: Yes\n"
        "r1\tsecond\t2: Yes\t1: No\t2: Yes\tPositive effect\tNegative effect\tModerate claim\tWeak claim\t\n"
        "r2\tmain\t1: No\t2: Yes\t\tNo effect\t\tNo evidence\tNo claim\tn/a\n"
    )
    return path


TSV_MAPPING = LabelMapping(
    columns={
        "review": "Review",
        "annotator": "Rater",
        "population": "Patients OK?",
        "intervention": "Intervention OK?",
        "outcome": "Outcome OK?",
        "target_direction": "Target direction",
        "generated_direction": "Summary direction",
        "target_modality": "Target certainty",
        "generated_modality": "Summary certainty",
        "grammar": "Grammar",
    },
    values={"2: Yes": "yes", "1: No": "no", "n/a": ""},
)


def test_tsv_with_free_text_labels_and_blanks_through_a_mapping(tmp_path: Path) -> None:
    human = read_human_labels(labels_tsv(tmp_path / "labels.tsv"), TSV_MAPPING)
    assert human.annotators == ["main", "second"]
    main, second = human.binary["main"], human.binary["second"]
    assert main["r1"] == FactualityLabels(True, True, True, True, True, True)
    assert second["r1"].intervention is False and second["r1"].grammar is None
    assert second["r1"].direction is False and second["r1"].modality is False  # derived from the side labels
    assert main["r2"].population is False and main["r2"].outcome is None and main["r2"].grammar is None
    assert main["r2"].direction is None and main["r2"].modality is False  # no evidence vs no claim: no direction
    assert human.labels["main"]["r2"]["generated_direction"] is None
    assert human.labels["main"]["r1"]["target_modality"] == "moderate"


def test_mapping_errors_name_file_line_and_column(tmp_path: Path) -> None:
    path = labels_tsv(tmp_path / "labels.tsv")
    with pytest.raises(DataError, match=r"labels.tsv:2: field 'Patients OK\?': expected 1/0.*'2: Yes'"):
        read_human_labels(path, LabelMapping(columns=TSV_MAPPING.columns))
    with pytest.raises(DataError, match=r"labels.tsv:1: field 'Colour': missing column"):
        read_human_labels(path, LabelMapping(columns={**TSV_MAPPING.columns, "grammar": "Colour"}))


def test_cli_analyzes_a_tsv_through_column_and_value_mappings(tmp_path: Path) -> None:
    labels_tsv(tmp_path / "labels.tsv")
    (tmp_path / "g.csv").write_text("ReviewID,Generated\nr1,Statins lower mortality.\nr2,No evidence on aspirin.\n")
    (tmp_path / "t.csv").write_text("ReviewID,Target\nr1,Statins reduce mortality.\nr2,Aspirin prevents stroke.\n")
    args = ["factuality", "analyze", "--generated", "g.csv", "--targets", "t.csv", "--human", "labels.tsv"]
    for name, column in TSV_MAPPING.columns.items():
        args += ["--label-column", f"{name}={column}"]
    args += ["--label-value", "2: Yes=yes", "--label-value", "1: No=no", "--label-value", "n/a="]
    done = ebmeval(*args, "--main-annotator", "main", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Summaries analysed: 2." in done.stdout
    assert "| population | 2 | 0.500 |" in done.stdout and "| modality | 2 | 0.500 |" in done.stdout
    assert "### Agreement with the main annotator main (Table 1 protocol)" in done.stdout
    bad = ebmeval(*args[:8], "--label-column", "annotator=Rater", cwd=tmp_path)
    assert bad.returncode == 2 and "labels.tsv:1: field 'ReviewID': missing column" in bad.stderr
