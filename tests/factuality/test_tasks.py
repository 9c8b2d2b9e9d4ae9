import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from ebmeval.builtin_tasks.factuality import (
    load_evidence_inference,
    load_m3_claims,
    load_m3_conclusions,
    validation_results,
)
from ebmeval.builtin_tasks.mcq_file import file_digest
from ebmeval.factuality import assessments_from_run, label_claim, pairs_from_run
from ebmeval.models import ChatMessage, GenerateConfig, Model, get_model
from ebmeval.models._model import DegenerateReplyError
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.runner import RunConfig, run
from ebmeval.store import RunStore
from ebmeval.tasks import SampleContext, create_task


def test_shipped_data_loads_with_gold_labels() -> None:
    claims = load_m3_claims("target")
    assert len(claims) == 381 and claims[0].metadata["gold_direction"] == "negative"
    assert sum(1 for s in claims if s.metadata["gold_direction"] is None) == 23
    assert len(load_m3_claims("source")) == 1911
    ei = load_evidence_inference()
    assert len(ei) == 121 and {s.metadata["gold_direction"] for s in ei} == {"positive", "negative", "no effect"}
    reviews = load_m3_conclusions()
    assert len(reviews) == 230 and reviews[0].documents


def test_order_seed_shuffles_reproducibly() -> None:
    a = [s.id for s in create_task("factuality/m3-claims", order_seed=1).dataset]
    b = [s.id for s in create_task("factuality/m3-claims", order_seed=1).dataset]
    c = [s.id for s in create_task("factuality/m3-claims", order_seed=None).dataset]
    assert a == b and a != c and sorted(a) == sorted(c)


def gold_echo(messages: Sequence[ChatMessage], config: GenerateConfig) -> str:
    # Answers "positive"/"moderate" for everything: right only where the gold says so.
    return '{"direction": "positive", "modality": "moderate", "reason": "r"}'


def test_labelling_run_and_validation(tmp_path: Path) -> None:
    task = create_task("factuality/m3-claims", order_seed=None)
    store = str(tmp_path / "s.sqlite")
    result = run(
        RunConfig(shuffle=False, task="factuality/m3-claims", limit=6, store=store, cache=False),
        task=task,
        models={"model": Model(ScriptedModel(gold_echo))},
    )
    gold = [s.metadata for s in task.dataset[:6]]
    by_field = {r.field: r for r in validation_results(store, result.run.run_id)}
    expected = sum(1 for g in gold if g["gold_direction"] == "positive") / sum(1 for g in gold if g["gold_direction"])
    assert by_field["direction"].accuracy == pytest.approx(expected)
    assert by_field["modality"].n == 6 and by_field["modality"].unparsed == 0


def test_the_runs_settings_and_its_answer_step_reach_the_claim_labeller(tmp_path: Path) -> None:
    """Before: the labels went out as a judge's question, so ``--max-tokens``/``--temperature`` and
    ``steps: {answer: …}`` were recorded in the run and never sent (always greedy, 160 tokens)."""

    def sent(**settings: object) -> list[tuple[float | None, int | None]]:
        api = ScriptedModel(gold_echo)
        model = Model(api, config=create_task("factuality/m3-claims").generate_config)  # as the command line makes it
        store = str(tmp_path / "s.sqlite")
        run(
            RunConfig.model_validate({"task": "factuality/m3-claims", "limit": 2, "store": store, **settings}),
            models={"model": model},
        )
        return [(c.temperature, c.max_tokens) for _m, c in api.requests]

    assert sent(cache=False) == [(0.0, 160)] * 2
    assert sent(generate={"temperature": 0.3, "max_tokens": 200}) == [(0.3, 200)] * 2
    assert sent(steps={"answer": {"max_tokens": 90}}) == [(0.0, 90)] * 2


def conclusion_and_judge(messages: Sequence[ChatMessage], config: GenerateConfig) -> str:
    prompt = messages[0].content
    if prompt.startswith("Below are findings"):
        return "There is insufficient evidence that H. pylori causes glaucoma."
    if prompt.startswith("You compare"):
        return json.dumps(
            {f: "no" if f == "outcome" else "yes" for f in ("population", "intervention", "outcome")}
            | {"grammar": "yes", "lexical": "yes", "non_redundancy": "yes"}
        )
    return '{"direction": "no effect", "modality": "no evidence"}'


def test_conclusion_run_is_judged_and_analysable(tmp_path: Path) -> None:
    store = str(tmp_path / "s.sqlite")
    model = Model(ScriptedModel(conclusion_and_judge))
    config = RunConfig(shuffle=False, task="factuality/m3-conclusions", limit=3, store=store, cache=False)
    result = run(config, task=create_task("factuality/m3-conclusions"), models={"model": model, "judge": model})
    run_id = result.run.run_id
    pairs = pairs_from_run(store, run_id)
    assert len(pairs) == 3 and pairs[0].generated.startswith("There is insufficient")
    (_sample, generation), *_ = RunStore(store).generations(run_id)
    assert generation.metadata["prompt"] == "factuality/conclusion@v1"
    assessments = assessments_from_run(store, run_id)
    assert len(assessments) == 3
    first = assessments[0]
    assert first.labels.outcome is False and first.labels.direction is None
    assert first.target_modality == "no evidence" and first.generated_direction is None
    # Resuming the finished run makes no model call.
    again = ScriptedModel([])
    run(config, task=create_task("factuality/m3-conclusions"), models={"model": Model(again), "judge": Model(again)})
    assert again.requests == []


