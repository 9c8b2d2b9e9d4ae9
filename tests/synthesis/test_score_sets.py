"""Tables, agreement statistics and reports read one score set: two judges are never averaged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ebmeval._util.errors import UsageError
from ebmeval.analysis import human_agreement
from ebmeval.cli._app import app
from ebmeval.judges import panel_agreement
from ebmeval.report import agreement_report
from ebmeval.store import RunStore
from ebmeval.synthesis import synthesis_table
from ebmeval.tasks import Generation, ParsedAnswer, Sample, Score

RUBRIC_A = [2.0, 2.0, 2.0, 1.0, 2.0, 2.0, 2.0, 2.0]  # mean 1.875
RUBRIC_B = [1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0]  # mean 0.625


def _spec(name: str, judge: str) -> dict[str, object]:
    return {"name": name, "version": "1", "args": {}, "templates": [], "roles": {"judge": {"model": {"name": judge}}}}


def _store(tmp_path: Path) -> tuple[str, str]:
    """A synthesis run of 8 samples scored by the rubric and the panel, each with two judges."""
    path = str(tmp_path / "runs.sqlite")
    store = RunStore(path)
    config = {"task_args": {"source": "m3", "workflow": "golden-rag"}}
    run, _ = store.begin_run(
        run_id="r1", config_hash="h", config=config, task="synthesis", model="m", seed=0, provenance={}
    )
    for judge, rubric in (("judge-a", RUBRIC_A), ("judge-b", RUBRIC_B)):
        rubric_set = store.register_score_set(
            "r1", _spec("judge/rubric-0-5", judge), f"judge/rubric-0-5[judge={judge}]"
        )
        panel_set = store.register_score_set("r1", _spec("judge/rubric-panel", judge), f"judge/rubric-panel[{judge}]")
        for i, value in enumerate(rubric):
            sample = Sample(id=f"s{i}", input="q")
            store.put_generation(
                "r1", sample, Generation(sample_id=sample.id, output="x", answer=ParsedAnswer(value="x"))
            )
            store.put_score("r1", sample.id, 0, rubric_set.id, Score(values={"rubric": value}))
            panel = {"rubric/x": value, "rubric/y": value + 1, "rubric_mean": value + 0.5}
            store.put_score("r1", sample.id, 0, panel_set.id, Score(values=panel))
    store.close()
    return path, run.run_id


def test_a_table_gives_each_judges_rubric_mean_never_the_mean_of_two(tmp_path: Path) -> None:
    path, run_id = _store(tmp_path)
    rows = synthesis_table(path, [run_id], ["rubric"])
    by_judge = {row.score_sets["rubric"]: row.means["rubric"] for row in rows}
    assert by_judge == {"judge/rubric-0-5[judge=judge-a]": 1.875, "judge/rubric-0-5[judge=judge-b]": 0.625}
    shown = CliRunner().invoke(app, ["synthesis", "table", run_id, "--metric", "rubric", "--store", path, "--json"])
    assert shown.exit_code == 0, shown.output
    assert sorted(r["means"]["rubric"] for r in json.loads(shown.output)["rows"]) == [0.625, 1.875]


def test_panel_agreement_counts_the_items_of_one_score_set(tmp_path: Path) -> None:
    path, run_id = _store(tmp_path)
    assert panel_agreement(path, run_id, "judge/rubric-panel[judge-a]").n_items == 8
    with pytest.raises(UsageError, match="names 2 score sets"):
        panel_agreement(path, run_id, "judge/rubric-panel")
    rows = list(RunStore(path, read_only=True).scores(run_id, "judge/rubric-panel", pooled=True))
    assert len(rows) == 16 and len({label for _s, _e, label, _score in rows}) == 2  # pooled only when asked
    shown = CliRunner().invoke(app, ["synthesis", "table", run_id, "--metric", "panel", "--store", path, "--json"])
    assert [p["n_items"] for p in json.loads(shown.output)["panels"].values()] == [8, 8]


def test_agreement_with_humans_refuses_a_scorer_name_that_covers_two_judges(tmp_path: Path) -> None:
    path, run_id = _store(tmp_path)
    human = {f"s{i}": v + i / 10 for i, v in enumerate(RUBRIC_B)}
    with pytest.raises(UsageError, match="judge/rubric-0-5\\[judge=judge-a\\], judge/rubric-0-5\\[judge=judge-b\\]"):
        human_agreement(path, run_id, "judge/rubric-0-5", "rubric", human)
    assert human_agreement(path, run_id, "judge/rubric-0-5[judge=judge-a]", "rubric", human).n == 8
    store = RunStore(path)
    store.put_human_scores(
        [
            ("r1", f"s{i}", 0, "study", who, "form", "score", v, str(v), None, "t")
            for i, v in enumerate(RUBRIC_B)
            for who in "ab"
        ]
    )
    store.close()
    with pytest.raises(UsageError, match="names 2 score sets"):
        agreement_report(path, "study", judge="judge/rubric-0-5", metric="rubric")
    report = agreement_report(path, "study", judge="judge/rubric-0-5[judge=judge-b]", metric="rubric")
    assert report.n_pairs == 8
