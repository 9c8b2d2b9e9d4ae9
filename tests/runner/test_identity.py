"""What a run's and a score's identity hold, and what they leave out."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from ebmeval._util.errors import ConfigError, UsageError
from ebmeval._util.options import OptionText
from ebmeval.models import ChatMessage, GenerateConfig, Model, ResponseCache
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.runner import RunConfig, rescore, run, run_identity, summarize
from ebmeval.store import RunStore
from ebmeval.tasks import Document, Generation, Sample, SampleContext, Score, create_scorer, create_task, scorer
from tests.helpers.toy import scripted_model, toy_task

FIXTURES = Path(__file__).parent.parent / "fixtures"


def config(tmp_path: Path, **fields: object) -> RunConfig:
    return RunConfig.model_validate({"task": "toy", "store": str(tmp_path / "runs.sqlite"), "cache": False, **fields})


def seeds_sent(model: Model) -> list[int | None]:
    return [settings.seed for _messages, settings in model.api.requests]  # type: ignore[attr-defined]


def test_every_request_carries_a_seed_from_run_seed_epoch_and_sample(tmp_path: Path) -> None:
    model = scripted_model()
    run(config(tmp_path, epochs=3), task=toy_task(2), models={"model": model})
    seeds = seeds_sent(model)
    assert None not in seeds and len(set(seeds)) == 6  # 2 samples x 3 epochs, both steps of a sample alike
    other = scripted_model()
    run(config(tmp_path, epochs=3, seed=1), task=toy_task(2), models={"model": other})
    assert set(seeds_sent(other)).isdisjoint(seeds)


def test_the_runs_generation_settings_are_another_run_when_the_model_passed_in_does_not_carry_them(
    tmp_path: Path,
) -> None:
    """Before: ``run(config, models=…)`` with other ``generate`` settings resumed the first run (0 requests)."""
    first = scripted_model()
    greedy = run(config(tmp_path), task=toy_task(2), models={"model": first})
    warmer = scripted_model()
    sampled = run(config(tmp_path, generate={"temperature": 0.7}), task=toy_task(2), models={"model": warmer})
    assert sampled.run.run_id != greedy.run.run_id
    assert warmer.api.requests and {s.temperature for _m, s in warmer.api.requests} == {0.7}  # type: ignore[attr-defined]
    # a model that carries the run's settings (as the command line builds it) keeps the identity it always had
    carrying = Model(ScriptedModel(lambda _m, _s: "A"), config=GenerateConfig(temperature=0.7))
    same = config(tmp_path, generate={"temperature": 0.7})
    assert "generate" not in run_identity(same, toy_task(2), {"model": carrying})
    assert run_identity(same, toy_task(2), {"model": scripted_model()})["generate"]["temperature"] == 0.7


def _sampling_model(cache: ResponseCache, temperature: float) -> Model:
    def reply(messages: Sequence[ChatMessage], settings: GenerateConfig) -> str:
        return "A" if "Final letter" in messages[-1].content else f"draft seeded {settings.seed}"

    return Model(ScriptedModel(reply), cache=cache, config=GenerateConfig(temperature=temperature))


def test_epochs_at_a_temperature_are_independent_samples_and_not_served_from_cache(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    model = _sampling_model(cache, 0.9)
    run(config(tmp_path, epochs=3), task=toy_task(2), models={"model": model})
    assert model.stats.cache_hits == 0 and len(model.api.requests) == 12  # type: ignore[attr-defined]
    store = RunStore(tmp_path / "runs.sqlite")
    (run_id,) = [r.run_id for r in store.list_runs()]
    drafts = {store.steps(run_id, "q0", e)[0][1]["output"]["text"] for e in range(3)}
    assert len(drafts) == 3


def test_greedy_epochs_share_the_cache_and_the_summary_says_so(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    model = _sampling_model(cache, 0)
    greedy = config(tmp_path, epochs=3, concurrency=1)
    result = run(greedy, task=toy_task(2), models={"model": model})
    assert model.stats.calls == 12 and model.stats.cache_hits == 8
    notes = summarize(RunStore(tmp_path / "runs.sqlite"), result.run.run_id).notes
    assert notes and "temperature 0" in notes[0]


def test_transport_options_are_not_identity_but_shuffle_and_model_are(tmp_path: Path) -> None:
    task = toy_task(2)
    first = run(config(tmp_path), task=task, models={"model": scripted_model()})
    again = run(
        config(tmp_path, concurrency=3, limit=2, model_args={"timeout": 5, "max_retries": 1}),
        task=task,
        models={"model": scripted_model()},
    )
    assert again.run.run_id == first.run.run_id and again.resumed
    assert run(config(tmp_path, shuffle=False), task=task, models={"model": scripted_model()}).run.run_id != (
        first.run.run_id
    )
    renamed = Model(ScriptedModel(lambda m, c: "A", name="scripted/other"))
    assert run(config(tmp_path), task=task, models={"model": renamed}).run.run_id != first.run.run_id


def test_an_interrupted_rescore_resumed_with_another_judge_never_reuses_the_first_judges_steps(
    tmp_path: Path,
) -> None:
    from tests.runner.test_rescore_judges import VerdictJudge

    result = run(config(tmp_path), task=toy_task(4), models={"model": scripted_model()})
    store = str(tmp_path / "runs.sqlite")
    calls = 0

    def flaky_yes(_messages: Sequence[ChatMessage], _settings: GenerateConfig) -> str:
        nonlocal calls
        calls += 1
        if calls > 3:
            raise UsageError("judge A went away")
        return "Verdict: YES"

    judge_a = Model(ScriptedModel(flaky_yes, name="scripted/judge-a"))
    first = rescore(store, result.run.run_id, [VerdictJudge()], {"judge": judge_a}, concurrency=1)
    assert first.errors > 0
    judge_b = Model(ScriptedModel(lambda m, c: "Verdict: NO", name="scripted/judge-b"))
    rescore(store, result.run.run_id, [VerdictJudge()], {"judge": judge_b}, concurrency=1)
    assert len(judge_b.api.requests) == 4 * 2  # type: ignore[attr-defined]  # every step asked again
    by_b = [s.values["yes"] for *_key, s in RunStore(store).scores(result.run.run_id, "judge/verdicts[judge=judge-b]")]
    assert by_b == [0.0] * 4


def test_limit_reports_the_subset_asked_for_and_an_unknown_by_key_is_an_error(tmp_path: Path) -> None:
    result = run(config(tmp_path), task=toy_task(6), models={"model": scripted_model()})
    store = RunStore(tmp_path / "runs.sqlite")
    subset = run(config(tmp_path, limit=2), task=toy_task(6), models={"model": scripted_model()})
    assert subset.run.run_id == result.run.run_id and subset.sample_ids is not None
    summary = summarize(store, result.run.run_id, samples=subset.sample_ids)
    assert summary.generations == 2 and summary.metrics[0].n == 2
    with pytest.raises(UsageError, match="no sample .* has the metadata key 'nope'"):
        summarize(store, result.run.run_id, by="nope")


def test_command_line_options_are_read_by_their_declared_type() -> None:
    task = create_task("pubmedqa", system_prompt=OptionText("# Role: a careful reader"))
    assert task.workflow.system_prompt == "# Role: a careful reader"  # type: ignore[attr-defined]
    assert create_task("pubmedqa", system_prompt=OptionText("no")).workflow.system_prompt == "no"  # type: ignore[attr-defined]
    brief = create_task("pubmedqa", system_prompt=OptionText("Note: be brief"))
    assert brief.workflow.system_prompt == "Note: be brief"  # type: ignore[attr-defined]
    assert create_task("pubmedqa", thinking=OptionText("no")).workflow.thinking is False  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match=r"task_args.strategy.*expected 'direct' \| 'cot' \| 'cot-refine', got '\[x'"):
        create_task("pubmedqa", strategy=OptionText("[x"))
    with pytest.raises(ConfigError, match="task_args.k"):
        create_task("mirage/medqa", k=True)
    differs = create_task("pubmedqa", system_prompt=OptionText("# Role: x")).args
    assert differs["system_prompt"] == "# Role: x" and create_task("pubmedqa").args["system_prompt"] is None


def test_the_retrieval_index_contents_and_parameters_are_part_of_the_task_version(tmp_path: Path) -> None:
    from ebmeval.rag import build_index

    docs = [Document(id=f"d{i}", text=f"aspirin and outcome {i} in trial {i}") for i in range(20)]
    build_index(docs, tmp_path / "a", "bm25")
    build_index(docs[:-1], tmp_path / "b", "bm25")
    build_index(docs, tmp_path / "c", "bm25", k1=0.9)
    versions = {create_task("mirage/medqa", retrieval=str(tmp_path / name)).version for name in ("a", "b", "c")}
    assert len(versions) == 3


def test_a_schema_1_store_is_upgraded_in_place_with_the_same_metrics(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    shutil.copy(FIXTURES / "store_v1.sqlite", path)
    store = RunStore(path)
    pubmedqa = summarize(store, "1f3de71e0bf5")
    assert [(m.scorer, m.metric, m.value, m.n) for m in pubmedqa.metrics] == [
        ("accuracy", "accuracy", pytest.approx(4 / 6), 6)
    ]
    care = {(m.metric): (m.value, m.n) for m in summarize(store, "0dbe47b1447f").metrics if m.group is None}
    assert care == {
        "exact_match": (0.0, 4),
        "f1": (pytest.approx(0.5166666666666666), 4),
        "hamming": (pytest.approx(0.35416666666666663), 4),
        "lca": (0.25, 4),
    }
    assert [s.spec["recorded_by"] for s in store.score_sets("1f3de71e0bf5")] == [
        "schema 1, which kept no scorer settings or judge identity"
    ]
    store.close()
    assert RunStore(path).score_sets("1f3de71e0bf5")[0].label == "accuracy"  # opening again changes nothing


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("mirage/medqa", {}),  # retrieval through the layer every task takes
        ("synthesis", {"workflow": "standard-rag", "items": ["m3-26258610"], "text_metrics": False}),  # its own option
    ],
)
def test_an_index_is_one_run_by_its_content_whatever_path_names_it(
    name: str, args: dict[str, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ebmeval.builtin_tasks.synthesis  # noqa: F401  (registers the task)
    from ebmeval._util.hashing import stable_hash
    from ebmeval.rag import build_index
    from ebmeval.runner import run_identity

    docs = [Document(id=f"d{i}", text=f"aspirin and outcome {i} in trial {i}") for i in range(20)]
    build_index(docs, tmp_path / "idx", "bm25")
    shutil.copytree(tmp_path / "idx", tmp_path / "copy")
    build_index(docs[:-1], tmp_path / "other", "bm25")
    monkeypatch.chdir(tmp_path)
    models = {"model": scripted_model(), "judge": scripted_model()}

    def identity(path: str) -> str:
        given = {**args, "retrieval": path}
        task = create_task(name, **given)
        return stable_hash(run_identity(config(tmp_path, task=name, task_args=given), task, models))

    same = {identity(p) for p in ("idx", "idx/", str(tmp_path / "idx"), "copy")}
    assert len(same) == 1 and identity("other") not in same


def test_a_synthesis_input_file_is_one_run_by_its_content_whatever_path_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the path named the run, so a file changed in place resumed the run made from its old content."""
    import ebmeval.builtin_tasks.synthesis  # noqa: F401  (registers the task)
    from ebmeval._util.hashing import stable_hash
    from ebmeval.runner import run_identity

    ratings = tmp_path / "ratings.jsonl"
    ratings.write_text('{"id": "m3-26258610", "feasibility": 5}\n')
    shutil.copy(ratings, tmp_path / "copy.jsonl")
    monkeypatch.chdir(tmp_path)
    models = {"model": scripted_model(), "judge": scripted_model()}

    def identity(path: str) -> str:
        given = {"items": ["m3-26258610"], "text_metrics": False, "feasibility_ratings": path}
        task = create_task("synthesis", **given)
        return stable_hash(run_identity(config(tmp_path, task="synthesis", task_args=given), task, models))

    same = {identity(p) for p in ("ratings.jsonl", "./ratings.jsonl", str(ratings), "copy.jsonl")}
    assert len(same) == 1
    ratings.write_text('{"id": "m3-26258610", "feasibility": 4.5}\n')
    assert identity("ratings.jsonl") not in same


