"""Running tasks: configuration, the resumable runner, and run summaries."""

from ._config import DEFAULT_STORE, RunConfig, config_from_flags, grid_from_flags, load_config, load_grid
from ._rescore import rescore
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
from ._summary import MetricSummary, RunSummary, sample_values, summarize

__all__ = [
    "DEFAULT_STORE",
    "MetricSummary",
    "Progress",
    "ProgressCallback",
    "RunConfig",
    "RunResult",
    "RunSummary",
    "arun",
    "build_models",
    "register_scorers",
    "config_from_flags",
    "load_config",
    "load_grid",
    "grid_from_flags",
    "rescore",
    "run",
    "run_identity",
    "select_samples",
    "sample_values",
    "summarize",
]
