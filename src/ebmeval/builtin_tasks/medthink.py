"""MedThink-Bench (npj Digital Medicine, 2025): expert-annotated medical reasoning questions, answer accuracy.

Only the questions with lettered options are included (499 of 500); each keeps its
expert reasoning steps in ``metadata["scoring_points"]`` for rationale judges.
Data card: ``docs/tasks/medthink.md``.
"""

from __future__ import annotations

from typing import Literal

from .._util.errors import ConfigError
from ..tasks import Sample, task
from ._data import read_records
from ._mcq import LETTERED_FIELDS, MCQData, lettered_sample, mcq_factory

DATA = "medthink.jsonl.gz"

Layout = Literal["all", "lines", "inline"]


def load_medthink(layout: Layout = "all") -> list[Sample]:
    """The lettered MedThink-Bench questions as samples, in upstream ``Index`` order.

    Args:
        layout: ``all``; ``lines`` (245 questions whose options are ``X. text`` lines,
            3–5 options, plus one with 22); or ``inline`` (254 with ``Answer Choices:
            (A) … (J)``, mostly 10 options).
    """
    if layout not in ("all", "lines", "inline"):
        raise ConfigError("layout", f"must be all, lines or inline, not {layout!r}")
    samples = []
    for record in read_records(DATA, ("index", "qa_type", *LETTERED_FIELDS, "scoring_points")):
        if layout != "all" and record.get("layout") != layout:
            continue
        metadata = {
            "qa_type": record["qa_type"],
            "layout": record.get("layout"),
            "answer_text": record.get("answer_text"),
            "scoring_points": record["scoring_points"],
        }
        samples.append(lettered_sample(record, "index", metadata))
    return samples


@task("medthink")
@mcq_factory("strategy", "thinking", "system_prompt", "unparsed", "answer_format", strategy="cot")
def medthink(layout: Layout = "all") -> MCQData:
    """MedThink-Bench answer accuracy on its lettered questions.

    The default strategy is ``cot``: the benchmark is about reasoning, and the
    rationale is what judges grade against ``scoring_points``.

    Args:
        layout: ``all`` (499), ``lines`` (245) or ``inline`` (254) option layout.
    """
    metadata = {
        "source": "plusnli/MedThink-Bench@d5cd589850d381bead2cbc92e32bb6f597e45399",
        "licence": "none stated upstream",
        "card": "docs/tasks/medthink.md",
    }
    return MCQData("medthink", load_medthink(layout), metadata)
