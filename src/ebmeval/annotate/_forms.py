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


FACTUALITY_DIRECTIONS = ("positive effect", "negative effect", "no effect", "n/a")
"""The paper's direction labels, and ``n/a`` where the statement makes no claim or finds no evidence."""

FACTUALITY_MODALITIES = ("strong claim", "moderate claim", "weak claim", "no evidence", "no claim")
"""The paper's modality labels."""


def _factuality() -> Form:
    """The schema of the summary-factuality paper: P, I and O separately, direction and modality of each side, fluency.

    Comparison is left out, as in the paper. Direction and modality agreement follow from the side
    labels (``ebmeval factuality analyze`` derives them); direction only where neither side is
    "no evidence" or "no claim".
    """
    yes_no = {"1": "yes", "0": "no"}
    concept = "the same {} as the target? A broader or narrower one is an error."
    binary = {
        "population": "Population: " + concept.format("patient population"),
        "intervention": "Intervention: " + concept.format("intervention (or exposure)"),
        "outcome": "Outcome: " + concept.format("outcome"),
    }
    fluency = {
        "grammar": "Grammar: is the generated summary grammatical?",
        "lexical": "Lexical: are its words spelled and used correctly?",
        "non_redundancy": "Non-redundancy: is it free of repetitions?",
    }
    directions = {
        "positive effect": "the intervention is beneficial or the best option",
        "negative effect": "harmful, or the most undesired option",
        "no effect": "no difference, or no best option can be identified",
        "n/a": "the statement finds no evidence or makes no claim",
    }
    modalities = {
        "strong claim": "stated as certain",
        "moderate claim": "a plain statement of a finding",
        "weak claim": "hedged (may, might, suggests)",
        "no evidence": "the evidence is insufficient to conclude",
        "no claim": "no finding about an effect is stated",
    }
    sides = (("target", "the target summary"), ("generated", "the generated summary"))
    fields = [FormField(k, v, "binary", _YES_NO, yes_no) for k, v in binary.items()]
    for side, what in sides:
        fields.append(
            FormField(f"{side}_direction", f"Direction of {what}", "choice", FACTUALITY_DIRECTIONS, directions)
        )
    for side, what in sides:
        fields.append(FormField(f"{side}_modality", f"Modality of {what}", "choice", FACTUALITY_MODALITIES, modalities))
    fields += [FormField(k, v, "binary", _YES_NO, yes_no) for k, v in fluency.items()]
    return Form(
        name="factuality",
        title="Factuality of a generated summary against its target",
        instructions=(
            "Compare the generated summary with the target summary (the review's conclusions). If the target "
            "has several statements, compare with the closest one. Answer population, intervention and outcome "
            "yes or no; label the direction and the modality of each summary; then judge the fluency."
        ),
        fields=tuple(fields),
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


EXPERT_STEPS = "expert-steps"
"""The per-item checklist: each item's own expert steps (MedThink-Bench's scoring points)."""


def _checklist(steps: tuple[str, ...], name: str = "checklist") -> Form:
    what = "expert step of this item" if name == EXPERT_STEPS else "step of an evidence-based answer"
    return Form(
        name=name,
        title="Expert-step checklist",
        instructions=f"Tick, for each response, every {what} that it carries out well.",
        fields=tuple(
            FormField(f"step_{i + 1}", text, "binary", _YES_NO, {"1": "done", "0": "missing"})
            for i, text in enumerate(steps)
        ),
    )


FORMS = ("rubric", "factuality", "pairwise", "checklist", EXPERT_STEPS)
"""The forms; ``rubric/<prompt set>`` (e.g. ``rubric/medmeta-paper``) is the rubric of another prompt set."""


def build_form(name: str, checklist: tuple[str, ...] | None = None) -> Form:
    """The form called ``name``; ``checklist`` replaces the default expert steps of the checklist form.

    For ``expert-steps`` ``checklist`` is the steps of one item (fields ``step_1`` … ``step_n``).
    """
    if checklist is not None and name not in ("checklist", EXPERT_STEPS):
        raise ConfigError("checklist", "custom steps only apply to the 'checklist' and 'expert-steps' forms")
    if name == "rubric":
        return _rubric(EBMEVAL)
    if name.startswith("rubric/") and name.removeprefix("rubric/") in PROMPT_SETS:
        return _rubric(PROMPT_SETS[name.removeprefix("rubric/")])
    if name == "factuality":
        return _factuality()
    if name == "pairwise":
        return _pairwise()
    if name in ("checklist", EXPERT_STEPS):
        if name == EXPERT_STEPS and checklist is None:
            raise ConfigError("checklist", "the 'expert-steps' form needs the item's own steps")
        steps = DEFAULT_CHECKLIST if checklist is None else tuple(checklist)
        if not steps or any(not s.strip() for s in steps):
            raise ConfigError("checklist", "needs at least one non-empty step")
        return _checklist(steps, name)
    raise UnknownNameError("form", name, FORMS)
