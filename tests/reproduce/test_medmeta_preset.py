"""``ebmeval reproduce medmeta`` through a real OpenAI-compatible HTTP server on 127.0.0.1: Tables 2-4."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session

from ebmeval.annotate import create_study, import_scores, make_engine, save_answer
from ebmeval.annotate._models import Annotator, Study
from ebmeval.builtin_tasks.synthesis import load_synthesis
from ebmeval.store import RunStore
from tests.helpers.cli import ebmeval
from tests.helpers.openai_server import openai_server

UNDER_TEST = "1. Does the drug reduce mortality?\n2. Is it safe?\nScore: 5\nFeedback: fine"
"""Every reply of a model under test: a plan, an answer, a draft, an evaluator's and a rater's "Score: 5"."""


SALT = "a"
"""Chosen so that the scripted grades vary within every condition (the statistics need variance)."""


def judge_score(prompt: str) -> int:
    """The judge's grade, 2 or 3, a fixed function of the prompt (so humans can be scripted around it)."""
    return 2 + int(hashlib.sha256((SALT + prompt).encode()).hexdigest(), 16) % 2


def reply(body: dict[str, Any]) -> str:
    prompt = body["messages"][-1]["content"]
    if body["model"] == "judge":
        return f"Justification: close.\nScore: {judge_score(prompt)}"
    return UNDER_TEST + ("\nThe trials agree." if "lowered mortality" in prompt else "")  # with evidence


@pytest.fixture
def server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    with openai_server(reply) as served:
        yield served


def write_abstracts(path: Path) -> Path:
    """An abstract for every primary study of the public items (so each join is complete)."""
    pmids = {p for s in load_synthesis("medmeta") for p in s.metadata["study_pmids"]}
    path.write_text(
        "".join(
            json.dumps({"id": p, "title": f"Trial {p}", "text": f"Drug {p} lowered mortality."}) + "\n"
            for p in sorted(pmids)
        )
    )
    return path


def table(payload: dict[str, Any], source: str) -> dict[str, Any]:
    return next(t for t in payload["tables"] if f"({source})" in t["title"])


def score_humans(db: str, slug: str, offset: dict[str, int], store: str) -> None:
    """Both annotators give the judge's score plus the run's offset (+1 on G-RAG, -1 on P-CoT) plus a
    per-item spread (+1, -1, 0, 0 over a run's items in key order) that averages to nothing."""
    reader = RunStore(store, read_only=True)
    judged: dict[tuple[str, str], float] = {}
    workflow: dict[str, str] = {}
    for run in reader.list_runs():
        workflow[run.run_id] = run.config["task_args"]["workflow"]
        for sample, _epoch, _label, score in reader.scores(run.run_id, "judge/rubric-0-5"):
            judged[(run.run_id, sample)] = score.values["rubric"]
    reader.close()
    engine = make_engine(db)
    with Session(engine) as session:
        study = session.query(Study).filter_by(slug=slug).one()
        for person in session.query(Annotator).filter_by(study_id=study.id):
            for task in person.assignments:
                for shown in task.shown:
                    run_id = shown.candidate.system.run_id
                    rank = sorted(k for r, k in judged if r == run_id).index(task.item.item_key)
                    value = judged[(run_id, task.item.item_key)] + offset[workflow[run_id]] + (1, -1, 0, 0)[rank]
                    save_answer(session, task.id, shown.public_id, "score", str(int(value)))
        session.commit()
    engine.dispose()


