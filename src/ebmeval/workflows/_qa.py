"""Question-answering strategies: ``direct``, ``cot`` and ``cot-refine``.

Every strategy renders the same question block (context documents, question,
lettered options) and differs in the instruction and the number of calls. Options
shared by all of them:

- ``system_prompt``: a role prompt sent as the system message.
- ``thinking``: the thinking switch of hybrid reasoning models. ``None`` sends the
  prompt unchanged; ``True``/``False`` append Qwen3's soft switch ``/think`` or
  ``/no_think`` as the last line of the user message, which Qwen3 chat templates read
  as ``enable_thinking`` for that turn. Models without the switch see one extra line.
  Thinking traces (``<think>…</think>``) are removed before the answer is parsed.
- ``overflow``: what happens when the documents do not fit the model's context window
  (``ctx.model().api.context_length``); see :meth:`QAWorkflow.fit_context`.
- ``strict``: ask for the one answer format the strict reading accepts (a final
  ``ANSWER: X`` line, see ``ebmeval.scorers._strict``) instead of the plain letters.
- ``prompt_set``: the wording of every instruction (``ebmeval.prompts.PromptSet``); the
  ``default`` set is ebmeval's English one.
"""

from __future__ import annotations

import asyncio
import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from .._util.errors import ConfigError, UsageError
from .._util.hashing import stable_hash
from ..models import ChatMessage, GenerateConfig, Model, ModelAPI, ModelOutput, strip_reasoning, system, user
from ..prompts import (
    CONTEXT,
    COT,
    COT_STRICT,
    DIRECT,
    DOCUMENT,
    FORMAT_MULTI,
    FORMAT_MULTI_STRICT,
    FORMAT_OPEN,
    FORMAT_SINGLE,
    FORMAT_SINGLE_STRICT,
    OPTIONS,
    QUESTION,
    REFINE,
    REFINE_STRICT,
    PromptSet,
    PromptTemplate,
)
from ..prompts import DEFAULT as DEFAULT_PROMPTS
from ..tasks import THINKING_BUDGET, Document, MemoryMemo, Sample, SampleContext, Task, WorkflowResult

Strategy = Literal["direct", "cot", "cot-refine"]
"""The names of the built-in strategies."""

Overflow = Literal["truncate", "error"]
"""Policy for documents longer than the model's context window."""

DIRECT_MAX_TOKENS = 32
"""Reply budget of ``direct`` without thinking: a few letters fit in far fewer tokens."""
REASONING_MAX_TOKENS = 1024
"""Reply budget of ``cot`` and of each call of ``cot-refine``."""
THINKING_MAX_TOKENS = THINKING_BUDGET
"""Reply budget of every strategy with thinking switched on: the trace precedes the answer."""
CONTEXT_MARGIN = 64
"""Tokens kept free for the chat template's role markers around the prompt."""
PREVIOUS_PLACEHOLDER = "<the reply to the first call>"
"""What rendered prompts show in place of the first answer of ``cot-refine``."""


@runtime_checkable
class PromptRenderer(Protocol):
    """A workflow that can show the messages it sends, for ``show-prompt``."""

    def render_prompts(self, sample: Sample) -> dict[str, list[ChatMessage]]:
        """The messages of each step for ``sample`` (no model is called)."""


def format_documents(documents: Sequence[Document], template: PromptTemplate = DOCUMENT) -> str:
    """The documents as one text: each numbered from 1 and delimited with its id (the ``document`` template).

    A document's title, when known, is its first line; documents are blank-line separated. A
    prompt set may word documents otherwise (``PromptSet.document``: the CareMedEval paper's
    prompt shows its one article bare).
    """
    return "\n\n".join(
        template.render(number=str(number), id=doc.id, heading=f"{doc.title}\n" if doc.title else "", text=doc.text)
        for number, doc in enumerate(documents, start=1)
    )


