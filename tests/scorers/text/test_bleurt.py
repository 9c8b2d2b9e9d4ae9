"""BLEURT from a local checkpoint: equal to the reference PyTorch port, content identity, refusals.

The reference is ``bleurt-pytorch`` 0.0.1 (the port the converted checkpoints were made with),
taken from ``$EBMEVAL_BLEURT_REFERENCE`` or ``.venv/bleurt-reference`` (``scripts/test.sh``
puts it there with ``pip install --no-deps --target``; it is never installed in the
environment). It was written for transformers 4 and imports only once three helpers removed
from transformers 5 are put back, here and nowhere else, with their transformers-4 definitions.
"""

from __future__ import annotations

import os
import shutil
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ebmeval._util.errors import ConfigError, MissingDependencyError
from ebmeval.scorers.text import Bleurt, BleurtSimilarity, bleurt_scorer, open_bleurt_checkpoint
from ebmeval.scorers.text import _bleurt as bleurt_module
from ebmeval.tasks import Generation, ParsedAnswer, Sample, create_task, scorer_spec, with_scorer_args
from tests.helpers.bleurt import WORDS, write_checkpoint

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")

ROOT = Path(__file__).resolve().parents[3]
REFERENCE = Path(os.environ.get("EBMEVAL_BLEURT_REFERENCE", ROOT / ".venv" / "bleurt-reference"))

REFERENCES = ["The patient has a fever and cough.", "aspirin inhibits platelet aggregation", "a random sentence"]
CANDIDATES = ["the patient has a cough", "Aspirin inhibits platelets.", "the bird window has a random fever and cough"]


@pytest.fixture(scope="module")
def reference() -> Iterator[types.ModuleType]:
    """``bleurt_pytorch``, importable under transformers 5 with the removed helpers restored."""
    if not (REFERENCE / "bleurt_pytorch").is_dir():
        pytest.skip(f"the reference bleurt-pytorch is not at {REFERENCE} (scripts/test.sh puts it there)")
    import transformers.pytorch_utils
    from transformers.models.bert import tokenization_bert

    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(REFERENCE))
        # Imported by name, used only to prune heads (never here).
        patch.setattr(transformers.pytorch_utils, "find_pruneable_heads_and_indices", None, raising=False)
        fast = types.ModuleType("transformers.models.bert.tokenization_bert_fast")
        fast.BertTokenizerFast = tokenization_bert.BertTokenizer  # type: ignore[attr-defined]
        patch.setitem(sys.modules, fast.__name__, fast)
        import bleurt_pytorch
        from bleurt_pytorch.bleurt import modeling_bleurt

        # transformers 4's PreTrainedModel methods: an additive mask of dtype-min on padding, no head mask.
        def extended_mask(self: Any, mask: Any, shape: Any) -> Any:
            return (1.0 - mask[:, None, None, :].to(self.dtype)) * torch.finfo(self.dtype).min

        base = modeling_bleurt.BleurtPreTrainedModel
        patch.setattr(base, "get_extended_attention_mask", extended_mask, raising=False)
        patch.setattr(base, "get_head_mask", lambda self, mask, layers: [None] * layers, raising=False)
        yield bleurt_pytorch


def sentencepiece_checkpoint(root: Path) -> Path:
    """A checkpoint whose tokenizer is a SentencePiece ``spm.model`` trained on the test texts."""
    spm = pytest.importorskip("sentencepiece")
    root.mkdir(parents=True)
    texts = [*REFERENCES, *CANDIDATES, " ".join(WORDS)] * 10
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_prefix=str(root / "spm"),
        vocab_size=40,
        user_defined_symbols=["[CLS]", "[SEP]", "[MASK]"],
        pad_id=0,
        unk_id=1,
        bos_id=-1,
        eos_id=-1,
        pad_piece="[PAD]",
        unk_piece="[UNK]",
        minloglevel=2,
    )
    write_checkpoint(root, vocab_size=40, max_position_embeddings=128)
    (root / "tokenizer.json").unlink()
    (root / "spm.vocab").unlink()
    return root