def synthesis_identity(tmp_path: Path, **args: object) -> str:
    """The run id of the synthesis task over one item built with ``args``."""
    import ebmeval.builtin_tasks.synthesis  # noqa: F401  (registers the task)
    from ebmeval._util.hashing import stable_hash
    from ebmeval.runner import run_identity

    given = {"items": ["m3-26258610"], "text_metrics": False, **args}
    task = create_task("synthesis", **given)
    models = {"model": scripted_model(), "judge": scripted_model()}
    return stable_hash(run_identity(config(tmp_path, task="synthesis", task_args=given), task, models))[:12]


def test_a_negation_store_is_one_run_whatever_spelling_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the store as given named the run: ``neg.sqlite``, ``./neg.sqlite`` and its absolute path were three."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EBMEVAL_CACHE_DIR", str(tmp_path / "cache"))

    def identity(**args: object) -> str:
        return synthesis_identity(tmp_path, workflow="negated-rag", **args)

    spellings = ("neg.sqlite", "./neg.sqlite", str(tmp_path / "neg.sqlite"), "cache/../neg.sqlite")
    assert len({identity(negation_store=path) for path in spellings}) == 1
    default = identity()
    assert identity(negation_store="cache/negations.sqlite") == default  # the default store, named
    assert identity(negation_store=str(tmp_path / "cache" / "negations.sqlite")) == default
    assert identity(negation_store="other.sqlite") not in {default, identity(negation_store="neg.sqlite")}
    task = create_task("synthesis", workflow="negated-rag", negation_store="./neg.sqlite")
    assert task.args["negation_store"] == str(tmp_path / "neg.sqlite")
    assert task.workflow.negations.path == tmp_path / "neg.sqlite"  # type: ignore[attr-defined]
    assert (
        create_task("synthesis", workflow="negated-rag", negation_store="cache/negations.sqlite").args["negation_store"]
        is None
    )


