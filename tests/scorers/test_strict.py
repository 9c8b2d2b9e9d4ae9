"""The strict reading (``answer_format=strict``): one final ``ANSWER:`` line, the lenient reading beside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ebmeval.cli._app import app
from ebmeval.scorers import accuracy, multi_answer, parse_strict
from ebmeval.tasks import Generation, Sample, create_task, scorer_spec
from ebmeval.workflows import qa_workflow

OPTIONS = {"A": "Lisinopril", "B": "Metoprolol", "C": "Amlodipine", "D": "Hydrochlorothiazide"}


@pytest.mark.parametrize(
    ("reply", "multi", "expected"),
    [
        ("ANSWER: B", False, "B"),
        ("answer: c", False, "C"),
        ("The patient is Black, so a calcium channel blocker.\n\nANSWER : C.", False, "C"),
        ("<think>B or C?</think>\nANSWER: C", False, "C"),
        ("ANSWER: A, C", True, ["A", "C"]),
        ("ANSWER: A,C,D", True, ["A", "C", "D"]),
        ("ANSWER: C A", True, ["A", "C"]),
    ],
)
def test_the_final_answer_line_is_read(reply: str, multi: bool, expected: object) -> None:
    parsed = parse_strict(reply, OPTIONS, multi=multi)
    assert (parsed.value, parsed.method) == (expected, "strict")


@pytest.mark.parametrize(
    ("reply", "multi", "reason"),
    [
        ("The answer is B.", False, "strict: no final ANSWER line"),
        ("B", False, "strict: no final ANSWER line"),
        ("ANSWER: B\nI hope this helps.", False, "strict: no final ANSWER line"),
        ("**ANSWER: B**", False, "strict: no final ANSWER line"),
        ('{"answer": "B"}', False, "strict: no final ANSWER line"),
        ("ANSWER: B or C", False, "strict: no final ANSWER line"),
        ("ANSWER: Metoprolol", False, "strict: no final ANSWER line"),
        ("ANSWER: E", False, "not-an-option: E"),
        ("ANSWER: B, C", False, "several-letters"),
        ("", True, "strict: no final ANSWER line"),
    ],
)
def test_anything_else_is_unparsed(reply: str, multi: bool, reason: str) -> None:
    parsed = parse_strict(reply, OPTIONS, multi=multi)
    assert not parsed.parsed and parsed.method == reason


def test_the_strict_prompt_asks_for_the_line_and_the_lenient_prompt_is_unchanged() -> None:
    sample = Sample(id="1", input="Which drug?", target="C", choices=OPTIONS)
    for strategy in ("direct", "cot", "cot-refine"):
        lenient, strict = qa_workflow(strategy), qa_workflow(strategy, strict=True)
        for messages in strict.render_prompts(sample).values():
            assert 'final line of exactly the form "ANSWER: X"' in messages[-1].content
            assert "Answer: <answer>" not in messages[-1].content  # one format only
        for messages in lenient.render_prompts(sample).values():
            assert "ANSWER" not in messages[-1].content
        assert lenient.version != strict.version
        assert [t.id for t in lenient.templates] == [t.id for t in type(lenient).templates]


async def test_the_scorer_records_the_lenient_reading_beside_the_strict_one() -> None:
    sample = Sample(id="1", input="Which drugs?", target=["A", "C"], choices=OPTIONS)
    task = create_task("caremedeval", answer_format="strict")
    scorer = task.scorers[0]
    for reply, strict_emr, lenient_emr in [
        ("Reasoning.\nANSWER: A, C", 1.0, 1.0),
        ("The answer is A and C.", 0.0, 1.0),
        ("ANSWER: A", 0.0, 0.0),
    ]:
        generation = Generation(sample_id="1", output=reply, answer=task.parser(reply, sample))
        score = await scorer(sample, generation, None)  # type: ignore[arg-type]
        assert (score.values["exact_match"], score.values["exact_match_lenient"]) == (strict_emr, lenient_emr)
        assert score.metadata["unparsed"] == (strict_emr == 0.0 and lenient_emr == 1.0)


def test_scorers_without_the_lenient_reading_keep_their_spec() -> None:
    assert scorer_spec(multi_answer(), {})["args"] == {"lca_credit": [1.0, 0.5, 0.25], "unparsed": "zero"}
    assert scorer_spec(accuracy(), {})["args"] == {"unparsed": "zero"}
    assert scorer_spec(multi_answer(also_lenient=True), {})["args"]["also_lenient"] is True


def test_logprob_answers_cannot_be_read_strictly() -> None:
    from ebmeval._util.errors import ConfigError

    with pytest.raises(ConfigError, match="answer_format"):
        create_task("mirage/medqa", answer_format="strict", answer_from="logprobs")
    with pytest.raises(ConfigError, match="answer_format"):
        create_task("mirage/medqa", answer_format="loose")


def test_score_shows_strict_and_lenient_side_by_side(tmp_path: Path) -> None:
    samples = create_task("caremedeval").dataset[:3]
    golds = [", ".join(sample.targets) for sample in samples]
    replies = [f"Reasoning.\nANSWER: {golds[0]}", f"The answer is {golds[1]}.", "I cannot tell."]
    path = tmp_path / "predictions.jsonl"
    lines = [json.dumps({"id": sample.id, "output": reply}) for sample, reply in zip(samples, replies, strict=True)]
    path.write_text("\n".join(lines) + "\n")
    args = ["score", "caremedeval", "--predictions", str(path), "--task-arg", "answer_format=strict"]
    result = CliRunner().invoke(app, [*args, "--task-arg", "unparsed=skip", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    metrics = {m["metric"]: m for m in report["metrics"]}
    assert report["unparsed"] == 2
    assert (metrics["exact_match"]["value"], metrics["exact_match"]["missing"]) == (1.0, 2)
    assert (metrics["exact_match_lenient"]["value"], metrics["exact_match_lenient"]["missing"]) == (1.0, 1)
