"""One home per concept: the built-in judges beside the judge core, one template registry, one JSON reader."""

from __future__ import annotations

import ebmeval.builtin_tasks  # noqa: F401  (registers every built-in task's templates)
from ebmeval import arena, factuality, judges, prompts, scorers, synthesis
from ebmeval.builtin_tasks import text_file
from ebmeval.judges import json_in_text, json_values
from ebmeval.prompts import JUDGE_TEMPLATES, templates


def test_built_in_judges_live_beside_the_judge_core() -> None:
    built_in = [
        judges.RubricJudge,
        judges.RubricPanel,
        judges.StepsWithReference,
        judges.FactualityJudge,
        judges.parse_pairwise,
        judges.ReferenceJudge,
    ]
    assert {j.__module__.rsplit(".", 1)[0] for j in built_in} == {"ebmeval.judges"}
    assert len({j.__module__ for j in built_in}) == len(built_in)  # one module each


def test_the_judges_stay_importable_where_they_were() -> None:
    assert synthesis.RubricJudge is judges.RubricJudge and synthesis.RubricPanel is judges.RubricPanel
    assert factuality.FactualityJudge is judges.FactualityJudge and factuality.Verdict is judges.FactualityVerdict
    assert arena.parse_pairwise is judges.parse_pairwise and arena.PAIRWISE is judges.PAIRWISE
    kept = {name: getattr(scorers.judges, name) for name in scorers.judges.__all__}
    assert kept == {name: getattr(judges if name in judges.__all__ else prompts, name) for name in kept}
    assert text_file.ReferenceJudge is judges.ReferenceJudge


def test_every_judge_template_is_in_the_one_registry() -> None:
    expected = {
        "steps/p1",
        "strict/verdict",
        "synthesis/rubric",
        "arena/pairwise",
        "factuality/claim",
        "judge/reference",
    }
    assert expected <= JUDGE_TEMPLATES
    assert all(name in templates for name in JUDGE_TEMPLATES)
    assert {"lfqa/answer", "extraction/relations", "medthink/zero-shot-cot"} <= set(templates)


def test_the_json_reader_skips_what_is_no_object_and_reads_python_literals() -> None:
    assert json_in_text("Step {2} is covered. {'supported': True}") == {"supported": True}
    assert json_in_text('[note] {"a": {"b": 1}} {"c": 2}') == {"a": {"b": 1}}
    assert [(start, value) for start, _end, value in json_values('x {"a": 1} y {"b": 2}', "{")] == [
        (2, {"a": 1}),
        (13, {"b": 2}),
    ]
