"""Registered scorers comparing a generation's text with a reference text of its sample.

By default the prediction is the generation output and the reference the sample
target. ``prediction="metadata:KEY"`` reads ``generation.metadata[KEY]`` instead (e.g.
the rationale a reasoning task extracted) and ``reference="metadata:KEY"`` reads
``sample.metadata[KEY]`` (a list of texts, such as expert reasoning steps, is joined
with single spaces). An empty prediction gives ``None`` (counted, not averaged).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from ..._util.errors import ConfigError, DataError
from ...tasks import Generation, Sample, SampleContext, Score, scorer
from ._bleurt import Bleurt, load_bleurt
from ._metrics import BERTSCORE_ENCODER, BERTSCORE_LAYER, bertscore, bleu, meteor, rouge

METADATA = "metadata:"


def _check_source(field: str, value: str, default: str) -> None:
    if value != default and not (value.startswith(METADATA) and len(value) > len(METADATA)):
        raise ConfigError(field, f"must be '{default}' or 'metadata:<key>', not {value!r}")


def _text(value: object, where: str, key: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return " ".join(v.strip() for v in value)
    raise DataError(where, "expected a text or a list of texts", field=key, value=value)


class TextSimilarity:
    """A text-similarity scorer over one metric function.

    Args:
        name: Scorer name, e.g. ``text/rouge-l``.
        keys: The names of the values ``compute`` returns.
        compute: Maps (prediction, reference) to the named values of the score.
        prediction: ``output`` or ``metadata:<key>`` of the generation.
        reference: ``target`` or ``metadata:<key>`` of the sample.
    """

    def __init__(
        self,
        name: str,
        keys: tuple[str, ...],
        compute: Callable[[str, str], dict[str, float]],
        *,
        prediction: str = "output",
        reference: str = "target",
    ) -> None:
        _check_source("prediction", prediction, "output")
        _check_source("reference", reference, "target")
        self.name = name
        self.keys = keys
        self.compute = compute
        self.prediction = prediction
        self.reference = reference

    def texts(self, sample: Sample, generation: Generation) -> tuple[str, str]:
        """The (prediction, reference) pair to compare."""
        if self.prediction == "output":
            predicted = generation.output
        else:
            key = self.prediction.removeprefix(METADATA)
            predicted = _text(generation.metadata.get(key, ""), f"generation of sample {sample.id}", key)
        if self.reference == "target":
            return predicted, _text(sample.target, f"sample {sample.id}", "target")
        key = self.reference.removeprefix(METADATA)
        if key not in sample.metadata:
            raise DataError(f"sample {sample.id}", "missing reference text", field=f"metadata.{key}")
        return predicted, _text(sample.metadata[key], f"sample {sample.id}", f"metadata.{key}")

    async def __call__(self, sample: Sample, generation: Generation, ctx: SampleContext) -> Score:
        """Compare the prediction with the reference; ``None`` values for an empty prediction."""
        predicted, reference = self.texts(sample, generation)
        if not predicted.strip():
            return Score(values=dict.fromkeys(self.keys, None), explanation="empty prediction")
        # The metrics are CPU-bound (BERTScore runs an encoder); keep the event loop free.
        values = await asyncio.to_thread(self.compute, predicted, reference)
        return Score(values=dict(values), metadata={"prediction": self.prediction, "reference": self.reference})


@scorer("text/rouge-l")
def rouge_l(prediction: str = "output", reference: str = "target") -> TextSimilarity:
    """ROUGE-L F-measure (:func:`rouge`) of the prediction against the reference, value ``rougeL``.

    Metrics:
        rougeL: ROUGE-L F-measure 2PR / (P + R), P = LCS / |prediction tokens|, R = LCS / |reference
            tokens|, LCS the longest common token subsequence (rouge-score tokenizer, Porter stemming);
            None for an empty prediction.
    """
    return TextSimilarity(
        "text/rouge-l",
        ("rougeL",),
        lambda p, r: {"rougeL": rouge([p], [r], ("rougeL",))[0]["rougeL"]},
        prediction=prediction,
        reference=reference,
    )


@scorer("text/bleu")
def bleu_scorer(prediction: str = "output", reference: str = "target") -> TextSimilarity:
    """Sentence BLEU on a 0–1 scale (:func:`bleu`), value ``bleu``.

    Metrics:
        bleu: sentence BLEU / 100 = BP · exp(Σ_{n=1..4} ¼ log p_n), p_n the clipped n-gram precision,
            BP = min(1, exp(1 − r/c)) for prediction length c and reference length r (sacrebleu, 13a
            tokenizer, exp smoothing, effective order); None for an empty prediction.
    """
    return TextSimilarity(
        "text/bleu", ("bleu",), lambda p, r: {"bleu": bleu([p], [r])[0]}, prediction=prediction, reference=reference
    )


@scorer("text/meteor", non_identity=["wordnet_dir"])
def meteor_scorer(
    prediction: str = "output", reference: str = "target", wordnet_dir: str | None = None
) -> TextSimilarity:
    """METEOR (:func:`meteor`), value ``meteor``.

    Metrics:
        meteor: NLTK METEOR = F_mean · (1 − Pen), F_mean = PR / (0.9·P + 0.1·R) over unigrams aligned by
            exact form, Porter stem, then WordNet synonym, Pen = 0.5 · (chunks / matches)³; None for an
            empty prediction.
    """
    return TextSimilarity(
        "text/meteor",
        ("meteor",),
        lambda p, r: {"meteor": meteor([p], [r], wordnet_dir=wordnet_dir)[0]},
        prediction=prediction,
        reference=reference,
    )


@scorer("text/bertscore")
def bertscore_scorer(
    prediction: str = "output",
    reference: str = "target",
    model_path: str | None = None,
    num_layers: int = BERTSCORE_LAYER,
) -> TextSimilarity:
    """BERTScore (:func:`bertscore`), values ``precision@E``, ``recall@E``, ``f1@E`` for encoder label E.

    E names the encoder and layer (``all-MiniLM-L6-v2-L5`` by default), so the values are
    never mistaken for the published roberta-large BERTScore.

    Metrics:
        precision@*: BERTScore precision P = mean over prediction tokens of the best cosine similarity to a
            reference token, with the token embeddings of hidden layer N of the encoder named in the key
            (precision@ENCODER-LN; default all-MiniLM-L6-v2, layer 5), no IDF weights, no baseline
            rescaling; None for an empty prediction.
        recall@*: BERTScore recall R = mean over reference tokens of the best cosine similarity to a
            prediction token, same embeddings as precision.
        f1@*: BERTScore F1 = 2PR / (P + R) of that precision and recall; with the default all-MiniLM-L6-v2
            layer 5 it is not comparable with the published roberta-large BERTScore.
    """
    encoder = f"{BERTSCORE_ENCODER if model_path is None else Path(model_path).name}-L{num_layers}"
    keys = (f"precision@{encoder}", f"recall@{encoder}", f"f1@{encoder}")

    def compute(p: str, r: str) -> dict[str, float]:
        result = bertscore([p], [r], model_path=model_path, num_layers=num_layers)
        return dict(zip(keys, (result.precision[0], result.recall[0], result.f1[0]), strict=True))

    return TextSimilarity("text/bertscore", keys, compute, prediction=prediction, reference=reference)


class BleurtSimilarity(TextSimilarity):
    """BLEURT of the prediction against the reference, from one checkpoint (:class:`Bleurt`).

    ``identity`` is the checkpoint's content identity (a hash of its config, weights and
    tokenizer) and is what the score set's spec records; ``checkpoint`` is the directory, a
    ``Path`` and so not a setting of the spec, kept so that the scorer can be rebuilt with other
    options. The same checkpoint under another path gives the same score set.
    """

    def __init__(self, model: Bleurt, *, prediction: str = "output", reference: str = "target") -> None:
        super().__init__(
            "text/bleurt",
            ("bleurt",),
            lambda p, r: {"bleurt": model.score([r], [p])[0]},
            prediction=prediction,
            reference=reference,
        )
        self.checkpoint = model.checkpoint.path
        self.identity = model.checkpoint.identity


@scorer("text/bleurt", non_identity=("checkpoint",))
def bleurt_scorer(checkpoint: str | Path, prediction: str = "output", reference: str = "target") -> BleurtSimilarity:
    """BLEURT (:class:`Bleurt`) from the checkpoint directory ``checkpoint``, value ``bleurt``.

    Refused (``ConfigError`` on ``checkpoint``, or ``MissingDependencyError``) when the directory is not a
    BLEURT checkpoint or the ``bleurt`` extra is missing; no other metric is ever computed in its place.

    Metrics:
        bleurt: the checkpoint's regression output for the pair [CLS] reference [SEP] prediction [SEP],
            not rescaled (higher is closer); None for an empty prediction.
    """
    return BleurtSimilarity(load_bleurt(str(checkpoint)), prediction=prediction, reference=reference)
