"""Free-form tasks (extraction, long-form answers) under the strategies ``direct``, ``cot`` and ``cot-refine``.

A free-form task brings its own prompt (:meth:`FreeFormWorkflow.task_prompt`), which says what
form the answer takes. ``direct`` sends it as is; ``cot`` asks for reasoning first and the answer
after a ``Final answer:`` line; ``cot-refine`` adds a second call that checks the first reply.
The output of ``cot`` and ``cot-refine`` is the text after the last ``Final answer:`` line (the
whole reply when there is none), so the task's parser reads the answer alone; the full reply is
kept in ``metadata["reply"]``. Context documents (given or retrieved) come first, numbered and
delimited as in the multiple-choice prompts, and are fitted to the context window the same way.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from .._util.errors import ConfigError
from ..models import ChatMessage, Model, strip_reasoning
from ..prompts import CONTEXT, DOCUMENT, FINAL_MARKER, FREE_COT, FREE_REFINE, PromptTemplate
from ..tasks import Sample, SampleContext, WorkflowResult
from ._qa import PREVIOUS_PLACEHOLDER, REASONING_MAX_TOKENS, Overflow, QAWorkflow, Strategy, format_documents

STRATEGIES: tuple[Strategy, ...] = ("direct", "cot", "cot-refine")


def final_answer(reply: str) -> str:
    """The text after the last ``Final answer:`` line of ``reply`` (case ignored), or the whole reply."""
    text = strip_reasoning(reply)
    at = text.lower().rfind(FINAL_MARKER.lower())
    return (text[at + len(FINAL_MARKER) :] if at >= 0 else text).strip()


class FreeFormWorkflow(QAWorkflow):
    """A task prompt answered in free text by one of the strategies.

    Args:
        step: Name of the model call under ``direct`` (``cot`` calls it ``STEP/cot``,
            ``cot-refine`` ``STEP/initial`` and ``STEP/refine``).
        strategy: ``direct``, ``cot`` or ``cot-refine``.
        max_tokens: Reply budget of ``direct``; the reasoning strategies add ``REASONING_MAX_TOKENS``.
    """

    task_templates: tuple[PromptTemplate, ...] = ()
    """The templates :meth:`task_prompt` renders (their versions are in :meth:`prompt_shaping`)."""

    def __init__(
        self,
        step: str,
        strategy: Strategy = "direct",
        *,
        system_prompt: str | None = None,
        thinking: bool | None = None,
        overflow: Overflow = "truncate",
        max_tokens: int = 512,
    ) -> None:
        if strategy not in STRATEGIES:
            raise ConfigError("strategy", f"must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
        budget = max_tokens if strategy == "direct" else max_tokens + REASONING_MAX_TOKENS
        super().__init__(system_prompt=system_prompt, thinking=thinking, overflow=overflow, max_tokens=budget)
        self.step = step
        self.strategy: Strategy = strategy
        self.name = step if strategy == "direct" else f"{step}/{strategy}"
        extra: dict[str, tuple[PromptTemplate, ...]] = {"cot": (FREE_COT,), "cot-refine": (FREE_COT, FREE_REFINE)}
        self.templates = (CONTEXT, DOCUMENT, *extra.get(strategy, ()))

    @property
    def call_templates(self) -> dict[str, tuple[PromptTemplate, ...]]:
        """The answer's templates: the strategy's and the task prompt's (see :func:`~ebmeval.tasks.call_rows`)."""
        return {"answer": (*self.templates, *self.task_templates)}

    @abstractmethod
    def task_prompt(self, sample: Sample) -> str:
        """The task's own prompt for ``sample``, saying what form the answer takes."""

    @abstractmethod
    def prompt_shaping(self) -> list[Any]:
        """What shapes :meth:`task_prompt` (its version, wording and options), for :attr:`version`."""

    def shaping(self) -> list[Any]:
        """The shared options, the strategy and the task prompt's shaping."""
        return [*super().shaping(), self.strategy, self.prompt_shaping()]

    def question_block(self, sample: Sample, documents: str | None = None) -> str:
        """Context documents (if any) followed by the task prompt."""
        text = format_documents(sample.documents) if documents is None else documents
        return (CONTEXT.render(documents=text) if text else "") + self.task_prompt(sample)

    def first_prompt(self, question_block: str, sample: Sample) -> str:
        """The task prompt (``direct``) or it followed by the reasoning instruction."""
        return question_block if self.strategy == "direct" else FREE_COT.render(task_prompt=question_block)

    def refine_prompt(self, question_block: str, sample: Sample, previous: str) -> str:
        """The ``free/refine`` prompt: the task and the first reply to check."""
        grounding = " and the context" if sample.documents else ""
        return FREE_REFINE.render(task_prompt=question_block, previous=previous, grounding=grounding)

    def reserved_tokens(self, model: Model) -> int:
        """One reply budget, two under ``cot-refine`` (the first reply is part of the second prompt)."""
        return (2 if self.strategy == "cot-refine" else 1) * super().reserved_tokens(model)

    def longest_prompt(self, sample: Sample) -> str:
        """The refine prompt under ``cot-refine`` (first reply in the reserve), else the first prompt."""
        if self.strategy != "cot-refine":
            return super().longest_prompt(sample)
        bare = self.messages(self.refine_prompt(self.question_block(sample, documents=""), sample, ""))
        return "\n".join(message.content for message in bare)

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        """Answer by the strategy; reasoning strategies keep the full reply in the metadata."""
        block, metadata = await self.prompt(sample, ctx)
        first_step = {"direct": self.step, "cot": self.name}.get(self.strategy, f"{self.step}/initial")
        reply = await ctx.generate(first_step, self.messages(self.first_prompt(block, sample)))
        if self.strategy == "direct":
            return WorkflowResult(output=reply.text.strip(), metadata=metadata)
        if self.strategy == "cot-refine":
            metadata["initial_output"] = reply.text
            previous = strip_reasoning(reply.text).strip()
            prompt = self.refine_prompt(block, sample, previous)
            reply = await ctx.generate(f"{self.step}/refine", self.messages(prompt))
        metadata["reply"] = reply.text
        return WorkflowResult(output=final_answer(reply.text), metadata=metadata)

    def render_prompts(self, sample: Sample) -> dict[str, list[ChatMessage]]:
        """The messages of each call; the refine call shows a placeholder for the first reply."""
        block = self.question_block(sample)
        first = self.messages(self.first_prompt(block, sample))
        if self.strategy != "cot-refine":
            return {self.name: first}
        refine = self.messages(self.refine_prompt(block, sample, PREVIOUS_PLACEHOLDER))
        return {f"{self.step}/initial": first, f"{self.step}/refine": refine}
