from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ebmeval.builtin_tasks.synthesis  # noqa: F401  (registers the task)
from ebmeval._util.errors import ConfigError, ModelError, UnknownNameError
from ebmeval.cli._app import app
from ebmeval.judges import panel_agreement
from ebmeval.models import ChatMessage, GenerateConfig, Model
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.report import collect
from ebmeval.runner import RunConfig, run, summarize
from ebmeval.store import RunStore
from ebmeval.synthesis import export_feasibility, synthesis_contrasts, synthesis_table
from ebmeval.tasks import create_task

from .helpers import reply_by_prompt

Responder = Callable[[Sequence[ChatMessage], GenerateConfig], str]

ITEMS = ["m3-26258610", "m3-26286384", "m3-20110127"]


def models(api: ScriptedModel, **extra: ScriptedModel) -> dict[str, Model]:
    model = Model(api)
    found = {"model": model, "judge": model, "evaluator": model, "negator": model}
    found.update({k: Model(v) for k, v in extra.items()})
    return found


def config(store: Path, workflow: str, **args: object) -> RunConfig:
    return RunConfig(
        task="synthesis",
        task_args={"source": "m3", "workflow": workflow, "items": ITEMS, "text_metrics": False, **args},
        store=str(store),
        cache=False,
    )


def test_task_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="needs study abstracts"):
        create_task("synthesis", source="medmeta", workflow="golden-rag")
    with pytest.raises(UnknownNameError, match="m3-nope"):
        create_task("synthesis", items=["m3-nope"])
    task = create_task("synthesis", source="medmeta", workflow="parametric-cot", text_metrics=False)
    assert len(task.dataset) == 20 and set(task.roles) == {"judge", "evaluator"}
    with pytest.raises(ConfigError, match="panel judges are roles"):
        create_task("synthesis", source="ms2", workflow="negated-rag", panel=["judge", "local:smollm2"])
    negated = create_task("synthesis", source="ms2", workflow="negated-rag", panel=["judge", "judge2", "judge3"])
    assert set(negated.roles) == {"judge", "judge2", "judge3", "negator", "negation_checker"}
    # one fixed negator for every model compared; each negation is checked by the negator's model unless given
    assert negated.role_defaults == {"negator": "local", "negation_checker": "role:negator"}
    assert [s.name for s in negated.scorers] == [
        "judge/rubric-0-5",
        "judge/rubric-panel",
        "text/rouge-l",
        "text/bertscore",
    ]


def test_medmeta_abstracts_are_joined_by_pmid_from_a_user_file(tmp_path: Path) -> None:
    corpus = tmp_path / "abstracts.jsonl"
    corpus.write_text(
        json.dumps({"id": "30188960", "title": "Esmolol in sepsis", "text": "Esmolol lowered heart rate."})
        + "\n"
        + json.dumps({"id": "99999999", "text": "Unrelated."})
        + "\n"
    )
    with pytest.raises(ConfigError, match=r"medmeta-1 \(1 of 7\).*lower min_coverage"):
        create_task("synthesis", source="medmeta", workflow="golden-rag", abstracts=str(corpus), items=["medmeta-1"])
    args = {"source": "medmeta", "workflow": "golden-rag", "abstracts": str(corpus), "items": ["medmeta-1"]}
    task = create_task("synthesis", min_coverage=0.1, **args)
    (sample,) = task.dataset
    assert sample.metadata["abstract_coverage"] == pytest.approx(1 / 7)
    assert "only 1 of 7 primary-study abstracts joined" in sample.metadata["data_issue"]
    assert [(d.id, d.title, d.text) for d in sample.documents] == [
        ("30188960", "Esmolol in sepsis", "Esmolol lowered heart rate.")
    ]
    assert "30188960" not in sample.metadata["missing_pmids"] and len(sample.metadata["missing_pmids"]) == 6
    with pytest.raises(ConfigError, match="join abstracts=PATH"):
        create_task("synthesis", source="medmeta", workflow="golden-rag", abstracts=str(corpus))
    with pytest.raises(ConfigError, match="only source 'medmeta'"):
        create_task("synthesis", source="m3", abstracts=str(corpus))


