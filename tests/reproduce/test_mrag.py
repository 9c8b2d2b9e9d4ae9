"""``ebmeval reproduce mrag``: MRAG's closed-form table w/o. and w. RAG through a loopback server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ebmeval.rag import build_index
from ebmeval.rag.corpus import write_store
from ebmeval.tasks import Document
from tests.helpers.cli import ebmeval
from tests.helpers.openai_server import openai_server, without_preflight
from tests.models.test_decoding import _Recorder, server  # noqa: F401 (the loopback server fixture)


def _table(payload: dict[str, object], source: str) -> dict[str, object]:
    tables = payload["tables"]
    assert isinstance(tables, list)
    return next(t for t in tables if f"({source})" in t["title"])


def test_mrag_table_1_with_and_without_rag_through_a_loopback_server(server: str, tmp_path: Path) -> None:  # noqa: F811
    docs = [Document(id=f"d{i}", text=f"Passage {i} about drugs, patients and treatment.") for i in range(20)]
    write_store(docs, tmp_path / "corpus").close()
    build_index(tmp_path / "corpus", tmp_path / "ix", "bm25")
    spec = f"openai-compatible:gpt-4o@{server}"
    args = ["--model", spec, "--paper-row", f"{spec}=GPT-4 (gpt-4o)", "--preset-arg", "retrieval=ix", "--limit", "1"]
    done = ebmeval("reproduce", "mrag", *args, "--store", "r.sqlite", "--json", cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert {r["condition"] for r in payload["runs"]} == {
        f"{name}{suffix}"
        for name in ("mmlu_med", "medqa", "medmcqa", "pubmedqa", "bioasq", "ddi", "chemprot")
        for suffix in ("", "-rag")
    }
    table = _table(payload, "Table 1")
    assert table["header"][:6] == ["model", "paper row", "setting", "MMLU-Med", "MMLU-Med paper", "MMLU-Med Δ"]
    rows = {(row[0], row[2]): row for row in table["rows"]}
    ours = rows[(spec, "w/o. RAG")]
    assert ours[1] == "GPT-4 (gpt-4o) (w/o. RAG)" and ours[4] == "0.93" and ours[3] != "—"
    assert rows[(spec, "w. RAG")][4] == "0.93"  # 92.5 %, printed to two decimals
    assert any(row[1] == "PMC-LlaMA (13B) (w. RAG)" for row in table["rows"])
    assert "Table 2" in json.dumps(_table(payload, "Table 2")["title"])
    requests = without_preflight([b for b in _Recorder.bodies if "messages" in b])
    assert requests and all(
        b["temperature"] == 0.7 and b["top_p"] == 0.8 and b["repetition_penalty"] == 1.05 for b in requests
    )
    assert any('<document number="1" id="d' in b["messages"][-1]["content"] for b in requests)  # the RAG prompts


def test_rag_conditions_need_the_index(tmp_path: Path) -> None:
    done = ebmeval("reproduce", "mrag", "--model", "baseline/random", "--store", "r.sqlite", cwd=tmp_path)
    assert done.returncode == 2 and "--preset-arg retrieval=" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "r.sqlite").exists()  # refused before any run started


def _lfqa_reply(body: dict[str, Any]) -> str:
    """The models answer under their name; the judge prefers gpt-4o on three axes and gpt-3.5 on reasoning."""
    if body["model"] != "judge":
        return f"Answer of {body['model']}: rest, drink water and see a doctor if it gets worse."
    prompt = body["messages"][-1]["content"]
    if "[Answer A]" not in prompt:
        return "ok"
    first = "A" if "gpt-4o" in prompt.split("[Answer A]")[1].split("[End of answer A]")[0] else "B"
    second = "B" if first == "A" else "A"
    return f"usefulness: {first}\nreadability: {first}\nknowledge: {first}\nreasoning: {second}"


def test_mrag_table_2_rates_the_pooled_lfqa_runs_in_a_judged_arena(tmp_path: Path) -> None:
    with openai_server(_lfqa_reply) as (url, _bodies):
        gpt4, gpt35 = f"openai-compatible:gpt-4o@{url}", f"openai-compatible:gpt-3.5-turbo@{url}"
        common = ["--condition", "liveqa", "--condition", "medicationqa", "--limit", "3", "--store", "r.sqlite"]
        models = ["--model", gpt4, "--model", gpt35, "--paper-row", f"{gpt4}=GPT-4 (gpt-4o)"]
        models += ["--paper-row", f"{gpt35}=GPT-3.5 (gpt-3.5-turbo)"]
        judged = [*models, *common, "--role", f"judge=openai-compatible:judge@{url}", "--preset-arg", "min_matches=2"]
        done = ebmeval("reproduce", "mrag", *judged, "--json", cwd=tmp_path, timeout=600)
        assert done.returncode == 0, done.stderr
        payload = json.loads(done.stdout)
        table = _table(payload, "Table 2")
        rows = {row[0]: row for row in table["rows"]}
        header = table["header"]
        ours, paper = header.index("Usefulness"), header.index("Usefulness paper")
        assert rows[gpt4][1] == "GPT-4 (gpt-4o) (w/o. RAG)" and rows[gpt4][paper] == "931.7"
        assert rows[gpt35][1] == "GPT-3.5 (gpt-3.5-turbo) (w/o. RAG)" and rows[gpt35][paper] == "811.7"
        assert float(rows[gpt4][ours]) > 1000 > float(rows[gpt35][ours])
        reasoning = header.index("Reasoning")
        assert float(rows[gpt4][reasoning]) < 1000 < float(rows[gpt35][reasoning])
        assert any(row[1] == "GPT-4 (gpt-4o) (w. RAG)" and row[0] == "" for row in table["rows"])
        runs = {(r["condition"], r["model"]): r["run_id"] for r in payload["runs"]}
        cells = [c for c in table["cells"] if c["model"] == gpt4]
        pooled = "+".join(sorted(runs[(c, gpt4)] for c in ("liveqa", "medicationqa")))
        assert len(cells) == 4 and all(c["run_id"] == pooled and c["condition"] == "liveqa,medicationqa" for c in cells)
        assert all(c["n"] >= 2 and c["scorer"] == "arena" for c in cells)  # the per-pair target was reached
        assert any(f"arena {cells[0]['score_set']}" in note for note in table["notes"])

        unjudged = ebmeval("reproduce", "mrag", *models, *common, "--json", cwd=tmp_path, timeout=600)
        assert unjudged.returncode == 0, unjudged.stderr
        table = _table(json.loads(unjudged.stdout), "Table 2")
        assert not table["cells"] and any("--role judge=SPEC" in note for note in table["notes"])
        alone = ebmeval("reproduce", "mrag", "--model", gpt4, *judged[8:], "--json", cwd=tmp_path, timeout=600)
        table = _table(json.loads(alone.stdout), "Table 2")
        assert not table["cells"] and any("at least two systems" in note for note in table["notes"])
        refused = ebmeval("reproduce", "mrag", *models, *common, "--preset-arg", "min_matches=0", cwd=tmp_path)
        assert refused.returncode == 2 and "min_matches" in refused.stderr and "Traceback" not in refused.stderr


def test_mrag_table_2_rates_each_model_without_and_with_rag_in_one_arena(tmp_path: Path) -> None:
    docs = [Document(id=f"d{i}", text=f"Passage {i} about fever, rest and fluids.") for i in range(10)]
    write_store(docs, tmp_path / "corpus").close()
    build_index(tmp_path / "corpus", tmp_path / "ix", "bm25")
    with openai_server(_lfqa_reply) as (url, _bodies):
        gpt4, gpt35 = f"openai-compatible:gpt-4o@{url}", f"openai-compatible:gpt-3.5-turbo@{url}"
        args = ["--model", gpt4, "--model", gpt35, "--paper-row", f"{gpt4}=GPT-4 (gpt-4o)"]
        args += ["--condition", "liveqa", "--condition", "liveqa-rag", "--preset-arg", "retrieval=ix", "--limit", "2"]
        args += ["--role", f"judge=openai-compatible:judge@{url}", "--preset-arg", "min_matches=1"]
        done = ebmeval("reproduce", "mrag", *args, "--store", "r.sqlite", "--json", cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    table = _table(json.loads(done.stdout), "Table 2")
    ours = {(c["model"], c["condition"]): c for c in table["cells"] if c["column"] == "Usefulness"}
    assert set(ours) == {(m, c) for m in (gpt4, gpt35) for c in ("liveqa", "liveqa-rag")}
    assert ours[(gpt4, "liveqa-rag")]["published"] == 1270.9 and ours[(gpt35, "liveqa")]["published"] is None
    assert len({c["score_set"] for c in table["cells"]}) == 1  # the four systems meet in one arena
    assert sum(c["value"] for c in ours.values()) == pytest.approx(4000)  # Elo from 1000 is zero-sum
