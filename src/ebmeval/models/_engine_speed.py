"""Whether a native llama.cpp build is faster than ``xllamacpp`` here, measured rather than assumed.

Both engines load the same model with the same threads; one warm-up request each, then
the :data:`SPEED_PROMPTS` go to the two servers in alternation (native, xllamacpp,
native, …), so a change of machine load during the check falls on both. Each reply
decodes exactly ``max_tokens`` tokens (``ignore_eos``) with the prompt cache off, and
llama.cpp's own ``timings`` of each reply are summed:

- prompt tokens/s = Σ ``prompt_n`` / Σ ``prompt_ms`` · 1000
- decode tokens/s = Σ ``predicted_n`` / Σ ``predicted_ms`` · 1000
- seconds = (Σ ``prompt_ms`` + Σ ``predicted_ms``) / 1000, the time the engine computed

The native build counts as faster when its seconds are fewer than ``xllamacpp``'s.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from .._util.errors import EbmevalError

SPEED_PROMPTS = (
    "Summarise the following trial in two sentences. In a multicentre randomised controlled trial, 412 adults "
    "with type 2 diabetes and chronic kidney disease were assigned to an SGLT2 inhibitor or placebo on top of "
    "standard care. After a median follow-up of 2.4 years, the composite of a sustained 40% decline in eGFR, "
    "end-stage kidney disease or renal death occurred in 9.8% of the treated group and 14.1% of the placebo "
    "group (hazard ratio 0.68, 95% CI 0.51 to 0.91). Genital mycotic infections were more frequent with "
    "treatment; ketoacidosis was rare in both groups.",
    "Explain to a junior doctor what this result means. A meta-analysis of 14 cohort studies (n = 98,000) "
    "reported that regular aspirin use was associated with a lower incidence of colorectal cancer (pooled "
    "relative risk 0.81, 95% CI 0.75 to 0.88), with moderate heterogeneity (I² = 46%). The association was "
    "stronger after ten or more years of use, and the authors caution that confounding by healthy-user "
    "behaviour cannot be excluded in observational data.",
    "List the main threats to validity in this study. A single-centre, open-label trial randomised 120 patients "
    "undergoing hip replacement to early mobilisation within six hours or standard mobilisation the next day. "
    "Length of stay fell from 4.6 to 3.9 days. Outcome assessors knew the allocation, 11 patients crossed "
    "over, and the analysis excluded those who did not receive the allocated care.",
    "Rate the certainty of this evidence with GRADE and justify it. Three small randomised trials (total "
    "n = 186) compared vitamin D supplementation with placebo for the prevention of acute respiratory "
    "infections in care-home residents. Two showed a modest benefit and one showed none; confidence "
    "intervals were wide and overlapped no effect, and one trial lost 30% of participants to follow-up.",
)
"""Fixed prompts of a few hundred tokens each, as the tasks' abstracts are."""


class SpeedCheckError(EbmevalError):
    """An engine did not answer the speed check with timings."""


class ChatServer(Protocol):
    """What both engines' servers offer: an OpenAI-style chat call."""

    def handle_chat_completions(self, request: dict[str, Any]) -> Any: ...


@dataclass(frozen=True)
class Throughput:
    """One engine's figures over the fixed prompts."""

    prompt_tokens_per_s: float
    decode_tokens_per_s: float
    seconds: float
    """Σ prompt_ms + Σ predicted_ms over the prompts, in seconds."""


@dataclass(frozen=True)
class SpeedCheck:
    """The native build against ``xllamacpp`` on :data:`SPEED_PROMPTS`."""

    model: str
    n_threads: int
    max_tokens: int
    prompts: int
    native: Throughput
    xllamacpp: Throughput | None
    """``None`` where ``xllamacpp`` is not installed: the native build is then the only engine."""
    measured_at: str

    @property
    def native_faster(self) -> bool:
        """Whether the native build computed the prompts in less time (or is the only engine)."""
        return self.xllamacpp is None or self.native.seconds < self.xllamacpp.seconds

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> SpeedCheck:
        """The check as ``dataclasses.asdict`` wrote it into ``engine.json``."""
        other = record["xllamacpp"]
        return cls(
            model=str(record["model"]),
            n_threads=int(record["n_threads"]),
            max_tokens=int(record["max_tokens"]),
            prompts=int(record["prompts"]),
            native=Throughput(**record["native"]),
            xllamacpp=None if other is None else Throughput(**other),
            measured_at=str(record["measured_at"]),
        )


def _request(prompt: str, max_tokens: int) -> dict[str, Any]:
    return {
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "seed": 1,
        "ignore_eos": True,
        "cache_prompt": False,
    }


def _timings(server: ChatServer, prompt: str, max_tokens: int, engine: str) -> dict[str, float]:
    data = server.handle_chat_completions(_request(prompt, max_tokens))
    timings = data.get("timings") if isinstance(data, dict) else None
    keys = ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms")
    if not isinstance(timings, dict) or not all(isinstance(timings.get(key), int | float) for key in keys):
        raise SpeedCheckError(f"{engine} answered the speed check without timings: {str(data)[:300]}")
    return {key: float(timings[key]) for key in keys}


def _throughput(rows: list[dict[str, float]]) -> Throughput:
    prompt_ms = sum(row["prompt_ms"] for row in rows)
    predicted_ms = sum(row["predicted_ms"] for row in rows)
    return Throughput(
        prompt_tokens_per_s=round(sum(row["prompt_n"] for row in rows) / prompt_ms * 1000, 2),
        decode_tokens_per_s=round(sum(row["predicted_n"] for row in rows) / predicted_ms * 1000, 2),
        seconds=round((prompt_ms + predicted_ms) / 1000, 3),
    )


def compare_engines(
    native: ChatServer,
    xllamacpp: ChatServer | None,
    *,
    model: str,
    n_threads: int,
    max_tokens: int = 32,
    prompts: Sequence[str] = SPEED_PROMPTS,
) -> SpeedCheck:
    """Time ``prompts`` on both running servers, alternating between them.

    Raises:
        SpeedCheckError: A server answered without llama.cpp's ``timings``.
    """
    servers = {"native": native} if xllamacpp is None else {"native": native, "xllamacpp": xllamacpp}
    for name, server in servers.items():
        _timings(server, "Say hello.", 4, name)  # warm-up, not counted
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in servers}
    for prompt, (name, server) in itertools.product(prompts, servers.items()):
        rows[name].append(_timings(server, prompt, max_tokens, name))
    return SpeedCheck(
        model=model,
        n_threads=n_threads,
        max_tokens=max_tokens,
        prompts=len(prompts),
        native=_throughput(rows["native"]),
        xllamacpp=_throughput(rows["xllamacpp"]) if "xllamacpp" in rows else None,
        measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
