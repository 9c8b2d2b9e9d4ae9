"""PubMedQA (Jin et al., 2019): yes/no/maybe questions on PubMed abstracts, PQA-L test split.

Data card: ``docs/tasks/pubmedqa.md``.
"""

from __future__ import annotations

from typing import Any, Literal

from .._util.errors import ConfigError
from ..scorers import AnswerFormat, Unparsed
from ..tasks import Document, Sample, Task, task
from ..workflows import Strategy
from ._data import read_records, require
from ._mcq import mcq_task

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
    for line, record in enumerate(read_records(DATA), start=1):
        require(record, ("pmid", "question", "contexts", "long_answer", "final_decision"), DATA, line)
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
def pubmedqa(
    setting: Setting = "reasoning-required",
    strategy: Strategy = "direct",
    thinking: bool | None = None,
    system_prompt: str | None = None,
    answer_from: Literal["text", "logprobs"] = "text",
    unparsed: Unparsed = "zero",
    answer_format: AnswerFormat = "lenient",
) -> Task:
    """PubMedQA PQA-L test (500 questions), scored by accuracy.

    Args:
        setting: ``reasoning-required`` (question + abstract without its conclusion),
            ``reasoning-free`` (question + conclusion) or ``question-only``.
        strategy: prompting strategy: ``direct``, ``cot`` or ``cot-refine``.
        thinking: thinking switch of hybrid reasoning models (``None`` leaves the prompt as is).
        system_prompt: role prompt sent as the system message.
        answer_from: ``text`` (parse the reply) or ``logprobs`` (most probable letter; ``direct`` only).
        unparsed: ``zero`` counts an unparsed reply as wrong; ``skip`` leaves it out of the mean.
        answer_format: ``lenient`` (any answer the grammar reads) or ``strict`` (only a final
            ``ANSWER: X`` line, as the prompt then asks; the lenient reading is scored beside it).
    """
    metadata: dict[str, Any] = {
        "source": "pubmedqa/pubmedqa@1cbae8e92f72f20c8d3747cbb3bf5bc53554d997",
        "licence": "MIT",
        "card": "docs/tasks/pubmedqa.md",
        "setting": setting,
    }
    return mcq_task(
        "pubmedqa",
        load_pubmedqa(setting),
        data_version="1",
        metadata=metadata,
        strategy=strategy,
        thinking=thinking,
        system_prompt=system_prompt,
        answer_from=answer_from,
        unparsed=unparsed,
        answer_format=answer_format,
    )
