"""BLEURT (Sellam et al. 2020) from a local checkpoint in the PyTorch layout of the converted checkpoints.

A checkpoint directory holds ``config.json`` (``model_type`` ``"bleurt"``), the weights
(``model.safetensors`` or ``pytorch_model.bin``) and a tokenizer: ``spm.model`` (SentencePiece,
the BLEURT-20 family) or ``tokenizer.json`` (WordPiece, the older BLEURT checkpoints). The
network is a BERT encoder (an optional projection from a smaller embedding size, post-layer-norm
blocks), a tanh pooler on the first token and a one-output linear head; the score is that output.

The input is encoded as the original BLEURT encodes it: ``[CLS] reference [SEP] candidate [SEP]``
with segment 0 up to the first ``[SEP]`` and 1 after; a pair longer than the checkpoint's
``max_position_embeddings`` is cut by dropping tokens from the end of the longer text (the
candidate's on a tie). A checkpoint is identified by a hash of its config, weights and
tokenizer files, never by its path. Needs the ``bleurt`` extra (torch, tokenizers, safetensors,
sentencepiece).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from ..._util.errors import ConfigError, MissingDependencyError, UsageError
from ..._util.hashing import stable_hash
from ...models import file_sha256

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
"""Where a checkpoint's weights may be, in order of preference."""
TOKENIZER_FILES = ("spm.model", "tokenizer.json")
"""A checkpoint's tokenizer: SentencePiece model first, else a WordPiece ``tokenizer.json``."""
_PREFIX = "bleurt."


@dataclass(frozen=True)
class BleurtCheckpoint:
    """The files of a BLEURT checkpoint directory and its content identity.

    Attributes:
        path: The directory.
        config: Its ``config.json``.
        weights: The weights file.
        tokenizer: The tokenizer file (``spm.model`` or ``tokenizer.json``).
        identity: ``sha256:`` and 16 hex digits of the hashes of config, weights and tokenizer.
    """

    path: Path
    config: dict[str, Any]
    weights: Path
    tokenizer: Path
    identity: str


def open_bleurt_checkpoint(path: str | Path, field: str = "checkpoint") -> BleurtCheckpoint:
    """Check that ``path`` is a BLEURT checkpoint ebmeval can score with; ``ConfigError`` on ``field`` if not."""
    root = Path(path)
    if not root.is_dir():
        raise ConfigError(field, f"no BLEURT checkpoint at {root}")
    config = _read_config(root, field)
    weights = next((root / name for name in WEIGHT_FILES if (root / name).is_file()), None)
    if weights is None:
        raise ConfigError(field, f"{root} is not a BLEURT checkpoint: no {' or '.join(WEIGHT_FILES)}")
    tokenizer = next((root / name for name in TOKENIZER_FILES if (root / name).is_file()), None)
    if tokenizer is None:
        raise ConfigError(field, f"{root} is not a BLEURT checkpoint: no tokenizer ({' or '.join(TOKENIZER_FILES)})")
    hashes = {role: file_sha256(file) for role, file in (("config", root / "config.json"), ("weights", weights))}
    identity = stable_hash({**hashes, "tokenizer": file_sha256(tokenizer)}, length=16)
    return BleurtCheckpoint(root, config, weights, tokenizer, f"sha256:{identity}")


