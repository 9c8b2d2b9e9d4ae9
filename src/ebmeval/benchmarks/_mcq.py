"""The assembly shared by the built-in multiple-choice tasks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from .._util.hashing import stable_hash
from ..scorers import Unparsed, accuracy, choice_parser, multi_answer
from ..tasks import Sample, Task, Workflow
from ..workflows import Overflow, QueryMode, RetrievalAugmented, Strategy, qa_workflow


def mcq_task(
    name: str,
    dataset: Sequence[Sample],
    *,
    data_version: str,
    metadata: dict[str, Any],
    strategy: Strategy = "direct",
    multi: bool = False,
    thinking: bool | None = None,
    system_prompt: str | None = None,
    answer_from: Literal["text", "logprobs"] = "text",
    overflow: Overflow = "truncate",
    unparsed: Unparsed = "zero",
    retrieval: str | None = None,
    k: int = 8,
    query: QueryMode = "question",
    oracle: bool = False,
) -> Task:
    """A multiple-choice task: a :func:`~ebmeval.workflows.qa_workflow`, the letter parser and its scorer.

    Single-answer tasks are scored by ``accuracy``, multi-answer ones by ``multi_answer``.
    The task version joins ``data_version`` and the workflow's prompt version.

    With ``retrieval`` (the folder of an index built by ``ebmeval index build``) each
    question is answered over its top ``k`` documents, queried by the question (or question
    and options); ``oracle`` answers over the sample's own gold documents instead. A hash of
    the index's identity (retriever, its parameters and encoders, the corpus hash) joins the
    task version, so answers over another index are another run.
    """
    workflow = qa_workflow(
        strategy,
        multi_answer=multi,
        system_prompt=system_prompt,
        thinking=thinking,
        overflow=overflow,
        answer_from=answer_from,
    )
    scorer = multi_answer(unparsed) if multi else accuracy(unparsed)
    version = f"{data_version}.{workflow.version}"
    answering: Workflow = workflow
    if retrieval is not None or oracle:
        retriever = None
        if retrieval is not None:
            from ..rag import load_index
            from ..rag.index import read_manifest

            retriever = load_index(retrieval)
            manifest = read_manifest(retrieval)
            identity = {
                "retriever": manifest.retriever,
                "params": manifest.params,
                "encoders": [e.model_dump() for e in manifest.encoders],
                "corpus": manifest.corpus.hash,
            }
            version += f".{stable_hash(identity, 12)}"
        answering = RetrievalAugmented(workflow, retriever, k=k, query=query, oracle=oracle, index=retrieval or "")
    return Task(
        name=name,
        dataset=list(dataset),
        workflow=answering,
        scorers=[scorer],
        parser=choice_parser(multi=multi),
        version=version,
        generate_config=workflow.generate_config,
        reasoning_generate_config=workflow.reasoning_config,
        metadata={**metadata, "size": len(dataset), "prompts": [t.id for t in workflow.templates]},
    )
