"""Text-similarity metrics (ROUGE, BLEU, METEOR, BERTScore) and the scorers built on them.

Importing this package registers the scorers ``text/rouge-l``, ``text/bleu``,
``text/meteor`` and ``text/bertscore``. The metrics need the ``metrics`` extra; METEOR
also needs WordNet 3.0 from the Debian packages ``wordnet-base`` and
``wordnet-sense-index``.
"""

from ._metrics import (
    BERTSCORE_ENCODER,
    BERTSCORE_LAYER,
    BertScores,
    References,
    bertscore,
    bleu,
    corpus_bleu,
    meteor,
    require_metrics,
    rouge,
    tokenize,
)
from ._scorers import TextSimilarity, bertscore_scorer, bleu_scorer, meteor_scorer, rouge_l
from ._wordnet import DEFAULT_WORDNET_DIR, LEXNAMES, WORDNET_DIR_ENV, lexnames_text, load_wordnet

__all__ = [
    "BERTSCORE_ENCODER",
    "BERTSCORE_LAYER",
    "DEFAULT_WORDNET_DIR",
    "LEXNAMES",
    "WORDNET_DIR_ENV",
    "BertScores",
    "References",
    "TextSimilarity",
    "bertscore",
    "bertscore_scorer",
    "bleu",
    "bleu_scorer",
    "corpus_bleu",
    "lexnames_text",
    "load_wordnet",
    "meteor",
    "meteor_scorer",
    "require_metrics",
    "rouge",
    "rouge_l",
    "tokenize",
]
