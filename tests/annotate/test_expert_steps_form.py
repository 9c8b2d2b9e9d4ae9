"""The ``expert-steps`` form: each item shows its own expert steps, answered through the app like any form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from ebmeval._util.errors import ConfigError, UsageError
from ebmeval.annotate import create_study, export, import_scores, make_engine, save_answer
from ebmeval.annotate._app import create_app
from ebmeval.annotate._models import Annotator
from ebmeval.store import RunStore
from tests.helpers.cli import ebmeval

from .conftest import CANDIDATE_RE, csrf_of

STEPS = {
    "q1": ["Recognise hypokalaemia from the ECG", "Replace potassium before insulin"],
    "q2": ["Identify the IGF1 excess", "Order an oral glucose tolerance test", "Image the pituitary"],
}


def write_items(path: Path, steps: dict[str, list[str]] = STEPS) -> Path:
    lines = [
        {
            "item_id": key,
            "question": f"Question {key}",
            "reference": f"Answer of {key}",
            "candidates": [{"system": s, "text": f"Rationale of {s} for {key}"} for s in ("sys-a", "sys-b")],
            "steps": item_steps,
        }
        for key, item_steps in steps.items()
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_annotators_tick_each_items_own_steps_into_the_answer_table(tmp_path: Path) -> None:
    """The checklist form had one step list for the whole study; each item now shows its own."""
    db = str(tmp_path / "a.db")
    inv = create_study(
        db, slug="steps", form="expert-steps", annotators=["ann1"], k=1, files=[write_items(tmp_path / "i.jsonl")]
    )
    client = TestClient(create_app(db))
    client.get(f"/join/{inv.tokens['ann1']}")
    page = client.get("/onboarding").text
    client.post("/onboarding", data={"csrf_token": csrf_of(page), "commit": "yes"})
    for n in (1, 2):
        page = client.get(f"/tasks/{n}").text
        key = "q1" if "Question q1" in page else "q2"
        other = "q2" if key == "q1" else "q1"
        assert all(step in page for step in STEPS[key])
        assert not any(step in page for step in STEPS[other])
        fields = [f"step_{i + 1}" for i in range(len(STEPS[key]))]
        assert f'name="{CANDIDATE_RE.findall(page)[0]}:step_{len(fields) + 1}"' not in page
        answers = {f"{c}:{f}": str(i % 2) for c in CANDIDATE_RE.findall(page) for i, f in enumerate(fields)}
        r = client.post(f"/tasks/{n}", data={"csrf_token": csrf_of(page), **answers})
        assert r.status_code == 200 and "Answer every question" not in r.text
        bad = client.post(
            f"/api/tasks/{n}/answer",
            json={"target": CANDIDATE_RE.findall(page)[0], "field": f"step_{len(fields) + 1}", "value": "1"},
            headers={"x-csrf-token": csrf_of(page)},
        )
        assert bad.status_code == 422 and "Unknown field" in bad.text
    rows = json.loads(export(db, "steps", fmt="json"))
    got = {(r["item"], r["system"], r["field"]): r["value"] for r in rows}
    assert len(got) == 2 * 2 + 2 * 3
    assert got[("q2", "sys-b", "step_3")] == 0.0 and got[("q2", "sys-a", "step_2")] == 1.0
    assert {r["form"] for r in rows} == {"expert-steps"}


def test_an_item_without_steps_is_refused(tmp_path: Path) -> None:
    items = write_items(tmp_path / "i.jsonl")
    lines = items.read_text().splitlines()
    line = json.loads(lines[1])
    del line["steps"]
    items.write_text(lines[0] + "\n" + json.dumps(line) + "\n")
    with pytest.raises(UsageError, match="needs every item's steps; none for item 'q2'"):
        create_study(str(tmp_path / "a.db"), slug="s", form="expert-steps", annotators=["a"], k=1, files=[items])


def test_a_study_of_medthink_runs_shows_each_samples_scoring_points_and_imports_into_the_run_store(
    tmp_path: Path,
) -> None:
    store = str(tmp_path / "runs.sqlite")
    args = ["run", "--task", "medthink/reasoning", "--task-arg", "judges=false", "--task-arg", "text_metrics=false"]
    for reply in ("Final answer: A", "Final answer: B"):
        done = ebmeval(*args, "--model", f"scripted:{reply}", "--limit", "2", "--store", store, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    reader = RunStore(store, read_only=True)
    runs = [r.run_id for r in reader.list_runs()]
    steps = {s.id: s.metadata["scoring_points"] for s, _g in reader.generations(runs[0])}
    reader.close()
    db = str(tmp_path / "a.db")
    create_study(db, slug="mt", form="expert-steps", annotators=["a"], k=1, runs=runs, store=store)
    engine = make_engine(db)
    with Session(engine) as session:
        (person,) = session.query(Annotator).all()
        for task in person.assignments:
            assert task.item.steps == [s.strip() for s in steps[task.item.item_key]]
            for shown in task.shown:
                for i in range(len(task.item.steps)):
                    save_answer(session, task.id, shown.public_id, f"step_{i + 1}", "1")
        session.commit()
    engine.dispose()
    written = import_scores(db, "mt", store)
    assert written == 2 * sum(len(v) for v in steps.values())
    reader = RunStore(store, read_only=True)
    assert {r[0] for r in reader.human_scores("mt", "step_1")} == set(runs)
    reader.close()
    with pytest.raises(ConfigError, match="no --checklist-step, no calibration"):
        create_study(
            db, slug="mt2", form="expert-steps", annotators=["a"], k=1, runs=runs, store=store, checklist=["x"]
        )
