"""Evidence formatting, reply parsing, and the context-overflow policies of synthesis.

When the abstracts do not fit the model's context window
(``ctx.model().api.context_length`` counted with ``ctx.model().acount_tokens``), one of two
policies applies and is recorded in the result's metadata under ``overflow``:

- ``truncate``: each abstract is cut to an even share of the evidence budget B. Shares are
  water-filled: with abstract lengths t_1 ≤ … ≤ t_n, the share s solves
  Σ_i min(t_i, s) = B, so abstracts shorter than s stay whole and their unused share goes
  to the longer ones.
- ``map-reduce``: consecutive abstracts are grouped so that each group fits B; each group
  is summarised by one ``map/<j>`` call, and the conclusion is written from the summaries.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from ..tasks import Call, Document, SampleContext
from ._prompts import MAP

MAP_CALL = Call("synthesis/map", "evidence", about="summarises one group of abstracts under map-reduce")
"""A map summary becomes the evidence of the conclusion: cut off or refused, it is an error."""

OverflowPolicy = Literal["truncate", "map-reduce"]
"""What happens when the evidence exceeds the model's context window."""

CONTEXT_MARGIN = 64
"""Tokens kept free for the chat template around the prompt."""
DEFAULT_REPLY_TOKENS = 512
"""Tokens reserved for the reply when the model sets no ``max_tokens``."""
TRUNCATION_NOTE = " [… truncated to fit the context window]"


def format_study(position: int, document: Document) -> str:
    """``Study <n> (<id>): <title>`` and the abstract."""
    head = f"Study {position} ({document.id})" + (f": {document.title}" if document.title else "")
    return f"{head}\n{document.text}"


def format_evidence(documents: Sequence[Document]) -> str:
    """The studies, numbered from 1, separated by blank lines."""
    return "\n\n".join(format_study(i, d) for i, d in enumerate(documents, start=1))


_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s*(.+?)\s*$")


def parse_questions(text: str, limit: int) -> list[str]:
    """Up to ``limit`` numbered or bulleted lines of ``text``; else its lines that end in ``?``."""
    lines = [m.group(1) for line in text.splitlines() if (m := _ITEM.match(line)) and m.group(1)]
    if not lines:
        lines = [line.strip() for line in text.splitlines() if line.strip().endswith("?")]
    return list(dict.fromkeys(lines))[:limit]


def reply_tokens(ctx: SampleContext, role: str = "model") -> int:
    """Tokens reserved for a reply of the model playing ``role``."""
    return ctx.model(role).config.max_tokens or DEFAULT_REPLY_TOKENS


async def evidence_budget(ctx: SampleContext, prompt_without_evidence: str, role: str = "model") -> int | None:
    """Tokens left for evidence in a prompt, or ``None`` when the context length is unknown."""
    model = ctx.model(role)
    length = model.api.context_length
    if length is None:
        return None
    used = await model.acount_tokens(prompt_without_evidence) + reply_tokens(ctx, role) + CONTEXT_MARGIN
    return max(0, length - used)


def water_fill(lengths: Sequence[int], budget: int) -> int:
    """The share s with Σ_i min(t_i, s) = budget (rounded down); ``max(t)`` when everything fits."""
    if sum(lengths) <= budget:
        return max(lengths, default=0)
    remaining, left = budget, len(lengths)
    for length in sorted(lengths):
        share = remaining // left
        if length > share:
            return share
        remaining -= length
        left -= 1
    return remaining


async def _cut(ctx: SampleContext, text: str, tokens: int, role: str) -> str:
    """The longest prefix of ``text`` (by a shrinking character estimate) within ``tokens``."""
    model = ctx.model(role)
    note = await model.acount_tokens(TRUNCATION_NOTE)
    target = max(0, tokens - note)
    size = len(text)
    total = await model.acount_tokens(text)
    cut = int(size * target / max(total, 1))
    while cut > 0 and await model.acount_tokens(text[:cut]) > target:
        cut = int(cut * 0.9)
    return text[:cut].rstrip() + TRUNCATION_NOTE


