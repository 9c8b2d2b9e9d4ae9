"""Biomedical relation extraction: list the (subject, relation, object) triplets a sentence states.

* ``ddi``: drug–drug interactions in the DDI-2013 test split (sentence level; types ``advise``,
  ``effect``, ``int``, ``mechanism``). Pairs are unordered, as in the standard DDI-2013 evaluation.
* ``chemprot``: chemical–protein relations in the SciBERT ChemProt test file, grouped by sentence
  (13 labels). Pairs are unordered: the SciBERT markers give text order, not which entity is the
  chemical, and a ChemProt relation always runs from the chemical to the protein.

The model answers with one ``entity | TYPE | entity`` line per relation (or ``none``); JSON and
other line forms are read too (:func:`ebmeval.scorers._triplets.parse_triplets`). Grading is strict
micro-F1 (``triplet-f1``); corpus scores come from :func:`ebmeval.scorers._triplets.micro_f1`.
By default the prompt lists the sentence's annotated entities (the DDI-2013 relation task gives the
entities); ``entities=False`` asks the model to find them too.
Data card: ``docs/tasks/extraction.md``; data built by ``scripts/build_extraction_data.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from .._util.errors import ConfigError
from ..prompts import add_template
from ..scorers import TripletF1, triplet_parser
from ..tasks import Sample, Task, task
from ..workflows import FreeFormWorkflow, Strategy
from ._data import read_records

DDI_DATA = "extraction_ddi.jsonl.gz"
CHEMPROT_DATA = "extraction_chemprot.jsonl.gz"

DDI_TYPES = {
    "advise": "a recommendation or advice about using the two drugs together",
    "effect": "an effect or pharmacodynamic consequence of the interaction",
    "int": "an interaction is stated with no further detail",
    "mechanism": "a pharmacokinetic mechanism (absorption, metabolism, levels, clearance)",
}
CHEMPROT_TYPES = {
    "ACTIVATOR": "the chemical activates the protein",
    "AGONIST": "the chemical is an agonist of the protein",
    "AGONIST-ACTIVATOR": "an agonist that activates the protein",
    "AGONIST-INHIBITOR": "an agonist that inhibits the protein",
    "ANTAGONIST": "the chemical is an antagonist of the protein",
    "DOWNREGULATOR": "the chemical directly lowers the protein's activity or amount",
    "INDIRECT-DOWNREGULATOR": "the chemical indirectly lowers the protein's expression or activity",
    "INDIRECT-UPREGULATOR": "the chemical indirectly raises the protein's expression or activity",
    "INHIBITOR": "the chemical inhibits the protein",
    "PRODUCT-OF": "the chemical is a product of the protein (enzyme)",
    "SUBSTRATE": "the chemical is a substrate of the protein",
    "SUBSTRATE_PRODUCT-OF": "the chemical is both substrate and product of the protein",
    "UPREGULATOR": "the chemical directly raises the protein's activity or amount",
}

PROMPT = add_template(
    "extraction/relations",
    1,
    """{instruction}

Relation types:
{types}

Sentence: {text}
{entities}
Answer with one line per relation, in the form: {form}
Use the entity names exactly as they are written in the sentence.
If the sentence states no such relation, answer: none""",
    "The relation-extraction tasks: the instruction, the relation types, the sentence and its entities.",
)
ENTITIES = "Entities: {names}\n"
MAX_TOKENS = 256
"""Reply budget of ``direct``; the reasoning strategies add room for the reasoning."""

Subset = Literal["all", "positive"]


class ExtractionWorkflow(FreeFormWorkflow):
    """The triplets of a sentence by any strategy (:class:`~ebmeval.workflows.FreeFormWorkflow`).

    Args:
        instruction: First line of the prompt (what to extract).
        types: Relation type → definition, listed in the prompt.
        form: The line form asked for, e.g. ``drug | TYPE | drug``.
        entities: Whether the prompt lists ``sample.metadata["entities"]``.
        strategy: ``direct``, ``cot`` or ``cot-refine``.
        system_prompt: Sent as the system message when given.
    """

    task_templates = (PROMPT,)

    def __init__(
        self,
        instruction: str,
        types: Mapping[str, str],
        form: str,
        *,
        entities: bool = True,
        strategy: Strategy = "direct",
        system_prompt: str | None = None,
    ) -> None:
        super().__init__("extract", strategy, system_prompt=system_prompt, max_tokens=MAX_TOKENS)
        self.instruction = instruction
        self.types = dict(types)
        self.form = form
        self.entities = entities

    def prompt_shaping(self) -> list[Any]:
        """The prompt's version, wording and entity listing."""
        return [PROMPT.version, self.instruction, self.types, self.form, self.entities]

    def task_prompt(self, sample: Sample) -> str:
        """The extraction prompt for ``sample``."""
        names = sample.metadata.get("entity_names", [])
        listed = ENTITIES.format(names="; ".join(names)) if self.entities and names else ""
        types = "\n".join(f"- {name}: {definition}" for name, definition in self.types.items())
        return PROMPT.render(
            instruction=self.instruction, types=types, text=sample.input, entities=listed, form=self.form
        )


