"""Factuality tasks: validating the judge's direction and modality labels, and judged M3 conclusions.

* ``factuality/m3-claims``: label the direction and modality of M3 claims (DeYoung-style review
  claims, ``side="target"``, or the trial evidence sentences behind them, ``side="source"``);
  gold labels by the M3 annotators.
* ``factuality/evidence-inference``: label the direction of an intervention's effect on an outcome
  in an RCT abstract (Evidence Inference 2.0, ev2 test split); significantly increased → positive,
  significantly decreased → negative, no significant difference → no effect.
* ``factuality/m3-conclusions``: write a review conclusion from the trial evidence sentences of an
  M3 review; graded against the review's conclusion by ``judge/factuality``.
* ``factuality/summaries``: summaries generated elsewhere (a file), graded by ``judge/factuality``
  and/or an annotator's labels (``human/factuality``) against targets from a file or from another
  task's samples, with their ROUGE against target and background (``factuality/copying``); no
  model writes anything.

Data card: ``docs/tasks/factuality.md``; data built by ``scripts/build_factuality_data.py``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Literal

from .._util.errors import ConfigError, DataError
from ..factuality import (
    BINARY_CATEGORIES,
    DERIVED_CATEGORIES,
    DIRECTIONS,
    MODALITIES,
    FactualityJudge,
    LabelAccuracy,
    Scheme,
    label_accuracy,
    label_claim,
    normalize_direction,
    normalize_modality,
)
from ..models import GenerateConfig, user
from ..prompts import add_template
from ..prompts import templates as prompt_templates
from ..tasks import ANSWER, Generation, ParsedAnswer, Sample, SampleContext, Score, Task, WorkflowResult, scorer, task
from ._data import data_path, read_records
from .mcq_file import file_digest

M3_CLAIMS = "factuality_m3_claims.jsonl.gz"
M3_REVIEWS = "factuality_m3_reviews.jsonl.gz"
EVIDENCE_INFERENCE = "factuality_evidence_inference.jsonl.gz"

CONCLUSION = add_template(
    "factuality/conclusion",
    1,
    """Below are findings from the studies included in a systematic review.

{evidence}

