"""The assembly shared by the built-in multiple-choice tasks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from .._util.errors import ConfigError
from ..scorers import AnswerFormat, Unparsed, accuracy, choice_parser, multi_answer
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
    answer_format: AnswerFormat = "lenient",
    retrieval: str | None = None,
    k: int = 8,
    query: QueryMode = "question",
    oracle: bool = False,
) -> Task:
    """A multiple-choice task: a :func:`~ebmeval.workflows.qa_workflow`, the letter parser and its scorer.

    Single-answer tasks are scored by ``accuracy``, multi-answer ones by ``multi_answer``.
    The task version joins ``data_version`` and the workflow's prompt version.

    ``answer_format="strict"`` asks for a final ``ANSWER: X`` line and grades only that
    line (``docs/answer-extraction.md``, "Strict reading"); the scorer records the lenient
    reading of the same replies beside it (``accuracy_lenient``, ``exact_match_lenient`` …).

    With ``retrieval`` (the folder of an index built by ``ebmeval index build``) each
    question is answered over its top ``k`` documents, queried by the question (or question
    and options); ``oracle`` answers over the sample's own gold documents instead. A hash of
    the index's identity (retriever, its parameters and encoders, the corpus hash) joins the
    task version, so answers over another index are another run.
    """
    if answer_format not in ("lenient", "strict"):
        raise ConfigError("answer_format", f"must be 'lenient' or 'strict', not {answer_format!r}")
    strict = answer_format == "strict"
    workflow = qa_workflow(
        strategy,
        multi_answer=multi,
        system_prompt=system_prompt,
        thinking=thinking,
        overflow=overflow,
        answer_from=answer_from,
        strict=strict,
    )
    scorer = multi_answer(unparsed, also_lenient=strict) if multi else accuracy(unparsed, also_lenient=strict)
    version = f"{data_version}.{workflow.version}"
    answering: Workflow = workflow
    if retrieval is not None or oracle:
        retriever = None
        if retrieval is not None:
            from ..rag import index_identity, load_index

            # one query at a time: a batch pads dense queries to its longest text, so batching by
            # arrival time could move a near-tied document and make retrieval depend on timing
            retriever = load_index(retrieval)
            version += f".{index_identity(retrieval)['hash'][:12]}"
        answering = RetrievalAugmented(workflow, retriever, k=k, query=query, oracle=oracle, index=retrieval or "")
    return Task(
        name=name,
        dataset=list(dataset),
        workflow=answering,
        scorers=[scorer],
        parser=choice_parser(multi=multi, answer_format=answer_format),
        version=version,
        content_args=frozenset({"retrieval"} if retrieval is not None else ()),
        generate_config=workflow.generate_config,
        reasoning_generate_config=workflow.reasoning_config,
        metadata={**metadata, "size": len(dataset), "prompts": [t.id for t in workflow.templates]},
    )
