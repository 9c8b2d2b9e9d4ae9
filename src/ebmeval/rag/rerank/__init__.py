"""Rerankers: the :class:`Reranker` protocol, a local cross-encoder, and an LLM pointwise reranker."""

from ._base import Reranker, RerankerFactory, get_reranker, reorder, reranker, rerankers
from ._cross import CrossEncoderReranker
from ._llm import (
    CONFIG,
    PROMPT,
    PROMPT_NAME,
    PROMPT_VERSION,
    RERANK_CALL,
    Judgment,
    LLMPointwiseReranker,
    relevance,
)

__all__ = [
    "CONFIG",
    "PROMPT",
    "PROMPT_NAME",
    "PROMPT_VERSION",
    "RERANK_CALL",
    "CrossEncoderReranker",
    "Judgment",
    "LLMPointwiseReranker",
    "Reranker",
    "RerankerFactory",
    "get_reranker",
    "relevance",
    "reorder",
    "reranker",
    "rerankers",
]
