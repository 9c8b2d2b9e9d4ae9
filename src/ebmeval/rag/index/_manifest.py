"""The JSON manifest that describes an on-disk index and guards what it may be loaded with."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..corpus import CorpusFingerprint
from ..retrievers import EncoderInfo

FORMAT_VERSION = 2
"""Bumped whenever the layout of index folders changes."""

MANIFEST_FILE = "manifest.json"


class ArrayInfo(BaseModel):
    """Shape and dtype of one stored ``.npy`` array, checked on load."""

    model_config = ConfigDict(frozen=True)

    shape: tuple[int, ...]
    dtype: str


class CorpusFiles(BaseModel):
    """Size and modification time of a corpus' documents file when an index was built from it.

    Loading compares them first; only when they differ is the corpus hashed again.
    """

    model_config = ConfigDict(frozen=True)

    size: int
    mtime_ns: int


class IndexManifest(BaseModel):
    """``manifest.json`` of an index folder."""

    format_version: int = FORMAT_VERSION
    """Layout version of the folder."""
    retriever: str
    """Registered retriever name (``bm25``, ``dense/minilm``, ``hybrid`` …)."""
    params: dict[str, Any]
    """Build parameters of the retriever."""
    corpus: CorpusFingerprint
    """The corpus the index was built from."""
    corpus_path: str
    """Folder of that corpus: absolute, or ``"."`` when the index folder holds its documents itself."""
    corpus_files: CorpusFiles
    """Size and modification time of the corpus' documents file at build time."""
    encoders: list[EncoderInfo] = Field(default_factory=list)
    """Text encoders used (one per dense component)."""
    arrays: dict[str, ArrayInfo] = Field(default_factory=dict)
    """Every ``.npy`` file, by path relative to the folder."""
    report: dict[str, Any] = Field(default_factory=dict)
    """What the build measured (e.g. ``recall_at_10`` of an approximate index against exact search)."""
    disk_bytes: int | None = None
    """Bytes of the folder's files when built, this manifest excepted (``None`` in older manifests)."""
    ebmeval_version: str
    libraries: dict[str, str] = Field(default_factory=dict)
    """Versions of the libraries the index was built with (bm25s, faiss, sentence-transformers)."""
    created: str
    """UTC time of the build, ISO 8601."""
