"""Tasks: a dataset, a workflow that produces an answer, and scorers that grade it."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from .._util.errors import ConfigError
from .._util.options import check_options, signature_options
from .._util.registry import Registry
from ..models import GenerateConfig, Usage
from ..prompts import PromptTemplate
from ._calls import ANSWER, JUDGE, THINKING_BUDGET, Call
from ._context import SampleContext
from ._identity import ScorerDeclaration, declare, declared, describe_value, same_setting, scorer_roles
from ._sample import ParsedAnswer, RetrievedDocument, Sample
from ._task_file import task_file


class WorkflowResult(BaseModel):
    """What a workflow produced for one sample."""

    output: str
    """The final text answer."""
    retrieved: list[RetrievedDocument] | None = None
    """Documents retrieved for the sample, in rank order, when the workflow retrieves."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Workflow-specific details worth keeping (truncation applied, iterations …)."""
    from_reply: bool = True
    """Whether ``output`` is read from the text of the workflow's last model call, so that a reply
    cut at its token limit leaves the answer incomplete; ``False`` where it is not (the option
    letter read from log-probabilities)."""


@runtime_checkable
class Workflow(Protocol):
    """Produces an answer for one sample, calling models through the context."""

    name: str

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        """Answer ``sample``."""


class Generation(BaseModel):
    """A stored answer: the workflow result plus its parsed form and costs."""

    sample_id: str
    epoch: int = 0
    output: str
    answer: ParsedAnswer
    retrieved: list[RetrievedDocument] | None = None
    steps: list[str] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    latency: float = 0.0
    metadata: dict[str, Any] = Field(default_factory=dict)
    truncated: bool = False
    """Whether a model call of the workflow stopped at its token limit."""
    answer_truncated: bool = False
    """Whether the reply the answer is read from stopped at its token limit: the answer is
    incomplete, so no scorer grades it (each records an empty score counted as a truncation)."""
    reasoning: str | None = None
    """The thinking trace of the final answer's call, kept apart from ``output``."""


class Score(BaseModel):
    """The grade one scorer gives one generation.

    ``values`` holds named per-sample metrics (``accuracy``, ``f1`` …); ``None``
    marks a metric that could not be computed for this sample (e.g. unparsed), and
    is counted, not averaged.
    """

    values: dict[str, float | None]
    explanation: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


@runtime_checkable
class Scorer(Protocol):
    """Grades a generation; judges call models through the context."""

    name: str

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        """Grade ``generation`` of ``sample``."""


AnswerParser = Callable[[str, Sample], ParsedAnswer]
"""Extracts the task's answer form from raw output text."""


def keep_text(output: str, sample: Sample) -> ParsedAnswer:
    """The parser of free-text tasks: the stripped output is the answer; empty is unparsed."""
    text = output.strip()
    return ParsedAnswer(value=text, method="text") if text else ParsedAnswer.unparsed("text")


@dataclass
class Task:
    """A dataset with the workflow that answers it and the scorers that grade it."""

    name: str
    """Registered name, e.g. ``pubmedqa`` or ``mirage/medqa``."""
    dataset: Sequence[Sample]
    """The samples, in a stable order."""
    workflow: Workflow
    """How an answer is produced."""
    scorers: Sequence[Scorer]
    """How answers are graded."""
    parser: AnswerParser = keep_text
    """How the answer is read from the output."""
    version: str = "1"
    """Bumped whenever data, prompts or scoring change in a way that changes results."""
    args: dict[str, Any] = field(default_factory=dict)
    """The arguments the task factory was called with (recorded in the run)."""
    generate_config: GenerateConfig = field(default_factory=GenerateConfig)
    """Task defaults for generation (e.g. ``max_tokens``); run settings override them."""
    reasoning_generate_config: GenerateConfig | None = None
    """The defaults for a model that thinks before answering (budgets with room for the trace);
    unset, ``generate_config`` with a budget of at least ``THINKING_BUDGET``."""

    def thinking_config(self) -> GenerateConfig:
        """The generation defaults for a model that thinks (see ``reasoning_generate_config``)."""
        if self.reasoning_generate_config is not None:
            return self.reasoning_generate_config
        budget = max(self.generate_config.max_tokens or 0, THINKING_BUDGET)
        return self.generate_config.model_copy(update={"max_tokens": budget})

    roles: Sequence[str] = ()
    """Model roles beyond ``model`` that the workflow or scorers need (e.g. ``judge``)."""
    role_defaults: dict[str, str] = field(default_factory=dict)
    """Role → model spec playing it when the run names none (else the model under evaluation plays it):
    a role whose output must be the same for every model compared, such as the negator; ``role:<other>``
    names the model of a role listed before it (the negation checker defaults to the negator's model)."""
    content_args: frozenset[str] = frozenset()
    """Arguments identified by their content, which ``version`` holds (a retrieval index by its
    identity): left out of the run's identity, so ``idx``, ``idx/``, its absolute path and an
    identical copy name one run. Set with :func:`identified_by_content`, which joins the identities
    to the version at the same time."""
    normalised_args: dict[str, Any] = field(default_factory=dict, kw_only=True)
    """Options recorded, and identifying the run, in the normal form the factory gave them rather than as
    given: a file path resolved, so that ``neg.sqlite``, ``./neg.sqlite`` and its absolute path name one
    run (:func:`create_task` records these values in ``args``)."""
    inapplicable_args: frozenset[str] = frozenset()
    """Options the chosen workflow does not use (``max_iterations`` with ``golden-rag``): left out of
    the run's identity, and a run that sets one says it was ignored."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Data card facts: source, licence, size."""
    next_step: str | None = None
    """For a task with no scorer (its answers are judged afterwards), the command to run next:
    ``{run}`` stands for the run's id, ``{task}`` for the task's name. A run prints it."""


