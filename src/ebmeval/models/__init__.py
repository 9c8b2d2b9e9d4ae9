"""Models: the :class:`Model` wrapper, providers, messages and the response cache."""

from typing import Any

from ._api import ModelAPI, model_providers, modelapi
from ._cache import ResponseCache, cache_key, default_cache_dir
from ._local_files import fetch_smollm2
from ._model import DegenerateReplyError, Model, ModelStats, get_model, parse_model_spec
from ._reasoning import split_reasoning, strip_reasoning
from ._types import (
    ChatMessage,
    GenerateConfig,
    ModelOutput,
    TokenLogprob,
    TopLogprob,
    Usage,
    assistant,
    system,
    user,
)

__all__ = [
    "fetch_smollm2",
    "serve_model",
    "DegenerateReplyError",
    "ChatMessage",
    "GenerateConfig",
    "Model",
    "ModelAPI",
    "ModelOutput",
    "ModelStats",
    "ResponseCache",
    "TokenLogprob",
    "TopLogprob",
    "Usage",
    "assistant",
    "cache_key",
    "default_cache_dir",
    "get_model",
    "model_providers",
    "modelapi",
    "parse_model_spec",
    "split_reasoning",
    "strip_reasoning",
    "system",
    "user",
]


def __getattr__(name: str) -> Any:
    """``serve_model`` is imported on first use: it loads the llama.cpp engine module."""
    if name == "serve_model":
        from ._serve import serve_model

        return serve_model
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
