from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from ebmeval.builtin_tasks.medthink_reasoning import (
    ZeroShotReasoning,
    load_medthink_reasoning,
    medthink_reasoning,
    parse_final_answer,
    split_rationale,
)
from ebmeval.models import Model
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.tasks import SampleContext, task_registry

SHARED = Path("/work/shared/data/medthink_bench/QA_data.json")


@pytest.mark.parametrize(
    ("reply", "rationale", "answer"),
    [
        (
            "Features of acromegaly.\nIGF-1 first.\nFinal answer: A. IGF1",
            "Features of acromegaly.\nIGF-1 first.",
            "A. IGF1",
        ),
        ("Reasoning.\n**Final Answer:** B", "Reasoning.", "B"),
        ("Reasoning.\nAnswer:\n\nC. TSH", "Reasoning.", "C. TSH"),
        ("Answer: A is tempting.\nMore thought.\nFinal answer: D", "Answer: A is tempting.\nMore thought.", "D"),
        ("<think>hidden</think>Shown.\nFinal answer: A", "Shown.", "A"),
        ("A. IGF1\nB. ACTH\n\nThe answer is: D. Serum coisol", "A. IGF1\nB. ACTH", "D. Serum coisol"),
        ("Step 15: The answer is D.\nThe correct answer is B", "Step 15: The answer is D.", "B"),
        ("No conclusion at all.", "No conclusion at all.", None),
        ("Reasoning.\nFinal answer:", "Reasoning.", None),
    ],
)
def test_split_rationale(reply: str, rationale: str, answer: str | None) -> None:
    assert split_rationale(reply) == (rationale, answer)


def test_parser_marks_a_missing_answer_line_unparsed() -> None:
    sample = load_medthink_reasoning()[0]
    assert parse_final_answer("x\nFinal answer: A", sample).value == "A"
    assert parse_final_answer("no answer", sample).parsed is False


def test_all_500_questions_with_expert_steps() -> None:
    samples = load_medthink_reasoning()
    assert len(samples) == 500
    assert sum(len(s.metadata["scoring_points"]) for s in samples) == 1528
    assert samples[0].id == "1" and samples[0].target == "A. IGF1"
    if SHARED.is_file():
        upstream = {str(item["Index"]): item for item in json.loads(SHARED.read_text(encoding="utf-8"))}
        for sample in samples[::50]:
            assert sample.metadata["scoring_points"] == [p.strip() for p in upstream[sample.id]["Scoring_Points"]]
            assert sample.input == upstream[sample.id]["question"].strip()


def test_shipped_file_is_what_the_build_script_writes(tmp_path: Path) -> None:
    if not SHARED.is_file():
        pytest.skip("MedThink-Bench source not available")
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[3]
    out = tmp_path / "built.jsonl.gz"
    script = root / "scripts" / "build_medthink_reasoning.py"
    subprocess.run([sys.executable, str(script), "--source", str(SHARED), "--output", str(out)], check=True)
    shipped = root / "src" / "ebmeval" / "builtin_tasks" / "data" / "medthink_reasoning.jsonl.gz"
    assert out.read_bytes() == shipped.read_bytes()
    assert len(gzip.decompress(out.read_bytes()).splitlines()) == 500


def test_task_registration_and_options() -> None:
    assert "medthink/reasoning" in task_registry
    full = medthink_reasoning()
    assert [s.name for s in full.scorers] == [
        "medthink/accuracy",
        "judge/steps-with-reference",
        "judge/steps-with-reference-single",
        "judge/steps-without-reference",
        "text/rouge-l",
        "text/bleu",
        "text/meteor",
        "text/bertscore",
    ]
    assert full.roles == ("judge",)
    bare = medthink_reasoning(judges=False, text_metrics=False, max_tokens=64)
    assert [s.name for s in bare.scorers] == ["medthink/accuracy"] and bare.roles == ()
    assert bare.generate_config.max_tokens == 64


async def test_workflow_keeps_rationale_and_answer() -> None:
    api = ScriptedModel(["Acromegaly, so IGF-1.\nFinal answer: A. IGF1"])
    ctx = SampleContext({"model": Model(api)})
    sample = load_medthink_reasoning()[0]
    result = await ZeroShotReasoning()(sample, ctx)
    assert result.metadata["rationale"] == "Acromegaly, so IGF-1."
    assert result.metadata["final_answer"] == "A. IGF1"
    prompt = api.requests[0][0][0].content
    assert prompt.startswith(sample.input) and "Let's think step by step" in prompt
    assert ZeroShotReasoning().render_prompts(sample)["zero-shot-cot"][0].content == prompt
    assert ctx.steps == ["zero-shot-cot"]
