"""The run configuration, from flags or a YAML file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .._util.defaults import DEFAULT_STORE as DEFAULT_STORE
from .._util.errors import ConfigError
from ..models import GenerateConfig

GENERATION_MODEL_ARGS = ("reasoning_effort",)
"""Generation settings also taken as model options: ``--model-arg reasoning_effort=high`` sets ``generate``'s."""

MAX_EPOCHS = 1000
"""Most epochs a run may have."""


class RoleConfig(BaseModel):
    """The model playing one role (``judge`` …) and its own provider options."""

    model_config = ConfigDict(extra="forbid")

    model: str
    """Model spec, as for the model under evaluation."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Provider options of this role's model (its own API key variable, timeout, threads …)."""


class RunConfig(BaseModel):
    """Everything that defines one run; every field has one meaning."""

    model_config = ConfigDict(extra="forbid")

    task: str
    """Registered task name, e.g. ``pubmedqa``."""
    task_args: dict[str, Any] = Field(default_factory=dict)
    """Options of the task factory, e.g. ``{"context": "none"}``."""
    model: str = "local"
    """Spec of the model under evaluation (``local``, ``openai-compatible:m@url`` …)."""
    model_args: dict[str, Any] = Field(default_factory=dict)
    """Provider options, e.g. ``{"n_ctx": 4096}``."""
    scorer_args: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Options of the task's scorers by scorer name, over the task's own (``{multi_answer: {lca_credit:
    [1, 0.5, 0.2]}}``); other options than before score into a new score set of the same run."""
    roles: dict[str, RoleConfig] = Field(default_factory=dict)
    """Models for other roles the task needs (``judge`` …), each a spec or ``{model: SPEC, args: {…}}``;
    unset roles use ``model``."""
    generate: GenerateConfig = Field(default_factory=GenerateConfig)
    """Generation settings that override the task's defaults."""
    steps: dict[str, GenerateConfig] = Field(default_factory=dict)
    """Settings per kind of model call (``synthesis/negate: {max_tokens: 2048}``), overriding what the
    call declares (``ebmeval describe TASK`` lists a task's calls)."""
    seed: int = Field(default=0, strict=True, ge=-(2**63), le=2**63 - 1)
    """Seed of every random choice in the run; epoch ``e`` samples with ``seed + e``."""
    epochs: int = Field(default=1, ge=1, le=MAX_EPOCHS, strict=True)
    """How many times each sample is answered (at most :data:`MAX_EPOCHS`)."""
    limit: int | None = Field(default=None, gt=0, strict=True)
    """Answer only ``limit`` samples (not part of the run's identity)."""
    shard: str | None = None
    """``"I/N"``: answer only shard ``I`` of ``N`` of the selected samples, those whose
    ``int(sha256(id)) % N == I - 1`` (after ``limit``; not part of the run's identity, so the
    shards of a run share its id and their stores merge with ``ebmeval store merge``)."""
    shuffle: bool = True
    """Take samples in a fixed pseudo-random order (by hash of their id), so a ``limit`` subset
    represents the whole dataset (upstream files are often grouped by label) and is the same for
    every run of the task; ``False`` keeps the dataset's order."""
    concurrency: int | None = Field(default=None, gt=0, strict=True)
    """Samples in flight at once; default: what the model serves well."""
    store: str = DEFAULT_STORE
    """Path of the SQLite run store (an empty one is refused, not taken as the current folder)."""
    cache: bool = True
    """Reuse cached model responses for identical requests."""

    @field_validator("store")
    @classmethod
    def _store_path(cls, value: str) -> str:
        """A path, not an empty string."""
        if not value.strip():
            raise ValueError("the run store needs a path, not an empty string")
        return value

    @field_validator("shard")
    @classmethod
    def _shard_format(cls, value: str | None) -> str | None:
        """``I/N`` with ``1 <= I <= N``."""
        if value is not None:
            parse_shard(value)
        return value

    @model_validator(mode="before")
    @classmethod
    def _generation_in_model_args(cls, value: Any) -> Any:
        """Generation settings given as provider options (``--model-arg reasoning_effort=high``) go to ``generate``."""
        if not isinstance(value, dict) or not isinstance(value.get("model_args"), dict):
            return value
        moved = {k: v for k, v in value["model_args"].items() if k in GENERATION_MODEL_ARGS}
        if not moved:
            return value
        generate = value.get("generate") or {}
        generate = generate.model_dump(exclude_unset=True) if isinstance(generate, GenerateConfig) else dict(generate)
        twice = sorted(set(moved) & set(generate))
        if twice:
            raise ValueError(f"{twice[0]} is given both as a model option and a generation setting")
        model_args = {k: v for k, v in value["model_args"].items() if k not in moved}
        return {**value, "model_args": model_args, "generate": {**generate, **moved}}

    @field_validator("roles", mode="before")
    @classmethod
    def _role_specs(cls, value: Any) -> Any:
        """A bare model spec is a role with no options."""
        if isinstance(value, dict):
            return {role: {"model": spec} if isinstance(spec, str) else spec for role, spec in value.items()}
        return value