def format_options(choices: dict[str, str]) -> str:
    """One ``X. text`` line per option, in display order."""
    return "\n".join(f"{letter}. {text}" for letter, text in choices.items())


_QUESTION_BLOCK = (QUESTION, CONTEXT, DOCUMENT, OPTIONS, FORMAT_SINGLE, FORMAT_MULTI, FORMAT_OPEN)
"""The templates of the question block every strategy's first prompt holds."""


class QAWorkflow(ABC):
    """The shared machinery of the question-answering strategies."""

    name: str = ""
    templates: tuple[PromptTemplate, ...] = ()
    strict_templates: tuple[PromptTemplate, ...] = (FORMAT_SINGLE_STRICT, FORMAT_MULTI_STRICT)
    """The templates a strict workflow uses besides (or instead of some of) ``templates``."""
    worded_by_sets = True
    """Whether a prompt set other than the default can word this strategy's prompts."""

    def __init__(
        self,
        *,
        multi_answer: bool = False,
        system_prompt: str | None = None,
        thinking: bool | None = None,
        overflow: Overflow = "truncate",
        max_tokens: int = REASONING_MAX_TOKENS,
        strict: bool = False,
        prompt_set: PromptSet = DEFAULT_PROMPTS,
    ) -> None:
        if overflow not in ("truncate", "error"):
            raise ConfigError("overflow", f"must be 'truncate' or 'error', not {overflow!r}")
        self.strict = strict
        self.prompts = prompt_set
        if prompt_set is not DEFAULT_PROMPTS:
            if strict or not self.worded_by_sets:
                what = "answer_format='strict'" if strict else f"strategy '{self.name}'"
                raise ConfigError(
                    "prompt_set", f"'{prompt_set.name}' words the direct and cot prompts only, not {what}"
                )
            self.templates = prompt_set.templates
        if strict:  # only strict prompts name these templates: the versions of the others stay as they were
            self.templates = (*self.templates, *self.strict_templates)
        self.multi_answer = multi_answer
        self.system_prompt = system_prompt
        self.thinking = thinking
        self.overflow: Overflow = overflow
        self.generate_config = GenerateConfig(
            temperature=0.0, max_tokens=THINKING_MAX_TOKENS if thinking else max_tokens
        )
        """Task defaults for generation; run settings override them."""

    @property
    def reasoning_config(self) -> GenerateConfig:
        """The defaults for a thinking model: every call's budget leaves room for the trace."""
        return GenerateConfig(temperature=0.0, max_tokens=THINKING_MAX_TOKENS)

    @property
    def version(self) -> str:
        """A short hash of the templates and options that shape the prompt."""
        return stable_hash(self.shaping(), 8)

    def shaping(self) -> list[Any]:
        """What :attr:`version` hashes: template ids and the options that change the prompt or answer."""
        return [[t.id for t in self.templates], self.system_prompt, self.thinking, self.multi_answer]

    def answer_format(self, sample: Sample) -> str:
        """The instruction saying what form the answer takes."""
        if sample.choices is None:
            return self.prompts.format_open.render()
        if self.strict:
            return (FORMAT_MULTI_STRICT if self.multi_answer else FORMAT_SINGLE_STRICT).render()
        template = self.prompts.format_multi if self.multi_answer else self.prompts.format_single
        return template.render(letters=", ".join(sample.choices))

    def question_block(self, sample: Sample, documents: str | None = None) -> str:
        """Context, question and options; ``documents`` replaces the sample's documents text."""
        text = format_documents(sample.documents, self.prompts.document) if documents is None else documents
        context = self.prompts.context.render(documents=text) if text else ""
        options = self.prompts.options.render(options=format_options(sample.choices)) if sample.choices else ""
        return self.prompts.question.render(
            context=context, question=sample.input, options=options, answer_format=self.answer_format(sample)
        )

    def messages(self, prompt: str) -> list[ChatMessage]:
        """The chat messages for a user prompt: optional system prompt, thinking switch applied."""
        if self.thinking is not None:
            prompt = f"{prompt}\n\n{'/think' if self.thinking else '/no_think'}"
        chat = [system(self.system_prompt)] if self.system_prompt else []
        return [*chat, user(prompt)]

    def reserved_tokens(self, model: Model) -> int:
        """Tokens the replies need beyond the first prompt (one reply, by default)."""
        return model.config.merge(self.generate_config).max_tokens or 0

    async def fit_context(
        self, sample: Sample, model: Model, prompt_without_documents: str
    ) -> tuple[str, dict[str, Any]]:
        """The documents text that fits the context window, and the record of what was done.

        The budget for documents is ``context_length - reserved - prompt - margin``
        tokens, where ``reserved = min(reply budget, context_length // 2)`` (the reply
        budget of :meth:`reserved_tokens`, capped so a small window still holds part of
        the documents; a longer reply then stops at the window's end), ``prompt`` the
        prompt rendered without documents and ``margin`` = ``CONTEXT_MARGIN``. When the
        documents exceed it, ``overflow="truncate"`` keeps the longest prefix that fits
        (cut at a word boundary) followed by the prompt set's truncation note; ``overflow="error"``
        raises :class:`ConfigError`. With an unknown context length nothing is cut. The
        record goes to ``WorkflowResult.metadata["context"]``.
        """
        text = format_documents(sample.documents, self.prompts.document)
        limit = model.api.context_length
        if not text:
            return text, {"documents": 0}
        tokens = await model.acount_tokens(text)
        record: dict[str, Any] = {
            "documents": len(sample.documents),
            "context_length": limit,
            "document_tokens": tokens,
            "truncated": False,
        }
        if limit is None:
            return text, record
        reserved = min(self.reserved_tokens(model), limit // 2)
        budget = (
            limit
            - reserved
            - await model.acount_tokens(prompt_without_documents)
            - await model.acount_tokens(self.prompts.truncation_note)
            - CONTEXT_MARGIN
        )
        record.update(reserved_tokens=reserved, budget_tokens=budget)
        if tokens <= budget:
            return text, record
        if self.overflow == "error" or budget <= 0:
            raise ConfigError(
                "overflow",
                f"sample {sample.id!r}: the documents take {tokens} tokens but only {max(budget, 0)} "
                f"of the model's {limit}-token context are left for them; use overflow='truncate', "
                "shorter context or a model with a longer context",
            )
        kept = await _longest_prefix(text, budget, model)
        record.update(
            truncated=True,
            policy="head",
            kept_tokens=await model.acount_tokens(kept),
            kept_chars=len(kept),
            total_chars=len(text),
        )
        return kept + self.prompts.truncation_note, record

    async def prompt(self, sample: Sample, ctx: SampleContext) -> tuple[str, dict[str, Any]]:
        """The question block for ``sample`` fitted to the model, with the fitting record."""
        if not sample.documents:
            return self.question_block(sample), {}
        documents, record = await self.fit_context(sample, ctx.model(), self.longest_prompt(sample))
        return self.question_block(sample, documents), {"context": record}

    def longest_prompt(self, sample: Sample) -> str:
        """The longest prompt this workflow sends for ``sample``, without documents or replies."""
        bare = self.messages(self.first_prompt(self.question_block(sample, documents=""), sample))
        return "\n".join(message.content for message in bare)

    @abstractmethod
    def first_prompt(self, question_block: str, sample: Sample) -> str:
        """The user prompt of the first call."""

    @abstractmethod
    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        """Answer ``sample``."""

    def render_prompts(self, sample: Sample) -> dict[str, list[ChatMessage]]:
        """The messages of each step for ``sample``, documents uncut."""
        return {self.name: self.messages(self.first_prompt(self.question_block(sample), sample))}


class Direct(QAWorkflow):
    """``direct``: one call asking for the answer only.

    With ``answer_from="logprobs"`` (single-answer tasks) the call asks the provider
    for token log-probabilities and the answer is the option letter with the highest
    probability at the answer position (see :func:`letter_probabilities`); the
    generated text is kept in ``metadata["generated"]``.
    """

    name = "direct"
    templates: tuple[PromptTemplate, ...] = (*_QUESTION_BLOCK, DIRECT)

    def __init__(
        self,
        *,
        multi_answer: bool = False,
        system_prompt: str | None = None,
        thinking: bool | None = None,
        overflow: Overflow = "truncate",
        answer_from: Literal["text", "logprobs"] = "text",
        top_logprobs: int = 20,
        strict: bool = False,
        prompt_set: PromptSet = DEFAULT_PROMPTS,
    ) -> None:
        super().__init__(
            multi_answer=multi_answer,
            system_prompt=system_prompt,
            thinking=thinking,
            overflow=overflow,
            max_tokens=DIRECT_MAX_TOKENS,
            strict=strict,
            prompt_set=prompt_set,
        )
        if answer_from not in ("text", "logprobs"):
            raise ConfigError("answer_from", f"must be 'text' or 'logprobs', not {answer_from!r}")
        if answer_from == "logprobs" and strict:
            raise ConfigError("answer_format", "'strict' reads a reply's ANSWER line; answer_from='logprobs' has none")
        if answer_from == "logprobs" and multi_answer:
            raise ConfigError("answer_from", "'logprobs' picks one letter; it needs a single-answer task")
        self.answer_from = answer_from
        self.top_logprobs = top_logprobs

    def shaping(self) -> list[Any]:
        """The shared options, and how the answer is read."""
        return [*super().shaping(), self.answer_from]

    def first_prompt(self, question_block: str, sample: Sample) -> str:
        """The ``mcq/direct`` prompt."""
        return self.prompts.direct.render(question_block=question_block, answer_format=self.answer_format(sample))

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        """Ask once for the answer."""
        block, metadata = await self.prompt(sample, ctx)
        messages = self.messages(self.first_prompt(block, sample))
        if self.answer_from == "text" or not sample.choices:
            output = await ctx.generate(self.name, messages)
            return WorkflowResult(output=output.text, metadata=metadata)
        config = GenerateConfig(logprobs=True, top_logprobs=self.top_logprobs)
        output = await ctx.generate(self.name, messages, config)
        found = letter_probabilities(output, list(sample.choices))
        metadata["generated"] = output.text
        if found is None:
            metadata["letter_probabilities"] = None
            return WorkflowResult(output=output.text, metadata=metadata)
        position, probs = found
        metadata.update(letter_position=position, letter_probabilities=probs)
        return WorkflowResult(output=max(probs, key=lambda letter: probs[letter]), metadata=metadata, from_reply=False)


class ChainOfThought(QAWorkflow):
    """``cot``: one call that reasons, then gives a final ``Answer:`` line."""

    name = "cot"
    templates: tuple[PromptTemplate, ...] = (*_QUESTION_BLOCK, COT)
    strict_templates = (*QAWorkflow.strict_templates, COT_STRICT)

    def first_prompt(self, question_block: str, sample: Sample) -> str:
        """The ``mcq/cot`` prompt (``mcq/cot-strict`` when strict)."""
        template = COT_STRICT if self.strict else self.prompts.cot
        return template.render(question_block=question_block, answer_format=self.answer_format(sample))

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        """Ask once for reasoning and an answer."""
        block, metadata = await self.prompt(sample, ctx)
        output = await ctx.generate(self.name, self.messages(self.first_prompt(block, sample)))
        return WorkflowResult(output=output.text, metadata=metadata)


class ChainOfThoughtRefine(ChainOfThought):
    """``cot-refine``: a ``cot`` answer R0, then one call that reviews R0 and answers again.

    Exactly two model calls, stored as steps ``cot-refine/initial`` and
    ``cot-refine/refine``. The second prompt holds the question block and R0 with any
    thinking trace removed; its reply is the output, and R0 is kept in
    ``metadata["initial_output"]``. The context budget reserves room for both replies.
    """

    name = "cot-refine"
    templates: tuple[PromptTemplate, ...] = (*ChainOfThought.templates, REFINE)
    strict_templates = (*ChainOfThought.strict_templates, REFINE_STRICT)
    worded_by_sets = False

    def reserved_tokens(self, model: Model) -> int:
        """Two reply budgets: R0 is part of the second prompt, whose reply follows."""
        return 2 * super().reserved_tokens(model)

    def longest_prompt(self, sample: Sample) -> str:
        """The refine prompt without documents and with an empty R0 (R0 is in the reserve)."""
        bare = self.messages(self.refine_prompt(self.question_block(sample, documents=""), sample, ""))
        return "\n".join(message.content for message in bare)

    def refine_prompt(self, question_block: str, sample: Sample, previous: str) -> str:
        """The ``mcq/refine`` prompt (``mcq/refine-strict`` when strict)."""
        return (REFINE_STRICT if self.strict else REFINE).render(
            question_block=question_block,
            previous=previous,
            grounding=" and the context" if sample.documents else "",
            answer_format=self.answer_format(sample),
        )

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        """Answer, then refine the answer."""
        block, metadata = await self.prompt(sample, ctx)
        first = await ctx.generate(f"{self.name}/initial", self.messages(self.first_prompt(block, sample)))
        previous = strip_reasoning(first.text).strip()
        prompt = self.refine_prompt(block, sample, previous)
        second = await ctx.generate(f"{self.name}/refine", self.messages(prompt))
        metadata["initial_output"] = first.text
        return WorkflowResult(output=second.text, metadata=metadata)

    def render_prompts(self, sample: Sample) -> dict[str, list[ChatMessage]]:
        """Both calls; the second shows a placeholder where R0 goes."""
        block = self.question_block(sample)
        return {
            f"{self.name}/initial": self.messages(self.first_prompt(block, sample)),
            f"{self.name}/refine": self.messages(self.refine_prompt(block, sample, PREVIOUS_PLACEHOLDER)),
        }


def qa_workflow(
    strategy: Strategy = "direct",
    *,
    multi_answer: bool = False,
    system_prompt: str | None = None,
    thinking: bool | None = None,
    overflow: Overflow = "truncate",
    answer_from: Literal["text", "logprobs"] = "text",
    strict: bool = False,
    prompt_set: PromptSet = DEFAULT_PROMPTS,
) -> QAWorkflow:
    """The question-answering workflow named ``strategy`` (``direct``, ``cot`` or ``cot-refine``).

    ``answer_from="logprobs"`` is only available with ``direct``, and not with ``strict``.
    """
    if strategy != "direct" and answer_from != "text":
        raise ConfigError("answer_from", f"'{answer_from}' is only available with the 'direct' strategy")
    kinds: dict[str, type[QAWorkflow]] = {"direct": Direct, "cot": ChainOfThought, "cot-refine": ChainOfThoughtRefine}
    if strategy not in kinds:
        raise ConfigError("strategy", f"must be one of direct, cot, cot-refine, not {strategy!r}")
    direct_only: dict[str, Any] = {"answer_from": answer_from} if strategy == "direct" else {}
    return kinds[strategy](
        multi_answer=multi_answer,
        system_prompt=system_prompt,
        thinking=thinking,
        overflow=overflow,
        strict=strict,
        prompt_set=prompt_set,
        **direct_only,
    )


def letter_probabilities(output: ModelOutput, letters: Sequence[str]) -> tuple[int, dict[str, float]] | None:
    """The answer position and the probability of each option letter there.

    The answer position is the first generated token that is an option letter once
    spaces and the punctuation ``( ) [ ] . : *`` are stripped (letters match case
    sensitively). There, ``p(X) = Σ exp(logprob)`` over the generated token and its
    top alternatives that strip to ``X`` (``"B"`` and ``" B"`` both count for B).
    Returns ``None`` when no logprobs came back or no generated token is a letter.
    """
    if not output.logprobs:
        return None
    wanted = set(letters)
    for position, token in enumerate(output.logprobs):
        if _strip_token(token.token) not in wanted:
            continue
        probs = dict.fromkeys(letters, 0.0)
        seen = {token.token: token.logprob} | {alt.token: alt.logprob for alt in token.top}
        for text, logprob in seen.items():
            letter = _strip_token(text)
            if letter in wanted:
                probs[letter] += math.exp(logprob)
        return position, probs
    return None


def _strip_token(token: str) -> str:
    return token.strip().strip("()[].:*").strip()


async def _longest_prefix(text: str, budget: int, model: Model) -> str:
    """The longest word-boundary prefix of ``text`` taking at most ``budget`` tokens (binary search)."""
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if await model.acount_tokens(text[:middle]) <= budget:
            low = middle
        else:
            high = middle - 1
    cut = text.rfind(" ", 0, low + 1) if low < len(text) else low
    return text[: cut if cut > 0 else low].rstrip()


def render_prompts(task: Task, sample: int | str = 0) -> dict[str, str]:
    """The prompts ``task`` sends for one sample, as text per step (for ``ebmeval show-prompt``).

    ``sample`` is an index into the dataset or a sample id. Each step's messages are
    shown as ``[role]`` headers followed by the content; documents are shown uncut. A
    workflow that does not render its prompts is traced instead (see :func:`_traced`).
    """
    workflow = task.workflow
    chosen = _pick(task, sample)
    shown = workflow.render_prompts(chosen) if isinstance(workflow, PromptRenderer) else _traced(task, chosen)
    return {
        step: "\n\n".join(f"[{message.role}]\n{message.content}" for message in messages)
        for step, messages in shown.items()
    }


class _Placeholder(ModelAPI):
    """Answers every call with a placeholder naming the call, so a workflow's prompts can be shown."""

    name = "placeholder"

    async def generate(self, messages: Sequence[ChatMessage], config: GenerateConfig) -> ModelOutput:
        """The placeholder reply."""
        return ModelOutput(text=PREVIOUS_PLACEHOLDER, model=self.name, finish_reason="stop")


def _traced(task: Task, sample: Sample) -> dict[str, list[ChatMessage]]:
    """The messages of each model call ``task``'s workflow makes for ``sample``, every reply a placeholder.

    For workflows that do not render their prompts themselves (multi-step synthesis, claim
    labelling …): the workflow runs against a model that answers every call with
    ``PREVIOUS_PLACEHOLDER``. A workflow that cannot go on from a placeholder reply stops
    there; the calls made until then are shown.
    """
    memo = MemoryMemo()
    model = Model(_Placeholder())
    ctx = SampleContext(dict.fromkeys(("model", *task.roles), model), memo)
    try:
        asyncio.run(task.workflow(sample, ctx))
    except Exception:  # noqa: BLE001 (a placeholder reply may not parse: show the calls made so far)
        if not memo.steps:
            raise
    return {
        step: [ChatMessage.model_validate(m) for m in payload["messages"]]
        for (step, _request), payload in memo.steps.items()
        if "messages" in payload
    }


def _pick(task: Task, sample: int | str) -> Sample:
    if isinstance(sample, int):
        if not -len(task.dataset) <= sample < len(task.dataset):
            raise UsageError(f"task '{task.name}' has {len(task.dataset)} samples; index {sample} is out of range")
        return task.dataset[sample]
    for item in task.dataset:
        if item.id == sample:
            return item
    raise UsageError(f"task '{task.name}' has no sample with id {sample!r}")
