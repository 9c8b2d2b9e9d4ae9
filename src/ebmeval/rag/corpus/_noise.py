"""Relevant-plus-noise corpora: the gold documents of a task mixed with seeded random distractors."""

from __future__ import annotations

import random
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from ..._util.errors import ConfigError
from ...tasks import Document


class NoiseCorpus(BaseModel):
    """Gold documents plus distractors, shuffled, with a record of which are gold."""

    model_config = ConfigDict(frozen=True)

    documents: list[Document]
    """Gold and distractor documents, in seeded random order."""
    gold_ids: frozenset[str]
    """Ids of the gold documents."""
    n_distractors: int
    """Distractors drawn from the pool."""
    seed: int
    """Seed of the draw and of the shuffle."""

    def is_gold(self, document_id: str) -> bool:
        """Whether ``document_id`` is a gold document."""
        return document_id in self.gold_ids


def noise_corpus(
    gold: Iterable[Document], pool: Iterable[Document], n_distractors: int, *, seed: int = 0
) -> NoiseCorpus:
    """Mix ``gold`` with ``n_distractors`` documents drawn uniformly at random from ``pool``.

    The pool is streamed once with reservoir sampling (Algorithm R: the i-th eligible
    document replaces a random slot with probability n/i), so it may be larger than
    memory. Pool documents whose id or text equals a gold document's are never drawn,
    nor is an id drawn twice. Raises :class:`ConfigError` when the pool has fewer than
    ``n_distractors`` eligible documents.
    """
    gold_docs = list(gold)
    gold_ids = {d.id for d in gold_docs}
    gold_texts = {d.text for d in gold_docs}
    rng = random.Random(seed)
    reservoir: list[Document] = []
    taken: set[str] = set()
    seen = 0
    for document in pool:
        if document.id in gold_ids or document.id in taken or document.text in gold_texts:
            continue
        seen += 1
        if len(reservoir) < n_distractors:
            reservoir.append(document)
            taken.add(document.id)
            continue
        slot = rng.randrange(seen)
        if slot < n_distractors:
            taken.discard(reservoir[slot].id)
            reservoir[slot] = document
            taken.add(document.id)
    if len(reservoir) < n_distractors:
        raise ConfigError(
            "n_distractors", f"asked for {n_distractors} distractors but the pool has only {len(reservoir)} eligible"
        )
    documents = gold_docs + reservoir
    rng.shuffle(documents)
    return NoiseCorpus(documents=documents, gold_ids=frozenset(gold_ids), n_distractors=n_distractors, seed=seed)
