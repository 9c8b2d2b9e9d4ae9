"""The categorical factuality judge (``judge/factuality``).

Per (target, generated) pair the judge makes three model calls, each a named step so an
interrupted run resumes without repeating them:

1. ``judge/factuality/target``: direction and modality of the target statement;
2. ``judge/factuality/generated``: direction and modality of the generated summary;
3. ``judge/factuality/compare``: population, intervention and outcome agreement, and the
   grammar, lexical and non-redundancy checks of the generated text.

A reply is read as a JSON object or as ``name: value`` lines. A reply that yields nothing usable
is asked for again once (step ``…/retry``, the reply and a reminder appended to the chat);
if that fails too, the affected categories are None and the raw replies are kept.

Multi-sentence targets: the generated summary is compared with the target sentence of highest
token Jaccard similarity J(A, B) = |A ∩ B| / |A ∪ B| over lower-cased word sets.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from ..models import GenerateConfig
from ..prompts import add_judge_template
from ..tasks import JUDGE, Call, Generation, Sample, SampleContext, Score, scorer
from ._ask import ask
from ._factuality_labels import (
    BINARY_CATEGORIES,
    DERIVED_CATEGORIES,
    Direction,
    FactualityLabels,
    Modality,
    direction_agrees,
    normalize_direction,
    normalize_modality,
)
from ._read import clean, json_in_text, leading_verdict

PROMPT_VERSION: Final = "2"

Scheme = Literal["benefit", "change"]
"""How direction is defined: ``benefit`` (good or bad for patients, as in M3) or ``change`` (the
outcome goes up or down, as in Evidence Inference)."""

_DIRECTION_HELP: Final[dict[Scheme, str]] = {
    "benefit": (
        '"positive" (the intervention or exposure has a beneficial effect: it improves the outcome or '
        'lowers a risk), "negative" (a harmful effect: it worsens the outcome or raises a risk), '
        '"no effect" (no difference or no association)'
    ),
    "change": (
        '"increased" (the outcome is significantly higher with the intervention than with the comparator), '
        '"decreased" (significantly lower), "no effect" (no significant difference)'
    ),
}

_DIRECTION_VALUES: Final[dict[Scheme, str]] = {
    "benefit": '"positive" | "negative" | "no effect"',
    "change": '"increased" | "decreased" | "no effect"',
}

CLAIM_PROMPT = add_judge_template(
    "factuality/claim",
    2,
    """You label a statement from medical research.

{focus}Statement: {text}

direction: {direction_help}.
modality: "strong" (stated as certain, e.g. "clearly", "conclusive"), "moderate" (a plain statement of \
a finding), "weak" (hedged, e.g. "may", "might", "possibly", "suggests"), "no evidence" (says the \
evidence is insufficient to draw a conclusion), "no claim" (states no finding about an effect).

Reply with one JSON object and nothing else:
{{"direction": {direction_values}, "modality": "strong" | "moderate" | "weak" | "no evidence" | "no claim", \
"reason": "<one short sentence>"}}""",
    "judge/factuality: direction and modality of one statement ({direction_help}: the scheme's definitions).",
)

COMPARE_PROMPT = add_judge_template(
    "factuality/compare",
    2,
    """You compare a generated summary of medical evidence with the reference summary \
written by the review authors.

Reference: {target}

Generated: {generated}

Answer each question with "yes" or "no":
population: does the generated summary concern the same patient population as the reference? A broader \
or narrower population is "no".
intervention: the same intervention (or exposure)? A broader or narrower intervention is "no".
outcome: the same outcome? A broader or narrower outcome is "no".
grammar: is the generated summary grammatical?
lexical: are its words used correctly, with no wrong or invented terms?
non_redundancy: is it free of repeated content?

Reply with one JSON object and nothing else:
{{"population": "yes" | "no", "intervention": "yes" | "no", "outcome": "yes" | "no", "grammar": "yes" | "no", \
"lexical": "yes" | "no", "non_redundancy": "yes" | "no", "reason": "<one short sentence>"}}""",
    "judge/factuality: population, intervention and outcome agreement and the generated text's quality.",
)

RETRY_PROMPT = add_judge_template(
    "factuality/retry",
    2,
    "Your reply could not be read. Reply with only the JSON object in the requested format.",
    "judge/factuality: the one follow-up sent when a reply cannot be read.",
)

COMPARE_FIELDS: Final = ("population", "intervention", "outcome", "grammar", "lexical", "non_redundancy")

_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(])")


def parse_reply(text: str) -> dict[str, str]:
    """The string fields of the first JSON object in ``text``, else its ``name: value`` lines.

    The JSON is found by :func:`~ebmeval.judges.json_in_text` (nested, fenced). Keys are
    lower-cased with spaces and hyphens as underscores; values are stripped strings.
    """
    data = json_in_text(clean(text))
    if isinstance(data, dict) and data:
        return {_field(k): str(v).strip() for k, v in data.items() if v is not None}
    fields: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        key = _field(name.strip(" -*#\"'`"))
        if sep and key and len(key) <= 20 and value.strip():
            fields.setdefault(key, value.strip().strip("\"',").strip())
    return fields


def _field(name: str) -> str:
    return re.sub(r"[\s-]+", "_", name.strip().lower())


def yes_no(value: str | None) -> bool | None:
    """The verdict an answer states first, in the judges' one vocabulary (:func:`~ebmeval.judges.leading_verdict`)."""
    return None if value is None else leading_verdict(value)