def reference_scores(reference: types.ModuleType, root: Path, tokenizer: Any) -> tuple[Any, list[float]]:
    model, info = reference.BleurtForSequenceClassification.from_pretrained(str(root), output_loading_info=True)
    assert not info["missing_keys"]  # every tensor of the reference model is in the checkpoint
    inputs = tokenizer(REFERENCES, CANDIDATES, padding="longest", return_tensors="pt")
    with torch.no_grad():
        return inputs, model.eval()(**inputs).logits.flatten().tolist()


@pytest.mark.parametrize("kind", ["wordpiece", "sentencepiece"])
def test_scores_equal_the_reference_implementation(reference: types.ModuleType, tmp_path: Path, kind: str) -> None:
    from bleurt_pytorch.bleurt.tokenization_bleurt_fast import BleurtTokenizerFast
    from bleurt_pytorch.bleurt.tokenization_bleurt_sp import BleurtSPTokenizer

    if kind == "wordpiece":
        root, tokenizer_class = write_checkpoint(tmp_path / "ckpt"), BleurtTokenizerFast
    else:
        root, tokenizer_class = sentencepiece_checkpoint(tmp_path / "ckpt"), BleurtSPTokenizer
    inputs, expected = reference_scores(reference, root, tokenizer_class.from_pretrained(str(root)))
    ours = Bleurt(root)
    encoded = [ours.encode(r, c) for r, c in zip(REFERENCES, CANDIDATES, strict=True)]
    mask = inputs["attention_mask"].bool()
    assert [ids for ids, _ in encoded] == [row[m].tolist() for row, m in zip(inputs["input_ids"], mask, strict=True)]
    assert [s for _, s in encoded] == [row[m].tolist() for row, m in zip(inputs["token_type_ids"], mask, strict=True)]
    scores = ours.score(REFERENCES, CANDIDATES, batch_size=2)  # batches padded unlike the reference's
    assert torch.allclose(torch.tensor(scores), torch.tensor(expected), atol=1e-5, rtol=1e-5)
    assert max(expected) - min(expected) > 0.1  # the inputs are told apart, so equality means something


def test_a_checkpoint_saved_by_the_reference_scores_the_same(reference: types.ModuleType, tmp_path: Path) -> None:
    """Weights saved by the reference's own classes (pytorch_model.bin) load by name into ours."""
    root = write_checkpoint(tmp_path / "ours")
    model = reference.BleurtForSequenceClassification.from_pretrained(str(root)).eval()
    saved = tmp_path / "saved"
    shutil.copytree(root, saved)
    (saved / "model.safetensors").unlink()
    torch.save(model.state_dict(), saved / "pytorch_model.bin")
    assert Bleurt(saved).score(REFERENCES, CANDIDATES) == pytest.approx(Bleurt(root).score(REFERENCES, CANDIDATES))


def test_long_pairs_are_cut_from_the_longer_text_as_bleurt_does(tmp_path: Path) -> None:
    ours = Bleurt(write_checkpoint(tmp_path / "ckpt", max_position_embeddings=12))  # 9 places for the two texts
    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "##s", ".", *WORDS])}

    def ids(text: str) -> list[int]:
        return [vocab[w] for w in text.split()]

    # 7 + 4 tokens: the longer reference loses its last two
    ids_, segments = ours.encode("the patient has a fever and cough", "aspirin inhibits platelet aggregation")
    assert ids_ == [2, *ids("the patient has a fever"), 3, *ids("aspirin inhibits platelet aggregation"), 3]
    assert segments == [0] * 7 + [1] * 5
    # 5 + 5 tokens: on the tie the candidate loses its last one
    tie, _ = ours.encode("the patient has a fever", "aspirin inhibits platelet aggregation bird")
    assert tie == [2, *ids("the patient has a fever"), 3, *ids("aspirin inhibits platelet aggregation"), 3]
    assert len(ours.score(["the patient " * 40], ["fever " * 40])) == 1  # 160 tokens score within 12 positions


