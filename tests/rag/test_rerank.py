from __future__ import annotations

import math
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from tests.helpers.toy import scripted_model

import ebmeval.builtin_tasks.synthesis  # noqa: F401  (registers the task)
from ebmeval._util.errors import ConfigError, UnknownNameError
from ebmeval._util.hashing import stable_hash
from ebmeval.models import ChatMessage, GenerateConfig, Model, ModelOutput, TokenLogprob, TopLogprob
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.rag import build_index
from ebmeval.rag.rerank import CrossEncoderReranker, LLMPointwiseReranker, get_reranker, relevance, reorder
from ebmeval.rag.retrievers import index_text
from ebmeval.runner import RunConfig, run_identity
from ebmeval.tasks import Document, RetrievedDocument, SampleContext, create_task


def candidates(corpus: list[Document]) -> list[RetrievedDocument]:
    return [RetrievedDocument(document=d, score=10.0 - i, rank=i + 1) for i, d in enumerate(corpus)]


def yes_no(p_yes: float, p_no: float, first: str = "Yes") -> ModelOutput:
    top = [TopLogprob(token="Yes", logprob=math.log(p_yes)), TopLogprob(token=" no", logprob=math.log(p_no))]
    chosen = next(t for t in top if t.token.strip().lower() == first.lower())
    token = TokenLogprob(token=chosen.token, logprob=chosen.logprob, top=top)
    return ModelOutput(text=first, model="scripted/judge", logprobs=[token])


def test_relevance_from_logprobs_and_text() -> None:
    value, method = relevance(yes_no(0.6, 0.2))
    assert value == pytest.approx(0.75) and method == "logprobs"
    value, method = relevance(yes_no(0.1, 0.7, first="No"))
    assert value == pytest.approx(0.125) and method == "logprobs"
    blank = TokenLogprob(token=" ", logprob=-0.01, top=[])
    spaced = yes_no(0.3, 0.3)
    assert relevance(spaced.model_copy(update={"logprobs": [blank, *(spaced.logprobs or [])]}))[0] == pytest.approx(0.5)
    # the logprobs name neither word: fall back to the text
    other = TokenLogprob(token="Sure", logprob=-0.1, top=[TopLogprob(token="Sure", logprob=-0.1)])
    assert relevance(ModelOutput(text="Sure, yes", model="m", logprobs=[other])) == (None, "unparsed")
    assert relevance(ModelOutput(text="Yes.", model="m")) == (1.0, "text")
    assert relevance(ModelOutput(text="  no, it does not", model="m")) == (0.0, "text")
    assert relevance(ModelOutput(text="Perhaps", model="m")) == (None, "unparsed")


def scripted_judge(answers: dict[str, ModelOutput | str]) -> tuple[ScriptedModel, Model]:
    def respond(messages: Sequence[ChatMessage], config: GenerateConfig) -> ModelOutput | str:
        prompt = messages[-1].content
        return next(reply for doc_id, reply in answers.items() if f"[{doc_id}]" in prompt)

    api = ScriptedModel(respond)
    return api, Model(api)


def tagged(corpus: list[Document]) -> list[Document]:
    return [d.model_copy(update={"text": f"[{d.id}] {d.text}"}) for d in corpus]


async def test_llm_pointwise_reranks_top_n(corpus: list[Document]) -> None:
    docs = tagged(corpus)
    api, model = scripted_judge(
        {"d1": yes_no(0.2, 0.8, "No"), "d2": "Maybe?", "d3": yes_no(0.9, 0.1), "d4": "yes", "d5": "yes"}
    )
    reranker = LLMPointwiseReranker(model, top_n=4)
    ranked = await reranker.rerank("Is metformin first-line?", candidates(docs), k=3)
    assert [(r.document.id, r.rank) for r in ranked] == [("d4", 1), ("d3", 2), ("d1", 3)]
    assert [r.score for r in ranked] == pytest.approx([1.0, 0.9, 0.2])
    assert len(api.requests) == 4
    config = api.requests[0][1]
    assert (config.logprobs, config.top_logprobs, config.temperature) == (True, 5, 0)
    assert "Is metformin first-line?" in api.requests[0][0][0].content
    everything = await reranker.rerank("q", candidates(docs), k=10)
    assert [(r.document.id, r.score) for r in everything][-1] == ("d2", -1.0)
    judgments = await reranker.judge("q", candidates(docs)[:2])
    assert [(j.id, j.method, j.output) for j in judgments] == [("d1", "logprobs", "No"), ("d2", "unparsed", "Maybe?")]


