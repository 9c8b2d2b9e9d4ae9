"""Pointwise reranking by an LLM asked, for each candidate, whether it is relevant (yes/no)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from ..._util.hashing import stable_hash
from ...judges import leading_verdict, read_verdict
from ...models import GenerateConfig, Model, ModelOutput
from ...prompts import RERANK_POINTWISE
from ...tasks import Call, RetrievedDocument, SampleContext
from ._base import reorder, reranker

PROMPT_NAME = RERANK_POINTWISE.name
"""The template's registry name, which also names the reranker's steps."""
PROMPT_VERSION = str(RERANK_POINTWISE.version)
"""The template's version (its id is ``RERANK_POINTWISE.id``, ``rerank/llm-pointwise@v1``)."""
PROMPT = RERANK_POINTWISE.text
"""The relevance prompt (template :data:`ebmeval.prompts.RERANK_POINTWISE`); ``{query}`` and
``{document}`` (title, newline, text) are filled in."""

CONFIG = GenerateConfig(temperature=0, max_tokens=3, logprobs=True, top_logprobs=5)
"""Greedy, short, with the top-5 alternatives of each token."""

RERANK_CALL = Call(
    PROMPT_NAME,
    "verdict",
    temperature=0,
    max_tokens=3,
    about="asks whether one candidate is relevant (yes/no)",
    prefix=True,
)
"""The relevance question: a thinking model gets room for its trace; a reply cut off before any
word is an error, not an unparsed judgment."""


class Judgment(BaseModel):
    """The model's relevance verdict on one candidate."""

    id: str
    """Document id."""
    relevance: float | None
    """Probability of "yes" (see :func:`relevance`), ``None`` when the output gave no answer."""
    method: Literal["logprobs", "text", "unparsed"]
    """How the relevance was read."""
    output: str
    """The raw output."""


def relevance(output: ModelOutput) -> tuple[float | None, Literal["logprobs", "text", "unparsed"]]:
    """Relevance of one yes/no output.

    With log-probabilities: at the first non-blank generated token, ``p_yes`` and ``p_no``
    are the summed probabilities ``exp(logprob)`` of the alternatives that read yes (resp.
    no) in the judges' one vocabulary (:func:`~ebmeval.judges.read_verdict`), and relevance
    is ``p_yes / (p_yes + p_no)``. Otherwise (no log-probabilities, or neither among the
    alternatives) the text is read: a leading yes word is 1.0, a no word 0.0, anything else
    is unparsed (``None``).
    """
    for token in output.logprobs or []:
        if not token.token.strip():
            continue
        alternatives = {(alt.token, alt.logprob) for alt in token.top} | {(token.token, token.logprob)}
        p_yes = sum(math.exp(lp) for text, lp in alternatives if read_verdict(text) is True)
        p_no = sum(math.exp(lp) for text, lp in alternatives if read_verdict(text) is False)
        if p_yes + p_no > 0:
            return p_yes / (p_yes + p_no), "logprobs"
        break
    verdict = leading_verdict(output.text)
    if verdict is None:
        return None, "unparsed"
    return (1.0 if verdict else 0.0), "text"


@reranker("rerank/llm-pointwise")
class LLMPointwiseReranker:
    """Asks ``model`` about each of the first ``top_n`` candidates and keeps the ``k`` most relevant.

    ``model`` is a :class:`Model` (playing ``role``), or a :class:`SampleContext` whose recorded
    steps a resumed sample replays. Either way each call goes through ``ctx.generate`` as
    :data:`RERANK_CALL` under step ``rerank/llm-pointwise/<query hash>/<document id>``.
    Candidates are judged concurrently, bounded by the model's own concurrency limit.
    """

    def __init__(
        self,
        model: Model | SampleContext,
        *,
        top_n: int = 20,
        role: str = "model",
        config: GenerateConfig = CONFIG,
    ) -> None:
        self.model = model
        self.top_n = top_n
        self.role = role
        self.config = config

    async def _generate(self, query: str, candidate: RetrievedDocument) -> ModelOutput:
        document = candidate.document
        body = f"{document.title}\n{document.text}" if document.title else document.text
        prompt = RERANK_POINTWISE.render(query=query, document=body)
        ctx = self.model if isinstance(self.model, SampleContext) else SampleContext({self.role: self.model})
        step = f"{PROMPT_NAME}/{stable_hash(query, 12)}/{document.id}"
        return await ctx.generate(step, prompt, self.config, role=self.role, call=RERANK_CALL)

    async def judge(self, query: str, candidates: Sequence[RetrievedDocument]) -> list[Judgment]:
        """One :class:`Judgment` per candidate (all of them, in order)."""
        outputs = await asyncio.gather(*(self._generate(query, c) for c in candidates))
        judgments: list[Judgment] = []
        for candidate, output in zip(candidates, outputs, strict=True):
            value, method = relevance(output)
            judgments.append(Judgment(id=candidate.document.id, relevance=value, method=method, output=output.text))
        return judgments

    async def rerank(self, query: str, candidates: Sequence[RetrievedDocument], k: int) -> list[RetrievedDocument]:
        """The ``k`` most relevant of the first ``top_n`` candidates.

        Unparsed judgments are kept, not dropped: they rank after every judged
        candidate, in retrieval order, with score ``-1`` (below any probability).
        """
        pool = list(candidates[: self.top_n])
        judgments = await self.judge(query, pool)
        scores = [j.relevance if j.relevance is not None else -1.0 for j in judgments]
        return reorder(pool, scores, k)
