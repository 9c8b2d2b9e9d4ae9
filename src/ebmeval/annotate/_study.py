"""Building a study from run-store runs or JSONL files: items, systems, annotators, assignments."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from .._util.errors import ConfigError, DataError, UsageError
from ..tasks import read_jsonl
from ._design import PlannedTask, latin_square_plan
from ._forms import EXPERT_STEPS, Form, build_form
from ._models import (
    Annotator,
    Assignment,
    CalibrationItem,
    Candidate,
    Item,
    Shown,
    Study,
    System,
    make_engine,
)
from ._security import hash_token, new_token, signing_secret


@dataclass
class SourceItem:
    """An item before it is stored: reference, candidates by system, and provenance."""

    key: str
    reference: str
    candidates: dict[str, str]
    question: str | None = None
    sources: list[dict[str, Any]] = field(default_factory=list)
    epoch: int = 0
    steps: list[str] | None = None


@dataclass(frozen=True)
class StudyInvitations:
    """What :func:`create_study` hands back once: the credentials (only their hashes are stored).

    Attributes:
        slug: The study's name.
        admin_token: The lead's credential; the dashboard is at ``/admin/join/<admin_token>``.
        tokens: Each annotator's invitation token; their link is ``/join/<token>``.
        n_items: Items in the study.
        n_tasks: Assignments created (items x k).
        skipped: Sample ids left out because a run had no generation for them.
    """

    slug: str
    admin_token: str
    tokens: dict[str, str]
    n_items: int
    n_tasks: int
    skipped: tuple[str, ...] = ()

    def links(self, base_url: str) -> dict[str, str]:
        """Each annotator's invitation URL, plus ``"admin"``: the dashboard URL."""
        base = base_url.rstrip("/")
        out = {name: f"{base}/join/{token}" for name, token in self.tokens.items()}
        out["admin"] = f"{base}/admin/join/{self.admin_token}"
        return out


def items_from_runs(store_path: str | Path, run_ids: Sequence[str]) -> tuple[list[SourceItem], list[str], list[str]]:
    """Group the generations of several runs by sample id.

    Each run is one system, named after its model (suffixed with the run id when two runs share a
    model). The reference is the sample's target and the sources its documents.

    Returns:
        (items with a generation in every run, system names in run order, run ids by system), and
        skipped sample ids are those missing from at least one run.
    """
    from ..store import RunStore

    store = RunStore(store_path, read_only=True)
    try:
        runs = [store.get_run(r) for r in run_ids]
        models = [r.model for r in runs]
        names = [m if models.count(m) == 1 else f"{m} ({r.run_id})" for m, r in zip(models, runs, strict=True)]
        if len(set(names)) != len(names):
            raise UsageError("the same run is listed twice")
        by_sample: dict[str, SourceItem] = {}
        for name, run in zip(names, runs, strict=True):
            for sample, generation in store.generations(run.run_id):
                if generation.epoch != 0:
                    continue
                item = by_sample.get(sample.id)
                if item is None:
                    target = sample.target if isinstance(sample.target, str) else "\n".join(sample.target)
                    item = SourceItem(
                        key=sample.id,
                        reference=target,
                        candidates={},
                        question=sample.input,
                        sources=[{"id": d.id, "title": d.title, "text": d.text} for d in sample.documents],
                        steps=_steps_of(sample.metadata.get("scoring_points")),
                    )
                    by_sample[sample.id] = item
                item.candidates[name] = generation.output
    finally:
        store.close()
    complete = [i for i in by_sample.values() if len(i.candidates) == len(names)]
    skipped = [i.key for i in by_sample.values() if len(i.candidates) != len(names)]
    return complete, names, skipped


def _steps_of(value: Any) -> list[str] | None:
    """An item's expert steps (MedThink-Bench's ``scoring_points``) when ``value`` is a list of texts, else None."""
    if isinstance(value, list) and value and all(isinstance(v, str) and v.strip() for v in value):
        return [v.strip() for v in value]
    return None


def _need(obj: dict[str, Any], key: str, kind: type, path: Path, line: int) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind) or (isinstance(value, str) and not value.strip()):
        raise DataError(path, f"needs a non-empty {kind.__name__}", line=line, field=key, value=value)
    return value


def _jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    return list(read_jsonl(path))