def test_a_negation_store_with_a_workflow_that_reads_no_negations_is_refused() -> None:
    """Before: ``golden-rag`` took ``negation_store``, did not read it, and was another run for each store named."""
    with pytest.raises(ConfigError, match="negation_store.*only workflow 'negated-rag' reads negations"):
        create_task("synthesis", workflow="golden-rag", negation_store="neg.sqlite")


def test_a_new_version_of_the_rerankers_or_conclusion_writers_template_is_another_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: neither prompt entered any identity, so a reworded prompt resumed the runs of the old one."""
    import dataclasses

    import ebmeval.builtin_tasks.factuality as factuality
    import ebmeval.synthesis._workflows as synthesis
    import ebmeval.workflows._retrieval as retrieval

    reranking = synthesis_identity(tmp_path, workflow="standard-rag")
    not_reranking = synthesis_identity(tmp_path, workflow="standard-rag", rerank_top_n=0)
    conclusions = create_task("factuality/m3-conclusions").version
    assert conclusions == "1-factuality/conclusion@v1"
    assert retrieval.reranker_identity("llm") == "rerank/llm-pointwise@v1"
    bumped = dataclasses.replace(synthesis.RERANK_POINTWISE, version=2)
    monkeypatch.setattr(synthesis, "RERANK_POINTWISE", bumped)
    monkeypatch.setattr(retrieval, "RERANK_POINTWISE", bumped)
    monkeypatch.setattr(factuality, "CONCLUSION", dataclasses.replace(factuality.CONCLUSION, version=2))
    assert synthesis_identity(tmp_path, workflow="standard-rag") != reranking
    assert synthesis_identity(tmp_path, workflow="standard-rag", rerank_top_n=0) == not_reranking
    assert retrieval.reranker_identity("llm") == "rerank/llm-pointwise@v2"
    assert create_task("factuality/m3-conclusions").version != conclusions


def test_a_new_version_of_the_negation_check_is_another_negated_rag_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the check's prompt entered no identity, so a reworded check resumed the old run's verdicts."""
    import dataclasses

    import ebmeval.synthesis._workflows as synthesis

    negated = synthesis_identity(tmp_path, workflow="negated-rag")
    golden = synthesis_identity(tmp_path, workflow="golden-rag")
    check = synthesis.NEGATION_CHECK
    task = create_task("synthesis", items=["m3-26258610"], text_metrics=False, workflow="negated-rag")
    assert task.metadata["prompts"][check.name] == check.version
    monkeypatch.setattr(synthesis, "NEGATION_CHECK", dataclasses.replace(check, version=check.version + 1))
    assert synthesis_identity(tmp_path, workflow="negated-rag") != negated
    assert synthesis_identity(tmp_path, workflow="golden-rag") == golden


