"""PubMedQA (Jin et al., 2019): yes/no/maybe questions on PubMed abstracts, PQA-L test split.

Data card: ``docs/tasks/pubmedqa.md``.
"""

from __future__ import annotations

from typing import Literal

from .._util.errors import ConfigError
from ..tasks import Document, Sample, task
from ._data import read_records
from ._mcq import MCQData, mcq_factory

DATA = "pubmedqa.jsonl.gz"
CHOICES = {"A": "yes", "B": "no", "C": "maybe"}
LETTERS = {text: letter for letter, text in CHOICES.items()}

Setting = Literal["reasoning-required", "reasoning-free", "question-only"]


def load_pubmedqa(setting: Setting = "reasoning-required") -> list[Sample]:
    """The 500 test questions as samples (options A=yes, B=no, C=maybe).

    ``reasoning-required`` (the paper's main setting) grounds each question in its
    abstract without the conclusion: the labelled sections, one ``LABEL: text`` line
    each, as one document. ``reasoning-free`` gives the conclusion (the paper's long
    answer) instead. ``question-only`` gives no document.
    """
    if setting not in ("reasoning-required", "reasoning-free", "question-only"):
        raise ConfigError("setting", f"must be reasoning-required, reasoning-free or question-only, not {setting!r}")
    samples = []
    for record in read_records(DATA, ("pmid", "question", "contexts", "long_answer", "final_decision")):
        pmid = str(record["pmid"])
        documents = []
        if setting == "reasoning-required":
            text = "\n".join(f"{part['label']}: {part['text']}" for part in record["contexts"])
            documents.append(Document(id=pmid, text=text, metadata={"part": "contexts"}))
        elif setting == "reasoning-free":
            documents.append(Document(id=pmid, text=record["long_answer"], metadata={"part": "long_answer"}))
        samples.append(
            Sample(
                id=pmid,
                input=record["question"],
                target=LETTERS[record["final_decision"]],
                choices=dict(CHOICES),
                documents=documents,
                metadata={"label": record["final_decision"], "year": record.get("year")},
            )
        )
    return samples


@task("pubmedqa")
@mcq_factory("strategy", "thinking", "system_prompt", "answer_from", "unparsed", "answer_format")
def pubmedqa(setting: Setting = "reasoning-required") -> MCQData:
    """PubMedQA PQA-L test (500 questions), scored by accuracy.

    Args:
        setting: ``reasoning-required`` (question + abstract without its conclusion),
            ``reasoning-free`` (question + conclusion) or ``question-only``.
    """
    metadata = {
        "source": "pubmedqa/pubmedqa@1cbae8e92f72f20c8d3747cbb3bf5bc53554d997",
        "licence": "MIT",
        "card": "docs/tasks/pubmedqa.md",
        "setting": setting,
    }
    return MCQData("pubmedqa", load_pubmedqa(setting), metadata)