def _unique(names: list[str]) -> list[str]:
    """``names`` without repeats (case-insensitive), first spelling kept, in order."""
    seen: dict[str, str] = {}
    for name in names:
        seen.setdefault(name.casefold(), name)
    return list(seen.values())


def load_ddi(subset: Subset = "all") -> list[Sample]:
    """DDI-2013 test sentences with a candidate drug pair; gold triplets in ``metadata["triplets"]``.

    Args:
        subset: ``all`` (790 sentences) or ``positive`` (the 487 that state an interaction).
    """
    samples = []
    for record in read_records(DDI_DATA, required=("id", "text", "entities", "triplets", "pairs", "source")):
        if subset == "positive" and not record["triplets"]:
            continue
        samples.append(
            _sentence(
                record,
                [e["text"] for e in record["entities"]],
                entities=record["entities"],
                source=record["source"],
                document=record.get("document"),
                pairs=record["pairs"],
            )
        )
    return samples


def load_chemprot() -> list[Sample]:
    """ChemProt test sentences (SciBERT files) with their related pairs; gold in ``metadata["triplets"]``."""
    samples = []
    for record in read_records(CHEMPROT_DATA, required=("id", "text", "entities", "triplets")):
        samples.append(_sentence(record, record["entities"]))
    return samples


def _sentence(record: dict[str, Any], names: list[str], **metadata: Any) -> Sample:
    """A sentence with its gold triplets (target: one ``a | relation | b`` string each) and entity names."""
    triplets = record["triplets"]
    return Sample(
        id=record["id"],
        input=record["text"],
        target=[" | ".join(t) for t in triplets],
        metadata={"triplets": triplets, "entity_names": _unique(names), **metadata},
    )


def _task(name: str, samples: list[Sample], workflow: ExtractionWorkflow, args: dict[str, Any]) -> Task:
    return Task(
        name=name,
        dataset=samples,
        workflow=workflow,
        scorers=[TripletF1(symmetric=True)],
        parser=triplet_parser,
        version=f"1-{workflow.version}",
        generate_config=workflow.generate_config,
        reasoning_generate_config=workflow.reasoning_config,
        metadata={"card": "docs/tasks/extraction.md", **args},
    )


@task("ddi")
def ddi(
    subset: Subset = "all", entities: bool = True, strategy: Strategy = "direct", system_prompt: str | None = None
) -> Task:
    """Drug–drug interaction extraction (DDI-2013 test, sentence level), strict unordered-pair micro-F1.

    Args:
        subset: ``all`` sentences with a candidate pair, or only the ``positive`` ones.
        entities: List the annotated drug mentions in the prompt.
        strategy: prompting strategy: ``direct``, ``cot`` or ``cot-refine``.
        system_prompt: Role prompt sent as the system message.
    """
    if subset not in ("all", "positive"):
        raise ConfigError("subset", f"must be 'all' or 'positive', not {subset!r}")
    workflow = ExtractionWorkflow(
        "List every drug–drug interaction that the sentence states.",
        DDI_TYPES,
        "drug | TYPE | drug",
        entities=entities,
        strategy=strategy,
        system_prompt=system_prompt,
    )
    return _task(
        "ddi",
        load_ddi(subset),
        workflow,
        {"source": "isegura/DDICorpus@819b0fa538ed83ab2a8b4f5417bba3c03249b7f3", "licence": "CC BY-NC 4.0"},
    )


@task("chemprot")
def chemprot(entities: bool = True, strategy: Strategy = "direct", system_prompt: str | None = None) -> Task:
    """Chemical–protein relation extraction (ChemProt test, SciBERT files), strict unordered-pair micro-F1.

    Args:
        entities: List the sentence's related entity mentions in the prompt.
        strategy: prompting strategy: ``direct``, ``cot`` or ``cot-refine``.
        system_prompt: Role prompt sent as the system message.
    """
    workflow = ExtractionWorkflow(
        "List every chemical–protein relation that the sentence states.",
        CHEMPROT_TYPES,
        "chemical | TYPE | protein",
        entities=entities,
        strategy=strategy,
        system_prompt=system_prompt,
    )
    return _task(
        "chemprot",
        load_chemprot(),
        workflow,
        {
            "source": "allenai/scibert@06793f77d7278898159ed50da30d173cdc8fdea9 data/text_classification/chemprot",
            "licence": "BioCreative VI ChemProt terms (not stated upstream)",
        },
    )