def parse_shard(value: str) -> tuple[int, int]:
    """``(I, N)`` of a shard written ``"I/N"``; ``ValueError`` unless ``1 <= I <= N``."""
    index, sep, count = value.partition("/")
    if not sep or not index.strip().isdigit() or not count.strip().isdigit():
        raise ValueError(f"shard must be I/N, e.g. 1/4, not {value!r}")
    i, n = int(index), int(count)
    if not 1 <= i <= n:
        raise ValueError(f"shard {value!r} needs 1 <= I <= N")
    return i, n


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> RunConfig:
    """Read a YAML run config; ``overrides`` (from flags) replace top-level fields.

    The file (or a ``--model`` flag) must name the model: a config is refused rather than run
    on the default local model by accident. A config naming several tasks or models is a grid:
    read it with :func:`load_grid`.

    Errors name the file, the field and, where the YAML shows it, the line.
    """
    configs = load_grid(path, overrides)
    if len(configs) > 1:
        raise ConfigError("task", f"names {len(configs)} runs (a grid); read it with load_grid", source=str(path))
    return configs[0]


def load_grid(path: str | Path, overrides: dict[str, Any] | None = None) -> list[RunConfig]:
    """The runs a YAML run config names: one per task × model where ``task`` or ``model`` is a list.

    ``overrides`` (from flags) replace top-level fields first; every run shares the other fields.
    """
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError("config", f"cannot read {source}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        bad_line = source.read_bytes()[: exc.start].count(b"\n") + 1
        raise ConfigError("config", f"not UTF-8 text ({exc.reason})", source=f"{source}:{bad_line}") from exc
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        _refuse_duplicate_keys(root, source)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError("config", f"not valid YAML: {exc}", source=str(source)) from exc
    if not isinstance(data, dict):
        raise ConfigError("config", "the file must hold a mapping of fields", source=str(source))
    data.update(overrides or {})
    configs = []
    for cell in grid_cells(data, str(source)):
        try:
            configs.append(RunConfig.model_validate(cell))
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = [str(part) for part in first["loc"]]
            line = _line_of(root, loc)
            where = f"{source}:{line}" if line else str(source)
            raise ConfigError(
                ".".join(loc) or "config", f"{first['msg']} (value: {first.get('input')!r})", source=where
            ) from exc
    if "model" not in data:  # only a run from flags alone takes the default model
        raise ConfigError(
            "model", "missing: a config file names the model it evaluates (model: local for the bundled one)",
            source=str(source),
        )  # fmt: skip
    return configs


def config_from_flags(**fields: Any) -> RunConfig:
    """A config from command-line values; ``None`` values take the defaults."""
    given = {k: v for k, v in fields.items() if v is not None}
    try:
        return RunConfig.model_validate(given)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(part) for part in first["loc"])
        raise ConfigError(loc or "config", f"{first['msg']} (value: {first.get('input')!r})") from exc


def grid_from_flags(**fields: Any) -> list[RunConfig]:
    """The configs of command-line values whose ``task`` or ``model`` may be lists: one per task × model."""
    given = {k: v for k, v in fields.items() if v is not None}
    return [config_from_flags(**cell) for cell in grid_cells(given, "--task/--model")]


GRID_FIELDS = ("task", "model")
"""Fields a list of values turns into a grid of runs."""


def grid_cells(data: dict[str, Any], source: str) -> list[dict[str, Any]]:
    """``data`` once per combination of its ``task`` and ``model`` values (each a value or a list of them)."""
    cells = [dict(data)]
    for name in GRID_FIELDS:
        if not isinstance(data.get(name), list):
            continue
        values = data[name]
        if not values:
            raise ConfigError(name, "an empty list names no run", source=source)
        repeated = sorted({str(v) for v in values if values.count(v) > 1})
        if repeated:
            raise ConfigError(name, f"{repeated[0]!r} is listed twice", source=source)
        cells = [{**cell, name: value} for cell in cells for value in values]
    return cells


def _refuse_duplicate_keys(node: yaml.Node | None, source: Path, path: str = "") -> None:
    """``ConfigError`` at the line of a key given twice in one mapping (YAML would keep the last)."""
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            name = str(key.value)
            field = f"{path}.{name}" if path else name
            if name in seen:
                raise ConfigError(field, "given twice", source=f"{source}:{key.start_mark.line + 1}")
            seen.add(name)
            _refuse_duplicate_keys(value, source, field)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _refuse_duplicate_keys(item, source, path)


def _line_of(node: yaml.Node | None, loc: list[str]) -> int | None:
    """1-based line of the YAML key at ``loc``, as deep as the document has it."""
    line: int | None = None
    for part in loc:
        if not isinstance(node, yaml.MappingNode):
            break
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == part:
                line = key.start_mark.line + 1
                node = value
                break
        else:
            break
    return line
