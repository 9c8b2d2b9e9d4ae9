"""Tiny random BLEURT checkpoints, written in the layout of the converted PyTorch checkpoints.

The names and shapes are those ``bleurt_pytorch.BleurtForSequenceClassification`` saves (an
encoder under ``bleurt.``, an embedding projection when ``embedding_size`` is set, a pooler and a
one-output ``classifier``); ``config.json`` says ``model_type: bleurt``. The tokenizer is a WordPiece
``tokenizer.json`` over :data:`WORDS` (lower-cased, BERT pre-tokenization).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

WORDS = "the patient has a fever and cough aspirin inhibits platelet aggregation bird window sentence random".split()
"""The words of the WordPiece vocabulary (besides the special tokens, ``##s`` and ``.``)."""

CONFIG = {
    "model_type": "bleurt",
    "architectures": ["BleurtForSequenceClassification"],
    "embedding_size": 16,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 37,
    "hidden_act": "gelu",
    "max_position_embeddings": 64,
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
    "pad_token_id": 0,
    "num_labels": 1,
    "initializer_range": 0.5,
}
"""A small BLEURT config; ``vocab_size`` is set from the tokenizer."""


def wordpiece_tokenizer(path: Path) -> int:
    """Write a lower-casing WordPiece ``tokenizer.json`` at ``path``; return its vocabulary size."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece

    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "##s", ".", *WORDS])}
    tokenizer = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tokenizer.save(str(path))
    return len(vocab)


def random_weights(config: dict[str, Any], seed: int = 0) -> dict[str, Any]:
    """Random tensors under every name the converted checkpoints save, scaled by ``initializer_range``."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    width, inner, embed = config["hidden_size"], config["intermediate_size"], config.get("embedding_size")
    embed = embed or width
    shapes: dict[str, tuple[int, ...]] = {
        "bleurt.embeddings.word_embeddings.weight": (config["vocab_size"], embed),
        "bleurt.embeddings.position_embeddings.weight": (config["max_position_embeddings"], embed),
        "bleurt.embeddings.token_type_embeddings.weight": (config["type_vocab_size"], embed),
        **_linear("bleurt.embeddings.LayerNorm", embed),
        **(_linear("bleurt.encoder.embedding_projection", width, embed) if config.get("embedding_size") else {}),
        **_linear("bleurt.pooler.dense", width, width),
        **_linear("classifier", 1, width),
    }
    for i in range(config["num_hidden_layers"]):
        layer = f"bleurt.encoder.layer.{i}"
        for part in ("query", "key", "value"):
            shapes |= _linear(f"{layer}.attention.self.{part}", width, width)
        shapes |= _linear(f"{layer}.attention.output.dense", width, width)
        shapes |= _linear(f"{layer}.attention.output.LayerNorm", width)
        shapes |= _linear(f"{layer}.intermediate.dense", inner, width)
        shapes |= _linear(f"{layer}.output.dense", width, inner)
        shapes |= _linear(f"{layer}.output.LayerNorm", width)
    scale = config["initializer_range"]
    weights = {name: torch.randn(shape, generator=generator) * scale for name, shape in shapes.items()}
    # The reference registers the positions as a persistent buffer, so its checkpoints carry them.
    return weights | {"bleurt.embeddings.position_ids": torch.arange(config["max_position_embeddings"])[None]}


def _linear(name: str, out: int, inp: int | None = None) -> dict[str, tuple[int, ...]]:
    """A linear layer's (``inp`` given) or a layer norm's weight and bias shapes."""
    return {f"{name}.weight": (out, inp) if inp is not None else (out,), f"{name}.bias": (out,)}


def write_checkpoint(root: Path, *, seed: int = 0, **overrides: Any) -> Path:
    """A random BLEURT checkpoint directory at ``root``: config, ``model.safetensors``, ``tokenizer.json``."""
    from safetensors.torch import save_file

    root.mkdir(parents=True, exist_ok=True)
    config = {**CONFIG, "vocab_size": wordpiece_tokenizer(root / "tokenizer.json"), **overrides}
    (root / "config.json").write_text(json.dumps(config, indent=2))
    save_file(random_weights(config, seed), str(root / "model.safetensors"))
    return root