def test_synthesis_options_the_workflow_does_not_use_leave_the_run_id_and_are_said_ignored(tmp_path: Path) -> None:
    import ebmeval.builtin_tasks.synthesis  # noqa: F401  (registers the task)
    from ebmeval._util.hashing import stable_hash
    from ebmeval.runner import run_identity

    models = {"model": scripted_model(), "judge": scripted_model()}
    items = {"items": ["m3-26258610"], "text_metrics": False}

    def identity(**args: object) -> str:
        task = create_task("synthesis", **items, **args)
        cfg = config(tmp_path, task="synthesis", task_args={**items, **args})
        return stable_hash(run_identity(cfg, task, models))

    plain = identity()
    assert identity(max_iterations=7, depth=3, rerank_top_n=2) == plain
    assert identity(workflow="standard-rag", depth=3) != identity(workflow="standard-rag")
    reply = scripted_model(lambda _m, _c: "Conclusion: no effect. Score: 3")
    task = create_task("synthesis", **items, max_iterations=7)
    cfg = config(tmp_path, task="synthesis", task_args={**items, "max_iterations": 7})
    result = run(cfg, task=task, models={"model": reply, "judge": reply})
    notes = summarize(RunStore(tmp_path / "runs.sqlite"), result.run.run_id).notes
    assert (
        "task options max_iterations do not apply to workflow 'golden-rag': ignored (not part of the run id)" in notes
    )


