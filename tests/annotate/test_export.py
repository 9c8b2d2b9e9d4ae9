from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy.orm import Session

from ebmeval._util.errors import DataError, UsageError
from ebmeval.annotate import (
    agreement_report,
    create_study,
    export,
    import_scores,
    make_engine,
    save_answer,
)
from ebmeval.annotate._models import Annotator, Study
from ebmeval.store import RunStore
from ebmeval.tasks import Document, Generation, ParsedAnswer, Sample, Score

from .conftest import write_items

MODELS = ("model-one", "model-two")
HUMAN = {  # (sample, model) -> the score every annotator gives; the judge says human + offset
    (f"s{i}", m): (i + j) % 6 for i in range(6) for j, m in enumerate(MODELS)
}


def alternating(i: int, model: str) -> float:
    return 0.5 if i % 2 else -0.5


def make_store(path: Path, offset=alternating) -> list[str]:
    """Two runs (conditions), judged at the human score + ``offset(i, model)``."""
    store = RunStore(path)
    runs = []
    for model in MODELS:
        run_id = f"run-{model}"
        store.begin_run(run_id=run_id, config_hash=model, config={}, task="toy", model=model, seed=0, provenance={})
        for i in range(6 if model == "model-one" else 7):
            sample = Sample(
                id=f"s{i}",
                input=f"Question {i}?",
                target=f"Reference {i}.",
                documents=[Document(id=f"d{i}", text=f"Abstract {i}.", title=f"Title {i}")],
            )
            gen = Generation(
                sample_id=sample.id,
                output=f"{model} says {i}",
                answer=ParsedAnswer(value=None, parsed=True, method="x"),
            )
            store.put_generation(run_id, sample, gen)
            if i < 6:
                judge = HUMAN[(sample.id, model)] + offset(i, model)
                judged = store.register_score_set(run_id, {"name": "judge"}, "judge")
                store.put_score(run_id, sample.id, 0, judged.id, Score(values={"rubric": judge}))
        runs.append(run_id)
    store.close()
    return runs


def answer_everything(db: str, slug: str, value_of) -> None:
    engine = make_engine(db)
    with Session(engine) as s:
        study = s.query(Study).filter_by(slug=slug).one()
        for person in s.query(Annotator).filter_by(study_id=study.id):
            for a in person.assignments:
                for shown in a.shown:
                    save_answer(s, a.id, shown.public_id, "score", value_of(a, shown))
                if study.form == "pairwise":
                    save_answer(s, a.id, "task", "preference", value_of(a, None))
        s.commit()
    engine.dispose()


def test_run_study_round_trip_into_the_store_and_judge_report(tmp_path):
    store = tmp_path / "runs.db"
    runs = make_store(store)
    db = str(tmp_path / "a.db")
    inv = create_study(db, slug="s1", form="rubric", annotators=["a", "b", "c"], k=3, runs=runs, store=store)
    assert inv.n_items == 6 and inv.skipped == ("s6",) and inv.n_tasks == 18
    links = inv.links("http://127.0.0.1:8765/")
    assert links["a"] == f"http://127.0.0.1:8765/join/{inv.tokens['a']}" and links["admin"].endswith(inv.admin_token)

    def value(a, shown):
        return str(HUMAN[(a.item.item_key, shown.candidate.system.name)])

    answer_everything(db, "s1", value)
    rows = json.loads(export(db, "s1", tmp_path / "out.json", fmt="json"))
    assert len(rows) == 6 * 2 * 3 and json.loads((tmp_path / "out.json").read_text()) == rows
    assert {r["system"] for r in rows} == set(MODELS)
    csv_text = export(db, "s1", fmt="csv")
    assert len(csv_text.strip().splitlines()) == 1 + len(rows)

    assert import_scores(db, "s1", store) == 36
    assert import_scores(db, "s1", store) == 36  # re-import replaces
    con = sqlite3.connect(store)
    got = con.execute("SELECT count(*), count(DISTINCT annotator), min(value), max(value) FROM human_scores").fetchone()
    assert got == (36, 3, 0.0, 5.0)
    assert con.execute("SELECT DISTINCT run_id FROM human_scores ORDER BY 1").fetchall() == [(r,) for r in runs]
    con.close()

    report = agreement_report(store, "s1", judge="judge", metric="rubric")
    assert report.n_pairs == 12
    assert report.human_alpha == pytest.approx(1.0)
    assert report.bland_altman is not None and report.bland_altman["bias"] == pytest.approx(0.0)
    assert report.bland_altman["sd"] == pytest.approx(0.5222, abs=1e-3)
    assert report.pearson is not None and report.pearson["value"] > 0.9
    assert report.judge_alpha is not None and report.judge_alpha < 1.0
    md = report.to_markdown()
    assert "Pearson r" in md and "bias (human − judge)" in md and "12 generations scored by both" in md
    assert json.dumps(report.to_dict())