def test_reproduce_medmeta_prints_tables_2_to_4_with_the_published_columns(
    tmp_path: Path, server: tuple[str, list[dict[str, Any]]]
) -> None:
    """Before: only P-ZS and P-CoT ran, and Tables 3-4 were never printed."""
    url, bodies = server
    abstracts = write_abstracts(tmp_path / "abstracts.jsonl")
    models = ["--model", f"openai-compatible:medgemma-27b@{url}", "--model", f"openai-compatible:gemma-27b@{url}"]
    roles = ["--role", f"judge=openai-compatible:judge@{url}", "--role", f"evaluator=openai-compatible:evaluator@{url}"]
    roles += ["--role", f"negator=openai-compatible:negator@{url}"]
    common = ["reproduce", "medmeta", *models, *roles, "--limit", "4", "--preset-arg", f"abstracts={abstracts}"]
    paper_rows = ["--paper-row", f"openai-compatible:medgemma-27b@{url}=MedGemma 27B"]
    paper_rows += ["--paper-row", f"openai-compatible:gemma-27b@{url}=Gemma 27B"]
    done = ebmeval(*common, *paper_rows, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert {r["condition"] for r in payload["runs"]} == {"P-ZS", "P-CoT", "G-RAG", "N-RAG", "feasibility"}
    assert {b["model"] for b in bodies} >= {"medgemma-27b", "gemma-27b", "judge", "evaluator", "negator"}
    two = table(payload, "Table 2")
    assert two["header"][2:] == [
        h for w in ("P-ZS", "P-CoT", "G-RAG", "K5-RAG", "K10-RAG", "N-RAG") for h in (w, f"{w} paper", f"{w} Δ")
    ]
    medgemma = next(r for r in two["rows"] if r[1] == "MedGemma 27B")
    assert medgemma[0].startswith("openai-compatible:medgemma-27b") and medgemma[9] == "2.72"  # G-RAG paper
    assert medgemma[8] != "—" and medgemma[11] == "—"  # G-RAG ours; K5-RAG not run (no index given)
    assert any("K5-RAG, K10-RAG not run" in n for n in two["notes"])
    assert "needs human scores" in table(payload, "Table 3")["rows"][0][0]

    store = str(tmp_path / "runs" / "ebmeval.sqlite")
    reader = RunStore(store, read_only=True)
    chosen = [
        r.run_id for r in reader.list_runs() if r.config["task_args"]["workflow"] in ("golden-rag", "parametric-cot")
    ]
    reader.close()
    db = str(tmp_path / "annotate.db")
    create_study(db, slug="medmeta-h", form="rubric", annotators=["a1", "a2"], k=2, runs=chosen, store=store)
    score_humans(db, "medmeta-h", {"golden-rag": 1, "parametric-cot": -1}, store)
    assert import_scores(db, "medmeta-h", store) == 4 * 4 * 2

    done = ebmeval(*common, *paper_rows, "--preset-arg", "study=medmeta-h", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    three = table(payload, "Table 3")
    assert three["header"][:6] == ["model", "paper row", "workflow", "n", "Pearson r", "Pearson r paper"]
    by = {(r[1], r[2]): r for r in three["rows"] if r[1]}
    assert by[("MedGemma 27B", "G-RAG")][3] == "4" and by[("MedGemma 27B", "G-RAG")][7] == "1.000"  # bias human − judge
    assert by[("Gemma 27B", "P-CoT")][7] == "-1.000" and by[("Gemma 27B", "P-CoT")][8] == "0.10"
    assert by[("MedGemma 27B", "G-RAG")][4] != "—" and by[("MedGemma 27B", "G-RAG")][5] == "0.74"
    pooled = next(r for r in three["rows"] if r[0] == "pooled (all conditions)")
    assert pooled[3] == "16"
    assert any("d = human − judge" in n for n in three["notes"])
    four = table(payload, "Table 4")
    assert four["header"][:6] == ["hypothesis", "comparison", "paper row", "judge", "N", "N paper"]
    h2 = {(r[2], r[3]): r for r in four["rows"] if r[0] == "H2"}
    assert h2[("MedGemma 27B", "Human")][4] == "4" and h2[("MedGemma 27B", "Human")][5] == "20"
    assert h2[("Gemma 27B", "LLM")][7] == "0.807"  # mean diff paper
    assert all(r[8] != "—" and r[12] != "—" for r in h2.values())  # t and Cohen's d of every H2 row
    h3 = {(r[2], r[3]): r for r in four["rows"] if r[0] == "H3"}
    assert h3[("P-CoT", "LLM")][-1] == "Yes" and h3[("G-RAG", "Human")][5] == "20"  # the paper's p 0.004
    assert h3[("G-RAG", "Human")][1].endswith("· G-RAG") and h3[("G-RAG", "Human")][4] == "4"


def test_s_rag_runs_over_a_user_index_at_k_5_and_10(tmp_path: Path) -> None:
    """Before: retrieval= could not reach the preset, so K5-RAG and K10-RAG never ran."""
    abstracts = write_abstracts(tmp_path / "abstracts.jsonl")
    assert ebmeval("corpus", "ingest", str(abstracts), "--out", "corpus", cwd=tmp_path).returncode == 0
    assert ebmeval("index", "build", "corpus", "--out", "index", cwd=tmp_path).returncode == 0
    args = ["reproduce", "medmeta", "--model", f"scripted:{UNDER_TEST}", "--role", "judge=scripted:Score: 3"]
    args += ["--preset-arg", "retrieval=index", "--condition", "K5-RAG", "--condition", "K10-RAG", "--limit", "2"]
    done = ebmeval(*args, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    ours = next(r for r in table(payload, "Table 2")["rows"] if r[0].startswith("scripted:"))
    assert ours[11] == "3.000" and ours[14] == "3.000" and ours[2] == "—"  # K5, K10 ran; P-ZS not asked for
    shown = json.loads(ebmeval("show", payload["runs"][0]["run_id"], "--json", cwd=tmp_path).stdout)
    assert shown["config"]["task_args"]["retrieval"] == "index" and shown["config"]["task_args"]["k"] == 5
    refused = ebmeval(
        "reproduce", "medmeta", "--model", "scripted:x", "--preset-arg", "reranker=/nowhere", cwd=tmp_path
    )
    assert refused.returncode == 2 and "reranker is taken by no condition that runs" in refused.stderr
    assert "need --preset-arg retrieval=" in refused.stderr


def test_a_study_with_no_human_scores_of_the_runs_is_named_in_tables_3_and_4(tmp_path: Path) -> None:
    """Before: a misspelt or unimported study printed empty Tables 3-4 and no word why."""
    args = ["reproduce", "medmeta", "--model", f"scripted:{UNDER_TEST}", "--role", "judge=scripted:Score: 3"]
    args += ["--condition", "P-ZS", "--limit", "1", "--preset-arg", "study=medmeta-hman", "--json"]
    done = ebmeval(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    for name in ("Table 3", "Table 4"):
        assert any("study medmeta-hman has no human scores" in n for n in table(payload, name)["notes"]), name
