"""A scripted responder that appends every prompt it answers to a log file."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ebmeval.models import ChatMessage, GenerateConfig

from .toy import answer_a


def counting_responder(log: str) -> Callable[[Sequence[ChatMessage], GenerateConfig], str]:
    """Answers like ``answer_a`` and logs each prompt as one line (flushed at once)."""

    def respond(messages: Sequence[ChatMessage], config: GenerateConfig) -> str:
        with Path(log).open("a") as handle:
            handle.write(messages[-1].content.replace("\n", " ") + "\n")
        return answer_a(messages, config)

    return respond
