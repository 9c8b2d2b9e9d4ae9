"""On-disk indexes: plain ``.npy`` arrays plus a JSON manifest, loaded memory-mapped and checked on load."""

from ._io import build_index, index_identity, load_index, read_manifest, search
from ._manifest import FORMAT_VERSION, MANIFEST_FILE, ArrayInfo, CorpusFiles, IndexManifest

__all__ = [
    "FORMAT_VERSION",
    "MANIFEST_FILE",
    "ArrayInfo",
    "CorpusFiles",
    "IndexManifest",
    "build_index",
    "index_identity",
    "load_index",
    "read_manifest",
    "search",
]
