"""The trust matrix: every built-in task and synthesis workflow against adversarial model servers.

Each cell runs one task (two samples) on a real run store and response cache against a
loopback OpenAI-compatible server that misbehaves in one way, then checks what the run kept:

- no run is ``complete`` on corrupted inputs: a damaged reply is an error or a counted truncation;
- the counts agree with the store (errors, truncated generations);
- nothing degenerate is cached, recorded as a step another step builds on, or stored as a negation;
- a server answering as another model is flagged and recorded; a tokenizer is used only in the
  style it answers, and counts what it is given.

With ``EBMEVAL_TRUST_MATRIX=FILE`` each row is appended to FILE as a Markdown table row.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ebmeval import arun
from ebmeval.models.providers.openai_compatible import PREFLIGHT_PROMPT
from ebmeval.runner import RunConfig
from ebmeval.runner._config import RoleConfig
from ebmeval.tasks import create_task, task_registry

from ._support import load_delay_server, write_questions

DelayServer = load_delay_server().DelayServer

THRESHOLD = 4000
"""A thinking server answers only with a reply budget of at least this (below it the trace uses it all)."""
REFUSAL = "I'm sorry, but I can't help with that request."
OTHER = "totally-different-model-v9"
PROBE = "a b"
"""The text a tokenizer endpoint is probed with."""

SYNTHESIS_WORKFLOWS = [
    "parametric-zero-shot",
    "parametric-cot",
    "standard-rag",
    "golden-rag",
    "negated-rag",
    "feasibility",
]
TASKS = [name for name in task_registry if name != "synthesis"]
ROWS = TASKS + [f"synthesis/{w}" for w in SYNTHESIS_WORKFLOWS]
MODES = ["honest", "thinking", "thinking+reasoning", "truncating", "refusing", "other-model", "vllm", "llama.cpp"]


def good_reply(prompt: str) -> str:
    """A reply each built-in task and judge can read (a negation as long as the abstract)."""
    if "Rewrite the following study abstract" in prompt:
        return "NEGATED: " + prompt.rsplit("Abstract:\n", 1)[-1]
    return "Answer: A\nVerdict: YES\nScore: 4\nOverall: 4\nFeedback: fine."


class AdversarialServer(DelayServer):  # type: ignore[misc,valid-type]
    """A chat server that misbehaves as ``mode`` says; ``/tokenize`` in vLLM or llama.cpp style."""

    def __init__(self, mode: str) -> None:
        super().__init__(0.0, "A")
        self.mode = mode
        self.tokenized: list[dict[str, Any]] = []
        self.bodies: list[dict[str, Any]] = []
        """The chat requests received."""
        self.damaged = 0
        """Replies to the run's samples sent empty, cut off, refused or under another model's name (the pre-flight
        request's one-token reply, which no sample uses, left out)."""

    async def _answer(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
        if method == "POST" and path == "/tokenize":
            return self._tokenize(json.loads(body))
        if not (method == "POST" and path.endswith("/chat/completions")):
            return await super()._answer(method, path, body)
        request = json.loads(body)
        self.bodies.append(request)
        prompt = str(request["messages"][-1]["content"])
        budget = request.get("max_tokens") or 10_000
        text, finish, trace = good_reply(prompt), "stop", None
        if self.mode.startswith("thinking"):
            trace = "Let me think step by step. " * 20
            if budget < THRESHOLD:
                text, finish = "", "length"
        elif self.mode == "truncating":
            text, finish = text[: max(1, len(text) // 3)], "length"
        elif self.mode == "refusing":
            text = REFUSAL
        if request["messages"] != [{"role": "user", "content": PREFLIGHT_PROMPT}]:
            self.damaged += finish == "length" or self.mode in ("refusing", "other-model")
        message: dict[str, Any] = {"role": "assistant", "content": text, "reasoning_content": trace}
        served = OTHER if self.mode == "other-model" else request.get("model")
        choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        usage = {"prompt_tokens": 10, "completion_tokens": 5}
        return 200, {"id": "x", "object": "chat.completion", "model": served, "choices": [choice], "usage": usage}

    def _tokenize(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.tokenized.append(body)
        if self.mode == "vllm" and "prompt" in body:
            return 200, {"count": len(str(body["prompt"]).split()), "max_model_len": 8192}
        if self.mode == "llama.cpp":  # llama.cpp reads "content" only: vLLM's body gets no tokens
            return 200, {"tokens": list(range(len(str(body.get("content", "")).split())))}
        return 404, {"error": {"message": "no tokenizer"}}


@dataclass
class Cell:
    """What one run kept."""

    status: str
    samples: int
    errors: int
    truncated: int
    damaged: int
    """Replies the server damaged."""
    unparsed: int = 0
    """Generations whose answer could not be read."""
    missing: int = 0
    """Score values that could not be computed (a judge's unreadable reply), counted, never averaged."""
    notes: list[str] = field(default_factory=list)
    served: dict[str, Any] = field(default_factory=dict)

    def label(self) -> str:
        """The cell as the matrix shows it."""
        parts = [self.status]
        if self.errors:
            parts.append(f"{self.errors}/{self.samples} err")
        if self.truncated:
            parts.append(f"{self.truncated}/{self.samples} trunc")
        if self.unparsed:
            parts.append(f"{self.unparsed}/{self.samples} unparsed")
        if self.missing:
            parts.append(f"{self.missing} values missing")
        if any(entry["mismatched"] for entry in self.served.values()):
            parts.append("mismatch flagged")
        return ", ".join(parts)


def _jsonl(path: Path, records: list[dict[str, str]]) -> str:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return str(path)


def _task(row: str, tmp: Path) -> tuple[str, dict[str, Any]]:
    """The task and options of a row; a task that reads the user's files gets two samples' worth written."""
    if row.startswith("synthesis/"):
        return "synthesis", {"workflow": row.split("/", 1)[1], "text_metrics": False, "n_distractors": 5}
    if row == "mcq-file":
        return row, {"path": str(write_questions(tmp / "q.jsonl", 2))}
    if row == "text-file":
        questions = [{"id": f"t{i}", "question": f"Why {i}?", "reference": "Because."} for i in range(2)]
        return row, {"path": _jsonl(tmp / "t.jsonl", questions), "judge": True}  # a free-text answer is judged
    if row == "factuality/summaries":
        summaries = [{"review_id": f"r{i}", "generated": "Statins help."} for i in range(2)]
        targets = [{"review_id": f"r{i}", "target": "Statins reduce deaths."} for i in range(2)]
        return row, {"generated": _jsonl(tmp / "s.jsonl", summaries), "targets": _jsonl(tmp / "g.jsonl", targets)}
    if row == "medthink/reasoning":
        return row, {"text_metrics": False}
    return row, {}


async def _run(row: str, mode: str, tmp: Path, server: AdversarialServer) -> Cell:
    task, args = _task(row, tmp)
    model_args: dict[str, Any] = {"max_retries": 0, "timeout": 120}
    if mode == "thinking+reasoning":
        model_args["reasoning"] = True
    if mode in ("vllm", "llama.cpp"):
        model_args["context_length"] = 1200  # small enough that long inputs are fitted with the server's counts
    store = tmp / f"{mode}.sqlite"
    spec = f"openai-compatible:m@{server.url}/v1"
    # every role (a negator the task would default to the bundled model, say) is played by the server under test
    roles = {role: RoleConfig(model=spec, args=model_args) for role in create_task(task, **args).roles}
    config = RunConfig(
        task=task,
        task_args=args,
        model=spec,
        model_args=model_args,
        roles=roles,
        limit=2,
        concurrency=2,
        store=str(store),
    )
    result = await arun(config)
    run_id = result.run.run_id
    played = result.run.provenance["models"]
    assert all(model.get("base_url") == f"{server.url}/v1" for model in played.values()), played  # never a local one
    with sqlite3.connect(store) as db:
        failed = "SELECT count(DISTINCT sample_id || '/' || epoch) FROM errors WHERE run_id = ?"  # one per stage
        errors = db.execute(failed, (run_id,)).fetchone()[0]
        truncated = db.execute("SELECT count(*) FROM generations WHERE run_id = ? AND truncated", (run_id,)).fetchone()
        payloads = [json.loads(p) for (p,) in db.execute("SELECT payload FROM steps WHERE run_id = ?", (run_id,))]
        unparsed = db.execute("SELECT count(*) FROM generations WHERE run_id = ? AND NOT parsed", (run_id,)).fetchone()
        scores = [json.loads(s) for (s,) in db.execute("SELECT score FROM scores WHERE run_id = ?", (run_id,))]
    _check_steps(payloads)
    assert result.progress.errors == errors
    assert result.progress.truncated == truncated[0]
    served = result.run.provenance.get("served", {})
    missing = sum(value is None for score in scores for value in score["values"].values())
    cell = Cell(result.run.status, result.progress.total, errors, truncated[0], server.damaged, unparsed[0], missing)
    cell.notes, cell.served = result.notes, served
    return cell


def _check_steps(payloads: list[dict[str, Any]]) -> None:
    """No recorded model step that later steps build on is empty, cut off or a refusal; every one says what it sent."""
    for payload in payloads:
        if "output" not in payload:
            continue  # not a model call (a retrieval, a negation's use)
        assert {"settings", "call", "purpose"} <= set(payload), payload
        output = payload["output"]
        if payload["purpose"] != "answer":
            assert output["text"].strip(), payload  # verdicts and evidence are never empty
        if payload["purpose"] == "evidence":
            assert output["finish_reason"] != "length" and output["text"] != REFUSAL, payload
        if "negated" in payload:
            assert payload["negated"].strip() and payload["negated"] != REFUSAL


def _check_stores(cache: Path) -> None:
    """Nothing empty or cut off in the response cache; no empty or refused negation."""
    responses = cache / "responses.sqlite"
    if responses.exists():
        with sqlite3.connect(responses) as db:
            for (output,) in db.execute("SELECT output FROM responses"):
                reply = json.loads(output)
                assert reply["text"].strip() and reply["finish_reason"] != "length", reply
    negations = cache / "negations.sqlite"
    if negations.exists():
        with sqlite3.connect(negations) as db:
            for (text,) in db.execute("SELECT negated FROM negations"):
                assert text.strip() and text != REFUSAL, text


def _expect(row: str, mode: str, cell: Cell) -> None:
    """What each server must leave behind."""
    clean = cell.errors == 0 and cell.truncated == 0
    assert (cell.status == "complete") == (cell.errors == 0), cell
    if mode in ("honest", "thinking+reasoning", "vllm", "llama.cpp"):
        assert cell.status == "complete" and clean, (row, mode, cell)
    if mode in ("thinking", "truncating") and cell.damaged:
        assert not clean, (row, mode, cell)  # a damaged reply shows as an error or a truncation
    if mode == "refusing" and row in ("synthesis/negated-rag",):
        assert cell.errors == cell.samples, cell  # a refused negation is never evidence
    if mode == "refusing" and not row.startswith("lfqa/"):  # lfqa keeps free text and scores none
        assert cell.errors or cell.unparsed or cell.missing, (row, cell)  # a refusal is no readable answer
    if mode == "other-model":
        # every role called (factuality/summaries calls only its judge) is flagged
        assert cell.served and all(entry["mismatched"] == [OTHER] for entry in cell.served.values()), cell
        assert any(OTHER in note for note in cell.notes), cell
    else:
        assert not any("not the model asked for" in note for note in cell.notes), cell


def _check_tokenizer(mode: str, bodies: list[dict[str, Any]]) -> None:
    """Each model (one per role) probes the styles in turn; counts are then asked in the style the server answered."""
    vllm, llama = {"model": "m", "prompt": PROBE}, {"content": PROBE}
    probes = [body for body in bodies if body in (vllm, llama)]
    counts = [body for body in bodies if body not in (vllm, llama)]
    if mode == "vllm":  # the first style answers: it is the only one probed and used
        assert probes and all(body == vllm for body in probes), probes
        assert all("prompt" in body for body in counts), counts
    if mode == "llama.cpp":  # every vLLM-style probe got no tokens, so the llama.cpp style is probed and used
        assert probes and probes == [vllm, llama] * (len(probes) // 2), probes
        assert all("content" in body for body in counts), counts


@pytest.mark.parametrize("row", ROWS)
async def test_trust_matrix_row(row: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cells: dict[str, Cell] = {}
    for mode in MODES:
        folder = tmp_path / mode
        folder.mkdir()
        monkeypatch.setenv("EBMEVAL_CACHE_DIR", str(folder / "cache"))  # a fresh cache and negation store per cell
        async with AdversarialServer(mode) as server:
            cells[mode] = await _run(row, mode, folder, server)
        _check_tokenizer(mode, server.tokenized)
        _check_stores(folder / "cache")
        _expect(row, mode, cells[mode])
    if target := os.environ.get("EBMEVAL_TRUST_MATRIX"):
        with open(target, "a", encoding="utf-8") as out:
            out.write(f"| {row} | " + " | ".join(cells[m].label() for m in MODES) + " |\n")
