"""Separating a reasoning model's thinking trace from its answer.

Thinking traces arrive either in a separate field of the response (``reasoning_content`` or
``reasoning``, read by the providers) or inline as ``<think>…</think>`` blocks (also
``<thinking>`` and ``<reasoning>``). The trace is kept apart and never parsed, judged or
scored: everything downstream sees the answer only.
"""

from __future__ import annotations

import re

_BLOCK = re.compile(r"<(think|thinking|reasoning)>(.*?)</\1>", re.S | re.I)
_CLOSE = re.compile(r"</(?:think|thinking|reasoning)>", re.I)
_OPEN = re.compile(r"<(?:think|thinking|reasoning)>", re.I)


def split_reasoning(text: str) -> tuple[str, str]:
    """``(answer, trace)`` of a reply with inline thinking.

    Removes ``<think>…</think>`` blocks, any text before a lone closing tag (templates that
    open the trace in the prompt), and everything from an opening tag that is never closed
    (a trace cut off by the token limit, which holds no answer). The removed text, blocks
    joined by blank lines, is the trace.
    """
    traces = [match.group(2).strip() for match in _BLOCK.finditer(text)]
    answer = _BLOCK.sub("", text)
    if closing := _CLOSE.search(answer):
        traces.append(answer[: closing.start()].strip())
        answer = answer[closing.end() :]
    if opening := _OPEN.search(answer):
        traces.append(answer[opening.end() :].strip())
        answer = answer[: opening.start()]
    return answer, "\n\n".join(t for t in traces if t)


def strip_reasoning(text: str) -> str:
    """``text`` without thinking traces (the answer of :func:`split_reasoning`)."""
    return split_reasoning(text)[0]