async def truncate_evenly(
    ctx: SampleContext, documents: Sequence[Document], budget: int, role: str = "model"
) -> tuple[list[Document], dict[str, Any]]:
    """``documents`` cut to water-filled shares of ``budget`` tokens (formatting overhead included)."""
    model = ctx.model(role)
    heads = [
        await model.acount_tokens(format_study(i, d.model_copy(update={"text": ""}))) + 2
        for i, d in enumerate(documents, 1)
    ]
    bodies = [await model.acount_tokens(d.text) for d in documents]
    share = water_fill(bodies, max(0, budget - sum(heads)))
    fitted, cut_ids = [], []
    for document, tokens in zip(documents, bodies, strict=True):
        if tokens > share:
            fitted.append(document.model_copy(update={"text": await _cut(ctx, document.text, share, role)}))
            cut_ids.append(document.id)
        else:
            fitted.append(document)
    return fitted, {"share_tokens": share, "truncated": cut_ids}


async def fit_evidence(
    ctx: SampleContext,
    documents: Sequence[Document],
    prompt_without_evidence: str,
    *,
    title: str,
    policy: OverflowPolicy,
    step_prefix: str = "",
    role: str = "model",
) -> tuple[str, dict[str, Any]]:
    """The evidence text for a prompt, with the record of the overflow policy if one applied.

    The record always has ``policy``, ``applied``, ``budget_tokens`` and ``evidence_tokens``;
    ``truncate`` adds ``share_tokens`` and ``truncated`` (ids), ``map-reduce`` adds ``groups``
    (ids per map call).
    """
    evidence = format_evidence(documents)
    budget = await evidence_budget(ctx, prompt_without_evidence, role)
    tokens = await ctx.model(role).acount_tokens(evidence)
    record: dict[str, Any] = {"policy": policy, "applied": False, "budget_tokens": budget, "evidence_tokens": tokens}
    if budget is None or tokens <= budget:
        return evidence, record
    record["applied"] = True
    if policy == "truncate":
        fitted, details = await truncate_evenly(ctx, documents, budget, role)
        record.update(details)
        return format_evidence(fitted), record
    map_budget = await evidence_budget(ctx, MAP.render(title=title, evidence=""), role)
    groups = await _groups(ctx, documents, map_budget or budget, role)
    summaries = []
    for j, group in enumerate(groups, start=1):
        evidence_j, _ = await fit_evidence(
            ctx, group, MAP.render(title=title, evidence=""), title=title, policy="truncate", role=role
        )
        output = await ctx.generate(
            f"{step_prefix}map/{j}", MAP.render(title=title, evidence=evidence_j), role=role, call=MAP_CALL
        )
        first, last = group[0].id, group[-1].id
        summaries.append(Document(id=f"{first}…{last}" if first != last else first, text=output.text.strip()))
    record["groups"] = [[d.id for d in group] for group in groups]
    reduced = format_evidence(summaries)
    if await ctx.model(role).acount_tokens(reduced) > budget:
        fitted, details = await truncate_evenly(ctx, summaries, budget, role)
        record["summaries_truncated"] = details["truncated"]
        reduced = format_evidence(fitted)
    return reduced, record


async def _groups(ctx: SampleContext, documents: Sequence[Document], budget: int, role: str) -> list[list[Document]]:
    """Consecutive documents packed greedily into groups of at most ``budget`` tokens (one at least)."""
    model = ctx.model(role)
    groups: list[list[Document]] = [[]]
    used = 0
    for i, document in enumerate(documents, start=1):
        tokens = await model.acount_tokens(format_study(i, document)) + 2
        if groups[-1] and used + tokens > budget:
            groups.append([])
            used = 0
        groups[-1].append(document)
        used += tokens
    return groups