def _read_config(root: Path, field: str) -> dict[str, Any]:
    try:
        config = json.loads((root / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ConfigError(field, f"{root} is not a BLEURT checkpoint: cannot read config.json ({error})") from None
    if not isinstance(config, dict) or config.get("model_type") != "bleurt":
        kind = config.get("model_type") if isinstance(config, dict) else None
        raise ConfigError(field, f"{root}/config.json: model_type is {kind!r}, not 'bleurt'")
    for key in ("hidden_act", "num_attention_heads", "num_hidden_layers", "max_position_embeddings"):
        if key not in config:
            raise ConfigError(field, f"{root}/config.json: missing '{key}'")
    if config["hidden_act"] not in _ACTIVATIONS:
        raise ConfigError(field, f"{root}/config.json: hidden_act {config['hidden_act']!r} is not supported")
    return config


def require_bleurt(checkpoint: BleurtCheckpoint) -> None:
    """Raise ``MissingDependencyError`` unless the packages scoring ``checkpoint`` are installed."""
    needed = ["torch", "tokenizers" if checkpoint.tokenizer.name == "tokenizer.json" else "sentencepiece"]
    if checkpoint.weights.suffix == ".safetensors":
        needed.append("safetensors")
    for module in needed:
        if find_spec(module) is None:
            raise MissingDependencyError("BLEURT", module, "bleurt")  # each module is its package's name


class Bleurt:
    """A loaded BLEURT checkpoint: ``score`` gives one value per (reference, candidate) pair.

    Args:
        path: The checkpoint directory (see the module docstring).
        field: The option naming it, for error messages.
    """

    def __init__(self, path: str | Path, field: str = "checkpoint") -> None:
        self.checkpoint = open_bleurt_checkpoint(path, field)
        require_bleurt(self.checkpoint)
        self._weights = _load_weights(self.checkpoint, field)
        self._tokenizer = _tokenizer(self.checkpoint, field)
        self.max_length = int(self.checkpoint.config["max_position_embeddings"])
        rows = {k: int(self._weights[f"embeddings.{k}_embeddings.weight"].shape[0]) for k in ("word", "position")}
        if rows["word"] < self._tokenizer.size or rows["position"] < self.max_length:
            raise ConfigError(
                field,
                f"{self.checkpoint.path}: {rows['word']} word and {rows['position']} position embeddings for "
                f"{self._tokenizer.size} tokens and {self.max_length} positions",
            )

    def encode(self, reference: str, candidate: str) -> tuple[list[int], list[int]]:
        """Token ids of ``[CLS] reference [SEP] candidate [SEP]`` and their segment ids, truncated as BLEURT does."""
        tokenizer = self._tokenizer
        ref, cand = list(tokenizer.ids(reference)), list(tokenizer.ids(candidate))
        while len(ref) + len(cand) > self.max_length - 3:
            (ref if len(ref) > len(cand) else cand).pop()
        ids = [tokenizer.cls, *ref, tokenizer.sep, *cand, tokenizer.sep]
        return ids, [0] * (len(ref) + 2) + [1] * (len(cand) + 1)

    def score(self, references: Sequence[str], candidates: Sequence[str], batch_size: int = 16) -> list[float]:
        """BLEURT of each candidate against its reference (the regression head's output, no rescaling)."""
        if len(references) != len(candidates):
            raise UsageError(f"got {len(references)} references but {len(candidates)} candidates")
        pairs = [self.encode(r, c) for r, c in zip(references, candidates, strict=True)]
        scores: list[float] = []
        for start in range(0, len(pairs), batch_size):
            scores += _forward(self._weights, self.checkpoint.config, pairs[start : start + batch_size])
        return scores


@cache
def load_bleurt(path: str, field: str = "checkpoint") -> Bleurt:
    """The checkpoint at ``path``, loaded once per process (see :class:`Bleurt`)."""
    return Bleurt(path, field)


def _load_weights(checkpoint: BleurtCheckpoint, field: str) -> dict[str, Any]:
    import torch

    if checkpoint.weights.suffix == ".safetensors":
        from safetensors.torch import load_file

        loaded = load_file(str(checkpoint.weights))
    else:
        loaded = torch.load(checkpoint.weights, map_location="cpu", weights_only=True)
    weights = {k.removeprefix(_PREFIX): v.float() for k, v in loaded.items() if k.startswith((_PREFIX, "classifier."))}
    missing = sorted(set(_weight_names(checkpoint.config)) - set(weights))
    if missing:
        shown = ", ".join(missing[:3]) + (" …" if len(missing) > 3 else "")
        raise ConfigError(field, f"{checkpoint.weights}: not BLEURT weights, missing {len(missing)} tensors ({shown})")
    if tuple(weights["classifier.weight"].shape)[0] != 1:
        raise ConfigError(field, f"{checkpoint.weights}: the head has {weights['classifier.weight'].shape[0]} outputs")
    return weights


def _weight_names(config: dict[str, Any]) -> list[str]:
    """The tensors the network reads, without the ``bleurt.`` prefix of the encoder's."""
    linear = ("weight", "bias")
    names = [f"embeddings.{e}_embeddings.weight" for e in ("word", "position", "token_type")]
    names += [f"embeddings.LayerNorm.{p}" for p in linear]
    if config.get("embedding_size") is not None:
        names += [f"encoder.embedding_projection.{p}" for p in linear]
    parts = ["attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"]
    parts += ["attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm"]
    for i in range(int(config["num_hidden_layers"])):
        names += [f"encoder.layer.{i}.{part}.{p}" for part in parts for p in linear]
    return names + [f"{part}.{p}" for part in ("pooler.dense", "classifier") for p in linear]


@dataclass(frozen=True)
class _Tokenizer:
    """A checkpoint's tokenizer: ``ids`` of a text without special tokens, the ``[CLS]`` and ``[SEP]`` ids."""

    ids: Callable[[str], list[int]]
    cls: int
    sep: int
    size: int


def _tokenizer(checkpoint: BleurtCheckpoint, field: str) -> _Tokenizer:
    """Raw SentencePiece ids from ``spm.model`` as the original BLEURT-20 uses, or WordPiece from ``tokenizer.json``."""
    if checkpoint.tokenizer.name == "spm.model":
        import sentencepiece

        sp = sentencepiece.SentencePieceProcessor(model_file=str(checkpoint.tokenizer))
        special: list[int | None] = [sp.piece_to_id(t) for t in ("[CLS]", "[SEP]")]
        ids: Callable[[str], list[int]] = sp.encode
        unknown, size = sp.unk_id(), sp.get_piece_size()
    else:
        from tokenizers import Tokenizer

        wordpiece = Tokenizer.from_file(str(checkpoint.tokenizer))
        special = [wordpiece.token_to_id(t) for t in ("[CLS]", "[SEP]")]
        ids = lambda text: wordpiece.encode(text, add_special_tokens=False).ids  # noqa: E731
        unknown, size = None, wordpiece.get_vocab_size()
    cls, sep = special
    if cls is None or sep is None or unknown in (cls, sep):
        raise ConfigError(field, f"{checkpoint.tokenizer}: the vocabulary has no [CLS] or [SEP] token")
    return _Tokenizer(ids, cls, sep, size)


def _gelu_tanh(x: Any) -> Any:
    import torch.nn.functional as F

    return F.gelu(x, approximate="tanh")


def _gelu(x: Any) -> Any:
    import torch.nn.functional as F

    return F.gelu(x)


def _relu(x: Any) -> Any:
    import torch.nn.functional as F

    return F.relu(x)


_ACTIVATIONS: dict[str, Callable[[Any], Any]] = {
    "gelu": _gelu,
    "gelu_new": _gelu_tanh,
    "gelu_pytorch_tanh": _gelu_tanh,
    "relu": _relu,
}
"""The ``hidden_act`` values the feed-forward blocks support, as transformers defines them."""


def _forward(w: dict[str, Any], config: dict[str, Any], pairs: Sequence[tuple[list[int], list[int]]]) -> list[float]:
    """The regression head's output for each encoded pair (padded to the longest of the batch)."""
    import torch
    import torch.nn.functional as F

    eps = float(config.get("layer_norm_eps", 1e-12))
    length = max(len(ids) for ids, _ in pairs)
    pad = int(config.get("pad_token_id") or 0)
    ids = torch.tensor([i + [pad] * (length - len(i)) for i, _ in pairs])
    segments = torch.tensor([s + [0] * (length - len(s)) for _, s in pairs])
    mask = torch.tensor([[1.0] * len(i) + [0.0] * (length - len(i)) for i, _ in pairs])

    def norm(x: torch.Tensor, name: str) -> torch.Tensor:
        return F.layer_norm(x, x.shape[-1:], w[f"{name}.weight"], w[f"{name}.bias"], eps)

    def dense(x: torch.Tensor, name: str) -> torch.Tensor:
        return F.linear(x, w[f"{name}.weight"], w[f"{name}.bias"])

    with torch.inference_mode():
        emb = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.token_type_embeddings.weight"][segments]
        x = norm(emb + w["embeddings.position_embeddings.weight"][:length], "embeddings.LayerNorm")
        if config.get("embedding_size") is not None:
            x = dense(x, "encoder.embedding_projection")
        bias = (1.0 - mask[:, None, None, :]) * torch.finfo(x.dtype).min
        for i in range(int(config["num_hidden_layers"])):
            x = _block(x, bias, f"encoder.layer.{i}", int(config["num_attention_heads"]), norm, dense, config)
        pooled = torch.tanh(dense(x[:, 0], "pooler.dense"))
        return [float(v) for v in dense(pooled, "classifier")[:, 0].tolist()]


def _block(x: Any, bias: Any, name: str, heads: int, norm: Any, dense: Any, config: dict[str, Any]) -> Any:
    """One post-layer-norm transformer block: self-attention, then the feed-forward layer."""
    import torch

    batch, length, width = x.shape
    size = width // heads

    def split(t: torch.Tensor) -> torch.Tensor:
        return t.view(batch, length, heads, size).transpose(1, 2)

    q, k, v = (split(dense(x, f"{name}.attention.self.{p}")) for p in ("query", "key", "value"))
    weights = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(size) + bias, dim=-1)
    context = (weights @ v).transpose(1, 2).reshape(batch, length, width)
    x = norm(dense(context, f"{name}.attention.output.dense") + x, f"{name}.attention.output.LayerNorm")
    hidden = _ACTIVATIONS[config["hidden_act"]](dense(x, f"{name}.intermediate.dense"))
    return norm(dense(hidden, f"{name}.output.dense") + x, f"{name}.output.LayerNorm")
