"""``ebmeval reproduce mrag``: MRAG's closed-form table w/o. and w. RAG through a loopback server."""

from __future__ import annotations

import json
from pathlib import Path

from ebmeval.rag import build_index
from ebmeval.rag.corpus import write_store
from ebmeval.tasks import Document
from tests.helpers.cli import ebmeval
from tests.helpers.openai_server import without_preflight
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
