from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from ebmeval import create_task
from ebmeval._util.errors import ConfigError
from ebmeval.builtin_tasks.pubmedqa import load_pubmedqa
from ebmeval.models import Model
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.tasks import Generation, SampleContext

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "pubmedqa"


def test_test_split_matches_upstream_labels() -> None:
    samples = load_pubmedqa()
    assert len(samples) == 500
    assert Counter(s.metadata["label"] for s in samples) == {"yes": 276, "no": 169, "maybe": 55}
    if SHARED.exists():
        truth = json.loads((SHARED / "test_ground_truth.json").read_text())
        letters = {"yes": "A", "no": "B", "maybe": "C"}
        assert {s.id: s.target for s in samples} == {pmid: letters[label] for pmid, label in truth.items()}


def test_settings_choose_the_grounding() -> None:
    required, free, bare = (load_pubmedqa(s) for s in ("reasoning-required", "reasoning-free", "question-only"))
    first = required[0]
    assert first.choices == {"A": "yes", "B": "no", "C": "maybe"}
    assert first.documents[0].text.startswith("AIMS: Dyschesia")
    assert free[0].documents[0].metadata == {"part": "long_answer"}
    assert free[0].documents[0].text != first.documents[0].text
    assert bare[0].documents == []
    if SHARED.exists():
        upstream = json.loads((SHARED / "ori_pqal.json").read_text())[first.id]
        assert all(context in first.documents[0].text for context in upstream["CONTEXTS"])
        assert free[0].documents[0].text == upstream["LONG_ANSWER"]
    with pytest.raises(ConfigError):
        load_pubmedqa("reasoning")  # type: ignore[arg-type]


async def test_task_end_to_end_with_scripted_model() -> None:
    task = create_task("pubmedqa", setting="question-only")
    assert task.generate_config.max_tokens == 32
    model = Model(ScriptedModel(["Answer: A", "no", "I cannot tell"]))
    values = []
    for sample in task.dataset[:3]:
        ctx = SampleContext({"model": model})
        result = await task.workflow(sample, ctx)
        answer = task.parser(result.output, sample)
        score = await task.scorers[0](sample, Generation(sample_id=sample.id, output=result.output, answer=answer), ctx)
        values.append(score.values["accuracy"])
    assert [s.target for s in task.dataset[:3]] == ["A", "A", "A"]
    assert values == [1.0, 0.0, 0.0]
