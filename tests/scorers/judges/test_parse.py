from __future__ import annotations

import pytest

from ebmeval.scorers.judges import parse_counts, parse_verdict, parse_verdicts


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Verdict: YES", True),
        ("**Verdict:** no", False),
        ("The reasoning names IGF-1.\nVerdict: yes", True),
        ("Yes, it does.", True),
        ("No.", False),
        ('{"supported": false}', False),
        ('```json\n{"verdict": "yes"}\n```', True),
        ("Verdict: not supported", False),
        ("<think>verdict: no</think>\nVerdict: YES", True),
        ("First I thought yes.\nVerdict: NO", False),
        ("I think the rationale is partly right", None),
        ("", None),
    ],
)
def test_parse_verdict(reply: str, expected: bool | None) -> None:
    assert parse_verdict(reply) is expected


@pytest.mark.parametrize(
    ("reply", "n", "expected"),
    [
        ("1: YES\n2: NO\n3: yes", 3, [True, False, True]),
        ("Step 1 - supported\nStep 2 - not supported", 2, [True, False]),
        ("1. Acromegaly features: YES\n2. IGF-1 test: NO", 2, [True, False]),
        ("[true, false]", 2, [True, False]),
        ('{"verdicts": ["yes", "no", "no"]}', 3, [True, False, False]),
        ('{"1": "no", "2": "yes"}', 2, [False, True]),
        ("1: YES\n2: NO", 3, None),
        ("[true]", 2, None),
        ("1: YES\n7: NO", 2, None),
        ("all steps are fine", 2, None),
    ],
)
def test_parse_verdicts(reply: str, n: int, expected: list[bool] | None) -> None:
    assert parse_verdicts(reply, n) == expected


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("A full answer needs...\nRequired steps: 4\nCovered steps: 3", (4, 3)),
        ("**Required steps:** 2\n**Covered steps:** 0", (2, 0)),
        ('{"required": 5, "covered": 5}', (5, 5)),
        ("Required steps: 2\nCovered steps: 3", None),
        ("Required steps: 0\nCovered steps: 0", None),
        ("Required steps: 3", None),
        ("three of four", None),
    ],
)
def test_parse_counts(reply: str, expected: tuple[int, int] | None) -> None:
    assert parse_counts(reply) == expected
