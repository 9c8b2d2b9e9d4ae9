"""On-disk indexes: plain ``.npy`` arrays plus a JSON manifest, loaded memory-mapped and checked on load."""

from ._io import build_index, load_index, read_manifest, search
from ._manifest import FORMAT_VERSION, MANIFEST_FILE, ArrayInfo, IndexManifest

__all__ = [
    "FORMAT_VERSION",
    "MANIFEST_FILE",
    "ArrayInfo",
    "IndexManifest",
    "build_index",
    "load_index",
    "read_manifest",
    "search",
]