Write the conclusion of the systematic review in one or two sentences.""",
    "factuality/m3-conclusions: the review conclusion from the trial evidence sentences, one per line.",
)


def _shuffled(samples: list[Sample], order_seed: int | None) -> list[Sample]:
    """``samples`` in file order, or shuffled with ``order_seed`` so that ``limit`` takes a random subset."""
    if order_seed is None:
        return samples
    random.Random(order_seed).shuffle(samples)
    return samples


def load_m3_claims(side: Literal["target", "source"] = "target") -> list[Sample]:
    """M3 claims as labelling samples; gold labels in ``metadata["gold_direction"|"gold_modality"]``.

    M3's direction ``n/a`` (claims with "no evidence" modality) becomes a None gold direction.
    """
    if side not in ("target", "source"):
        raise ConfigError("side", f"must be 'target' or 'source', not {side!r}")
    samples = []
    keys = ("id", "target_text", "target_direction", "target_modality", "sources")
    for line, record in enumerate(read_records(M3_CLAIMS, keys), start=1):
        items = (
            [(record["id"], record["target_text"], record["target_direction"], record["target_modality"])]
            if side == "target"
            else [
                (f"{record['id']}/{k}", s["text"], s["direction"], s["modality"])
                for k, s in enumerate(record["sources"])
            ]
        )
        for sample_id, text, direction, modality in items:
            gold_modality = normalize_modality(modality)
            if gold_modality is None:
                raise DataError(data_path(M3_CLAIMS), "unknown modality", line=line, field="modality", value=modality)
            samples.append(
                Sample(
                    id=sample_id,
                    input=text,
                    target=f"{direction}|{modality}",
                    metadata={
                        "gold_direction": normalize_direction(direction),
                        "gold_modality": gold_modality,
                        "pico": record.get("pico", {}),
                        "side": side,
                    },
                )
            )
    return samples


def load_evidence_inference() -> list[Sample]:
    """Evidence Inference prompts as labelling samples with the ICO focus in ``metadata["focus"]``."""
    samples = []
    keys = ("id", "pmcid", "abstract", "intervention", "comparator", "outcome", "label")
    for record in read_records(EVIDENCE_INFERENCE, keys):
        samples.append(
            Sample(
                id=str(record["id"]),
                input=record["abstract"],
                target=record["label"],
                metadata={
                    "gold_direction": normalize_direction(record["label"]),
                    "gold_modality": None,
                    "focus": {
                        "intervention": record["intervention"],
                        "comparator": record["comparator"],
                        "outcome": record["outcome"],
                    },
                    "pmcid": record["pmcid"],
                },
            )
        )
    return samples


def load_m3_conclusions() -> list[Sample]:
    """M3 reviews: the trial evidence sentences as documents, the review conclusion as target."""
    from ..tasks import Document

    samples = []
    for record in read_records(M3_REVIEWS, ("id", "conclusion", "evidence")):
        documents = [Document(id=e["pmid"], text=e["text"]) for e in record["evidence"]]
        samples.append(Sample(id=record["id"], input="", target=record["conclusion"], documents=documents))
    return samples


class ClaimLabeller:
    """Workflow asking the model for a statement's direction and modality (the judge's labelling step)."""

    templates = (prompt_templates.get("factuality/claim"), prompt_templates.get("factuality/retry"))
    """The labelling prompt and its follow-up (:func:`~ebmeval.factuality.label_claim`)."""

    def __init__(self, scheme: Scheme) -> None:
        self.name = f"claim-labels/{scheme}"
        self.scheme: Scheme = scheme

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        """Label ``sample.input``; the output is a JSON object with direction and modality."""
        label = await label_claim(
            ctx,
            "label",
            sample.input,
            focus=sample.metadata.get("focus"),
            scheme=self.scheme,
            config=GenerateConfig(),  # the model's: the task's defaults (a thinking model's), the run's over them
            role="model",
            call=ANSWER,
        )
        output = json.dumps({"direction": label.direction, "modality": label.modality})
        return WorkflowResult(output=output, metadata={"reason": label.reason, "raw": list(label.raw)})


def parse_labels(output: str, sample: Sample) -> ParsedAnswer:
    """The ``{"direction", "modality"}`` object written by :class:`ClaimLabeller`; unparsed without a modality."""
    try:
        value = json.loads(output)
    except json.JSONDecodeError:
        return ParsedAnswer.unparsed("json")
    if not isinstance(value, dict) or value.get("modality") is None:
        return ParsedAnswer(value=value if isinstance(value, dict) else None, parsed=False, method="json")
    return ParsedAnswer(value=value, method="json")


class LabelCorrectness:
    """Per-sample correctness of the direction and modality labels (1 right, 0 wrong or unlabelled).

    A metric is None where the sample has no gold label for it.
    """

    name = "factuality/labels"

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        """Compare the labels in ``generation.answer`` with the sample's gold labels."""
        predicted: dict[str, Any] = generation.answer.value if isinstance(generation.answer.value, dict) else {}
        values: dict[str, float | None] = {}
        for name in ("direction", "modality"):
            gold = sample.metadata.get(f"gold_{name}")
            values[name] = None if gold is None else float(predicted.get(name) == gold)
        return Score(values=values, metadata={"predicted": predicted})


@scorer("factuality/labels", version="1", binary=("direction", "modality"))
def label_correctness() -> LabelCorrectness:
    """Correctness of the direction and modality a model gave a statement, against the gold labels.

    Metrics:
        direction: 1 when the predicted effect direction (positive, negative, no effect) equals the gold
            one, 0 when it differs or is missing; None when the sample has no gold direction.
        modality: 1 when the predicted modality (strong, moderate, weak, no evidence, no claim) equals the
            gold one, 0 when it differs or is missing; None when the sample has no gold modality.
    """
    return LabelCorrectness()