def jaccard(a: str, b: str) -> float:
    """Token Jaccard similarity |A ∩ B| / |A ∪ B| over lower-cased word sets (0 when both are empty)."""
    x, y = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    return len(x & y) / len(x | y) if x | y else 0.0


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``, split after ``.``, ``!`` or ``?`` followed by a capital or digit."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def closest_statement(generated: str, target: str) -> tuple[str, float]:
    """The target sentence most similar to ``generated`` by :func:`jaccard`, and that similarity.

    Ties go to the earlier sentence.
    """
    sentences = split_sentences(target) or [target]
    scored = [(jaccard(generated, s), -i, s) for i, s in enumerate(sentences)]
    best = max(scored)
    return best[2], best[0]


@dataclass(frozen=True, slots=True)
class ClaimLabel:
    """Direction and modality of one statement as labelled by the model.

    Attributes:
        direction: The direction, None when the reply named none (or "no evidence"/"no claim" modality).
        modality: The modality, None when the reply named none.
        reason: The model's stated reason.
        raw: The raw replies (two when a retry was needed).
        parsed: Whether a modality was read from the replies.
    """

    direction: Direction | None
    modality: Modality | None
    reason: str = ""
    raw: tuple[str, ...] = ()
    parsed: bool = True

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "direction": self.direction,
            "modality": self.modality,
            "reason": self.reason,
            "raw": list(self.raw),
            "parsed": self.parsed,
        }


async def _ask(
    ctx: SampleContext,
    step: str,
    prompt: str,
    config: GenerateConfig,
    role: str,
    usable: Callable[[dict[str, str]], bool],
    call: Call = JUDGE,
) -> tuple[dict[str, str], tuple[str, ...]]:
    """The fields of one judge question (asked again once when ``usable(fields)`` is false), and the replies.

    When the follow-up is unusable too, the fields it did give are returned (the rest stay missing).
    """

    def parse(text: str) -> dict[str, str] | None:
        fields = parse_reply(text)
        return fields if usable(fields) else None

    attempt = await ask(ctx, step, prompt, parse, RETRY_PROMPT.text, config=config, role=role, call=call)
    fields = attempt.value if attempt.value is not None else parse_reply(attempt.replies[-1])
    return fields, tuple(attempt.replies)


def _focus_line(focus: Mapping[str, str] | None) -> str:
    if not focus:
        return ""
    parts = [f"{name.capitalize()}: {value}" for name, value in focus.items() if value]
    return "\n".join(parts) + "\nLabel the effect of the intervention on this outcome.\n\n" if parts else ""


async def label_claim(
    ctx: SampleContext,
    step: str,
    text: str,
    *,
    focus: Mapping[str, str] | None = None,
    scheme: Scheme = "benefit",
    config: GenerateConfig | None = None,
    role: str = "judge",
    call: Call = JUDGE,
) -> ClaimLabel:
    """Ask the model for the direction and modality of ``text``.

    Args:
        ctx: The sample context the call goes through.
        step: Step name (``…/retry`` is added for the retry).
        text: The statement (a claim, a summary, an abstract).
        focus: Optional ``intervention``/``comparator``/``outcome`` the label is about.
        scheme: How direction is defined (``benefit`` or ``change``; ``increased`` maps to positive).
        config: Generation settings (default: greedy, 160 tokens).
        role: The model role that answers.
        call: The kind of call: a judge's question, or ``ANSWER`` where the labels are the answer under
            evaluation (the run's settings and its ``steps: {answer: …}`` then apply).

    Returns:
        The labels; direction is None where the modality is "no evidence" or "no claim".
    """
    prompt = CLAIM_PROMPT.render(
        focus=_focus_line(focus),
        text=text.strip(),
        direction_help=_DIRECTION_HELP[scheme],
        direction_values=_DIRECTION_VALUES[scheme],
    )
    settings = config or GenerateConfig(temperature=0.0, max_tokens=160)
    fields, raw = await _ask(
        ctx, step, prompt, settings, role, lambda f: normalize_modality(f.get("modality")) is not None, call
    )
    modality = normalize_modality(fields.get("modality"))
    direction = normalize_direction(fields.get("direction"))
    if modality in ("no evidence", "no claim"):
        direction = None
    return ClaimLabel(
        direction=direction, modality=modality, reason=fields.get("reason", ""), raw=raw, parsed=modality is not None
    )


