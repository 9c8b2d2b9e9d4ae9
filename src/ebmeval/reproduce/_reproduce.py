"""Running a preset's conditions on the user's models, each as an ordinary resumable run."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .._util.defaults import DEFAULT_STORE
from .._util.errors import UsageError
from ..runner import RunConfig, RunResult, RunSummary, config_from_flags, summarize
from ..runner import run as run_config
from ..store import RunStore
from ..tasks import create_task
from ._preset import Condition, Preset


@dataclass
class ConditionRun:
    """One condition run on one model: the run it is in the store and what this invocation did."""

    condition: str
    model: str
    run_id: str
    status: str
    errors: int
    samples: set[str] | None
    """The samples asked for (a ``--limit`` subset), ``None`` for all."""
    score_sets: list[str]
    """Ids of the score sets of the condition's scorers (a run may hold others, from other options)."""


@dataclass
class Reproduction:
    """A preset's runs, and their summaries as the table builders ask for them.

    Attributes:
        preset: The preset.
        models: Model specs in the order the user named them.
        runs: ``(condition, model)`` → its run.
        store: Path of the run store.
        rows: Model spec → the paper's row it reproduces (the preset's, overridden by the user's).
        options: The user's ``--preset-arg`` values (table builders read those marked ``tables``).
        roles: The user's role models (``--role judge=SPEC``: ``{"judge": {"model": SPEC, "args": {…}}}``),
            for table builders that judge the runs themselves (an arena).
        seed: The user's ``--seed``, for a table builder's own random choices.
    """

    preset: Preset
    models: list[str]
    runs: dict[tuple[str, str], ConditionRun]
    store: str
    rows: dict[str, str] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    roles: dict[str, dict[str, Any]] = field(default_factory=dict)
    seed: int | None = None
    _summaries: dict[tuple[str, str, str | None], RunSummary] = field(default_factory=dict, repr=False)

    def summary(self, condition: str, model: str, *, by: str | None = None) -> RunSummary | None:
        """The summary of ``condition`` on ``model`` (per ``metadata[by]`` group too), ``None`` when not run."""
        found = self.runs.get((condition, model))
        if found is None:
            return None
        key = (condition, model, by)
        if key not in self._summaries:
            with self.read_store() as store:
                self._summaries[key] = summarize(store, found.run_id, by=by, samples=found.samples)
        return self._summaries[key]

    @contextmanager
    def read_store(self) -> Iterator[RunStore]:
        """The run store, opened read-only and closed on leaving (for table builders that read runs themselves)."""
        store = RunStore(self.store, read_only=True)
        try:
            yield store
        finally:
            store.close()

    def row(self, model: str, paper_rows: Iterable[str] = ()) -> str | None:
        """The paper's row that ``model`` reproduces: the one given for it, else the one of ``paper_rows`` named alike.

        A row given for the model counts only if it is one of ``paper_rows`` (when given). Names
        are alike when they are equal ignoring case and punctuation, the model's name read
        without provider, path and URL (``openai-compatible:gpt-4.1@http://…`` is "GPT4.1").
        """
        candidates = list(paper_rows)
        if model in self.rows and (not candidates or self.rows[model] in candidates):
            return self.rows[model]
        name = _plain(model.partition(":")[2].partition("@")[0].rsplit("/", 1)[-1] or model)
        return next((row for row in candidates if _plain(row) == name), None)


def _plain(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def condition_config(
    condition: Condition,
    model: str,
    *,
    model_args: Mapping[str, Any],
    roles: Mapping[str, Mapping[str, Any]],
    settings: Mapping[str, Any],
    options: Mapping[str, Any] | None = None,
) -> RunConfig:
    """The run config of ``condition`` on ``model``: the condition's task and options, the user's model and settings.

    Roles the condition's task does not use are left out, so one ``--role judge=…`` serves the
    conditions that need a judge. ``settings`` are further :class:`RunConfig` fields (``limit``,
    ``store``, ``seed`` …); a ``generate`` or ``scorer_args`` among them applies on top of the
    condition's. ``options`` are the user's preset options: those the condition names in
    ``Condition.inputs`` become task options.
    """
    given = options or {}
    task_args = {**condition.task_args, **{key: given[key] for key in condition.inputs if key in given}}
    used = set(create_task(condition.task, **task_args).roles)
    generate = {**condition.generate, **settings.get("generate", {})}
    scorer_args = {**condition.scorer_args, **settings.get("scorer_args", {})}
    fields = {k: v for k, v in settings.items() if k not in ("generate", "scorer_args")}
    return config_from_flags(
        task=condition.task,
        task_args=task_args,
        model=model,
        model_args=dict(model_args),
        roles={name: dict(role) for name, role in roles.items() if name in used},
        generate=generate or None,
        scorer_args=scorer_args or None,
        **fields,
    )


def reproduce(
    preset: Preset,
    models: Sequence[str],
    *,
    conditions: Sequence[str] = (),
    options: Mapping[str, Any] | None = None,
    model_args: Mapping[str, Any] | None = None,
    roles: Mapping[str, Mapping[str, Any]] | None = None,
    rows: Mapping[str, str] | None = None,
    settings: Mapping[str, Any] | None = None,
    run: Callable[[RunConfig, str], RunResult] | None = None,
) -> Reproduction:
    """Run the preset's default conditions (or those named) on each model, resuming what is stored.

    Every condition × model is an ordinary run in the run store: a second call with the same
    arguments resumes or reuses them. ``options`` are the user's values of the preset's options
    (``Preset.options``); an unknown one, a required one that a chosen condition lacks, or a row of
    ``rows`` for a model not in ``models`` is a ``UsageError`` before any run starts. ``run`` runs
    one config, given with a label naming the condition and model (the CLI passes one that shows
    progress); by default ``ebmeval.run``.
    """
    if not models:
        raise UsageError("name at least one model with --model SPEC")
    strangers = [spec for spec in rows or {} if spec not in models]
    if strangers:
        raise UsageError(f"--paper-row names {strangers[0]!r}, which no --model runs (models: {', '.join(models)})")
    given_options = dict(options or {})
    chosen = [preset.condition(n) for n in conditions] if conditions else preset.default_conditions(given_options)
    preset.check_options(given_options, chosen)
    given = dict(settings or {})
    done: dict[tuple[str, str], ConditionRun] = {}
    for model in models:
        for condition in chosen:
            config = condition_config(
                condition, model, model_args=model_args or {}, roles=roles or {}, settings=given, options=options
            )
            label = f"{preset.name} · {condition.name} · {model}"
            result = run(config, label) if run is not None else run_config(config)
            subset = result.sample_ids if config.limit is not None or config.shard is not None else None
            done[(condition.name, model)] = ConditionRun(
                condition=condition.name,
                model=model,
                run_id=result.run.run_id,
                status=result.run.status,
                errors=result.progress.errors,
                samples=subset,
                score_sets=[s.id for s in result.score_sets],
            )
    return Reproduction(
        preset=preset,
        models=list(models),
        runs=done,
        store=str(given.get("store", DEFAULT_STORE)),
        rows={**preset.rows, **(rows or {})},
        options=given_options,
        roles={name: dict(role) for name, role in (roles or {}).items()},
        seed=given.get("seed"),
    )
