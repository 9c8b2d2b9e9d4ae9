"""What a workflow or scorer sees while it works on one sample."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from .._util.errors import UnknownNameError
from ..models import ChatMessage, GenerateConfig, Model, ModelOutput


class StepMemo(Protocol):
    """Durable record of the finished steps of one sample (the run store implements it)."""

    def get_step(self, step: str) -> dict[str, Any] | None:
        """The payload recorded for ``step``, if it finished before."""

    def put_step(self, step: str, payload: dict[str, Any]) -> None:
        """Record ``step`` as finished with ``payload`` (first write wins)."""


class MemoryMemo:
    """A :class:`StepMemo` held in memory, for use outside a run store."""

    def __init__(self) -> None:
        self.steps: dict[str, dict[str, Any]] = {}

    def get_step(self, step: str) -> dict[str, Any] | None:
        """The payload recorded for ``step``."""
        return self.steps.get(step)

    def put_step(self, step: str, payload: dict[str, Any]) -> None:
        """Record ``step`` unless it is already recorded."""
        self.steps.setdefault(step, payload)


class SampleContext:
    """Models by role and the step memo of one sample.

    Every model call goes through :meth:`generate` under a step name unique within the
    sample; a step that finished in an earlier, interrupted run is replayed from the
    memo instead of being sent to the model again.
    """

    def __init__(
        self,
        models: Mapping[str, Model],
        memo: StepMemo | None = None,
        *,
        seed: int = 0,
    ) -> None:
        self.models = dict(models)
        self.memo: StepMemo = memo if memo is not None else MemoryMemo()
        self.seed = seed
        self.steps: list[str] = []

    def model(self, role: str = "model") -> Model:
        """The model playing ``role`` (``model`` is the one under evaluation)."""
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
    ) -> ModelOutput:
        """Run (or replay) the model call named ``step``."""
        done = self.replay(step)
        if done is not None:
            return ModelOutput.model_validate(done["output"])
        self.steps.append(step)
        chosen = self.model(role)
        output = await chosen.generate(messages, config)
        sent = [messages] if isinstance(messages, str) else [m.model_dump() for m in messages]
        self.memo.put_step(
            step,
            {"role": role, "messages": sent, "output": output.model_dump(exclude={"raw"})},
        )
        return output

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
        """The payload of ``step`` if it finished in an earlier run (it then counts as a step here).

        Lets a workflow skip costly work (a retrieval, say) whose result is already recorded.
        """
        done = self.memo.get_step(step)
        if done is not None:
            self.steps.append(step)
        return done