def _labelling_task(name: str, samples: list[Sample], scheme: Scheme, args: dict[str, Any]) -> Task:
    return Task(
        name=name,
        dataset=samples,
        workflow=ClaimLabeller(scheme),
        scorers=[label_correctness()],
        parser=parse_labels,
        args=args,
        generate_config=GenerateConfig(temperature=0.0, max_tokens=160),
        metadata={"labels": {"direction": list(DIRECTIONS), "modality": list(MODALITIES)}},
    )


@task("factuality/m3-claims")
def m3_claims(side: Literal["target", "source"] = "target", order_seed: int | None = 0) -> Task:
    """Direction and modality of M3 claims, labelled by the model.

    Args:
        side: ``target`` (the review's claims) or ``source`` (the trial evidence sentences behind them).
        order_seed: shuffles the samples so ``limit`` takes a random subset (None: file order).
    """
    samples = _shuffled(load_m3_claims(side), order_seed)
    return _labelling_task("factuality/m3-claims", samples, "benefit", {"side": side, "order_seed": order_seed})


@task("factuality/evidence-inference")
def evidence_inference(order_seed: int | None = 0) -> Task:
    """Direction of an intervention's effect on an outcome in an RCT abstract (Evidence Inference 2.0).

    Args:
        order_seed: shuffles the samples so ``limit`` takes a random subset (None: file order).
    """
    samples = _shuffled(load_evidence_inference(), order_seed)
    return _labelling_task("factuality/evidence-inference", samples, "change", {"order_seed": order_seed})


class ConclusionWriter:
    """Zero-shot synthesis: the review conclusion from the listed evidence sentences."""

    name = "conclusion-zero-shot"
    templates = (CONCLUSION,)

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        """Write the conclusion of ``sample``'s review."""
        evidence = "\n".join(f"- {d.text}" for d in sample.documents)
        output = await ctx.generate("conclusion", [user(CONCLUSION.render(evidence=evidence))])
        return WorkflowResult(output=output.text.strip(), metadata={"prompt": CONCLUSION.id})


@task("factuality/m3-conclusions")
def m3_conclusions(order_seed: int | None = 0, judge_max_tokens: int = 160) -> Task:
    """Review conclusions written from M3 trial evidence, judged by ``judge/factuality`` (role ``judge``).

    Args:
        order_seed: shuffles the samples so ``limit`` takes a random subset (None: file order).
        judge_max_tokens: most tokens per judge reply.
    """
    samples = _shuffled(load_m3_conclusions(), order_seed)
    return Task(
        name="factuality/m3-conclusions",
        dataset=samples,
        workflow=ConclusionWriter(),
        scorers=[FactualityJudge(max_tokens=judge_max_tokens)],
        version=f"1-{CONCLUSION.id}",
        generate_config=GenerateConfig(temperature=0.0, max_tokens=120),
        roles=("judge",),
    )


class GivenSummary:
    """Workflow of externally generated summaries: the output is ``sample.metadata["generated"]``."""

    name = "given-summary"

    async def __call__(self, sample: Sample, ctx: SampleContext) -> WorkflowResult:
        """The summary read from the file; no model is called."""
        return WorkflowResult(output=str(sample.metadata["generated"]))