def test_opposite_biases_of_two_conditions_are_reported_per_condition_and_the_pooled_value_labelled(tmp_path):
    from scipy import stats

    from ebmeval.report import POOLED, SIGN

    store = tmp_path / "runs.db"
    # the judge scores condition one a point below the humans and condition two a point above
    runs = make_store(store, lambda i, model: (-1 if model == "model-one" else 1) + (0.5 if i % 2 else -0.5))
    db = str(tmp_path / "a.db")
    create_study(db, slug="s1", form="rubric", annotators=["a", "b"], k=2, runs=runs, store=store)
    answer_everything(db, "s1", lambda a, shown: str(HUMAN[(a.item.item_key, shown.candidate.system.name)]))
    import_scores(db, "s1", store)

    report = agreement_report(store, "s1", judge="judge", metric="rubric")
    one, two = report.conditions
    assert (one.condition, two.condition) == ("toy · model-one", "toy · model-two")
    assert one.bland_altman["bias"] == pytest.approx(1.0) and two.bland_altman["bias"] == pytest.approx(-1.0)
    assert report.bland_altman["bias"] == pytest.approx(0.0) and report.pooled.condition == POOLED
    assert one.n_pairs == two.n_pairs == 6 and report.n_pairs == 12
    human = {m: [float(HUMAN[(f"s{i}", m)]) for i in range(6)] for m in MODELS}
    judge = {
        m: [h + (-1 if m == "model-one" else 1) + (0.5 if i % 2 else -0.5) for i, h in enumerate(human[m])]
        for m in MODELS
    }
    assert one.pearson["value"] == pytest.approx(stats.pearsonr(judge["model-one"], human["model-one"])[0], rel=1e-12)
    d = np.subtract(human["model-two"], judge["model-two"])
    assert two.bland_altman["loa"][1] == pytest.approx(d.mean() + 1.959963984540054 * d.std(ddof=1), rel=1e-12)

    (contrast,) = report.contrasts
    x, y = human["model-one"], human["model-two"]
    assert contrast.n == 6 and contrast.difference == pytest.approx(np.mean(x) - np.mean(y))
    assert contrast.p_t == pytest.approx(stats.ttest_rel(x, y).pvalue, rel=1e-9)
    assert contrast.p_wilcoxon == pytest.approx(stats.wilcoxon(x, y, method="approx").pvalue, rel=1e-9)
    diff = np.subtract(x, y)
    assert contrast.cohens_d == pytest.approx(diff.mean() / diff.std(ddof=1), rel=1e-12)

    from ebmeval.report import HumanComparison, collect

    reader = RunStore(store, read_only=True)
    titles = [t.title for t in collect(reader, runs, human=[HumanComparison("s1", "judge", "rubric")]).tables()]
    reader.close()
    assert "Judge versus human" in titles and "Human scores between conditions: study s1, field score" in titles
    md = report.to_markdown()
    assert SIGN in md and POOLED in md and "+1.000" in md and "-1.000" in md and "Cohen's d_z" in md
    assert json.loads(json.dumps(report.to_dict()))["sign"] == SIGN


def test_pairwise_study_maps_preferences_to_systems(tmp_path):
    items = write_items(tmp_path / "items.jsonl", n=4, systems=("sys-x", "sys-y"))
    db = str(tmp_path / "a.db")
    create_study(db, slug="pw", form="pairwise", annotators=["a", "b"], k=2, files=[items])

    engine = make_engine(db)
    with Session(engine) as s:
        study = s.query(Study).filter_by(slug="pw").one()
        for person in study.annotators:
            for a in person.assignments:
                # both annotators prefer sys-x, whichever side it is shown on
                side = "A" if a.shown[0].candidate.system.name == "sys-x" else "B"
                save_answer(s, a.id, "task", "preference", side)
        s.commit()
        from ebmeval.annotate import agreement, study_ratings

        ratings = study_ratings(s, study)
        result = agreement(study, ratings)
    engine.dispose()
    assert {(r.system, r.value) for r in ratings} == {("sys-x", 1.0), ("sys-y", 0.0)}
    assert all(r.opponent in ("sys-x", "sys-y") and r.opponent != r.system for r in ratings)
    (pref,) = result
    assert pref.units == 4 and "alpha undefined" in pref.note  # everyone chose the same winner