def test_identity_is_the_content_not_the_path(tmp_path: Path) -> None:
    first = write_checkpoint(tmp_path / "a")
    copy = tmp_path / "elsewhere" / "b"
    shutil.copytree(first, copy)
    other = write_checkpoint(tmp_path / "c", seed=1)
    identity = open_bleurt_checkpoint(first).identity
    assert identity == open_bleurt_checkpoint(copy).identity != open_bleurt_checkpoint(other).identity
    assert identity.startswith("sha256:")
    spec = scorer_spec(bleurt_scorer(str(first)), {})
    assert spec == scorer_spec(bleurt_scorer(f"{copy}/"), {})
    assert spec != scorer_spec(bleurt_scorer(str(other)), {})
    assert spec["name"] == "text/bleurt" and spec["args"]["identity"] == identity and "checkpoint" not in spec["args"]


def test_scorer_options_rebuild_it_on_the_same_checkpoint(tmp_path: Path) -> None:
    root = write_checkpoint(tmp_path / "ckpt")
    task = create_task("medthink/reasoning", judges=False, text_metrics=False, bleurt=str(root))
    rebuilt = with_scorer_args(task, {"text/bleurt": {"reference": "target"}}).scorers[-1]
    assert isinstance(rebuilt, BleurtSimilarity) and rebuilt.reference == "target"
    assert rebuilt.identity == open_bleurt_checkpoint(root).identity and rebuilt.checkpoint == root


async def test_scorer_compares_the_prediction_with_the_reference(tmp_path: Path) -> None:
    root = write_checkpoint(tmp_path / "ckpt")
    sample = Sample(id="1", input="q", target="The patient has a fever.")
    generation = Generation(sample_id="1", output="the patient has a cough", answer=ParsedAnswer(value=None))
    score = await bleurt_scorer(str(root))(sample, generation, None)  # type: ignore[arg-type]
    assert score.values == {"bleurt": pytest.approx(Bleurt(root).score([sample.target], [generation.output])[0])}


def test_what_is_not_a_bleurt_checkpoint_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no BLEURT checkpoint at"):
        Bleurt(tmp_path / "nowhere", "bleurt")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match="field 'bleurt': .* cannot read config.json"):
        Bleurt(empty, "bleurt")
    bert = write_checkpoint(tmp_path / "bert", model_type="bert")
    with pytest.raises(ConfigError, match="model_type is 'bert', not 'bleurt'"):
        Bleurt(bert)
    no_weights = write_checkpoint(tmp_path / "noweights")
    (no_weights / "model.safetensors").unlink()
    with pytest.raises(ConfigError, match="no model.safetensors or pytorch_model.bin"):
        Bleurt(no_weights)
    fewer = write_checkpoint(tmp_path / "fewer", num_hidden_layers=3)  # the config asks for a layer more...
    shutil.copy(write_checkpoint(tmp_path / "two") / "model.safetensors", fewer)  # ...than the weights have
    with pytest.raises(ConfigError, match=r"not BLEURT weights, missing 16 tensors \(encoder.layer.2"):
        Bleurt(fewer)
    small = write_checkpoint(tmp_path / "small", vocab_size=5)  # the tokenizer has 22 tokens
    with pytest.raises(ConfigError, match="5 word and 64 position embeddings for 22 tokens and 64 positions"):
        Bleurt(small)


def test_a_missing_package_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_checkpoint(tmp_path / "ckpt")
    real = bleurt_module.find_spec
    monkeypatch.setattr(bleurt_module, "find_spec", lambda name: None if name == "tokenizers" else real(name))
    with pytest.raises(
        MissingDependencyError, match=r"BLEURT needs the optional package 'tokenizers'.*ebmeval\[bleurt\]"
    ):
        Bleurt(root)
