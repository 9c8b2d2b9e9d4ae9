from pathlib import Path

import pytest

from ebmeval._util.errors import DataError
from ebmeval.factuality import read_generated, read_human_labels, read_pairs, read_targets

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
    assert first.background is not None and first.background.startswith("<background>")


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