def test_interrupted_cot_run_resumes_mid_workflow_without_repeating_calls(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    respond = reply_by_prompt(["Score: 1\nFeedback: vague", "Score: 5\nFeedback: ok"])
    calls = {"n": 0}

    def failing(messages: Sequence[ChatMessage], cfg: GenerateConfig) -> str:
        calls["n"] += 1
        if calls["n"] == 5:  # plan, 2 answers, draft, then the evaluator call fails
            raise ModelError("connection lost")
        return respond(messages, cfg)

    first = run(config(store, "parametric-cot", items=ITEMS[:1]), models=models(ScriptedModel(failing)))
    assert first.progress.errors == 1
    reader = RunStore(store)
    done = [step for step, _ in reader.steps(first.run.run_id, ITEMS[0])]
    reader.close()
    assert done == ["plan", "answer/1/1", "answer/1/2", "draft/1"]
    second_api = ScriptedModel(reply_by_prompt(["Score: 5\nFeedback: ok"]))
    second = run(config(store, "parametric-cot", items=ITEMS[:1]), models=models(second_api))
    assert second.resumed and second.progress.errors == 0
    sent = [messages[-1].content for messages, _ in second_api.requests]
    assert "rate how complete" in sent[0]
    assert not any("List at most" in p and "Draft conclusion" not in p for p in sent)
    assert len(sent) == 2  # evaluate/1 for the workflow, then the rubric judge
    reader = RunStore(store)
    _, generation = reader.get_generation(second.run.run_id, ITEMS[0]) or (None, None)
    reader.close()
    assert generation is not None and generation.metadata["stopped_by"] == "threshold"


def test_workflow_table_and_contrasts_over_stored_runs(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    run_ids = []
    for workflow, overall in (("golden-rag", "4"), ("parametric-zero-shot", "2")):
        base = reply_by_prompt()

        def respond(
            messages: Sequence[ChatMessage], cfg: GenerateConfig, overall: str = overall, base: Responder = base
        ) -> str:
            text = base(messages, cfg)
            # make per-item differences vary so the paired t-test is defined
            bump = str(len(messages[-1].content) % 2) if overall == "2" else "0"
            return text.replace("Overall: 4", f"Overall: {int(overall) + int(bump)}")

        result = run(config(store, workflow), models=models(ScriptedModel(respond)))
        assert result.progress.errors == 0
        run_ids.append(result.run.run_id)
    rows = synthesis_table(store, run_ids, metrics=("rubric",))
    assert [r.workflow for r in rows] == ["golden-rag", "parametric-zero-shot"]
    assert rows[0].means["rubric"] == 4.0 and rows[0].n == 3
    assert rows[0].cis["rubric"] == (4.0, 4.0)
    (contrast,) = synthesis_contrasts(store, run_ids, "rubric")
    assert contrast.factor == "workflow" and contrast.n == 3 and contrast.within == "scripted/model"
    assert contrast.mean_diff is not None and contrast.mean_diff > 1
    shown = CliRunner().invoke(
        app, ["synthesis", "table", *run_ids, "--store", str(store), "--metric", "rubric", "--contrast", "rubric"]
    )
    assert shown.exit_code == 0, shown.output
    assert f"| {run_ids[0]} | model | m3 | golden-rag | 3 | 0 | 0 | 4.00 [4.00, 4.00] |" in shown.output
    assert (
        f"| workflow | golden-rag | parametric-zero-shot | model | 3 | {contrast.mean_diff:.2f} | {contrast.t:.2f} |"
        in shown.output
    )
    as_json = CliRunner().invoke(app, ["synthesis", "table", *run_ids, "--store", str(store), "--json"])
    assert json.loads(as_json.output)["contrasts"][0]["cohens_d"] == pytest.approx(contrast.cohens_d)
    wrong = CliRunner().invoke(app, ["synthesis", "table", *run_ids, "--store", str(store), "--metric", "bleu"])
    assert isinstance(wrong.exception, ConfigError)


def test_standard_rag_rows_are_labelled_with_k() -> None:
    from ebmeval.synthesis._tables import _workflow_label

    assert _workflow_label({"workflow": "standard-rag"}) == "standard-rag (k=5)"
    assert _workflow_label({"workflow": "standard-rag", "k": 10}) == "standard-rag (k=10)"
    assert _workflow_label({"workflow": "golden-rag", "k": 10}) == "golden-rag"


def test_panel_agreement_and_feasibility_export(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    judge2 = ScriptedModel(lambda m, c: f"Overall: {len(m[-1].content) % 3 + 2}", name="scripted/j2")
    result = run(
        config(store, "golden-rag", panel=["judge", "judge2"]),
        models=models(ScriptedModel(reply_by_prompt()), judge2=judge2),
    )
    assert result.progress.errors == 0
    agreement = panel_agreement(store, result.run.run_id)
    assert agreement.judges == ["judge", "judge2"] and agreement.n_items == 3
    assert agreement.judge_means["judge"] == 4.0
    assert agreement.alpha is not None and agreement.alpha.value < 1
    assert agreement.icc is not None
    report = collect(RunStore(store), [result.run.run_id])
    (table,) = [t for t in report.tables() if t.title == "Judge panel agreement"]
    shown = table.texts()
    assert shown == [
        [
            report.labels[result.run.run_id],
            "3",
            "judge 4.00, judge2 " + f"{agreement.judge_means['judge2']:.2f}",
            f"{agreement.alpha.value:.3f}",
            shown[0][4],
        ]
    ]
    assert shown[0][4].startswith(f"{agreement.icc.value:.3f} [")
    assert table.rows[0][3] == agreement.alpha.value  # cells keep their numbers
    feasible = run(config(store, "feasibility", feasibility_runs=2), models=models(ScriptedModel(reply_by_prompt())))
    path = tmp_path / "feasibility.jsonl"
    assert export_feasibility(store, feasible.run.run_id, path) == 3
    by_cli = tmp_path / "by-cli.jsonl"
    shown = CliRunner().invoke(
        app, ["synthesis", "feasibility", feasible.run.run_id[:6], str(by_cli), "--store", str(store)]
    )
    assert shown.exit_code == 0 and by_cli.read_text() == path.read_text()
    assert {json.loads(line)["feasibility"] for line in path.read_text().splitlines()} == {3.5}
    kept = create_task("synthesis", items=ITEMS, feasibility_ratings=str(path), feasibility_above=3, text_metrics=False)
    assert [s.id for s in kept.dataset] == ITEMS
    for above in (3.5, None):  # strictly above, as MedMeta's "over 4" (the default)
        args = {} if above is None else {"feasibility_above": above}
        none = create_task("synthesis", items=ITEMS, feasibility_ratings=str(path), text_metrics=False, **args)
        assert none.dataset == []


@pytest.mark.parametrize(
    "workflow", ["parametric-zero-shot", "parametric-cot", "standard-rag", "golden-rag", "negated-rag", "feasibility"]
)
def test_show_prompt_renders_every_workflow_in_both_prompt_sets(workflow: str) -> None:
    runner = CliRunner()
    shown = {}
    for prompts in ("ebmeval", "medmeta-paper"):
        args = ["show-prompt", "synthesis", "--task-arg", "source=ms2", "--task-arg", f"workflow={workflow}"]
        result = runner.invoke(app, [*args, "--task-arg", f"prompts={prompts}"])
        assert result.exit_code == 0, result.output
        assert result.output.startswith("=== ")
        shown[prompts] = result.output
    assert shown["ebmeval"] != shown["medmeta-paper"]


def test_medmeta_paper_prompts_in_workflows_task_version_and_template_list() -> None:
    paper = create_task("synthesis", source="ms2", workflow="golden-rag", prompts="medmeta-paper", text_metrics=False)
    own = create_task("synthesis", source="ms2", workflow="golden-rag", text_metrics=False)
    assert paper.version != own.version
    assert "synthesis/medmeta-paper/rubric" in paper.metadata["prompts"]
    (judge,) = paper.scorers
    assert [t.id for t in judge.templates][0] == "synthesis/medmeta-paper/rubric@v1"
    listed = CliRunner().invoke(app, ["list", "templates", "--json"])
    ids = {row["template"] for row in json.loads(listed.output)}
    assert {"synthesis/rubric@v2", "synthesis/medmeta-paper/rubric@v1", "synthesis/medmeta-paper/negate@v1"} <= ids
    with pytest.raises(ConfigError, match="medmeta-paper"):
        create_task("synthesis", prompts="medmeta")


@pytest.fixture(scope="module")
def shared_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A hybrid (BM25 + dense, RRF) index built with the CLI over the MS² and three M3 items' studies plus noise."""
    from ebmeval.builtin_tasks.synthesis import load_synthesis

    folder = tmp_path_factory.mktemp("index")
    samples = load_synthesis("ms2") + [s for s in load_synthesis("m3") if s.id in ITEMS]
    noise = [{"id": f"noise-{i}", "title": "Acne creams", "text": f"Topical cream {i} for acne."} for i in range(30)]
    rows = [{"id": d.id, "title": d.title or "", "text": d.text} for s in samples for d in s.documents] + noise
    source = folder / "abstracts.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    runner = CliRunner()
    done = runner.invoke(app, ["corpus", "ingest", str(source), "--out", str(folder / "corpus")])
    assert done.exit_code == 0, done.output
    built = runner.invoke(
        app, ["index", "build", str(folder / "corpus"), "--out", str(folder / "hybrid"), "--retriever", "hybrid"]
    )
    assert built.exit_code == 0, built.output
    return folder / "hybrid"


@pytest.mark.parametrize(("source", "items"), [("ms2", None), ("m3", ITEMS)])
def test_standard_rag_over_a_user_index_keeps_k_per_query_and_records_recall(
    tmp_path: Path, shared_index: Path, source: str, items: list[str] | None
) -> None:
    store = tmp_path / "runs.sqlite"
    args = {"source": source, "workflow": "standard-rag", "retrieval": str(shared_index), "k": 2, "text_metrics": False}
    config = RunConfig(task="synthesis", task_args={**args, **({"items": items} if items else {})}, store=str(store))
    result = run(config.model_copy(update={"cache": False}), models=models(ScriptedModel(reply_by_prompt())))
    assert result.progress.errors == 0
    reader = RunStore(store)
    for sample, generation in reader.generations(result.run.run_id):
        meta = generation.metadata
        assert meta["design"] == "index" and meta["gold_total"] == len(sample.documents)
        queries = len(meta["queries"])  # the title and the two planned sub-questions
        assert queries == 3 and len(generation.retrieved or []) <= 2 * queries
        gold = {d.id for d in sample.documents}
        assert all(r.gold == (r.document.id in gold) for r in generation.retrieved or [])
        assert meta["recall"] == sum(1 for r in generation.retrieved or [] if r.gold) / len(gold)
    (recall,) = [m for m in summarize(reader, result.run.run_id).metrics if m.metric == "recall" and m.group is None]
    assert recall.value is not None and recall.value > 0
    reader.close()


def test_index_options_are_checked(shared_index: Path) -> None:
    medmeta = create_task("synthesis", source="medmeta", workflow="standard-rag", retrieval=str(shared_index))
    assert len(medmeta.dataset) == 20 and medmeta.workflow.design == "index"  # no joined abstracts needed
    with pytest.raises(ConfigError, match="only workflow 'standard-rag' retrieves"):
        create_task("synthesis", source="ms2", workflow="golden-rag", retrieval=str(shared_index))
    with pytest.raises(ConfigError, match="give retrieval=INDEX"):
        create_task("synthesis", source="ms2", workflow="standard-rag", reranker="/nowhere")
    with pytest.raises(ConfigError, match="not a local cross-encoder model folder"):
        create_task(
            "synthesis", source="ms2", workflow="standard-rag", retrieval=str(shared_index), reranker="/nowhere"
        )
