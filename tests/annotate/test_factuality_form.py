"""The paper's factuality form: a study from a judged run, answered by scripted annotators, exported and analysed."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy.orm import Session

from ebmeval.annotate import build_form, create_study, make_engine, save_answer
from ebmeval.annotate._models import Annotator, Study
from ebmeval.store import RunStore
from tests.helpers.cli import ebmeval

GENERATED = (
    "ReviewID,Generated\n"
    "r1,Statins lower mortality in adults with heart disease.\n"
    "r2,There is insufficient evidence to support aspirin for stroke.\n"
    "r3,Exercise may lower blood pressure in adults.\n"
    "r4,Vitamin D prevents fractures in older women.\n"
)
TARGETS = (
    "ReviewID,Target\n"
    "r1,Statins reduce mortality in adults with heart disease.\n"
    "r2,Aspirin reduces stroke in older adults.\n"
    "r3,Exercise lowers blood pressure in adults.\n"
    "r4,Vitamin D does not prevent fractures in older adults.\n"
)
# What the main annotator answers per review; the others copy it except where DISAGREE says otherwise.
MAIN = {
    "r1": {"population": "1", "intervention": "1", "outcome": "1", "target_direction": "positive effect",
           "generated_direction": "positive effect", "target_modality": "moderate claim",
           "generated_modality": "moderate claim"},
    "r2": {"population": "0", "intervention": "1", "outcome": "1", "target_direction": "positive effect",
           "generated_direction": "n/a", "target_modality": "moderate claim", "generated_modality": "no evidence"},
    "r3": {"population": "1", "intervention": "1", "outcome": "1", "target_direction": "positive effect",
           "generated_direction": "positive effect", "target_modality": "moderate claim",
           "generated_modality": "weak claim"},
    "r4": {"population": "0", "intervention": "1", "outcome": "1", "target_direction": "no effect",
           "generated_direction": "positive effect", "target_modality": "moderate claim",
           "generated_modality": "strong claim"},
}  # fmt: skip
DISAGREE = {("ann2", "r1"): {"population": "0"}, ("ann3", "r3"): {"generated_modality": "moderate claim"}}
JUDGE = json.dumps(
    {"direction": "positive", "modality": "moderate", "population": "yes", "intervention": "yes", "outcome": "yes",
     "grammar": "yes", "lexical": "yes", "non_redundancy": "yes"}
)  # fmt: skip


def test_the_form_follows_the_paper() -> None:
    form = build_form("factuality")
    names = [f.name for f in form.fields]
    assert names[:3] == ["population", "intervention", "outcome"] and "pico" not in names
    assert form.field("target_direction").options == ("positive effect", "negative effect", "no effect", "n/a")
    assert form.field("generated_modality").options == (
        "strong claim", "moderate claim", "weak claim", "no evidence", "no claim",
    )  # fmt: skip
    assert not any("comparator" in f.label.lower() for f in form.fields)


def answer(db: str) -> None:
    engine = make_engine(db)
    with Session(engine) as session:
        study = session.query(Study).filter_by(slug="fact").one()
        for person in session.query(Annotator).filter_by(study_id=study.id):
            for task in person.assignments:
                review = task.item.item_key
                given = {**MAIN[review], "grammar": "1", "lexical": "1", "non_redundancy": "1"}
                given |= DISAGREE.get((person.name, review), {})
                for shown in task.shown:
                    for field, value in given.items():
                        save_answer(session, task.id, shown.public_id, field, value)
        session.commit()
    engine.dispose()


def test_study_with_the_paper_form_exported_straight_into_factuality_analyze(tmp_path: Path) -> None:
    """The old export could not be read (missing column ReviewID) and the form had one pico field."""
    (tmp_path / "gen.csv").write_text(GENERATED)
    (tmp_path / "targets.csv").write_text(TARGETS)
    store = str(tmp_path / "runs.sqlite")
    run = ["factuality", "--store", store, "run", "factuality/summaries", "--predictions", "gen.csv"]
    done = ebmeval(*run, "--task-arg", "targets=targets.csv", "--role", f"judge=scripted:{JUDGE}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (record,) = RunStore(store).list_runs()
    db = str(tmp_path / "annotate.db")
    create_study(db, slug="fact", form="factuality", annotators=["ann1", "ann2", "ann3"], k=3, runs=[record.run_id],
                 store=store)  # fmt: skip
    answer(db)
    export = tmp_path / "export.csv"
    done = ebmeval("annotate", "export", "--db", db, "--study", "fact", "--out", str(export), cwd=tmp_path)
    assert done.returncode == 0, done.stderr

    files = ["--generated", "gen.csv", "--targets", "targets.csv", "--human", str(export)]
    done = ebmeval("factuality", "analyze", *files, "--main-annotator", "ann1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "Summaries analysed: 4." in text
    assert "| population | 4 | 0.500 |" in text  # the main annotator's labels
    assert "| factually_correct | 4 | 0.250 |" in text  # only r1: r2 modality, r3 modality, r4 P and direction
    assert 'Left out, a side "no evidence" or "no claim": 1.' in text  # r2
    # Table 1 protocol: ann2 disagrees on r1's population (pico 3/4), ann3 on r3's modality (3/4).
    assert "| % agreement (mean over annotators) | 0.875 | 1.000 | 0.875 |" in text

    done = ebmeval("factuality", "--store", store, "analyze", "--run", record.run_id[:6], "--human", str(export),
                   "--main-annotator", "ann1", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "### Agreement: judge vs ann1" in done.stdout and "(Table 1 protocol)" in done.stdout