def items_from_file(path: str | Path) -> tuple[list[SourceItem], list[str]]:
    """Read items from JSONL lines ``{item_id, reference, candidates: [{system, text}], sources?, question?, steps?}``.

    ``steps`` are the item's own expert steps, shown by the ``expert-steps`` form.

    ``sources`` is a list of strings or of ``{id?, title?, text}`` objects. Every line must name the
    same systems.

    Returns:
        (items, system names in first-seen order).
    """
    path = Path(path)
    items: list[SourceItem] = []
    systems: list[str] = []
    seen: set[str] = set()
    for n, obj in _jsonl(path):
        key = str(_need(obj, "item_id", str, path, n))
        if key in seen:
            raise DataError(path, "duplicate item id", line=n, field="item_id", value=key)
        seen.add(key)
        candidates: dict[str, str] = {}
        for c in _need(obj, "candidates", list, path, n):
            if not isinstance(c, dict):
                raise DataError(path, "candidates must be objects {system, text}", line=n, field="candidates")
            system = str(_need(c, "system", str, path, n))
            if system in candidates:
                raise DataError(path, "system listed twice", line=n, field="candidates", value=system)
            candidates[system] = str(_need(c, "text", str, path, n))
        if not systems:
            systems = list(candidates)
        elif set(candidates) != set(systems):
            raise DataError(path, f"systems differ from the first line's {systems}", line=n, value=list(candidates))
        sources = []
        for i, s in enumerate(obj.get("sources") or []):
            if isinstance(s, str):
                sources.append({"id": str(i + 1), "title": None, "text": s})
            elif isinstance(s, dict) and isinstance(s.get("text"), str):
                sources.append({"id": str(s.get("id", i + 1)), "title": s.get("title"), "text": s["text"]})
            else:
                raise DataError(path, "sources must be strings or {id, title, text} objects", line=n, field="sources")
        question = obj.get("question")
        steps = _steps_of(obj.get("steps"))
        if "steps" in obj and steps is None:
            raise DataError(path, "steps must be a non-empty list of non-empty strings", line=n, field="steps")
        items.append(
            SourceItem(
                key=key,
                reference=str(_need(obj, "reference", str, path, n)),
                candidates=candidates,
                question=question if isinstance(question, str) else None,
                sources=sources,
                steps=steps,
            )
        )
    if not items:
        raise DataError(path, "holds no items")
    return items, systems


def read_calibration(path: str | Path, form: Form) -> list[dict[str, Any]]:
    """Read the gold examples of a calibration file.

    Lines are ``{reference, candidates: [{text, gold: {field: value}}], gold?, justification, highlights?}``.
    ``gold`` on a candidate answers the form's per-candidate fields; ``gold`` at the top level
    its per-task fields (the pairwise preference). ``highlights`` are passages of the candidates
    marked on the feedback page. Values are checked against the form.
    """
    path = Path(path)
    out = []
    n_candidates = form.per_task
    for n, obj in _jsonl(path):
        candidates = _need(obj, "candidates", list, path, n)
        if n_candidates is not None and len(candidates) != n_candidates:
            raise DataError(path, f"the {form.name} form shows {n_candidates} candidates", line=n, field="candidates")
        gold: dict[str, dict[str, str]] = {}
        texts = []
        for slot, c in enumerate(candidates):
            if not isinstance(c, dict):
                raise DataError(path, "candidates must be objects {text, gold}", line=n, field="candidates")
            texts.append(str(_need(c, "text", str, path, n)))
            gold[f"c{slot}"] = {str(k): str(v) for k, v in (c.get("gold") or {}).items()}
        gold["task"] = {str(k): str(v) for k, v in (obj.get("gold") or {}).items()}
        for target, answers in gold.items():
            for name, value in answers.items():
                try:
                    f = form.field(name)
                    if (f.scope == "task") != (target == "task"):
                        raise ValueError(f"'{name}' is answered per {f.scope}")
                    f.validate(value)
                except KeyError:
                    raise DataError(path, f"unknown field of the {form.name} form", line=n, field=name) from None
                except ValueError as exc:
                    raise DataError(path, str(exc), line=n, field=name, value=value) from None
        if not any(gold.values()):
            raise DataError(path, "gives no gold answer", line=n, field="gold")
        highlights = obj.get("highlights") or []
        if not isinstance(highlights, list) or not all(isinstance(h, str) for h in highlights):
            raise DataError(path, "must be a list of strings", line=n, field="highlights")
        out.append(
            {
                "reference": str(_need(obj, "reference", str, path, n)),
                "candidates": texts,
                "gold": gold,
                "justification": str(_need(obj, "justification", str, path, n)),
                "highlights": highlights,
            }
        )
    return out


