"""The annotation forms: the 0-5 rubric, binary factuality, pairwise preference, expert-step checklist."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .._util.errors import ConfigError, UnknownNameError
from ..synthesis import EBMEVAL, PROMPT_SETS, PromptSet

FieldKind = Literal["scale", "binary", "choice"]
"""``scale``: an integer on a range with anchors; ``binary``: 1 (yes) or 0 (no); ``choice``: one label."""

FieldScope = Literal["candidate", "task"]
"""``candidate``: answered once per shown candidate; ``task``: once per task (e.g. a preference)."""


@dataclass(frozen=True)
class FormField:
    """One question of a form.

    Attributes:
        name: Key the answers are stored under.
        label: The question shown to the annotator.
        kind: How it is answered (see :data:`FieldKind`).
        options: Allowed values as strings, in display order.
        anchors: Description of each option, shown next to it.
        scope: Whether it is asked per candidate or per task.
    """

    name: str
    label: str
    kind: FieldKind
    options: tuple[str, ...]
    anchors: dict[str, str] = field(default_factory=dict)
    scope: FieldScope = "candidate"

    def validate(self, value: str) -> str:
        """``value`` if it is one of the options; raises ``ValueError`` otherwise."""
        if value not in self.options:
            raise ValueError(f"'{value}' is not a valid answer to '{self.name}' (allowed: {', '.join(self.options)})")
        return value


@dataclass(frozen=True)
class Form:
    """A named set of questions and how many candidates one task shows (None: every system)."""

    name: str
    title: str
    instructions: str
    fields: tuple[FormField, ...]
    per_task: int | None = None

    def field(self, name: str) -> FormField:
        """The field called ``name``; raises ``KeyError`` for an unknown one."""
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def targets(self, candidate_ids: list[str]) -> list[tuple[str, FormField]]:
        """Every (target, field) an annotator must answer: candidate ids for candidate fields, ``task`` else."""
        out: list[tuple[str, FormField]] = []
        for f in self.fields:
            if f.scope == "candidate":
                out.extend((c, f) for c in candidate_ids)
            else:
                out.append(("task", f))
        return out


_YES_NO = ("1", "0")

RUBRIC_ANCHORS = dict(EBMEVAL.anchors)
"""The anchors of the default rubric form: those ebmeval's rubric judge is given (``synthesis/rubric``)."""

DEFAULT_CHECKLIST = (
    "States the clinical question (population, intervention, comparator, outcome)",
    "Identifies the relevant evidence",
    "Appraises risk of bias",
    "Reports effect sizes with their uncertainty",
    "Grades the certainty of the evidence",
    "Draws a conclusion that follows from the evidence",
)


def _rubric(prompts: PromptSet) -> Form:
    """The 0-5 rubric of a synthesis prompt set: the anchors and criteria its judges are given."""
    return Form(
        name="rubric" if prompts is EBMEVAL else f"rubric/{prompts.name}",
        title="Overall quality (0-5)",
        instructions="Compare each response with the reference and give it one score using the anchors. "
        f"Criteria: {prompts.criteria}",
        fields=(FormField("score", "Overall score", "scale", tuple(prompts.anchors), dict(prompts.anchors)),),
    )


def _factuality() -> Form:
    questions = {
        "pico": "Population, intervention, comparator and outcomes agree with the reference",
        "direction": "The direction of the effect agrees with the reference",
        "modality": "The certainty of the claims (modality) matches the reference",
        "grammar": "The text is grammatical",
        "lexical": "No wrong terms, drug names or numbers",
        "non_redundancy": "No needless repetition",
    }
    return Form(
        name="factuality",
        title="Factuality (yes / no)",
        instructions="For each response answer every question: 1 = yes, 0 = no.",
        fields=tuple(FormField(k, v, "binary", _YES_NO, {"1": "yes", "0": "no"}) for k, v in questions.items()),
    )


def _pairwise() -> Form:
    return Form(
        name="pairwise",
        title="Pairwise preference",
        instructions="Which response is closer to the reference and more useful to a clinician?",
        fields=(
            FormField(
                "preference",
                "Better response",
                "choice",
                ("A", "B", "neither"),
                {"A": "Response A", "B": "Response B", "neither": "Neither / equally good"},
                scope="task",
            ),
        ),
        per_task=2,
    )


def _checklist(steps: tuple[str, ...]) -> Form:
    return Form(
        name="checklist",
        title="Expert-step checklist",
        instructions="Tick, for each response, every step of an evidence-based answer that it carries out well.",
        fields=tuple(
            FormField(f"step_{i + 1}", text, "binary", _YES_NO, {"1": "done", "0": "missing"})
            for i, text in enumerate(steps)
        ),
    )


FORMS = ("rubric", "factuality", "pairwise", "checklist")
"""The forms; ``rubric/<prompt set>`` (e.g. ``rubric/medmeta-paper``) is the rubric of another prompt set."""


def build_form(name: str, checklist: tuple[str, ...] | None = None) -> Form:
    """The form called ``name``; ``checklist`` replaces the default expert steps of the checklist form."""
    if checklist is not None and name != "checklist":
        raise ConfigError("checklist", "custom steps only apply to the 'checklist' form")
    if name == "rubric":
        return _rubric(EBMEVAL)
    if name.startswith("rubric/") and name.removeprefix("rubric/") in PROMPT_SETS:
        return _rubric(PROMPT_SETS[name.removeprefix("rubric/")])
    if name == "factuality":
        return _factuality()
    if name == "pairwise":
        return _pairwise()
    if name == "checklist":
        steps = DEFAULT_CHECKLIST if checklist is None else tuple(checklist)
        if not steps or any(not s.strip() for s in steps):
            raise ConfigError("checklist", "needs at least one non-empty step")
        return _checklist(steps)
    raise UnknownNameError("form", name, FORMS)
