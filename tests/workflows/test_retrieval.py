from __future__ import annotations

from pathlib import Path

import pytest

from ebmeval.rag import build_index, get_retriever
from ebmeval.rag.corpus import write_store
from ebmeval.runner import RunConfig, run
from ebmeval.store import RunStore
from ebmeval.tasks import Document, RetrievedDocument, Sample, SampleContext, WorkflowResult
from ebmeval.workflows import RetrievalAugmented, retrieval_query
from tests.helpers.toy import scripted_model, toy_task

DOCS = [
    Document(id="111", text="Statins lower LDL cholesterol and cardiovascular events.", metadata={"pmid": "111"}),
    Document(id="222", text="Aspirin reduces the risk of colorectal cancer.", metadata={"pmid": "222"}),
    Document(id="333", text="Metformin is first-line therapy for type 2 diabetes.", metadata={"pmid": "333"}),
]


class Echo:
    """Answers 'A' and remembers the documents it was given."""

    name = "echo"

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        self.seen.append([d.id for d in sample.documents])
        return WorkflowResult(output="A")


class Counting:
    def __init__(self, inner) -> None:
        self.inner = inner
        self.calls = 0

    def retrieve(self, queries: list[str], k: int) -> list[list[RetrievedDocument]]:
        self.calls += 1
        return self.inner.retrieve(queries, k)


async def test_retrieves_marks_gold_and_grounds_the_answer() -> None:
    inner = Echo()
    workflow = RetrievalAugmented(inner, get_retriever("bm25", DOCS), k=2)
    sample = Sample(id="s", input="Does aspirin reduce the risk of colorectal cancer?", metadata={"pmids": ["222"]})
    result = await workflow(sample, SampleContext({}))
    assert [h.document.id for h in result.retrieved][0] == "222"
    assert [h.gold for h in result.retrieved] == [True] + [False] * (len(result.retrieved) - 1)
    assert inner.seen == [[h.document.id for h in result.retrieved]]
    assert result.metadata["retrieval"]["k"] == 2


async def test_resumed_sample_replays_the_recorded_retrieval() -> None:
    retriever = Counting(get_retriever("bm25", DOCS))
    workflow = RetrievalAugmented(Echo(), retriever, k=1)
    sample = Sample(id="s", input="metformin diabetes")
    ctx = SampleContext({})
    first = await workflow(sample, ctx)
    again = await workflow(sample, SampleContext({}, ctx.memo))
    assert retriever.calls == 1
    assert again.retrieved == first.retrieved


async def test_oracle_uses_the_samples_own_documents() -> None:
    inner = Echo()
    sample = Sample(id="s", input="q", documents=DOCS[:2], metadata={"gold_ids": ["111"]})
    result = await RetrievalAugmented(inner, None, oracle=True, k=5)(sample, SampleContext({}))
    assert inner.seen == [["111", "222"]]
    assert [h.gold for h in result.retrieved] == [True, False]


def test_query_with_options() -> None:
    sample = Sample(id="s", input="Which drug?", choices={"A": "statin", "B": "aspirin"})
    assert retrieval_query(sample, "question") == "Which drug?"
    assert retrieval_query(sample, "question+options") == "Which drug?\nstatin\naspirin"


def test_retrieved_documents_are_stored_per_sample(tmp_path: Path) -> None:
    # the toy task asks "question 0", "question 1": every document matches "question"
    write_store([Document(id=f"d{i}", text=f"question {i} background") for i in range(3)], tmp_path / "corpus")
    build_index(tmp_path / "corpus", tmp_path / "index", "bm25")
    from ebmeval.rag import load_index

    task = toy_task(2)
    task.workflow = RetrievalAugmented(task.workflow, load_index(tmp_path / "index"), k=2)
    result = run(
        RunConfig(task="toy", store=str(tmp_path / "r.sqlite"), cache=False),
        task=task,
        models={"model": scripted_model()},
    )
    _sample, generation = RunStore(tmp_path / "r.sqlite").get_generation(result.run.run_id, "q0")
    assert len(generation.retrieved) == 2 and generation.retrieved[0].document.text
    assert generation.steps[0] == "retrieve"


def test_mcq_task_with_a_retrieval_index(tmp_path: Path) -> None:
    from ebmeval.tasks import create_task

    write_store(DOCS, tmp_path / "corpus")
    build_index(tmp_path / "corpus", tmp_path / "index", "bm25")
    task = create_task("mirage/pubmedqa", retrieval=str(tmp_path / "index"), k=3)
    assert isinstance(task.workflow, RetrievalAugmented) and task.workflow.k == 3
    assert task.version != create_task("mirage/pubmedqa").version
    with pytest.raises(Exception, match="index"):
        create_task("mirage/pubmedqa", retrieval=str(tmp_path / "nowhere"))