def identified_by_content(task: Task, identities: Mapping[str, str | None]) -> Task:
    """``task`` whose options named in ``identities`` are identified by content, not by the paths naming them.

    Each identity (an index's hash, a model folder's fingerprint; ``None`` for an option not set)
    joins ``version`` and its option joins ``content_args``, which the run identity leaves out:
    ``idx``, ``idx/``, its absolute path and an identical copy name one run, another index another.
    """
    tail = "".join(f".{identity}" for identity in identities.values() if identity is not None)
    return dataclasses.replace(task, version=task.version + tail, content_args=task.content_args | set(identities))


def task_calls(task: Task) -> list[tuple[str, Call]]:
    """The kinds of model call ``task`` makes, each with the role that plays it.

    The answer, the calls its workflow and scorers declare (a ``calls`` attribute of
    ``(role, Call)`` pairs), and for every other role the task needs a judge's question.
    """
    found: list[tuple[str, Call]] = [("model", ANSWER)]
    for part in (task.workflow, *task.scorers):
        found += [pair for pair in getattr(part, "calls", ()) if pair not in found]
    covered = {role for role, _ in found}
    found += [(role, JUDGE) for role in task.roles if role not in covered]
    return found


def templates_by_call(part: object, default: Call) -> dict[str, tuple[PromptTemplate, ...]]:
    """Call name → the templates ``part`` (a workflow or scorer) renders the prompts of that call from.

    Its ``call_templates`` (call name → templates), and for the ``default`` call where those do not
    name it, its ``templates``: a workflow's answer, a scorer's judge question.
    """
    found: dict[str, tuple[PromptTemplate, ...]] = dict(getattr(part, "call_templates", {}))
    own = getattr(part, "templates", ())
    found.setdefault(default.name, tuple(t for t in own if isinstance(t, PromptTemplate)))
    return found


def call_templates(task: Task, role: str, call: Call) -> list[str]:
    """The ids (``name@vN``) of the templates of ``call`` played by ``role``.

    Those the workflow declares for it, and those of the scorers that call ``role`` (see :func:`templates_by_call`).
    """
    parts = [
        templates_by_call(task.workflow, ANSWER),
        *(templates_by_call(s, JUDGE) for s in task.scorers if role in scorer_roles(s)),
    ]
    return list(dict.fromkeys(t.id for part in parts for t in part.get(call.name, ())))


def call_rows(task: Task) -> list[dict[str, object]]:
    """:func:`task_calls` as ``ebmeval describe`` and ``show-prompt`` show them (see :meth:`Call.row`).

    Each row adds ``templates``: the ids of the templates that version the call, every one its
    prompts can be rendered from under the task's options (a given prompt may use only some).
    """
    answer, thinking = task.generate_config, task.thinking_config()
    return [
        {**_shown(task, role, call).row(role, answer, thinking), "templates": call_templates(task, role, call)}
        for role, call in task_calls(task)
    ]


