"""Models: the :class:`Model` wrapper, providers, messages and the response cache."""

from typing import Any

from ._api import ModelAPI, model_providers, modelapi
from ._cache import ResponseCache, cache_key, default_cache_dir
from ._engine import (
    EngineBuildError,
    NativeEngine,
    build_native_engine,
    cpu_features,
    engines_dir,
    features_beyond_prebuilt,
    load_native_engine,
    measure_build,
    native_dir,
    record_speed,
)
from ._local_files import fetch_smollm2, file_sha256
from ._model import DegenerateReplyError, Model, ModelRequest, ModelStats, get_model, parse_model_spec
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
    "native_dir",
    "record_speed",
    "measure_build",
    "load_native_engine",
    "features_beyond_prebuilt",
    "engines_dir",
    "cpu_features",
    "build_native_engine",
    "EngineBuildError",
    "NativeEngine",
    "fetch_smollm2",
    "file_sha256",
    "serve_model",
    "DegenerateReplyError",
    "ChatMessage",
    "GenerateConfig",
    "Model",
    "ModelAPI",
    "ModelOutput",
    "ModelRequest",
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