def judged_rubric(store_path: str | Path, run_ids: Sequence[str]) -> str:
    """The rubric form of the runs' rubric judges: ``rubric`` (ebmeval's) or ``rubric/<prompt set>``.

    Read from the rubric template each run's score sets recorded, so the annotators see the
    anchors and criteria the judges were given. Runs without a rubric judge give ``rubric``;
    runs judged with two different rubrics are refused (one study, one rubric).
    """
    from ..store import RunStore
    from ..synthesis import prompt_set_of_template

    store = RunStore(store_path, read_only=True)
    try:
        used = {
            found.name
            for run_id in run_ids
            for score_set in store.score_sets(store.get_run(run_id).run_id)
            for template in score_set.spec.get("templates", [])
            if (found := prompt_set_of_template(str(template))) is not None
        }
    finally:
        store.close()
    if len(used) > 1:
        raise UsageError(f"the runs' judges used different rubrics ({', '.join(sorted(used))}); make one study each")
    return "rubric" if not used or used == {"ebmeval"} else f"rubric/{used.pop()}"


def create_study(
    db: str,
    *,
    slug: str,
    form: str,
    annotators: Sequence[str],
    k: int = 2,
    runs: Sequence[str] = (),
    store: str | Path | None = None,
    files: Sequence[str | Path] = (),
    calibration: str | Path | None = None,
    pass_threshold: float = 0.8,
    calibration_size: int | None = None,
    checklist: Sequence[str] | None = None,
    title: str | None = None,
    seed: int = 0,
    limit: int | None = None,
) -> StudyInvitations:
    """Create a study in the annotation database ``db`` and return its one-time credentials.

    Items come from runs in the run store ``store`` (one system per run, grouped by sample id)
    and/or JSONL ``files`` (see :func:`items_from_file`); both must name the same systems when
    combined. Each item is assigned to ``k`` annotators by :func:`latin_square_plan`.

    Args:
        db: Annotation database: a SQLite path or a ``postgresql://`` URL.
        slug: Unique study name (letters, digits, ``-`` and ``_``).
        form: ``rubric``, ``factuality``, ``pairwise``, ``checklist`` or ``expert-steps`` (each item's
            own steps: ``steps`` of a file's line, ``scoring_points`` of a run's sample). A rubric study of
            runs shows the rubric their judges used (:func:`judged_rubric`).
        annotators: Distinct annotator names.
        k: Annotators per item.
        runs: Run ids (or unique prefixes) in ``store``.
        store: Run-store path, needed with ``runs``.
        files: JSONL item files.
        calibration: JSONL gold examples (see :func:`read_calibration`); none skips calibration.
        pass_threshold: Share of gold answers to match (scales within +-1) before tasks open.
        calibration_size: Gold examples per calibration attempt (default: all, so one attempt). A
            failed attempt's examples are shown with their reference answers and never scored
            again: the next attempt takes the next ``calibration_size`` unseen ones.
        checklist: Steps of the checklist form (default: :data:`DEFAULT_CHECKLIST`).
        title: Title shown on the pages (default: the slug).
        seed: Seed of the assignment.
        limit: Keep only the first ``limit`` items.
    """
    names = _check_settings(slug, annotators, pass_threshold)
    form, spec = _study_form(form, checklist, calibration, runs, store)
    items, systems, run_of, skipped = _gather_items(runs, store, files)
    items = _items_to_annotate(items, limit, form)
    gold = _gold_examples(calibration, spec, calibration_size)
    plan = latin_square_plan(
        len(items), len(systems), len(names), k, seed=seed, per_task=spec.per_task if spec else None
    )
    study = Study(
        slug=slug,
        title=title or slug,
        form=form,
        checklist=list(checklist) if checklist is not None else None,
        k=k,
        seed=seed,
        pass_threshold=pass_threshold,
        calibration_size=calibration_size,
    )
    admin_token, tokens = _write_study(db, study, _Contents(items, systems, run_of, names, gold, plan))
    return StudyInvitations(slug, admin_token, tokens, len(items), len(plan), tuple(skipped))


def _study_form(
    form: str,
    checklist: Sequence[str] | None,
    calibration: str | Path | None,
    runs: Sequence[str],
    store: str | Path | None,
) -> tuple[str, Form | None]:
    """The form's name (a rubric study of runs: their judges' rubric) and its fields (none for expert steps)."""
    if form == "rubric" and runs and store is not None:
        form = judged_rubric(store, runs)
    if form != EXPERT_STEPS:
        return form, build_form(form, tuple(checklist) if checklist is not None else None)
    if checklist is not None or calibration is not None:
        raise ConfigError(
            "form", "the 'expert-steps' form takes each item's own steps: no --checklist-step, no calibration"
        )
    return form, None


def _items_to_annotate(items: list[SourceItem], limit: int | None, form: str) -> list[SourceItem]:
    """The first ``limit`` items (all without one); for the expert-steps form each must bring its steps."""
    if limit is not None:
        items = items[:limit]
    if form == EXPERT_STEPS and (bare := [i.key for i in items if not i.steps]):
        raise UsageError(f"the 'expert-steps' form needs every item's steps; none for item '{bare[0]}'")
    return items


