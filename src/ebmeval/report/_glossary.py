"""What a report's labels and metrics mean: the run legend, metric definitions and chance levels."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase

from .._util.options import docstring_summary, section_docs
from ..store import RunRecord, RunStore
from ..tables import Table
from ..tasks import is_binary_metric, scorer_registry

CHANCE_SCORERS = {"accuracy": ("accuracy", "accuracy_lenient")}
"""Scorers whose metrics have a chance level, and those metrics: single-answer multiple choice."""
CHANCE_SOURCE = "chance = mean of 1/k over the run's answered items, k = the item's number of options"
"""How the chance level of a single-answer multiple-choice accuracy is found."""


def legend_table(runs: Sequence[RunRecord], labels: Mapping[str, str]) -> Table:
    """Each run's short label with everything that defines it: provider, model, task options, settings."""
    from ..models import parse_model_spec

    table = Table("Runs", ["label", "run id", "provider", "model", "task", "task options", "settings"])
    for run in runs:
        provider, name = parse_model_spec(run.model)
        config = run.config
        settings = {k: v for k, v in (config.get("generate") or {}).items() if v is not None}
        settings |= {f"role.{k}": v.get("model") for k, v in (config.get("roles") or {}).items()}
        settings |= {k: config[k] for k in ("epochs", "seed") if k in config}
        options = _pairs(config.get("task_args"))
        table.add(labels[run.run_id], run.run_id, provider, name or provider, run.task, options, _pairs(settings))
    return table


def _pairs(values: Mapping[str, object] | None) -> str | None:
    """``k=v`` pairs in full (JSON for lists and objects), or ``None`` when there are none."""
    if not values:
        return None
    return ", ".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in sorted(values.items()))


def metric_definition(scorer: str, metric: str) -> str:
    """The metric's entry in its scorer's ``Metrics:`` docstring section, else the scorer's summary line."""
    registered = registered_scorer(scorer)
    if registered is None:
        return ""
    return metric_entry(registered, metric) or docstring_summary(scorer_registry.get(registered))


def registered_scorer(scorer: str) -> str | None:
    """The registered name of a scorer named with a variant or a tag (``…@p3``, ``…[tag]``), or ``None``."""
    registered = scorer if scorer in scorer_registry else re.split(r"[@\[]", scorer, maxsplit=1)[0]
    return registered if registered in scorer_registry else None


def metric_entry(scorer: str, metric: str) -> str | None:
    """The entry of the registered ``scorer``'s ``Metrics:`` section naming ``metric`` or a pattern of it, or ``None``.

    Patterns (``*_lenient``, ``f1@*``, ``rubric/*``) define metrics whose names depend on settings.
    """
    entries = section_docs(scorer_registry.get(scorer), ("Metrics:",))
    patterns = (text for name, text in entries.items() if "*" in name and fnmatchcase(metric, name))
    return entries.get(metric) or next(patterns, None)


def glossary_table(keys: Iterable[tuple[str, str, str]], chance: bool) -> Table:
    """One row per (score set label, scorer name, metric): its kind and its definition."""
    table = Table("Glossary of metrics", ["score set", "scorer", "metric", "kind", "definition"])
    for label, scorer, metric in sorted(set(keys)):
        kind = "binary (0/1)" if is_binary_metric(scorer, metric) else "scale"
        table.add(label, scorer, metric, kind, metric_definition(scorer, metric) or None)
    table.notes.append("Definitions come from the scorers' docstrings: their Metrics section, else their summary line.")
    if chance:
        table.notes.append(f"Dashed lines in the figures mark chance: {CHANCE_SOURCE}.")
    return table


def chance_level(store: RunStore, run_id: str) -> float | None:
    """The accuracy a uniform guess expects on the run's single-answer multiple-choice items, else ``None``."""
    levels = {
        sample.id: 1 / len(sample.choices)
        for sample, _generation in store.generations(run_id)
        if sample.choices and len(sample.targets) == 1
    }
    return sum(levels.values()) / len(levels) if levels else None
