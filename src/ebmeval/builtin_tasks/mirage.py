"""MIRAGE (Xiong et al., 2024): five medical multiple-choice QA sets, question-only.

MIRAGE evaluates retrieval-augmented generation with no context given: the model
(or a retriever in front of it) starts from the question and options alone. For
``mirage/pubmedqa`` this is the paper's PubMedQA* setting, with the abstract removed;
the source PMID of PubMedQA and BioASQ questions is kept in ``metadata["pmids"]``.
Data card: ``docs/tasks/mirage.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..tasks import Sample, Task, task
from ._data import read_records
from ._mcq import LETTERED_FIELDS, MCQData, lettered_sample, mcq_factory

DATASETS = {
    "mmlu_med": ("mmlu", "MMLU-Med: six medical subjects of MMLU, test split (1,089)"),
    "medqa": ("medqa", "MedQA-US, 4 options, test split (1,273)"),
    "medmcqa": ("medmcqa", "MedMCQA dev split (4,183)"),
    "pubmedqa": ("pubmedqa", "PubMedQA* (PQA-L test without the abstract, 500)"),
    "bioasq": ("bioasq", "BioASQ Task B yes/no questions 2019-2023 (618)"),
}
"""Task suffix → (MIRAGE dataset key, description)."""


def load_mirage(dataset: str) -> list[Sample]:
    """The questions of one MIRAGE dataset (a key of ``DATASETS``), in ``benchmark.json`` order."""
    key, _ = DATASETS[dataset]
    name = f"mirage_{key}.jsonl.gz"
    samples = []
    for record in read_records(name, ("id", *LETTERED_FIELDS)):
        metadata: dict[str, Any] = {"dataset": key}
        if "pmids" in record:
            metadata["pmids"] = record["pmids"]
        samples.append(lettered_sample(record, "id", metadata))
    return samples


def _factory(dataset: str) -> Callable[..., Task]:
    description = DATASETS[dataset][1]

    def mirage() -> MCQData:
        metadata = {
            "source": "Teddy-XiongGZ/MIRAGE@392943af99cd94cafd50a0de2e7fca24bbf65494",
            "licence": "MIT (benchmark); see the data card for each dataset",
            "card": "docs/tasks/mirage.md",
            "description": description,
        }
        return MCQData(f"mirage/{dataset}", load_mirage(dataset), metadata)

    mirage.__doc__ = f"MIRAGE {description}, question-only, scored by accuracy."
    mirage.__name__ = f"mirage_{dataset}"
    return mcq_factory("strategy", "thinking", "system_prompt", "answer_from", "unparsed", "answer_format")(mirage)


for _dataset in DATASETS:
    task(f"mirage/{_dataset}")(_factory(_dataset))
