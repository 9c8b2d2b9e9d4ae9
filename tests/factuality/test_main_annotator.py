"""The paper's Table 1 protocol (agreement with a main annotator) on a synthetic set computed by hand."""

import pytest

from ebmeval._util.errors import UsageError
from ebmeval.factuality import FactualityLabels, binary_agreement, main_annotator_agreement

# Four summaries, three annotators: main M and A, B. P, I and O move together, so pico is that value;
# direction, modality, lexical and non-redundancy are "yes" from everyone.
PICO = {"M": (1, 1, 1, 0), "A": (1, 1, 0, 0), "B": (1, 1, 1, 1)}
GRAMMAR = {"M": (1, 1, 1, 1), "A": (1, 1, 1, 1), "B": (1, 1, 1, 0)}


def raters() -> dict[str, dict[str, FactualityLabels]]:
    out: dict[str, dict[str, FactualityLabels]] = {}
    for name in PICO:
        out[name] = {}
        for i in range(4):
            p, g = bool(PICO[name][i]), bool(GRAMMAR[name][i])
            out[name][f"r{i}"] = FactualityLabels(p, p, p, True, True, g, True, True)
    return out


def test_table1_both_ways_match_hand_computed_values() -> None:
    """Hand computation (two raters, AC1 = (pa - pe)/(1 - pe), pe = 2 π (1 - π), π = mean share of "yes"):

    pico, A vs M: pa = 3/4, π = (3/4 + 2/4)/2 = 5/8, pe = 30/64, AC1 = 9/17;
    pico, B vs M: pa = 3/4, π = 7/8, pe = 14/64, AC1 = 17/25;
    pico Fleiss (3 raters): P̄ = (1 + 1 + 1/3 + 1/3)/4 = 2/3, pe = .75² + .25² = .625, κ = 1/9.
    grammar, A vs M: pa = 1, AC1 = 1; B vs M: pa = 3/4, π = 7/8, AC1 = 17/25;
    grammar Fleiss: P̄ = 5/6, p = 11/12, pe = 122/144, κ = -1/11.
    Unanimous columns: percent 1, AC1 1, Fleiss undefined (None).
    Overall = mean of the six base columns: % (3/4 + 7/8 + 4)/6, AC1 ((9/17 + 17/25)/2 + 21/25 + 4)/6,
    Fleiss (1/9 - 1/11)/2 (the defined ones).
    """
    table = {c.category: c for c in main_annotator_agreement(raters(), "M")}
    assert list(table) == [
        "pico", "direction", "modality", "grammar", "lexical", "non_redundancy", "factually_correct", "overall",
    ]  # fmt: skip
    pico = table["pico"]
    assert pico.percent == pytest.approx(0.75)
    assert pico.ac1 == pytest.approx((9 / 17 + 17 / 25) / 2)
    assert pico.fleiss == pytest.approx(1 / 9)
    assert pico.per_annotator == {"A": pytest.approx((0.75, 9 / 17)), "B": pytest.approx((0.75, 17 / 25))}
    assert pico.n == 4
    grammar = table["grammar"]
    assert grammar.percent == pytest.approx(7 / 8) and grammar.ac1 == pytest.approx((1 + 17 / 25) / 2)
    assert grammar.fleiss == pytest.approx(-1 / 11)
    assert table["lexical"].percent == 1.0 and table["lexical"].ac1 == 1.0 and table["lexical"].fleiss is None
    fc = table["factually_correct"]
    assert (fc.percent, fc.ac1, fc.fleiss) == (pico.percent, pico.ac1, pico.fleiss)
    overall = table["overall"]
    assert overall.percent == pytest.approx((0.75 + 0.875 + 4) / 6)
    assert overall.ac1 == pytest.approx(((9 / 17 + 17 / 25) / 2 + 0.84 + 4) / 6)
    assert overall.fleiss == pytest.approx((1 / 9 - 1 / 11) / 2)

    # The multi-rater statistics beside it: all three raters at once, every pair of raters counted.
    multi = {a.category: a for a in binary_agreement(raters())}
    assert multi["pico"].percent == pytest.approx(2 / 3) and multi["pico"].fleiss == pytest.approx(1 / 9)
    assert multi["pico"].percent != pytest.approx(pico.percent)


def test_unknown_main_annotator_is_refused() -> None:
    with pytest.raises(UsageError, match="main annotator 'Z'"):
        main_annotator_agreement(raters(), "Z")
