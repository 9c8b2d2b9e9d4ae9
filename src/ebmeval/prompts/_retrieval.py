"""Named, versioned prompt templates of retrieval steps (the LLM pointwise reranker, :mod:`ebmeval.rag.rerank`)."""

from __future__ import annotations

from ._template import add_template

RERANK_POINTWISE = add_template(
    "rerank/llm-pointwise",
    1,
    """You judge whether a document is relevant to a medical question.

Question: {query}

Document:
{document}

Does the document contain information that helps answer the question? Answer with one word: yes or no.""",
    "rerank/llm-pointwise: whether one retrieved document helps answer the question (yes/no); "
    "{document} is its title, a newline and its text.",
)
"""The LLM pointwise reranker's relevance question."""