def _shown(task: Task, role: str, call: Call) -> Call:
    """``call`` as shown: a judge's question with the settings of the scorers that ask ``role``, when they agree.

    A judge's temperature and budget are its scorer's (its ``config``), not the call's; where every
    scorer asking ``role`` holds one and they are the same, the row shows them instead of ``-``.
    """
    if call != JUDGE:
        return call
    configs = [getattr(s, "config", None) for s in task.scorers if role in scorer_roles(s)]
    settings = {(c.temperature, c.max_tokens) for c in configs if isinstance(c, GenerateConfig)}
    if len(settings) != 1 or len(configs) != sum(isinstance(c, GenerateConfig) for c in configs):
        return call
    temperature, max_tokens = settings.pop()
    return dataclasses.replace(call, temperature=temperature, max_tokens=max_tokens)


TaskFactory = Callable[..., Task]

task_registry: Registry[TaskFactory] = Registry("task")
"""Built-in and user tasks by name."""


def task(name: str) -> Callable[[TaskFactory], TaskFactory]:
    """Register a task factory under ``name``; its keyword arguments are the task's options."""
    return task_registry.register(name)


RunMetric = Callable[[Sequence[Score]], dict[str, tuple[float | None, tuple[float, float] | None]]]
"""A scorer's run-level metrics: from all its scores of a run, metric name → (value, 95% CI)."""

run_metric_registry: Registry[RunMetric] = Registry("run metric")
"""Run-level metrics by the name of the scorer that declares them."""


def run_metric(scorer_name: str) -> Callable[[RunMetric], RunMetric]:
    """Declare the run-level metrics of the scorer named ``scorer_name`` (e.g. micro-F1 over samples).

    Every summary of a run (``show``, ``run --json``, ``report``) lists them beside the per-sample
    means, computed from all the scores of that scorer's score set.
    """
    return run_metric_registry.register(scorer_name)


ScorerFactory = Callable[..., Scorer]

scorer_registry: Registry[ScorerFactory] = Registry("scorer")
"""Scorers that can be named on the command line (``ebmeval rescore RUN --scorer NAME``)."""


_declarations: dict[str, ScorerDeclaration] = {}


def scorer(
    name: str,
    *,
    roles: Sequence[str] = (),
    version: str | None = None,
    binary: Sequence[str] = (),
    non_identity: Sequence[str] = (),
) -> Callable[[ScorerFactory], ScorerFactory]:
    """Register a scorer factory under a namespaced ``name`` such as ``judge/rubric-0-5``: its one declaration.

    Every scorer the factory builds declares ``roles``, the model roles it calls (``judge`` …),
    and ``version``; both, and the arguments the factory was called with (those that differ
    from its defaults, see :func:`factory_arguments`), are part of its score set's spec, so
    building it with other arguments gives another score set and the same arguments resume it.
    ``non_identity`` names the arguments that do not change its scores (left out of the spec).
    ``binary`` names its metrics that are 0 or 1 per sample: paired comparisons (``ebmeval
    compare``, reports) use McNemar's test on those and the paired t-test on every other,
    whatever values a run happens to hold (a 0-5 rubric that only gave 0s and 1s is still a
    scale). A call to a role it does not declare is refused.
    """
    declaration = ScorerDeclaration(tuple(roles), version, frozenset(binary), frozenset(non_identity))

    def register(factory: ScorerFactory) -> ScorerFactory:
        signature = inspect.signature(factory)
        unknown = sorted(declaration.non_identity - set(signature.parameters))
        if unknown:
            raise ValueError(f"scorer '{name}': non_identity names {unknown}, which its factory does not take")

        @functools.wraps(factory)
        def build(*args: Any, **kwargs: Any) -> Scorer:
            built = factory(*args, **kwargs)
            declare(built, declaration, factory_arguments(signature, args, kwargs))
            return built

        registered = scorer_registry.register(name)(build)
        _declarations[name] = declaration
        return registered

    return register


