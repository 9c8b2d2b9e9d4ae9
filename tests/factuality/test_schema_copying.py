import pytest

from ebmeval.factuality import (
    FactualityLabels,
    canned_opening,
    direction_agrees,
    normalize_direction,
    normalize_modality,
    opening_counts,
    rouge,
)


def test_normalisation_maps_synonyms_and_rejects_unknown() -> None:
    assert normalize_direction("Significantly increased") == "positive"
    assert normalize_direction("decreased") == "negative"
    assert normalize_direction("no significant difference") == "no effect"
    assert normalize_direction("n/a") is None
    assert normalize_modality("Weak claim.") == "weak"
    assert normalize_modality("insufficient evidence") == "no evidence"
    assert normalize_modality("maybe") is None


def test_direction_only_compared_when_both_sides_make_a_claim() -> None:
    assert direction_agrees("positive", "positive", "moderate", "weak") is True
    assert direction_agrees("positive", "negative", "moderate", "weak") is False
    assert direction_agrees("positive", "positive", "no evidence", "weak") is None
    assert direction_agrees("positive", "negative", "moderate", "no claim") is None


def test_derived_categories() -> None:
    ok = dict(population=True, intervention=True, outcome=True, grammar=True, lexical=True, non_redundancy=True)
    full = FactualityLabels(**ok, direction=True, modality=True)
    assert full.pico and full.factually_correct and full.fully_correct
    # A not-applicable direction does not block factual correctness; a wrong one does.
    assert FactualityLabels(**ok, direction=None, modality=True).factually_correct is True
    assert FactualityLabels(**ok, direction=False, modality=True).factually_correct is False
    bad_grammar = FactualityLabels(**{**ok, "grammar": False}, direction=True, modality=True)
    assert bad_grammar.factually_correct is True and bad_grammar.fully_correct is False
    unknown_pico = FactualityLabels(**{**ok, "outcome": None}, direction=True, modality=True)
    assert unknown_pico.pico is None and unknown_pico.factually_correct is None
    assert FactualityLabels(population=False).pico is False
    with pytest.raises(KeyError):
        FactualityLabels().value("bogus")


def test_rouge_against_reference() -> None:
    scores = rouge(["statins reduce mortality", "nothing in common"], ["statins reduce mortality", "statins help"])
    assert scores[0] == {"rouge1": 1.0, "rouge2": 1.0, "rougeL": 1.0}
    assert scores[1]["rouge1"] == 0.0
    with pytest.raises(ValueError):
        rouge(["a"], [])


def test_canned_openings_counted_once_per_text_and_configurable() -> None:
    texts = [
        "There is insufficient evidence to support X.",
        "  there is   INSUFFICIENT evidence to support Y",
        "The results of this systematic review suggest that Z works.",
        "The is the first systematic review of W.",
        "This systematic review suggests that Z works.",
        "Z works.",
    ]
    assert canned_opening(texts[1]) == "there is insufficient evidence to support"
    counts = opening_counts(texts)
    assert [(c.opening, c.count, c.share) for c in counts] == [
        ("there is insufficient evidence to support", 2, 2 / 6),
        ("the is the first systematic review", 1, 1 / 6),
        ("the results of this systematic review suggest", 1, 1 / 6),
    ]
    assert [c.opening for c in opening_counts(texts, ["z works"])] == ["z works"]
