"""Scorers of synthesis runs that ask no judge: gold-study retrieval and the feasibility rating."""

from __future__ import annotations

from typing import Any

from ..tasks import Generation, Sample, SampleContext, Score, scorer
from ._workflows import gold_studies


class RetrievalRecall:
    """``synthesis/retrieval-recall``: how many gold studies the retrieval put in the top k.

    recall = |gold ∩ retrieved| / |gold|, precision = |gold ∩ retrieved| / |retrieved|;
    ``None`` for a generation without retrieval. Gold is the item's studies; over a shared index
    (S-RAG's ``index`` design) its listed study PMIDs, a study counted once however many of its
    chunks were retrieved.
    """

    name = "synthesis/retrieval-recall"

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        """Count the gold documents among the retrieved ones."""
        index = generation.metadata.get("design") == "index"
        gold = gold_studies(sample) if index else {d.id for d in sample.documents}
        if generation.retrieved is None or not gold:
            return Score(values={"recall": None, "precision": None})
        hits = [r for r in generation.retrieved if r.document.id in gold or (index and r.gold)]
        found = len({str(r.document.metadata.get("pmid", r.document.id)) for r in hits}) if index else len(hits)
        precision = len(hits) / len(generation.retrieved) if generation.retrieved else None
        return Score(values={"recall": found / len(gold), "precision": precision})


class FeasibilityScore:
    """``synthesis/feasibility``: the mean 0–5 rating the ``feasibility`` workflow recorded."""

    name = "synthesis/feasibility"

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        """Read ``metadata["feasibility"]``."""
        value: Any = generation.metadata.get("feasibility")
        return Score(values={"feasibility": None if value is None else float(value)})


@scorer("synthesis/retrieval-recall")
def retrieval_recall() -> RetrievalRecall:
    """Recall and precision of the gold studies among the retrieved documents.

    Metrics:
        recall: |gold ∩ retrieved| / |gold|, gold the item's studies (over a shared index, its study
            PMIDs, each counted once however many of its chunks were retrieved); None without retrieval
            or without gold studies.
        precision: retrieved documents that are gold / retrieved documents (over a shared index, every
            retrieved chunk counts); None without retrieval, without gold studies or when nothing was
            retrieved.
    """
    return RetrievalRecall()


@scorer("synthesis/feasibility")
def feasibility_score() -> FeasibilityScore:
    """The feasibility workflow's mean rating as a score.

    Metrics:
        feasibility: (1/m) Σ_r s_r, the mean of the m readable 0–5 ratings of whether the reference
            conclusion can be reached from the abstracts; None when no rating was readable.
    """
    return FeasibilityScore()