def _gold_examples(calibration: str | Path | None, spec: Form | None, size: int | None) -> list[dict[str, Any]]:
    """The gold examples of the calibration file (none without one), once ``size`` fits their number."""
    gold = read_calibration(calibration, spec) if calibration is not None and spec is not None else []
    if size is not None and not 1 <= size <= len(gold):
        raise ConfigError("calibration_size", f"must be between 1 and the {len(gold)} gold examples, got {size}")
    return gold


def _check_settings(slug: str, annotators: Sequence[str], pass_threshold: float) -> list[str]:
    """The annotator names, once the slug, the names and the pass threshold are valid."""
    if not slug or not all(ch.isalnum() or ch in "-_" for ch in slug) or len(slug) > 64:
        raise ConfigError("slug", f"use 1-64 letters, digits, '-' or '_' (got {slug!r})")
    names = [a.strip() for a in annotators]
    if not names or any(not a for a in names) or len(set(names)) != len(names):
        raise ConfigError("annotators", "give distinct, non-empty annotator names")
    if not 0 < pass_threshold <= 1:
        raise ConfigError("pass_threshold", f"must be in (0, 1], got {pass_threshold}")
    return names


def _gather_items(
    runs: Sequence[str], store: str | Path | None, files: Sequence[str | Path]
) -> tuple[list[SourceItem], list[str], dict[str, str], list[str]]:
    """The items of the runs and files, the systems, each run system's run id, and the skipped samples."""
    items: list[SourceItem] = []
    systems: list[str] = []
    run_of: dict[str, str] = {}
    skipped: list[str] = []
    if runs:
        if store is None:
            raise ConfigError("store", "runs need the run store they are in")
        items, systems, skipped = items_from_runs(store, runs)
        from ..store import RunStore

        rs = RunStore(store, read_only=True)
        try:
            run_of = {name: rs.get_run(r).run_id for name, r in zip(systems, runs, strict=True)}
        finally:
            rs.close()
    for f in files:
        more, names_f = items_from_file(f)
        if systems and set(names_f) != set(systems):
            raise DataError(f, f"systems {names_f} differ from {systems}")
        systems = systems or names_f
        items.extend(more)
    if not items:
        raise UsageError("no items: give runs with a common sample, or item files")
    if len({i.key for i in items}) != len(items):
        raise UsageError("item ids repeat across the runs and files")
    return items, systems, run_of, skipped


@dataclass
class _Contents:
    """What a new study is filled with."""

    items: list[SourceItem]
    systems: list[str]
    run_of: dict[str, str]
    annotators: list[str]
    gold: list[dict[str, Any]]
    plan: list[PlannedTask]


def _write_study(db: str, study: Study, contents: _Contents) -> tuple[str, dict[str, str]]:
    """Store ``study`` with its systems, items, annotators, gold examples and assignments.

    Returns the admin token and each annotator's invitation token (only their hashes are stored).
    """
    engine = make_engine(db)
    admin_token = new_token()
    tokens = {name: new_token() for name in contents.annotators}
    study.admin_hash = hash_token(admin_token)
    with Session(engine) as session:
        signing_secret(session)
        if session.scalar(select(Study).where(Study.slug == study.slug)) is not None:
            raise UsageError(f"a study '{study.slug}' exists already in {db}")
        session.add(study)
        system_rows = [System(study=study, name=s, run_id=contents.run_of.get(s)) for s in contents.systems]
        session.add_all(system_rows)
        item_rows = [_item(study, src, system_rows) for src in contents.items]
        session.add_all(item_rows)
        people = [Annotator(study=study, name=n, token_hash=hash_token(tokens[n])) for n in contents.annotators]
        session.add_all(people)
        for i, g in enumerate(contents.gold):
            study.calibration.append(CalibrationItem(position=i, **g))
        for task in contents.plan:
            item = item_rows[task.item]
            by_system = {c.system.name: c for c in item.candidates}
            assignment = Assignment(item=item, position=task.position + 1)
            people[task.annotator].assignments.append(assignment)
            assignment.shown = [
                Shown(candidate=by_system[contents.systems[s]], slot=slot, public_id=secrets.token_urlsafe(12))
                for slot, s in enumerate(task.systems)
            ]
        session.commit()
    engine.dispose()
    return admin_token, tokens


def _item(study: Study, src: SourceItem, systems: list[System]) -> Item:
    """The study's item of ``src``, with one candidate per system."""
    item = Item(
        study=study,
        item_key=src.key,
        question=src.question,
        reference=src.reference,
        sources=src.sources,
        epoch=src.epoch,
        steps=src.steps if study.form == EXPERT_STEPS else None,
    )
    item.candidates = [Candidate(system=s, text=src.candidates[s.name]) for s in systems]
    return item