def write_summaries(folder: Path) -> dict[str, str]:
    """Two summaries generated elsewhere, their targets and two annotators' labels; the task's file options."""
    (folder / "generated.csv").write_text("ReviewID,Generated\nr1,Statins lower mortality.\nr2,Aspirin helps.\n")
    (folder / "targets.csv").write_text("ReviewID,Target\nr1,Statins reduce mortality.\nr2,Aspirin has no effect.\n")
    categories = ("population", "intervention", "outcome", "direction", "modality", "grammar", "lexical")
    header = ",".join(f"{c}__{who}" for who in ("main", "b") for c in categories)
    rows = [f"ReviewID,{header}", "r1," + ",".join("1" * 14), "r2," + ",".join("1110111" + "0110111")]
    (folder / "labels.csv").write_text("\n".join(rows) + "\n")
    return {name: str(folder / f"{name}.csv") for name in ("generated", "targets", "labels")}


def test_the_factuality_scorers_are_registered_and_their_tasks_build_them_through_the_registration(
    tmp_path: Path,
) -> None:
    """Before: unregistered, so missing from ``list scorers`` and the glossary, with identities scraped."""
    from ebmeval.tasks import create_scorer, is_binary_metric, scorer_spec, with_scorer_args
    from ebmeval.tasks._identity import declared

    files = write_summaries(tmp_path)
    summaries = create_task("factuality/summaries", **files, judge=False)
    scorers = {s.name: s for s in (*create_task("factuality/m3-claims").scorers, *summaries.scorers)}
    assert set(scorers) == {"factuality/labels", "factuality/copying", "human/factuality"}
    assert all(declared(s) is not None for s in scorers.values())
    spec = {"version": "1", "args": {}, "templates": [], "roles": {}}  # as runs made before recorded them
    assert scorer_spec(scorers["factuality/labels"], {}) == {"name": "factuality/labels", **spec}
    assert scorer_spec(scorers["factuality/copying"], {}) == {"name": "factuality/copying", **spec}
    digest = file_digest(files["labels"])
    human = {**spec, "name": "human/factuality", "args": {"annotator": "main", "labels_digest": digest}}
    assert scorer_spec(scorers["human/factuality"], {}) == human
    assert scorer_spec(create_scorer("human/factuality", labels=files["labels"], annotator="main"), {}) == human
    assert is_binary_metric("factuality/labels", "direction") and is_binary_metric("human/factuality", "pico")
    assert not is_binary_metric("factuality/copying", "rouge1_target")
    rebuilt = with_scorer_args(summaries, {"human/factuality": {"annotator": "b"}}).scorers
    assert scorer_spec(rebuilt[-1], {})["args"] == {"annotator": "b", "labels_digest": digest}


def test_human_labels_are_one_score_set_whatever_path_names_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the spec held ``labels`` as given, so three spellings of one file were three score sets."""
    from ebmeval.tasks import create_scorer, scorer_spec

    files = write_summaries(tmp_path)
    monkeypatch.chdir(tmp_path)
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "labels.csv").write_bytes(Path(files["labels"]).read_bytes())
    given = ["labels.csv", "./labels.csv", files["labels"], str(copy / "labels.csv")]
    specs = [scorer_spec(create_scorer("human/factuality", labels=path), {}) for path in given]
    assert all(spec == specs[0] for spec in specs)
    Path(files["labels"]).write_text(Path(files["labels"]).read_text().replace("r2,1", "r2,0"))
    assert scorer_spec(create_scorer("human/factuality", labels="labels.csv"), {}) != specs[0]


def test_the_summaries_task_version_holds_the_sha256_of_each_file(tmp_path: Path) -> None:
    """The digests ``factuality/summaries`` has always recorded: 16 hex digits of each file's bytes."""
    import hashlib

    files = write_summaries(tmp_path)
    digests = [hashlib.sha256(Path(files[name]).read_bytes()).hexdigest()[:16] for name in files]
    assert create_task("factuality/summaries", **files, judge=False).version == "2+" + "+".join(digests)


@pytest.mark.local_model
async def test_claim_labelling_with_the_small_local_model() -> None:
    model = get_model("local:smollm2")
    try:
        ctx = SampleContext({"model": model})
        config = GenerateConfig(max_tokens=24, temperature=0.0)
        try:
            label = await label_claim(ctx, "s", "Statins may reduce mortality.", config=config, role="model")
        except DegenerateReplyError as exc:  # a verdict cut at its budget is refused, never read in part
            assert "stopped at the token limit" in str(exc)
            return
    finally:
        await model.aclose()
    assert label.raw and all(isinstance(r, str) for r in label.raw)
    assert label.parsed == (label.modality is not None)
