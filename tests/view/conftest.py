"""A run store made by real runs: retrieval, a judge panel's replies, negations, failures, two comparable runs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ebmeval.rag import build_index
from ebmeval.rag.corpus import write_store
from ebmeval.runner import RunConfig, run
from ebmeval.tasks import Document
from tests.helpers.chat_server import chat_server, completion

pytest.importorskip("fastapi", reason="the viewer needs the 'web' extra")

JUDGE_REPLY = (
    "Main findings: 4\nSpecifics: 3\nNuance: 4\nImplications: 4\nSafety: 5\n"
    "Justification: The candidate keeps the direction of effect. It omits the certainty of evidence.\nOverall: 4"
)
"""What the scripted judge answers: a rubric whose rationale the sample page must show."""


def refuse_questions(body: dict[str, Any], _headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """Answers the pre-flight request, refuses every question as too long."""
    if body["messages"][-1]["content"] == "Reply with OK.":
        return completion("OK")
    return 400, {"error": {"message": "This model's maximum context length is 8 tokens."}}


@dataclass(frozen=True)
class Runs:
    store: Path
    retrieval: str
    """pubmedqa over a BM25 index, always answering yes."""
    random: str
    """pubmedqa answered by the random baseline (same samples as ``retrieval``)."""
    judged: str
    """synthesis with negated abstracts, graded by a scripted judge."""
    failed: str
    """pubmedqa against a server that refuses every question: every sample errored."""
    unsure: str
    """pubmedqa answered with no answer at all: every sample unparsed."""


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = tmp_path_factory.mktemp("view")
    store = root / "runs.sqlite"
    docs = [
        Document(
            id=f"pmid{i}",
            title=f"Trial {i} of early mobilisation",
            text=f"Early mobilisation trial {i}: patients with a higher risk of falls; the study associated "
            "treatment with outcome in diabetes, hypoglycaemia, imaging, vascularization, asthma, myoclonus, "
            "unsteadiness and the diagnosis of spondylolysis in adolescents and older people.",
        )
        for i in range(5)
    ]
    write_store(docs, root / "corpus")
    build_index(root / "corpus", root / "index", "bm25")
    common = {"store": str(store), "cache": False, "limit": 6}
    retrieval = run(
        RunConfig(
            task="pubmedqa",
            task_args={"retrieval": str(root / "index"), "k": 3},
            model="scripted:Answer: yes",
            **common,
        )
    )
    random = run(RunConfig(task="pubmedqa", model="baseline/random", **common))
    judged = run(
        RunConfig(
            task="synthesis",
            task_args={"workflow": "negated-rag", "text_metrics": False},
            model="scripted:Early mobilisation probably reduces falls; the evidence is of low certainty.",
            roles={"judge": f"scripted:{JUDGE_REPLY}", "negator": "scripted:Early mobilisation increased falls."},
            store=str(store),
            cache=False,
            limit=2,
        )
    )
    with chat_server(refuse_questions) as (url, _received):
        failed = run(
            RunConfig(
                task="pubmedqa",
                model=f"openai-compatible:small@{url}",
                model_args={"max_retries": 0},
                store=str(store),
                cache=False,
                limit=2,
            )
        )
    unsure = run(RunConfig(task="pubmedqa", model="scripted:I cannot tell from this abstract.", **common))
    return Runs(store, *(r.run.run_id for r in (retrieval, random, judged, failed, unsure)))