async def test_llm_pointwise_asks_with_its_registered_template(corpus: list[Document]) -> None:
    """The relevance question is the registry's ``rerank/llm-pointwise@v1``, not a prompt of its own."""
    from ebmeval.prompts import templates

    template = templates.get("rerank/llm-pointwise")
    assert template.id == "rerank/llm-pointwise@v1"
    api, model = scripted_judge({"d1": "yes"})
    document = tagged(corpus)[0].model_copy(update={"title": "Metformin"})
    await LLMPointwiseReranker(model).judge("q?", candidates([document]))
    assert api.requests[0][0][0].content == template.render(query="q?", document=f"Metformin\n{document.text}")


async def test_llm_pointwise_through_sample_context_replays(corpus: list[Document]) -> None:
    docs = tagged(corpus)[:2]
    api, model = scripted_judge({"d1": "no", "d2": "yes"})
    ctx = SampleContext({"judge": model})
    reranker = LLMPointwiseReranker(ctx, role="judge")
    first = await reranker.rerank("q", candidates(docs), k=2)
    assert [r.document.id for r in first] == ["d2", "d1"]
    assert all(step.startswith("rerank/llm-pointwise/") for step in ctx.steps)
    assert ctx.steps[0].endswith("/d1") and len(set(ctx.steps)) == 2
    again = await reranker.rerank("q", candidates(docs), k=2)
    assert again == first and len(api.requests) == 2


def test_reorder_keeps_ties_in_rank_order(corpus: list[Document]) -> None:
    ranked = reorder(candidates(corpus)[:3], [0.5, 0.9, 0.5], k=3)
    assert [(r.document.id, r.rank) for r in ranked] == [("d2", 1), ("d1", 2), ("d3", 3)]


def test_registry(corpus: list[Document]) -> None:
    _, model = scripted_judge({})
    assert isinstance(get_reranker("rerank/llm-pointwise", model=model, top_n=3), LLMPointwiseReranker)
    with pytest.raises(ConfigError, match="takes no such option"):
        get_reranker("rerank/llm-pointwise", model=model, depth=3)
    with pytest.raises(UnknownNameError, match="rerank/cross-encoder"):
        get_reranker("rerank/cross-encodr")


async def test_cross_encoder_orders_by_model_score(tiny_cross_encoder: Path, corpus: list[Document]) -> None:
    reranker = CrossEncoderReranker(tiny_cross_encoder, top_n=4)
    query = "treatment of type 2 diabetes"
    pool = candidates(corpus)
    raw = reranker.model.predict([(query, index_text(d)) for d in corpus[:4]])
    ranked = await reranker.rerank(query, pool, k=3)
    order = np.argsort(-np.asarray(raw), kind="stable")[:3]
    assert [r.document.id for r in ranked] == [corpus[i].id for i in order]
    assert [r.score for r in ranked] == pytest.approx([float(raw[i]) for i in order])
    assert await reranker.rerank(query, [], k=3) == []


def test_cross_encoder_needs_a_local_folder(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a local cross-encoder model folder"):
        CrossEncoderReranker(tmp_path / "cross-encoder/ms-marco-MiniLM-L-6-v2")


@pytest.mark.parametrize(
    ("name", "option", "args"),
    [
        ("mirage/medqa", "rerank", {}),  # the retrieval layer every task takes
        ("synthesis", "reranker", {"workflow": "standard-rag", "items": ["m3-26258610"], "text_metrics": False}),
    ],
)
def test_a_cross_encoder_is_one_run_by_its_files_whatever_path_names_it(
    name: str,
    option: str,
    args: dict[str, object],
    tiny_cross_encoder: Path,
    other_cross_encoder: Path,
    corpus: list[Document],
    tmp_path: Path,
) -> None:
    build_index(corpus, tmp_path / "idx", "bm25")
    shutil.copytree(tiny_cross_encoder, tmp_path / "copy")
    models = {"model": scripted_model(), "judge": scripted_model()}

    def identity(folder: Path) -> str:
        given = {**args, "retrieval": str(tmp_path / "idx"), option: str(folder)}
        config = RunConfig(task=name, task_args=given, store=str(tmp_path / "runs.sqlite"), cache=False)
        return stable_hash(run_identity(config, create_task(name, **given), models))

    assert identity(tiny_cross_encoder) == identity(tmp_path / "copy") != identity(other_cross_encoder)
    shutil.rmtree(tmp_path / "copy")
    shutil.copytree(other_cross_encoder, tmp_path / "copy")
    assert identity(tmp_path / "copy") == identity(other_cross_encoder)  # other weights at the same path: another run
