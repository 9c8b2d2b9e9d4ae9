"""Prompting strategies (``direct``, ``cot``, ``cot-refine``) and their prompt templates."""

from ..prompts import PromptTemplate, list_templates, templates
from ._free import FreeFormWorkflow, final_answer
from ._qa import (
    ChainOfThought,
    ChainOfThoughtRefine,
    Direct,
    Overflow,
    PromptRenderer,
    QAWorkflow,
    Strategy,
    format_documents,
    format_options,
    letter_probabilities,
    qa_workflow,
    render_prompts,
)
from ._retrieval import (
    QueryMode,
    RetrievalAugmented,
    gold_ids,
    index_hash,
    reranker_identity,
    retrieval_query,
    with_retrieval,
)

__all__ = [
    "QueryMode",
    "RetrievalAugmented",
    "gold_ids",
    "index_hash",
    "reranker_identity",
    "retrieval_query",
    "ChainOfThought",
    "ChainOfThoughtRefine",
    "Direct",
    "FreeFormWorkflow",
    "Overflow",
    "PromptRenderer",
    "PromptTemplate",
    "QAWorkflow",
    "Strategy",
    "format_documents",
    "final_answer",
    "format_options",
    "letter_probabilities",
    "list_templates",
    "qa_workflow",
    "render_prompts",
    "templates",
    "with_retrieval",
]
