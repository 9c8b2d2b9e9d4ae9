"""What a workflow or scorer sees while it works on one sample."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from .._util.errors import UnknownNameError, UsageError
from .._util.hashing import stable_hash
from ..models import ChatMessage, DegenerateReplyError, GenerateConfig, Model, ModelOutput
from ._calls import Call, default_call


class StepMemo(Protocol):
    """Durable record of the finished steps of one sample (the run store implements it).

    A step is keyed by its name and, for a model call, the request it sent (the model's
    identity, the messages and the settings); other steps use the empty request ``""``.
    """

    def get_step(self, step: str, request: str = "") -> dict[str, Any] | None:
        """The payload recorded for ``step`` under ``request``, if it finished before."""

    def put_step(self, step: str, payload: dict[str, Any], request: str = "") -> None:
        """Record ``step`` under ``request`` as finished with ``payload`` (first write wins)."""


class MemoryMemo:
    """A :class:`StepMemo` held in memory, for use outside a run store."""

    def __init__(self) -> None:
        self.steps: dict[tuple[str, str], dict[str, Any]] = {}

    def get_step(self, step: str, request: str = "") -> dict[str, Any] | None:
        """The payload recorded for ``step`` under ``request``."""
        return self.steps.get((step, request))

    def put_step(self, step: str, payload: dict[str, Any], request: str = "") -> None:
        """Record ``step`` unless it is already recorded under ``request``."""
        self.steps.setdefault((step, request), payload)


def _accepted(call: Call, output: ModelOutput) -> ModelOutput | None:
    """``output`` if ``call`` accepts it, else ``None``."""
    try:
        return call.check(output)
    except DegenerateReplyError:
        return None


def sample_seed(run_seed: int, epoch: int, sample_id: str) -> int:
    """The seed of one sample's requests: a hash of the run seed, the epoch and the sample id.

    Every request of a sample carries it (unless its settings name a seed), so epochs sampled
    at a temperature above 0 are independent draws, and the same run reproduces them.
    """
    return int(stable_hash([run_seed, epoch, sample_id], 8), 16) & 0x7FFFFFFF


class SampleContext:
    """Models by role and the step memo of one sample.

    Every model call goes through :meth:`generate` under a step name unique within the
    sample, as a declared :class:`~ebmeval.tasks.Call` that sets its settings and the replies
    it accepts. A call that finished in an earlier, interrupted run is replayed from the memo
    only when the request is the one recorded (same model identity, messages and
    settings); otherwise it is sent and recorded under its own request, so a resumed run or
    a rescore with another judge never mixes models.
    """

    def __init__(
        self,
        models: Mapping[str, Model],
        memo: StepMemo | None = None,
        *,
        seed: int = 0,
        run_settings: GenerateConfig | None = None,
        overrides: Mapping[str, GenerateConfig] | None = None,
    ) -> None:
        self.models = dict(models)
        self.memo: StepMemo = memo if memo is not None else MemoryMemo()
        self.seed = seed
        """The sample's seed (:func:`sample_seed`), sent with every request that names none."""
        self.run_settings = run_settings
        """The run's explicit settings (``--temperature``, ``--max-tokens``), applied to answer steps."""
        self.overrides = dict(overrides or {})
        """Settings per call name from the run config's ``steps:``, applied last."""
        self.steps: list[str] = []
        self.outputs: list[ModelOutput] = []
        """The output of every model call of the sample so far, sent or replayed."""
        self.scorer: str | None = None
        """The scorer this context is lent to (:meth:`for_scorer`), which may call only ``roles``."""
        self.roles: frozenset[str] | None = None

    def for_scorer(self, name: str, roles: Sequence[str]) -> SampleContext:
        """This context as the scorer ``name`` sees it: a call to a role not in ``roles`` is refused.

        The steps, outputs and memo are shared with this context.
        """
        view = copy.copy(self)
        view.scorer, view.roles = name, frozenset(roles)
        return view

    def model(self, role: str = "model") -> Model:
        """The model playing ``role`` (``model`` is the one under evaluation)."""
        if self.roles is not None and role not in self.roles:
            raise UsageError(
                f"scorer '{self.scorer}' calls the '{role}' model but does not declare that role; declare it "
                f"(@scorer('{self.scorer}', roles=['{role}']) or a `roles` attribute) so its score set names the model"
            )
        try:
            return self.models[role]
        except KeyError:
            raise UnknownNameError("model role", role, self.models) from None

    async def generate(
        self,
        step: str,
        messages: str | Sequence[ChatMessage],
        config: GenerateConfig | None = None,
        *,
        role: str = "model",
        call: Call | None = None,
    ) -> ModelOutput:
        """Run (or replay) the model call named ``step`` as ``call`` (default: :func:`~ebmeval.tasks.default_call`).

        Raises:
            DegenerateReplyError: The reply is one ``call`` does not accept; nothing is recorded.
        """
        call = call or default_call(role)
        chosen = self.model(role)
        request = chosen.request(messages, self.settings(call, chosen, config))
        done = self.memo.get_step(step, request.key)
        self.steps.append(step)
        output = None if done is None else _accepted(call, ModelOutput.model_validate(done["output"]))
        if output is None:  # not sent before, or recorded by a release that kept replies now refused
            output = await chosen.send(request, call.check)
            self.memo.put_step(
                step,
                {
                    "role": role,
                    "model": chosen.name,
                    "call": call.name,
                    "purpose": call.purpose,
                    "settings": request.config.model_dump(exclude_none=True, exclude={"timeout"}),
                    "messages": [m.model_dump() for m in request.messages],
                    "output": output.model_dump(exclude={"raw"}),
                },
                request.key,
            )
        self.outputs.append(output)
        return output

    def settings(self, call: Call, model: Model, config: GenerateConfig | None = None) -> GenerateConfig:
        """What ``call`` sends to ``model`` for a site giving ``config`` (:meth:`Call.settings`), seeded."""
        chosen = call.settings(model, config, run=self.run_settings, override=self.overrides.get(call.name))
        if model.config.merge(chosen).seed is None:
            chosen = chosen.merge(GenerateConfig(seed=self.seed))
        return chosen

    def record(self, step: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Record a step that is not a model call (retrieval, a computed plan …).

        Returns the payload recorded earlier under the same name, if any, so a resumed
        sample sees exactly what the interrupted one saw.
        """
        done = self.replay(step)
        if done is not None:
            return done
        self.steps.append(step)
        self.memo.put_step(step, payload)
        return payload

    def replay(self, step: str) -> dict[str, Any] | None:
        """The payload of the non-model step ``step`` if it finished in an earlier run (it then counts as a step here).

        Lets a workflow skip costly work (a retrieval, say) whose result is already recorded.
        """
        done = self.memo.get_step(step)
        if done is not None:
            self.steps.append(step)
        return done
