"""Running tasks: configuration, the resumable runner, and run summaries."""

from .._util.blocking import run_blocking
from ._config import DEFAULT_STORE, RunConfig, config_from_flags, grid_from_flags, load_config, load_grid
from ._engine import Failure, attempt, run_all, score_sample
from ._rescore import arescore, rescore
from ._runner import (
    Progress,
    ProgressCallback,
    RunResult,
    arun,
    build_models,
    register_scorers,
    run,
    run_identity,
    select_samples,
)
from ._summary import MetricSummary, RunSummary, input_was_cut, sample_values, summarize

__all__ = [
    "DEFAULT_STORE",
    "Failure",
    "MetricSummary",
    "Progress",
    "ProgressCallback",
    "RunConfig",
    "RunResult",
    "RunSummary",
    "arescore",
    "arun",
    "attempt",
    "build_models",
    "register_scorers",
    "config_from_flags",
    "load_config",
    "load_grid",
    "grid_from_flags",
    "rescore",
    "run",
    "run_all",
    "run_blocking",
    "run_identity",
    "select_samples",
    "sample_values",
    "score_sample",
    "summarize",
    "input_was_cut",
]
