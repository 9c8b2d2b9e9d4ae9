"""Saving answers (an upsert, so concurrent and repeated saves never lose or duplicate one) and reading them."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from ..stats import StatsInputError, fleiss_kappa, krippendorff_alpha
from ._forms import EXPERT_STEPS, Form, build_form
from ._models import Annotator, Answer, Assignment, Item, Study, utcnow


def study_form(study: Study) -> Form:
    """The form of ``study``; for ``expert-steps``, fields up to the longest item's steps (labelled by number)."""
    if study.form == EXPERT_STEPS:
        longest = max(len(i.steps or ()) for i in study.items)
        return build_form(EXPERT_STEPS, tuple(f"Expert step {n + 1} of the item" for n in range(longest)))
    return build_form(study.form, tuple(study.checklist) if study.checklist is not None else None)


def item_form(study: Study, item: Item) -> Form:
    """The form a task of ``item`` shows: the study's, or for ``expert-steps`` the item's own steps."""
    if study.form == EXPERT_STEPS:
        return build_form(EXPERT_STEPS, tuple(item.steps or ()))
    return study_form(study)


def save_answer(session: Session, assignment_id: int, target: str, field: str, value: str) -> None:
    """Insert or update one answer in a single statement; revisions counts the saves of the same key."""
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    now = utcnow()
    stmt = insert(Answer).values(
        assignment_id=assignment_id,
        target=target,
        field=field,
        value=value,
        revisions=1,
        created_at=now,
        updated_at=now,
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=["assignment_id", "target", "field"],
        set_={"value": value, "updated_at": now, "revisions": Answer.revisions + 1},
    )
    session.execute(stmt)


def is_complete(form: Form, assignment: Assignment) -> bool:
    """Whether every (target, field) of the task has an answer."""
    have = {(a.target, a.field) for a in assignment.answers}
    return all((t, f.name) in have for t, f in form.targets([s.public_id for s in assignment.shown]))


@dataclass(frozen=True)
class Rating:
    """One human judgement resolved to its system (for the lead, exports and statistics only).

    Attributes:
        item: The item's key.
        annotator: The annotator's name.
        field: The form field.
        system: The system the judgement is about.
        opponent: For pairwise preferences, the other system shown; else None.
        slot: Where the candidate was shown (0-based).
        raw: The stored answer.
        value: Numeric value: the scale point, 1/0 for yes/no, a choice's position among the field's
            options, and for a pairwise preference 1 if the system won, 0 if it lost and 0.5 for "neither".
        seconds: Time from opening the task to completing it, None while not completed.
        answered_at: Last save, ISO 8601.
        revisions: How many times the answer was saved.
    """

    item: str
    annotator: str
    field: str
    system: str
    opponent: str | None
    slot: int
    raw: str
    value: float
    seconds: float | None
    answered_at: str
    revisions: int


def _value(form: Form, field: str, raw: str) -> float:
    """The number of an answer: the scale point or 1/0, and a choice's position among its options."""
    f = form.field(field)
    return float(f.options.index(raw)) if f.kind == "choice" else float(raw)


def study_ratings(session: Session, study: Study) -> list[Rating]:
    """Every answer of the study resolved to systems, ordered by annotator, task and field."""
    rows = session.execute(
        select(Assignment, Annotator.name)
        .join(Annotator, Assignment.annotator_id == Annotator.id)
        .where(Annotator.study_id == study.id)
        .order_by(Annotator.id, Assignment.position)
    ).all()
    form = study_form(study)
    out: list[Rating] = []
    for assignment, name in rows:
        shown = {s.public_id: s for s in assignment.shown}
        seconds = (
            (assignment.completed_at - assignment.opened_at).total_seconds()
            if assignment.completed_at is not None and assignment.opened_at is not None
            else None
        )
        for answer in assignment.answers:
            common: dict[str, Any] = {
                "item": assignment.item.item_key,
                "annotator": name,
                "field": answer.field,
                "raw": answer.value,
                "seconds": seconds,
                "answered_at": answer.updated_at.isoformat(),
                "revisions": answer.revisions,
            }
            if answer.target == "task":
                # Only the pairwise preference is asked per task: one rating per shown system.
                winner = {"A": 0, "B": 1}.get(answer.value)
                pair = assignment.shown
                for me, other in ((0, 1), (1, 0)):
                    value = 0.5 if winner is None else float(winner == me)
                    out.append(
                        Rating(
                            system=pair[me].candidate.system.name,
                            opponent=pair[other].candidate.system.name,
                            slot=me,
                            value=value,
                            **common,
                        )
                    )
            else:
                s = shown[answer.target]
                value = _value(form, answer.field, answer.value)
                out.append(Rating(system=s.candidate.system.name, opponent=None, slot=s.slot, value=value, **common))
    return out


@dataclass(frozen=True)
class FieldAgreement:
    """Agreement among annotators on one field so far.

    Attributes:
        field: The form field.
        units: Units (item x system, or item x pair) with at least two ratings.
        alpha: Krippendorff's alpha, or None while undefined.
        kappa: Fleiss' kappa for nominal fields, else None.
        note: Why a coefficient is missing, or which alpha metric was used.
    """

    field: str
    units: int
    alpha: float | None
    kappa: float | None
    note: str


def agreement(study: Study, ratings: Sequence[Rating]) -> list[FieldAgreement]:
    """Agreement among annotators per field, over units with at least two ratings.

    Krippendorff's alpha = 1 - D_o / D_e (ordinal distance for the 0-5 scale, nominal otherwise) and,
    for nominal fields, Fleiss' kappa = (P_o - P_e) / (1 - P_e), both from :mod:`ebmeval.stats`.

    Units are (item, system) for per-candidate fields. For the pairwise preference the unit is
    (item, unordered pair) and the value the winning system (or "neither"), so annotators who saw
    the pair in opposite orders are compared on the same scale.
    """
    form = study_form(study)
    annotators = sorted({r.annotator for r in ratings})
    out = []
    for f in form.fields:
        units: dict[tuple[str, ...], dict[str, float]] = defaultdict(dict)
        for r in ratings:
            if r.field != f.name:
                continue
            if f.scope == "task":
                if r.opponent is None or r.slot != 0:
                    continue
                pair = tuple(sorted((r.system, r.opponent)))
                code = 0.0 if r.value == 0.5 else 1.0 + pair.index(r.system if r.value == 1.0 else r.opponent)
                units[(r.item, *pair)][r.annotator] = code
            else:
                units[(r.item, r.system)][r.annotator] = r.value
        table = [[row.get(a, math.nan) for a in annotators] for row in units.values() if len(row) >= 2]
        metric: Literal["ordinal", "nominal"] = "ordinal" if f.kind == "scale" else "nominal"
        alpha = kappa = None
        note = f"alpha: {metric}"
        if table:
            try:
                alpha = krippendorff_alpha(table, metric=metric).value
            except StatsInputError as exc:
                note = f"alpha undefined: {exc}"
            if f.kind != "scale":
                try:
                    kappa = fleiss_kappa(table).value
                except StatsInputError:
                    kappa = None
        else:
            note = "no unit has two ratings yet"
        out.append(FieldAgreement(f.name, len(table), alpha, kappa, note))
    return out