def _given_samples(generated: dict[str, str], targets: str | None, source: str | None) -> list[Sample]:
    """A sample per generated summary, its target from the ``targets`` file or the ``source`` task."""
    from ..factuality import pair_summaries, read_targets
    from ..tasks import create_task

    if (targets is None) == (source is None):
        raise ConfigError("targets/source", "give exactly one: a targets file or a source task")
    if targets is not None:
        pairs = pair_summaries(generated, read_targets(targets))
        return [
            Sample(
                id=p.review_id,
                input="",
                target=p.target,
                metadata={"background": p.background, "generated": p.generated},
            )
            for p in pairs
        ]
    known = {sample.id: sample for sample in create_task(str(source)).dataset}
    unknown = [review for review in generated if review not in known]
    if unknown:
        raise DataError("generated", f"{len(unknown)} ids are not samples of {source}", value=unknown[:5])
    return [
        known[review].model_copy(update={"metadata": {**known[review].metadata, "generated": text}})
        for review, text in generated.items()
    ]


class HumanFactuality:
    """The factuality schema as one annotator labelled it, read from a labels file, scored like the judge.

    Values are those of ``judge/factuality`` (the binary and derived categories as 1/0, None where
    unknown); a summary the annotator did not label gets all None.
    """

    name = "human/factuality"

    def __init__(self, labels: str, annotator: str | None) -> None:
        from ..factuality import read_human_labels

        self.labels = labels
        found = read_human_labels(labels)
        self.labels_digest = file_digest(labels)
        """The labels' content digest: the score set's identity holds it, not the path naming them."""
        self.annotator = annotator or (found.annotators[0] if found.annotators else "")
        if self.annotator not in found.binary:
            known = ", ".join(found.annotators)
            raise ConfigError("annotator", f"{self.annotator!r} labelled nothing in {labels} (annotators: {known})")
        self._by_review = found.binary[self.annotator]

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        """The annotator's labels of ``sample``'s summary."""
        from ..factuality import FactualityLabels

        values = self._by_review.get(sample.id, FactualityLabels()).as_dict()
        return Score(values={k: None if v is None else float(v) for k, v in values.items()})


@scorer("human/factuality", version="1", binary=(*BINARY_CATEGORIES, *DERIVED_CATEGORIES), non_identity=("labels",))
def human_factuality(labels: str, annotator: str | None = None) -> HumanFactuality:
    """One annotator's factuality labels of each summary, read from ``labels``, as ``judge/factuality`` reports them.

    ``labels`` is any layout ``ebmeval factuality analyze --human`` reads; ``annotator`` names whose
    labels (default: the file's first annotator). Each metric is 1 (yes), 0 (no) or None where the
    annotator gave no label; a summary the annotator did not label has every metric None. The labels
    are identified by their content, not their path: ``labels.csv``, ``./labels.csv``, its absolute
    path and an identical copy give one score set, edited labels another.

    Metrics:
        population: 1 when the annotator marked the summary's population the same as the target's.
        intervention: 1 when the annotator marked its intervention or exposure the same.
        outcome: 1 when the annotator marked its outcome the same.
        direction: 1 when the annotator marked the effect directions as agreeing; where not marked, 1 when
            the two side labels are equal, None where either side is "no evidence" or "no claim".
        modality: 1 when the annotator marked the claim modalities as agreeing; where not marked, 1 when
            the two side labels are equal.
        grammar: 1 when the annotator marked the summary grammatical.
        lexical: 1 when the annotator marked its words as used correctly.
        non_redundancy: 1 when the annotator marked it free of repetition.
        pico: population ∧ intervention ∧ outcome: 0 when any of them is 0, else None when any is None.
        factually_correct: pico ∧ modality ∧ direction, a None (not applicable) direction not counting.
        fully_correct: factually_correct ∧ grammar ∧ lexical ∧ non_redundancy.
    """
    return HumanFactuality(labels, annotator)


class Copying:
    """ROUGE-1/2/L F of the summary against its target and, where the sample has one, its background."""

    name = "factuality/copying"

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        """``rouge1_target`` … ``rougeL_background`` (None without a background)."""
        from ..factuality import rouge

        background = sample.metadata.get("background")
        (target,) = rouge([generation.output], [" ".join(sample.targets)])
        (against,) = rouge([generation.output], [background]) if background else ({},)
        values: dict[str, float | None] = {f"{k}_target": v for k, v in target.items()}
        values |= {f"{k}_background": against.get(k) for k in target}
        return Score(values=values)


