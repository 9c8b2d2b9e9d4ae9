"""Every built-in scorer defines each metric it emits in its docstring's ``Metrics:`` section (the report glossary)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ebmeval._util.options import section_docs
from ebmeval.models import ChatMessage, GenerateConfig, Model
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.report._glossary import metric_definition, metric_entry
from ebmeval.scorers.text import _scorers as text_scorers
from ebmeval.tasks import Generation, ParsedAnswer, Sample, SampleContext, create_scorer, scorer_registry

BUILTIN = sorted(name for name in scorer_registry if scorer_registry.get(name).__module__.startswith("ebmeval."))
"""The registered scorers ebmeval ships (plugins installed beside it left out)."""

VARIANTS: dict[str, list[dict[str, Any]]] = {
    "accuracy": [{}, {"also_lenient": True}],
    "multi_answer": [{}, {"also_lenient": True}],
    "text/bleurt": [{"checkpoint": "bleurt-checkpoint"}],
    "human/factuality": [{"labels": str(Path(__file__).with_name("factuality_labels.csv"))}],
}
"""The arguments each scorer is built with: its defaults, and those that add metrics."""

SAMPLE = Sample(
    id="1",
    input="Which test first for suspected acromegaly? A. IGF1 B. ACTH",
    target="A",
    choices={"A": "IGF1", "B": "ACTH"},
    metadata={
        "scoring_points": ["Features suggest acromegaly.", "IGF-1 is the first test."],
        "triplets": [["aspirin", "inhibits", "platelets"]],
        "essential_answers": ["A"],
    },
)
GENERATION = Generation(
    sample_id="1",
    output="aspirin - inhibits - platelets\nFinal answer: A",
    answer=ParsedAnswer(value="A"),
    metadata={"rationale": "IGF-1 first.", "feasibility": 4.0},
)
EMPTY = Generation(sample_id="1", output="", answer=ParsedAnswer(value=None, parsed=False))
"""What a text-similarity scorer gets: an empty prediction gives its metric keys without running a metric."""


def judge_reply(messages: Sequence[ChatMessage], config: GenerateConfig) -> str:
    """One reply any judge can read part of; its metric keys do not depend on which part."""
    return "Verdict: YES\n1: YES\n2: YES\nRequired steps: 2\nCovered steps: 1\nOverall: 4\nScore: 4"


def fake_bleurt(path: str, field: str = "checkpoint") -> SimpleNamespace:
    """A BLEURT model stand-in: the scorer only keeps its checkpoint's path and identity until it scores."""
    return SimpleNamespace(checkpoint=SimpleNamespace(path=Path(path), identity="sha256:0"))


async def emitted(name: str, args: dict[str, Any]) -> set[str]:
    """The metric keys of the score the scorer ``name`` built with ``args`` gives one sample."""
    scorer = create_scorer(name, **args)
    judge = Model(ScriptedModel(judge_reply, name="scripted/judge"))
    ctx = SampleContext({"model": judge, "judge": judge, "judge2": judge})
    generation = EMPTY if isinstance(scorer, text_scorers.TextSimilarity) else GENERATION
    score = await scorer(SAMPLE, generation, ctx)
    return set(score.values)


@pytest.fixture
def no_bleurt_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text_scorers, "load_bleurt", fake_bleurt)


@pytest.mark.usefixtures("no_bleurt_model")
@pytest.mark.parametrize("name", BUILTIN)
async def test_every_metric_a_builtin_scorer_emits_has_a_definition(name: str) -> None:
    keys: set[str] = set()
    for args in VARIANTS.get(name, [{}]):
        keys |= await emitted(name, args)
    assert keys, name
    undefined = sorted(key for key in keys if metric_entry(name, key) is None)
    assert not undefined, f"{name}: no Metrics: entry for {undefined}"
    entries = section_docs(scorer_registry.get(name), ("Metrics:",))
    stale = sorted(entry for entry in entries if not any(fnmatchcase(key, entry) for key in keys))
    assert not stale, f"{name}: Metrics: entries for metrics it does not emit: {stale}"
    for entry, text in entries.items():
        assert text and not re.search(r"``|:(class|func|mod|meth|attr|data|exc|obj):`", text), (name, entry)


def test_built_in_scorers_are_all_there() -> None:
    expected = {"accuracy", "multi_answer", "text/bertscore", "judge/factuality", "judge/rubric-panel", "triplet-f1"}
    factuality = {"factuality/labels", "human/factuality", "factuality/copying"}  # before: unregistered, no glossary
    assert expected | factuality <= set(BUILTIN)
    assert len(BUILTIN) >= 21


def test_metric_names_that_depend_on_settings_and_scorer_variants_find_their_entry() -> None:
    assert metric_definition("text/bertscore", "f1@all-MiniLM-L6-v2-L5").startswith("BERTScore F1 = 2PR / (P + R)")
    assert metric_definition("text/bertscore", "recall@encoder-L9").startswith("BERTScore recall")
    assert metric_definition("judge/rubric-panel", "rubric/judge2").startswith("rubric/J is the overall 0–5")
    steps = metric_definition("judge/steps-with-reference", "steps_supported")
    assert steps.startswith("supported / expert steps")
    assert metric_definition("judge/steps-with-reference@p3", "steps_supported") == steps
    assert metric_definition("judge/steps-with-reference[quick]", "steps_supported") == steps
    assert metric_definition("unknown/scorer", "x") == ""