def factory_arguments(signature: inspect.Signature, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments of a call to a factory of ``signature`` that differ from its defaults, by name.

    A default is left out whether given or not, so both build one score set, and a scorer built
    with its defaults keeps the spec it had before its arguments were recorded (a changed
    default is a new ``version``).
    """
    bound = signature.bind(*args, **kwargs)
    found: dict[str, Any] = {}
    for key, value in bound.arguments.items():
        parameter = signature.parameters[key]
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            found |= value
        elif parameter.default is inspect.Parameter.empty or not same_setting(value, parameter.default):
            found[key] = value
    return found


def is_binary_metric(scorer_name: str, metric: str) -> bool:
    """Whether the scorer registered as ``scorer_name`` declared ``metric`` binary (see :func:`scorer`)."""
    if scorer_name not in _declarations:
        _ = scorer_name in scorer_registry  # loads the modules that register scorers
    declaration = _declarations.get(scorer_name)
    return declaration is not None and metric in declaration.binary


def create_scorer(name: str, **args: Any) -> Scorer:
    """Build the registered scorer ``name`` with ``args``."""
    factory = scorer_registry.get(name)
    checked = check_options(factory, args, kind="scorer", name=name, prefix="scorer_args")
    try:
        return factory(**checked)
    except TypeError as exc:
        raise ConfigError("scorer_args", f"scorer '{name}': {exc}") from exc


TaskLayer = Callable[..., Task]
"""A transformation every task accepts: ``layer(task, **options) -> Task`` (retrieval, say)."""

task_layers: list[TaskLayer] = []
"""The registered layers, applied in registration order by :func:`create_task`."""


def task_layer(layer: TaskLayer) -> TaskLayer:
    """Register ``layer``: its keyword options (after the task) become options of every task.

    :func:`create_task` applies a layer only when one of its options is given and the task's
    own factory does not take that option; the options given are recorded in ``Task.args``
    with the layer's defaults for the rest.
    """
    task_layers.append(layer)
    return layer


def layer_options(layer: TaskLayer) -> dict[str, inspect.Parameter]:
    """The options of ``layer``: its keyword parameters after the task."""
    return dict(list(signature_options(layer).items())[1:])


def with_scorer_args(task: Task, args: Mapping[str, Mapping[str, Any]]) -> Task:
    """``task`` with each scorer named in ``args`` rebuilt with those options over its own settings.

    A scorer's own settings are the arguments its registered factory was called with (so
    ``multi_answer`` keeps the task's ``unparsed`` and takes ``lca_credit`` from ``args``), or for
    a scorer built otherwise its attributes named like its factory's options.
    The name ``""`` stands for the task's only scorer. A name that is not one of the task's
    scorers is a ``ConfigError`` naming those there are.
    """
    names = [str(getattr(s, "name", "")) for s in task.scorers]
    if "" in args:
        if len(names) != 1:
            raise ConfigError("scorer_args", f"task '{task.name}' has scorers {names}: name one, SCORER:KEY=VALUE")
        args = {names[0]: {**args[""], **args.get(names[0], {})}}
    unknown = sorted(set(args) - set(names))
    if unknown:
        raise ConfigError("scorer_args", f"task '{task.name}' has no scorer {unknown[0]!r} (its scorers: {names})")
    rebuilt: list[Scorer] = []
    for name, scorer in zip(names, task.scorers, strict=True):
        if name not in args:
            rebuilt.append(scorer)
            continue
        record = declared(scorer)
        own = (
            dict(record.arguments)
            if record is not None
            else {
                k: getattr(scorer, k)
                for k in inspect.signature(scorer_registry.get(name)).parameters
                if hasattr(scorer, k)
            }
        )
        rebuilt.append(create_scorer(name, **{**own, **args[name]}))
    task.scorers = rebuilt
    return task


def create_task(name: str, **args: Any) -> Task:
    """Build the registered task ``name`` with ``args``, each checked against the factory's signature.

    Options of a :func:`task_layer` that the factory does not take are checked against the
    layer's signature and applied to the built task; an option the factory normalised
    (``Task.normalised_args``) is recorded in its normal form. Command-line values
    (:class:`~ebmeval._util.options.OptionText`) are read by the option's declared type; see
    :mod:`ebmeval._util.options`. Raises ``UnknownNameError`` for an unknown task and
    ``ConfigError`` for an option neither the factory nor a layer takes or a value of the wrong type.
    """
    factory = task_registry.get(task_file(name))
    own = signature_options(factory)
    layered = [(layer, layer_options(layer)) for layer in task_layers]
    by_layer = [{k: v for k, v in args.items() if k in options and k not in own} for _, options in layered]
    taken = {k for given in by_layer for k in given}
    rest = {k: v for k, v in args.items() if k not in taken}
    checked = check_options(factory, rest, kind="task", name=name, prefix="task_args")
    try:
        built = factory(**checked)
    except TypeError as exc:
        raise ConfigError("task_args", f"task '{name}': {exc}") from exc
    defaults = {k: p.default for k, p in own.items() if p.default is not inspect.Parameter.empty}
    recorded = {**defaults, **checked, **built.normalised_args}
    for (layer, options), given in zip(layered, by_layer, strict=True):
        if not given:
            continue
        values = check_options(layer, given, kind="task", name=name, prefix="task_args")
        built = layer(built, **values)
        recorded |= {k: p.default for k, p in options.items()} | values
    built.args = {k: describe_value(v) for k, v in recorded.items()}
    return built