@dataclass(frozen=True, slots=True)
class FactualityVerdict:
    """Everything the judge decided for one pair.

    Attributes:
        labels: The binary schema.
        target: Labels of the (matched) target statement.
        generated: Labels of the generated summary.
        compare: The PICO and fluency answers as read ("yes"/"no" strings), and the reason.
        compare_raw: Raw replies of the comparison call(s).
        statement: The target statement compared with.
        similarity: Its Jaccard similarity to the generated summary.
    """

    labels: FactualityLabels
    target: ClaimLabel
    generated: ClaimLabel
    compare: dict[str, str] = field(default_factory=dict)
    compare_raw: tuple[str, ...] = ()
    statement: str = ""
    similarity: float = 0.0


class FactualityJudge:
    """Labels a (target, generated) pair in the factuality schema with a judge model."""

    version = PROMPT_VERSION
    call_templates: Final = {JUDGE.name: (CLAIM_PROMPT, COMPARE_PROMPT, RETRY_PROMPT)}
    """The templates of its judge's questions (``ebmeval describe``); its ``version`` stands for them."""

    def __init__(
        self,
        *,
        name: str = "judge/factuality",
        max_tokens: int = 160,
        match_sentence: bool = True,
        temperature: float = 0.0,
    ) -> None:
        self.name = name
        self.role = "judge"
        self.config = GenerateConfig(temperature=temperature, max_tokens=max_tokens)
        self.match_sentence = match_sentence

    async def judge(self, ctx: SampleContext, target: str, generated: str) -> FactualityVerdict:
        """Run the three judge steps on one pair."""
        statement, similarity = closest_statement(generated, target) if self.match_sentence else (target, 1.0)
        target_label = await label_claim(ctx, f"{self.name}/target", statement, config=self.config)
        generated_label = await label_claim(ctx, f"{self.name}/generated", generated, config=self.config)
        prompt = COMPARE_PROMPT.render(target=statement.strip(), generated=generated.strip())
        compare, raw = await _ask(
            ctx,
            f"{self.name}/compare",
            prompt,
            self.config,
            "judge",
            lambda f: all(yes_no(f.get(name)) is not None for name in COMPARE_FIELDS),
        )
        modality = (
            None
            if target_label.modality is None or generated_label.modality is None
            else target_label.modality == generated_label.modality
        )
        labels = FactualityLabels(
            **{name: yes_no(compare.get(name)) for name in COMPARE_FIELDS},
            direction=direction_agrees(
                target_label.direction, generated_label.direction, target_label.modality, generated_label.modality
            ),
            modality=modality,
        )
        return FactualityVerdict(labels, target_label, generated_label, compare, raw, statement, similarity)

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        """Score ``generation`` against ``sample.target`` (list targets joined)."""
        verdict = await self.judge(ctx, " ".join(sample.targets), generation.output)
        values = verdict.labels.as_dict()
        reasons = {
            "target": verdict.target.reason,
            "generated": verdict.generated.reason,
            "compare": verdict.compare.get("reason", ""),
        }
        return Score(
            values={name: None if values[name] is None else float(bool(values[name])) for name in values},
            explanation=" | ".join(f"{k}: {v}" for k, v in reasons.items() if v),
            metadata={
                "target": verdict.target.as_dict(),
                "generated": verdict.generated.as_dict(),
                "compare": verdict.compare,
                "compare_raw": list(verdict.compare_raw),
                "statement": verdict.statement,
                "similarity": verdict.similarity,
                "categories": list(BINARY_CATEGORIES + DERIVED_CATEGORIES),
                "prompt_version": PROMPT_VERSION,
            },
        )


@scorer("judge/factuality", binary=(*BINARY_CATEGORIES, *DERIVED_CATEGORIES))
def factuality_judge(max_tokens: int = 160, match_sentence: bool = True, temperature: float = 0.0) -> FactualityJudge:
    """The categorical factuality judge; needs the ``judge`` role.

    Each metric is 1 (yes), 0 (no) or None (unknown: the judge's replies did not give it). The
    target is the reference statement closest to the generated summary (``match_sentence``).

    Metrics:
        population: 1 when the judge says the generated summary concerns the same population as the
            target (a broader or narrower one is 0).
        intervention: 1 when the judge says it concerns the same intervention or exposure.
        outcome: 1 when the judge says it concerns the same outcome.
        direction: 1 when the effect directions the judge gives target and summary (positive, negative,
            no effect) are equal; None when either side's modality is "no evidence" or "no claim".
        modality: 1 when the two claim modalities (strong, moderate, weak, no evidence, no claim) are equal.
        grammar: 1 when the judge says the generated summary is grammatical.
        lexical: 1 when the judge says its words are used correctly, none wrong or invented.
        non_redundancy: 1 when the judge says it repeats no content.
        pico: population ∧ intervention ∧ outcome: 0 when any of them is 0, else None when any is None.
        factually_correct: pico ∧ modality ∧ direction, a None (not applicable) direction not counting.
        fully_correct: factually_correct ∧ grammar ∧ lexical ∧ non_redundancy.
    """
    return FactualityJudge(max_tokens=max_tokens, match_sentence=match_sentence, temperature=temperature)
