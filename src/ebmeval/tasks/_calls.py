"""What each kind of model call asks for, and which replies it accepts.

Every model call of a workflow or scorer goes through :meth:`SampleContext.generate
<ebmeval.tasks.SampleContext.generate>` as a :class:`Call`: a declared kind of step (``answer``,
``synthesis/negate``, ``rerank/llm-pointwise``, ``judge``…) with its temperature and reply
budget. Its settings are, field by field, later ones winning: the model's defaults, the
declaration, the settings of the call site, the run's ``--temperature``/``--max-tokens`` (for
the steps of the answer only), room for a thinking trace (a model with ``reasoning=true``
gets ``THINKING_BUDGET`` more tokens on every step but the answer's, whose thinking budget
the task sets), and last the run config's ``steps:`` entry for the call. What was sent is
recorded with the step.

A reply is then checked by the call's purpose:

- ``answer``: a step of the answer under evaluation; a reply cut at the token limit is kept
  and counted as truncated;
- ``verdict``: read into a value (a judge's grade, a relevance, an evaluator's score); a reply
  cut at the limit is an error (a thinking model that ran out in its trace, a grade cut off
  mid-reply), unless the call reads only the reply's first word (``prefix``) and some came;
- ``evidence``: becomes the input of later steps (a negated abstract, a map summary); a reply
  cut at the limit, or a refusal, is an error.

A reply refused is never cached, recorded or stored, and a re-run sends the call again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ..models import DegenerateReplyError, GenerateConfig, Model, ModelOutput

THINKING_BUDGET = 4096
"""The least reply budget of a model that thinks before answering: the trace comes first."""

Purpose = Literal["answer", "verdict", "evidence"]

_REFUSAL = re.compile(
    r"^\W*(?:i['’]?m sorry|i am sorry|sorry, (?:but )?i|i can(?:no|['’])t|i am (?:not able|unable)"
    r"|i['’]?m (?:not able|unable)|i (?:will not|won['’]t)|as an ai\b)",
    re.IGNORECASE,
)


def is_refusal(text: str) -> bool:
    """Whether ``text`` is a short refusal ("I'm sorry, but I can't help with that.") rather than a rewrite."""
    stripped = text.strip()
    return len(stripped) < 400 and _REFUSAL.match(stripped) is not None


@dataclass(frozen=True)
class Call:
    """A kind of model call with its declared settings."""

    name: str
    """The name a run config's ``steps:`` entry overrides it by (``synthesis/negate``)."""
    purpose: Purpose = "answer"
    """How its replies are checked (see the module docstring)."""
    temperature: float | None = None
    """Declared temperature; ``None`` leaves the model's."""
    max_tokens: int | None = None
    """Declared reply budget; ``None`` leaves the model's (a call site may size it per request)."""
    about: str = ""
    """One line on what the call is for, shown by ``ebmeval describe``."""
    prefix: bool = False
    """Only the start of the reply is read (a yes/no in 3 tokens): a reply cut after some text is whole."""

    def declared(self) -> GenerateConfig:
        """The declared settings, as a config that sets only what is declared."""
        fields = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        return GenerateConfig(**{k: v for k, v in fields.items() if v is not None})

    def settings(
        self,
        model: Model,
        config: GenerateConfig | None = None,
        *,
        run: GenerateConfig | None = None,
        override: GenerateConfig | None = None,
    ) -> GenerateConfig:
        """What the call sends to ``model``, before the model's own defaults fill the rest.

        ``config`` is the call site's, ``run`` the run's explicit settings (applied to answer
        steps), ``override`` the run config's entry for this call.
        """
        chosen = self.declared().merge(config)
        if self.purpose == "answer":
            chosen = chosen.merge(run)
        elif model.api.reasoning:
            budget = chosen.max_tokens or model.config.max_tokens
            if budget is not None:
                chosen = chosen.merge(GenerateConfig(max_tokens=budget + THINKING_BUDGET))
        return chosen.merge(override)

    def check(self, output: ModelOutput) -> ModelOutput:
        """``output`` if this call accepts it; :class:`DegenerateReplyError` otherwise."""
        if self.purpose == "answer":
            return output
        if output.truncated and not (self.prefix and output.text.strip()):
            cut = "before any answer" if not output.text.strip() else "mid-reply"
            raise DegenerateReplyError(
                f"{output.model}: the {self.name} reply stopped at the token limit {cut}; "
                f"raise its budget in the run config (steps: {{{self.name}: {{max_tokens: N}}}})"
                + ("" if output.reasoning is None else " or give the thinking model room (reasoning=true)")
            )
        if self.purpose == "evidence" and is_refusal(output.text):
            text = output.text.strip()
            raise DegenerateReplyError(f"{output.model}: the {self.name} reply is a refusal: {text!r:.99}")
        return output

    def row(self, role: str, answer: GenerateConfig, thinking: GenerateConfig) -> dict[str, object]:
        """What ``ebmeval describe`` shows of the call played by ``role``.

        ``answer`` and ``thinking`` are the task's settings of the answer (for a model that
        does not think, and one that does), which answer calls start from.
        """
        if self.purpose == "answer":
            plain, deep = answer.merge(self.declared()), thinking.merge(self.declared())
            thinking_tokens = deep.max_tokens
        else:
            plain = self.declared()
            thinking_tokens = None if plain.max_tokens is None else plain.max_tokens + THINKING_BUDGET
        return {
            "call": self.name,
            "role": role,
            "purpose": self.purpose,
            "temperature": plain.temperature,
            "max_tokens": plain.max_tokens,
            "thinking_max_tokens": thinking_tokens,
            "about": self.about,
        }


ANSWER = Call("answer", "answer", about="a step of the answer under evaluation (the task's settings)")
"""Calls of the model under evaluation that declare nothing of their own."""

JUDGE = Call("judge", "verdict", about="a judge's question (its scorer sets temperature and budget)")
"""The call of a judge's question and its stricter follow-up (:func:`ebmeval.judges.ask`)."""

VERDICT = Call("verdict", "verdict", about="a call of another role that declares nothing of its own")
"""Calls of another role (a judge …) that declare nothing of their own."""


def default_call(role: str) -> Call:
    """The call a site that declares none makes: :data:`ANSWER` for ``model``, else :data:`VERDICT`."""
    return ANSWER if role == "model" else VERDICT