def test_bad_inputs_give_clear_errors(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"item_id": "x", "reference": "r", "candidates": [{"system": "a", "text": "t"}]}\n{"item_id": 3}\n')
    with pytest.raises(DataError, match=r"bad.jsonl:2: field 'item_id'"):
        create_study(str(tmp_path / "a.db"), slug="x", form="rubric", annotators=["a"], k=1, files=[bad])
    bad.write_text(
        '{"item_id": "x", "reference": "r", "candidates": [{"system": "a", "text": "t"}]}\n'
        '{"item_id": "y", "reference": "r", "candidates": [{"system": "b", "text": "t"}]}\n'
    )
    with pytest.raises(DataError, match="systems differ"):
        create_study(str(tmp_path / "a.db"), slug="x", form="rubric", annotators=["a"], k=1, files=[bad])
    items = write_items(tmp_path / "items.jsonl", n=2)
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"reference": "r", "candidates": [{"text": "t", "gold": {"score": 9}}], "justification": "j"}\n')
    with pytest.raises(DataError, match=r"gold.jsonl:1: field 'score'.*not a valid answer"):
        create_study(
            str(tmp_path / "a.db"), slug="x", form="rubric", annotators=["a"], k=1, files=[items], calibration=gold
        )
    with pytest.raises(UsageError, match="Unknown form 'rubrik'. Did you mean 'rubric'"):
        create_study(str(tmp_path / "a.db"), slug="x", form="rubrik", annotators=["a"], k=1, files=[items])
    create_study(
        str(tmp_path / "a.db"), slug="x", form="checklist", annotators=["a"], k=1, files=[items], checklist=["Step one"]
    )
    with pytest.raises(UsageError, match="exists already"):
        create_study(str(tmp_path / "a.db"), slug="x", form="rubric", annotators=["a"], k=1, files=[items])
    with pytest.raises(UsageError, match="no study 'nope'"):
        export(str(tmp_path / "a.db"), "nope")


def test_concurrent_upserts_on_sqlite_lose_nothing(rubric_study):
    import threading

    from sqlalchemy import func, select

    from ebmeval.annotate._models import Answer, Assignment, Shown

    engine = make_engine(rubric_study.db)
    with Session(engine) as s:
        assignment_id, target = s.execute(select(Assignment.id, Shown.public_id).join(Shown).limit(1)).one()

    def writer(i: int) -> None:
        with Session(engine) as s:
            for j in range(25):
                save_answer(s, assignment_id, target, "score", str((i + j) % 6))
                s.commit()

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with Session(engine) as s:
        rows = s.scalars(select(Answer)).all()
        assert len(rows) == 1 and rows[0].revisions == 8 * 25
        assert s.scalar(select(func.count()).select_from(Answer)) == 1
    engine.dispose()


def test_rubric_study_shows_annotators_the_rubric_its_judges_used(tmp_path):
    from ebmeval.annotate import build_form
    from ebmeval.annotate._answers import study_form
    from ebmeval.synthesis import MEDMETA_PAPER

    store = tmp_path / "runs.db"
    runs = make_store(store)
    writer = RunStore(store)
    for run_id in runs:
        spec = {
            "name": "judge/rubric-0-5",
            "templates": [t.id for t in (MEDMETA_PAPER.rubric, MEDMETA_PAPER.rubric_retry)],
        }
        judged = writer.register_score_set(run_id, spec, "judge/rubric-0-5")
        writer.put_score(run_id, "s0", 0, judged.id, Score(values={"rubric": 3.0}))
    writer.close()
    db = str(tmp_path / "a.db")
    create_study(db, slug="paper", form="rubric", annotators=["a"], k=1, runs=runs, store=store)
    engine = make_engine(db)
    with Session(engine) as s:
        study = s.query(Study).filter_by(slug="paper").one()
        form = study_form(study)
    engine.dispose()
    assert study.form == "rubric/medmeta-paper"
    assert (
        form.field("score").anchors == MEDMETA_PAPER.anchors
    )  # the judges' anchors, 5 = Excellent … 0 = Contradictory
    assert form.field("score").anchors["0"] == "Contradictory"
    assert "(6) Overall Semantic Equivalence" in form.instructions
    own = build_form("rubric").field("score").anchors
    assert own["0"] in ebmeval_rubric_text() and own["5"] in ebmeval_rubric_text()  # ebmeval's judge and form agree


def ebmeval_rubric_text() -> str:
    from ebmeval.synthesis import EBMEVAL

    return EBMEVAL.rubric.text