@scorer("factuality/copying", version="1")
def copying() -> Copying:
    """How much of its target and its background a summary copies, by ROUGE F-measure (Porter-stemmed).

    ROUGE-N F = 2PR / (P + R), P the share of the summary's n-grams found in the reference and R the
    share of the reference's n-grams found in the summary (clipped counts); ROUGE-L uses the longest
    common subsequence in place of the n-gram overlap.

    Metrics:
        rouge1_target: ROUGE-1 F (unigrams) of the summary against its target.
        rouge2_target: ROUGE-2 F (bigrams) of the summary against its target.
        rougeL_target: ROUGE-L F (longest common subsequence) of the summary against its target.
        rouge1_background: ROUGE-1 F against the review's background; None when the sample has none.
        rouge2_background: ROUGE-2 F against the background; None when the sample has none.
        rougeL_background: ROUGE-L F against the background; None when the sample has none.
    """
    return Copying()


@task("factuality/summaries")
def given_summaries(
    generated: str,
    targets: str | None = None,
    source: str | None = None,
    labels: str | None = None,
    annotator: str | None = None,
    judge: bool = True,
    judge_max_tokens: int = 160,
) -> Task:
    """Summaries generated elsewhere, graded against their targets by a judge and/or an annotator's labels.

    Args:
        generated: The summaries: an MSLR CSV (``ReviewID,Generated``) or JSONL (``review_id`` and
            ``generated``, or ``id`` and ``output`` as for ``ebmeval score --predictions``).
        targets: A targets file (CSV ``ReviewID,Target[,Background]`` or JSONL).
        source: Instead of ``targets``, a task whose samples (by id) hold the targets.
        labels: Human labels of the summaries (any layout ``ebmeval factuality analyze --human`` reads);
            scored as ``human/factuality``.
        annotator: Whose labels ``human/factuality`` reports (default: the file's first annotator).
        judge: Also grade with ``judge/factuality`` (role ``judge``); ``false`` for labels alone.
        judge_max_tokens: Most tokens per judge reply.
    """
    from ..factuality import read_generated

    if not judge and labels is None:
        raise ConfigError("judge", "with judge=false give labels=FILE: nothing would grade the summaries")
    samples = _given_samples(read_generated(generated), targets, source)
    digests = [file_digest(path, 16, named=False) for path in (generated, targets, labels) if path]
    scorers: list[Any] = [copying()]
    if judge:
        scorers.append(FactualityJudge(max_tokens=judge_max_tokens))
    if labels is not None:
        scorers.append(human_factuality(labels, annotator))
    return Task(
        name="factuality/summaries",
        dataset=samples,
        workflow=GivenSummary(),
        scorers=scorers,
        version="2+" + "+".join(digests),
        roles=("judge",) if judge else (),
    )


def validation_results(store_path: str | Path, run_id: str) -> list[LabelAccuracy]:
    """Accuracy and agreement (Cohen's kappa, Gwet's AC1 …) of a labelling run against the gold labels.

    Reads epoch 0 of a ``factuality/m3-claims`` or ``factuality/evidence-inference`` run; a field is
    reported only when some sample has a gold label for it.
    """
    from ..store import RunStore

    store = RunStore(store_path, read_only=True)
    try:
        rows = [(s, g) for s, g in store.generations(run_id) if g.epoch == 0]
    finally:
        store.close()
    out = []
    for name, labels in (("direction", DIRECTIONS), ("modality", MODALITIES)):
        gold = {s.id: s.metadata.get(f"gold_{name}") for s, _ in rows}
        if all(v is None for v in gold.values()):
            continue
        predicted = {s.id: g.answer.value.get(name) if isinstance(g.answer.value, dict) else None for s, g in rows}
        out.append(label_accuracy(name, gold, predicted, labels))
    return out
