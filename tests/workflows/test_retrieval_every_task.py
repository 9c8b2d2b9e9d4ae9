"""Retrieval and the prompting strategies as options of every task type, not only multiple choice."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from ebmeval._util.errors import ConfigError
from ebmeval.models import ChatMessage, GenerateConfig, Model
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.rag import build_index
from ebmeval.rag.corpus import write_store
from ebmeval.runner import RunConfig, run
from ebmeval.store import RunStore
from ebmeval.tasks import Document, Sample, SampleContext, create_task
from ebmeval.workflows import RetrievalAugmented, final_answer, render_prompts
from tests.helpers.cli import ebmeval

DOCS = [
    Document(id="pk-1", text="Ketoconazole raises the plasma levels of midazolam by inhibiting CYP3A4."),
    Document(id="asp-2", text="Aspirin reduces the risk of colorectal cancer.", title="Aspirin trial"),
    Document(id="flu-3", text="Influenza vaccination is advised every year for adults over 65."),
]
TASKS = [
    ("ddi", {}),
    ("chemprot", {}),
    ("relation-mcq", {}),
    ("lfqa/liveqa", {}),
    ("lfqa/medicationqa", {}),
    ("lfqa/healthsearchqa", {}),
    ("caremedeval", {"context": "none"}),
    ("medthink", {}),
    ("mirage/medqa", {}),
]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("rag")
    # a passage quoting each task's first question, so every task retrieves something for it
    quoted = [Document(id=f"{name}-0", text=create_task(name, **args).dataset[0].input) for name, args in TASKS]
    write_store([*DOCS, *quoted], root / "corpus")
    build_index(root / "corpus", root / "index", "bm25")
    return str(root / "index")


@pytest.mark.parametrize(("name", "args"), TASKS, ids=[name for name, _ in TASKS])
@pytest.mark.parametrize("strategy", ["direct", "cot", "cot-refine"])
def test_every_task_type_takes_retrieval_and_every_strategy(name: str, args: dict, strategy: str, index: str) -> None:
    plain = create_task(name, strategy=strategy, **args)
    task = create_task(name, strategy=strategy, retrieval=index, k=2, **args)
    assert isinstance(task.workflow, RetrievalAugmented) and task.workflow.k == 2
    assert task.version.startswith(plain.version + ".") and task.version != plain.version
    assert task.args["retrieval"] == index and task.args["k"] == 2
    shown = "\n".join(render_prompts(task, 0).values())
    assert '<document number="1" id="' in shown and "</document>" in shown


def test_mcq_file_takes_retrieval(tmp_path: Path, index: str) -> None:
    path = tmp_path / "q.jsonl"
    question = {"id": "1", "question": "Which drug raises midazolam?", "options": ["a", "b"], "answer": "A"}
    path.write_text(json.dumps(question))
    task = create_task("mcq-file", path=str(path), retrieval=index, k=1)
    (step,) = render_prompts(task, 0).values()
    assert '<document number="1" id="pk-1">' in step


def test_retrieval_options_without_an_index_are_refused() -> None:
    with pytest.raises(ConfigError, match="retrieval"):
        create_task("ddi", k=3)
    with pytest.raises(ConfigError, match="takes no such option"):
        create_task("ddi", retrival="x")


def test_documents_are_numbered_and_delimited_after_the_samples_own(index: str) -> None:
    task = create_task("relation-mcq", retrieval=index, k=2)
    prompt = render_prompts(task, 0)["direct"]
    own = task.dataset[0].documents[0].id
    assert f'<document number="1" id="{own}">' in prompt
    assert '<document number="2" id="' in prompt and '<document number="3" id="' in prompt
    assert prompt.count("</document>") == 3


def test_final_answer_is_the_text_after_the_last_marker() -> None:
    assert final_answer("Reasoning.\nFinal answer:\na | int | b") == "a | int | b"
    assert final_answer("<think>x</think>first\nfinal answer: one\nFinal answer: two") == "two"
    assert final_answer("no marker here") == "no marker here"


async def test_extraction_cot_refine_sends_two_calls_and_parses_the_final_answer() -> None:
    replies = ["The sentence says so.\nFinal answer:\nA | int | B", "Checked.\nFinal answer:\nA | mechanism | B"]
    api = ScriptedModel(replies)
    task = create_task("ddi", strategy="cot-refine")
    sample = Sample(id="s", input="A raises the levels of B.", metadata={"entity_names": ["A", "B"]})
    result = await task.workflow(sample, SampleContext({"model": Model(api)}))
    assert result.output == "A | mechanism | B"
    assert result.metadata["initial_output"] == replies[0] and result.metadata["reply"] == replies[1]
    (_first, _c1), (second, _c2) = api.requests
    assert "<first_answer>\nThe sentence says so." in second[-1].content
    assert task.parser(result.output, sample).value == [["A", "mechanism", "B"]]


def _answer(messages: list[ChatMessage], config: GenerateConfig) -> str:
    return "ketoconazole | mechanism | midazolam" if "Relation types" in messages[-1].content else "See a doctor."


@pytest.mark.parametrize("name", ["ddi", "lfqa/liveqa"])
def test_run_stores_the_retrieved_documents_and_show_lists_them(name: str, index: str, tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    args = {"retrieval": index, "k": 2}
    config = RunConfig(task=name, task_args=args, store=str(store), limit=1, shuffle=False, cache=False)
    result = run(config, models={"model": Model(ScriptedModel(_answer))})
    runs = RunStore(store)
    sample_id = create_task(name).dataset[0].id
    _sample, generation = runs.get_generation(result.run.run_id, sample_id)
    assert generation.retrieved and generation.retrieved[0].document.id == f"{name}-0"
    ((_step, payload),) = [(s, p) for s, p in runs.steps(result.run.run_id, sample_id) if s != "retrieve"]
    assert '<document number="1" id="' in payload["messages"][-1]["content"]
    shown = ebmeval("show", result.run.run_id, "--store", str(store), "--sample", sample_id, "--json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    retrieved = json.loads(shown.stdout)["retrieved"]
    assert [r["id"] for r in retrieved] == [h.document.id for h in generation.retrieved]
    assert all(r["text"] for r in retrieved)


@pytest.mark.local_model
@pytest.mark.slow
@pytest.mark.parametrize("name", ["ddi", "lfqa/liveqa"])
def test_small_local_model_answers_over_a_built_bm25_index(name: str, tmp_path: Path) -> None:
    first = create_task(name).dataset[0]
    passages = [*DOCS, Document(id="quoted", text=first.input, title="Quoted passage")]
    write_store(passages, tmp_path / "corpus")
    build_index(tmp_path / "corpus", tmp_path / "index", "bm25")
    store = str(tmp_path / "runs.sqlite")
    common = ["--store", store, "--limit", "1", "--no-shuffle", "--max-tokens", "64", "--json"]
    args = ["--task-arg", f"retrieval={tmp_path / 'index'}", "--task-arg", "k=2", "--task-arg", "strategy=cot"]
    done = ebmeval("run", "--task", name, "--model", "local:smollm2", *args, *common, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    shown = ebmeval("show", run_id, "--store", store, "--sample", first.id, "--json", cwd=tmp_path)
    detail = json.loads(shown.stdout)
    assert detail["retrieved"][0]["id"] == "quoted" and detail["retrieved"][0]["text"] == first.input
    (call,) = [s for s in detail["steps"] if s["step"] != "retrieve"]
    assert '<document number="1" id="quoted">\nQuoted passage\n' in call["messages"][-1]["content"]
    assert detail["output"]


def test_show_prompt_renders_every_task_name(tmp_path: Path) -> None:
    from ebmeval.tasks import task_registry

    mcq, text = tmp_path / "q.jsonl", tmp_path / "t.jsonl"
    mcq.write_text(json.dumps({"id": "1", "question": "Which?", "options": ["a", "b"], "answer": "A"}))
    text.write_text(json.dumps({"id": "1", "question": "Why?", "reference": "Because."}))
    summaries, targets = tmp_path / "s.jsonl", tmp_path / "g.jsonl"
    summaries.write_text(json.dumps({"review_id": "r1", "generated": "Statins help."}))
    targets.write_text(json.dumps({"review_id": "r1", "target": "Statins reduce deaths."}))
    files = {  # the tasks that read the user's own files
        "mcq-file": {"path": str(mcq)},
        "text-file": {"path": str(text)},
        "factuality/summaries": {"generated": str(summaries), "targets": str(targets)},
    }
    for name in task_registry:
        task = create_task(name, **files.get(name, {}))
        shown = render_prompts(task, 0)
        if name == "factuality/summaries":  # summaries written elsewhere: nothing is generated
            assert shown == {}
            continue
        assert shown and all("[user]" in text for text in shown.values()), name
    args = [f"--task-arg={k}={v}" for k, v in files["factuality/summaries"].items()]
    done = ebmeval("show-prompt", "factuality/summaries", *args, cwd=tmp_path)
    assert done.returncode == 0 and "sends the model under evaluation no prompt" in done.stdout, done.stderr


def test_show_prompt_command_traces_a_multi_step_workflow(tmp_path: Path) -> None:
    done = ebmeval("show-prompt", "factuality/m3-claims", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "=== label ===" in done.stdout and "[user]" in done.stdout


def test_a_papers_prompt_set_shows_its_article_bare() -> None:
    task = create_task("caremedeval", language="fr", prompt_set="paper", context="abstract")
    prompt = render_prompts(task, 0)["direct"]
    assert "Article :\n" + task.dataset[0].documents[0].text[:40] in prompt and "<document" not in prompt
    assert '<document number="1"' in render_prompts(create_task("caremedeval", context="abstract"), 0)["direct"]


def test_the_llm_reranker_of_any_task_is_a_declared_call_with_its_template(index: str) -> None:
    """Before: its calls were listed as a judge's question without settings or template, and the inner
    workflow's own calls were lost behind retrieval."""
    from ebmeval.tasks import call_rows, task_calls

    task = create_task("mirage/medqa", retrieval=index, rerank="llm")
    rows = {row["call"]: row for row in call_rows(task)}
    assert set(rows) == {"answer", "rerank/llm-pointwise"}
    rerank = rows["rerank/llm-pointwise"]
    assert (rerank["role"], rerank["max_tokens"], rerank["templates"]) == ("reranker", 3, ["rerank/llm-pointwise@v1"])
    assert "mcq/direct@v1" in rows["answer"]["templates"]
    negated = create_task("synthesis", workflow="negated-rag")
    wrapped = RetrievalAugmented(negated.workflow, None, oracle=True)
    assert task_calls(dataclasses.replace(negated, workflow=wrapped)) == task_calls(negated)


def test_a_step_entry_for_the_llm_reranker_is_sent_and_one_for_a_call_not_made_is_refused(
    index: str, tmp_path: Path
) -> None:
    """Before: ``steps: {rerank/llm-pointwise: …}`` was refused, and ``steps: {judge: …}`` accepted and never sent."""
    api = ScriptedModel(lambda messages, _c: "yes" if "relevant" in messages[-1].content.lower() else "A")
    args = {"retrieval": index, "rerank": "llm", "k": 1, "rerank_depth": 2}
    base = {"task": "mirage/medqa", "task_args": args, "limit": 1, "store": str(tmp_path / "s.sqlite"), "cache": False}
    steps = {"rerank/llm-pointwise": {"max_tokens": 7}}
    run(RunConfig.model_validate({**base, "steps": steps}), models={"model": Model(api)})
    reranking = [c for m, c in api.requests if "relevant" in m[-1].content.lower()]
    assert len(reranking) == 2 and {c.max_tokens for c in reranking} == {7}
    with pytest.raises(ConfigError, match=r"steps\.judge.*makes no such call"):
        run(RunConfig.model_validate({**base, "steps": {"judge": {"max_tokens": 5}}}), models={"model": Model(api)})
