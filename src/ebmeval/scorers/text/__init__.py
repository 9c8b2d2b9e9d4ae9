"""Text-similarity metrics (ROUGE, BLEU, METEOR, BERTScore, BLEURT) and the scorers built on them.

Importing this package registers the scorers ``text/rouge-l``, ``text/bleu``,
``text/meteor``, ``text/bertscore`` and ``text/bleurt``. The first four need the ``metrics``
extra; METEOR also needs WordNet 3.0 from the Debian packages ``wordnet-base`` and
``wordnet-sense-index``. BLEURT needs a checkpoint directory the user gives and the ``bleurt``
extra.
"""

from ._bleurt import Bleurt, BleurtCheckpoint, load_bleurt, open_bleurt_checkpoint
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
from ._scorers import (
    BleurtSimilarity,
    TextSimilarity,
    bertscore_scorer,
    bleu_scorer,
    bleurt_scorer,
    meteor_scorer,
    rouge_l,
)
from ._wordnet import DEFAULT_WORDNET_DIR, LEXNAMES, WORDNET_DIR_ENV, lexnames_text, load_wordnet

__all__ = [
    "BERTSCORE_ENCODER",
    "BERTSCORE_LAYER",
    "DEFAULT_WORDNET_DIR",
    "LEXNAMES",
    "WORDNET_DIR_ENV",
    "BertScores",
    "Bleurt",
    "BleurtSimilarity",
    "BleurtCheckpoint",
    "References",
    "TextSimilarity",
    "bertscore",
    "bertscore_scorer",
    "bleu",
    "bleu_scorer",
    "bleurt_scorer",
    "corpus_bleu",
    "lexnames_text",
    "load_bleurt",
    "load_wordnet",
    "meteor",
    "meteor_scorer",
    "open_bleurt_checkpoint",
    "require_metrics",
    "rouge",
    "rouge_l",
    "tokenize",
]
