"""Relation classification as multiple choice: from (subject, relation, object) triplets to questions.

The link-prediction formulation: each triplet becomes a question naming the two
entities, grounded in the text that states the relation, whose options are the
relation types (plus, optionally, "no relation"). :func:`relation_samples` converts
any triplets; ``relation-mcq`` ships DDI-2013 drug pairs as the built-in instance.
Data card: ``docs/tasks/relation_mcq.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._util.errors import ConfigError
from ..tasks import Document, Sample, task
from ._data import read_records
from ._mcq import MCQData, mcq_factory

QUESTION = 'Which relation does the text state between "{subject}" and "{object}"?'
"""The question of every converted triplet, followed by the relation definitions; the text is the document."""
SUBJECT_MARKS = ("<<", ">>")
OBJECT_MARKS = ("[[", "]]")


@dataclass(frozen=True)
class Triplet:
    """A (subject, relation, object) triplet and the text it comes from."""

    id: str
    subject: str
    relation: str | None
    """The relation type; ``None`` when the text states no relation between the two."""
    object: str
    text: str = ""
    """Evidence text; empty for knowledge-only questions."""
    subject_span: tuple[int, int] | None = None
    """``[start, end)`` of the subject in ``text``, to mark the mention meant."""
    object_span: tuple[int, int] | None = None
    """``[start, end)`` of the object in ``text``."""
    metadata: dict[str, Any] = field(default_factory=dict)


def mark_entities(triplet: Triplet) -> str:
    """``text`` with the subject marked ``<<…>>`` and the object ``[[…]]``.

    Marks tell which mention is meant when a name occurs more than once. When a span
    is missing or the two spans overlap (discontinuous entities), the text is left unmarked.
    """
    first, second = triplet.subject_span, triplet.object_span
    if first is None or second is None or (first[0] < second[1] and second[0] < first[1]):
        return triplet.text
    text = triplet.text
    # insert from the right so the left span's offsets stay valid
    for (start, end), (left, right) in sorted(
        [(first, SUBJECT_MARKS), (second, OBJECT_MARKS)], key=lambda pair: pair[0][0], reverse=True
    ):
        text = f"{text[:start]}{left}{text[start:end]}{right}{text[end:]}"
    return text


def relation_samples(
    triplets: Iterable[Triplet],
    relations: Mapping[str, str],
    *,
    no_relation: tuple[str, str] | None = None,
) -> list[Sample]:
    """One multiple-choice sample per triplet.

    The options are the relation types, lettered A, B, … in the order of
    ``relations`` (type → definition), then the ``no_relation`` option (name,
    definition) when given; the question lists every definition. A triplet whose
    relation is ``None`` targets the ``no_relation`` option; it is an error without
    one, as is a type outside ``relations``. The marked text (:func:`mark_entities`)
    is the sample's document; ``metadata["relation"]`` keeps the type (``None`` for none).
    """
    definitions = dict(relations)
    if no_relation is not None:
        definitions[no_relation[0]] = no_relation[1]
    names = list(definitions)
    letters = [chr(ord("A") + i) for i in range(len(names))]
    choices = dict(zip(letters, names, strict=True))
    letter_of: dict[str | None, str] = dict(zip(names[: len(relations)], letters, strict=False))
    if no_relation is not None:
        letter_of[None] = letters[-1]
    glossary = "\n".join(f"- {name}: {definition}" for name, definition in definitions.items())
    samples = []
    for triplet in triplets:
        if triplet.relation not in letter_of:
            what = "no 'no relation' option" if triplet.relation is None else f"unknown relation {triplet.relation!r}"
            raise ConfigError("relations", f"triplet {triplet.id!r}: {what}")
        marked = mark_entities(triplet)
        documents = [Document(id=triplet.id, text=marked)] if triplet.text else []
        question = QUESTION.format(subject=triplet.subject, object=triplet.object)
        if marked != triplet.text:
            question += f" They are marked {'…'.join(SUBJECT_MARKS)} and {'…'.join(OBJECT_MARKS)} in the text."
        samples.append(
            Sample(
                id=triplet.id,
                input=f"{question}\n\nRelation types:\n{glossary}",
                target=letter_of[triplet.relation],
                choices=dict(choices),
                documents=documents,
                metadata={"relation": triplet.relation, **triplet.metadata},
            )
        )
    return samples


DDI_DATA = "ddi2013_test.jsonl.gz"
DDI_RELATIONS = {
    "advise": "a recommendation or advice about taking the two together",
    "effect": "the effect of the interaction, or its pharmacodynamic mechanism",
    "mechanism": "the pharmacokinetic mechanism of the interaction",
    "int": "an interaction, without further information",
}
"""DDI-2013 interaction types, with their definitions in the annotation guidelines."""
DDI_NONE = ("none", "the text states no interaction between the two")


def ddi_triplets() -> list[Triplet]:
    """Every candidate drug pair of the DDI-2013 test split (5,716: 979 interactions, 4,737 without)."""
    triplets = []
    for record in read_records(DDI_DATA, ("id", "subject", "object", "relation", "sentence")):
        subject_span, object_span = record.get("subject_span"), record.get("object_span")
        triplets.append(
            Triplet(
                id=record["id"],
                subject=record["subject"],
                relation=record["relation"],
                object=record["object"],
                text=record["sentence"].strip(),
                subject_span=(subject_span[0], subject_span[1]) if subject_span else None,
                object_span=(object_span[0], object_span[1]) if object_span else None,
                metadata={"source": record.get("source"), "document": record.get("document")},
            )
        )
    return triplets


@task("relation-mcq")
@mcq_factory("strategy", "thinking", "system_prompt", "unparsed", "answer_format")
def relation_mcq(negatives: bool = False) -> MCQData:
    """DDI-2013 drug-drug interaction types as multiple choice, scored by accuracy.

    Args:
        negatives: ``False`` (default): the 979 interacting pairs, four options
            (advise, effect, mechanism, int). ``True``: all 5,716 candidate pairs with a
            fifth option, "none" (83% of them).
    """
    triplets = [t for t in ddi_triplets() if negatives or t.relation is not None]
    samples = relation_samples(triplets, DDI_RELATIONS, no_relation=DDI_NONE if negatives else None)
    metadata = {
        "source": "isegura/DDICorpus@819b0fa538ed83ab2a8b4f5417bba3c03249b7f3",
        "licence": "CC BY-NC 4.0",
        "card": "docs/tasks/relation_mcq.md",
    }
    return MCQData("relation-mcq", samples, metadata)