class _ThresholdJudge:
    """Scores 1 when the judge's number reaches a threshold it keeps to itself (no public attribute)."""

    name = "test/threshold-judge"

    def __init__(self, threshold: float, template: str) -> None:
        self._threshold = threshold
        self._template = template

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        reply = await ctx.generate(self.name, self._template.format(output=generation.output), role="judge")
        return Score(values={"passed": float(float(reply.text) >= self._threshold)})


@scorer("test/threshold-judge", roles=["judge"], non_identity=["timeout"])
def _threshold_judge(threshold: float = 0.5, template: str = "Rate {output}", timeout: float = 30.0) -> _ThresholdJudge:
    return _ThresholdJudge(threshold, template)


def test_a_factorys_arguments_are_its_score_sets_identity_and_those_declared_non_identity_are_not(
    tmp_path: Path,
) -> None:
    result = run(config(tmp_path), task=toy_task(2), models={"model": scripted_model()})
    store_path = str(tmp_path / "runs.sqlite")
    judge = {"judge": Model(ScriptedModel(lambda m, c: "0.7", name="scripted/rater"))}

    def rescored(**args: object) -> int:
        return rescore(store_path, result.run.run_id, [create_scorer("test/threshold-judge", **args)], judge).resumed

    assert rescored(threshold=0.5) == 0
    assert rescored(threshold=0.9) == 0  # another threshold: a new score set, scored afresh
    assert rescored(threshold=0.9) == 2 and rescored(threshold=0.9, timeout=5.0) == 2  # same identity: resumed
    assert rescored(threshold=0.9, template="Grade {output}") == 0
    assert rescored() == 2  # the defaults, given or not, are the first score set
    store = RunStore(store_path)
    judged = {
        s.label: s.spec["args"] for s in store.score_sets(result.run.run_id) if s.spec["name"] == "test/threshold-judge"
    }
    assert sorted(judged.values(), key=len) == [
        {},
        {"threshold": 0.9},
        {"template": "Grade {output}", "threshold": 0.9},
    ]
    passed = {
        str(args): [s.values["passed"] for *_k, s in store.scores(result.run.run_id, label)]
        for label, args in judged.items()
    }
    assert passed["{}"] == [1.0, 1.0] and passed["{'threshold': 0.9}"] == [0.0, 0.0]


def test_a_non_identity_argument_the_factory_does_not_take_is_refused_at_registration() -> None:
    with pytest.raises(ValueError, match=r"non_identity names \['timeout'\]"):
        scorer("test/unregistered", non_identity=["timeout"])(lambda: _ThresholdJudge(0.5, ""))


def test_binary_metrics_are_declared_on_the_scorers_registration() -> None:
    from ebmeval.tasks import is_binary_metric

    assert is_binary_metric("accuracy", "accuracy") and is_binary_metric("judge/factuality", "population")
    assert not is_binary_metric("test/threshold-judge", "passed") and not is_binary_metric("nope", "accuracy")


@scorer("test/with-reader")
def _with_reader(read: Callable[[str], float] = float) -> _ThresholdJudge:
    return _ThresholdJudge(0.5, "Rate {output}")


def test_an_argument_that_is_not_a_setting_is_recorded_when_it_is_not_the_default() -> None:
    from ebmeval.tasks._identity import declared

    assert declared(_with_reader(read=len)).arguments == {"read": len}  # type: ignore[union-attr]
    assert declared(_with_reader(read=float)).arguments == {}  # type: ignore[union-attr]
