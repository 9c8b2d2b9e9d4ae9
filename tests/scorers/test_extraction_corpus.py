"""The conformance corpus of answer extraction (``extraction_corpus.yaml``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from ebmeval.scorers import parse_choices
from ebmeval.tasks import ParsedAnswer

CORPUS = yaml.safe_load((Path(__file__).parent / "extraction_corpus.yaml").read_text(encoding="utf-8"))
CASES: list[dict[str, Any]] = CORPUS["cases"]
LANGUAGES = ("en", "fr", "zh")


def options_of(case: dict[str, Any]) -> dict[str, str]:
    named = case["options"]
    return CORPUS["options"][named] if isinstance(named, str) else {str(k): str(v) for k, v in named.items()}


def read(case: dict[str, Any]) -> ParsedAnswer:
    return parse_choices(case["reply"], options_of(case), multi=case["multi"])


def conforms(case: dict[str, Any], parsed: ParsedAnswer) -> bool:
    if case["expect"] == "unparsed":
        return not parsed.parsed and parsed.method.startswith(case.get("reason", ""))
    value = parsed.value if case["multi"] else [parsed.value]
    return parsed.parsed and value == case["expect"]


@pytest.mark.parametrize("case", CASES, ids=[f"{i:03d}-{c['format']}" for i, c in enumerate(CASES)])
def test_case(case: dict[str, Any]) -> None:
    parsed = read(case)
    assert conforms(case, parsed), f"{case['reply']!r} read as {parsed}"


def test_corpus_covers_what_it_must() -> None:
    assert len(CASES) >= 120
    assert {(c["multi"], c["lang"]) for c in CASES} == {(multi, lang) for multi in (True, False) for lang in LANGUAGES}
    required = {"json", "medrag-json", "json-fence", "json-in-prose", "json-nested", "inspect", "lm-eval"}
    required |= {"markdown", "boxed", "think", "think-unclosed", "option-text", "verdicts", "ambiguous"}
    required |= {"per-option-verdicts", "mention-after-answer", "self-correction"}
    assert required <= {c["format"] for c in CASES}


def test_pass_rate(capsys: pytest.CaptureFixture[str]) -> None:
    """The share of the corpus read as expected, by language and answer kind (printed with ``-s``)."""
    tally: Counter[tuple[str, str, bool]] = Counter()
    for case in CASES:
        tally[("multi" if case["multi"] else "single", case["lang"], conforms(case, read(case)))] += 1
    passed = sum(n for (_, _, ok), n in tally.items() if ok)
    with capsys.disabled():
        print(f"\nextraction corpus: {passed}/{len(CASES)} conform ({passed / len(CASES):.1%})")
        for kind in ("multi", "single"):
            for lang in LANGUAGES:
                good, bad = tally[(kind, lang, True)], tally[(kind, lang, False)]
                print(f"  {kind:6} {lang}: {good}/{good + bad}")
    assert passed == len(CASES)
