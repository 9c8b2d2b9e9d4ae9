"""Every model call of a built-in task names the templates its prompts are rendered from (``ebmeval describe``)."""

from __future__ import annotations

from typing import Any

import pytest

from ebmeval.tasks import call_rows, create_task, task_registry
from tests.test_identity_pin import VARIANTS

SETTINGS = [
    (name, args)
    for name in task_registry
    if task_registry.get(name).__module__.startswith("ebmeval.")
    and name not in ("mcq-file", "text-file", "factuality/summaries")  # a file of the user's
    for args in [{}, *VARIANTS.get(name, []), {"overflow": "map-reduce"} if name == "synthesis" else {}]
]


@pytest.mark.parametrize(("name", "args"), SETTINGS, ids=[f"{n} {a}" for n, a in SETTINGS])
def test_each_call_of_a_built_in_task_names_its_templates(name: str, args: dict[str, Any]) -> None:
    rows = call_rows(create_task(name, **args))
    unnamed = [row["call"] for row in rows if not row["templates"]]
    # feasibility asks only through its rating call: the answer's row is listed but never sent
    assert unnamed == (["answer"] if args.get("workflow") == "feasibility" else []), name
    assert all("@v" in template for row in rows for template in row["templates"])


def test_a_judges_prompt_variant_is_among_its_calls_templates_but_not_in_its_spec() -> None:
    """The step judge's variant (``steps/p1``) is named by ``describe``; its score set's spec stays as it was."""
    from ebmeval.tasks import scorer_spec

    task = create_task("medthink/reasoning")
    judge = next(row for row in call_rows(task) if row["call"] == "judge")
    assert {"steps/p1@v1", "strict/verdict@v1", "steps-single@v1"} <= set(judge["templates"])
    steps = next(s for s in task.scorers if s.name == "judge/steps-with-reference")
    assert scorer_spec(steps, {})["templates"] == ["strict/verdict@v1"]


def test_a_judges_row_shows_the_temperature_and_budget_its_scorers_ask_with() -> None:
    """Before: ``-`` for every judge question, though the scorer's settings are what is sent."""
    from ebmeval.tasks import THINKING_BUDGET

    task = create_task("synthesis", items=["m3-26258610"], text_metrics=False)
    rubric = next(s for s in task.scorers if s.name.startswith("judge/rubric"))
    row = next(row for row in call_rows(task) if row["call"] == "judge")
    budget = rubric.config.max_tokens  # type: ignore[attr-defined]
    assert budget is not None
    shown = (row["temperature"], row["max_tokens"], row["thinking_max_tokens"])
    assert shown == (rubric.config.temperature, budget, budget + THINKING_BUDGET)  # type: ignore[attr-defined]
    # the three step judges ask with different budgets: no one setting to show
    steps = next(row for row in call_rows(create_task("medthink/reasoning")) if row["call"] == "judge")
    assert (steps["temperature"], steps["max_tokens"]) == (None, None)
