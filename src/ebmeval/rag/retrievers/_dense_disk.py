"""Dense indexes built from disk: resumable embedding shards, IVF-PQ trained on a sample, recall against exact search.

Encoding writes one ``.npy`` file per ``shard_size`` documents under ``shards/`` (each written
to a temporary name and renamed, so a file that exists is complete) and a ``shards.json``
naming the encoder, prefix and shard size; a build that was killed continues after the last
complete shard. The index is then made from the shards, reading one at a time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

SHARDS_DIR = "shards"
SHARDS_FILE = "shards.json"


class Shards:
    """The embedding shards of one build: ``shards/00000.npy`` … in corpus order."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder / SHARDS_DIR

    def path(self, index: int) -> Path:
        return self.folder / f"{index:05d}.npy"

    def files(self) -> list[Path]:
        return sorted(self.folder.glob("[0-9]*.npy"))

    def arrays(self) -> Iterator[npt.NDArray[np.float32]]:
        """Each shard, memory-mapped, in order."""
        for file in self.files():
            yield np.load(file, mmap_mode="r")

    def count(self) -> int:
        return sum(int(np.load(f, mmap_mode="r").shape[0]) for f in self.files())

    def remove(self) -> None:
        """Delete the shards and their record (``shards.json``), once the index is built from them."""
        for file in self.files():
            file.unlink()
        self.folder.rmdir()
        (self.folder.parent / SHARDS_FILE).unlink()

    def rows(self, positions: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """The vectors at corpus ``positions`` (sorted or not), read shard by shard."""
        out: npt.NDArray[np.float32] | None = None
        start = 0
        for shard in self.arrays():
            inside = (positions >= start) & (positions < start + len(shard))
            if out is None:
                out = np.zeros((len(positions), shard.shape[1]), dtype=np.float32)
            if inside.any():
                out[inside] = shard[positions[inside] - start]
            start += len(shard)
        assert out is not None
        return out


def encode_shards(
    texts: Iterable[str],
    folder: Path,
    encode: Callable[[list[str], Callable[[int, int], None] | None], npt.NDArray[np.float32]],
    identity: dict[str, Any],
    *,
    shard_size: int,
    progress: Callable[[int, int], None] | None = None,
    total: int = 0,
) -> Shards:
    """Encode ``texts`` into shards of ``shard_size`` rows under ``folder``, continuing an earlier build.

    Shards already on disk are kept (their texts are skipped, not encoded) when
    ``shards.json`` records the same ``identity`` (encoder fingerprint, prefix, corpus) and
    shard size; otherwise the folder's shards are discarded. ``encode(texts, progress)``
    reports texts encoded within a shard; ``progress(done, total)`` receives the corpus-wide
    count, first the documents of the shards kept.
    """
    shards = prepare_shards(folder, identity, shard_size)
    done = len(shards.files())
    if progress is not None:
        progress(min(done * shard_size, total), total)
    batch: list[str] = []
    index = 0

    def flush() -> None:
        start = (done + index) * shard_size
        within = None if progress is None else (lambda n, _of: progress(start + n, total))
        write_shard(shards, done + index, encode(batch, within))

    for position, text in enumerate(texts):
        if position < done * shard_size:
            continue
        batch.append(text)
        if len(batch) == shard_size:
            flush()
            index += 1
            batch = []
    if batch:
        flush()
    return shards


def prepare_shards(folder: Path, identity: dict[str, Any], shard_size: int) -> Shards:
    """The shards of ``folder``: kept when ``shards.json`` records ``identity`` and ``shard_size``, else emptied."""
    shards = Shards(folder)
    meta = {**identity, "shard_size": shard_size}
    recorded = folder / SHARDS_FILE
    if not recorded.exists() or json.loads(recorded.read_text(encoding="utf-8")) != meta:
        for file in shards.files():
            file.unlink()
        shards.folder.mkdir(parents=True, exist_ok=True)
        recorded.write_text(json.dumps(meta, indent=2), encoding="utf-8")
    for stale in shards.folder.glob("*.tmp.npy"):
        stale.unlink()
    return shards


def write_shard(shards: Shards, index: int, vectors: npt.NDArray[np.float32]) -> None:
    final = shards.path(index)
    temporary = final.with_name(final.stem + ".tmp.npy")
    with open(temporary, "wb") as handle:
        np.save(handle, np.ascontiguousarray(vectors, dtype=np.float32))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, final)


def concatenate(shards: Shards, path: Path) -> None:
    """Write every shard, in order, into one ``.npy`` matrix at ``path`` (streamed)."""
    arrays = shards.files()
    first = np.load(arrays[0], mmap_mode="r")
    rows = shards.count()
    with open(path, "wb") as handle:
        header = {"descr": np.lib.format.dtype_to_descr(first.dtype), "fortran_order": False}
        np.lib.format.write_array_header_1_0(handle, {**header, "shape": (rows, first.shape[1])})
        for shard in shards.arrays():
            np.ascontiguousarray(shard).tofile(handle)


def exact_top_k(
    faiss: Any, shards: Shards, queries: npt.NDArray[np.float32], k: int
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
    """Exact inner-product top ``k`` of ``queries`` over all shards (one shard in memory at a time)."""
    best_scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
    best_ids = np.full((len(queries), k), -1, dtype=np.int64)
    start = 0
    for shard in shards.arrays():
        depth = min(k, len(shard))
        scores, ids = faiss.knn(queries, np.ascontiguousarray(shard), depth, metric=faiss.METRIC_INNER_PRODUCT)
        scores = np.concatenate([best_scores, scores], axis=1)
        ids = np.concatenate([best_ids, np.where(ids >= 0, ids + start, -1)], axis=1)
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        best_scores, best_ids = np.take_along_axis(scores, order, 1), np.take_along_axis(ids, order, 1)
        start += len(shard)
    return best_scores, best_ids


def rerank_exact(
    vectors: npt.NDArray[np.float32],
    queries: npt.NDArray[np.float32],
    candidates: npt.NDArray[np.int64],
    k: int,
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
    """The exact top ``k`` of each query's ``candidates`` (corpus positions, −1 pads), re-scored against ``vectors``.

    ``score(q, d) = q · vectors[d]`` in float32; ties go to the lower position. ``vectors``
    may be memory-mapped: only the candidates' rows are read, a block of queries at a time
    (about 32 MB of gathered rows).
    Rows with fewer than ``k`` valid candidates are padded with position −1 and score −∞.
    """
    depth = min(k, candidates.shape[1])
    scores = np.full((len(queries), depth), -np.inf, dtype=np.float32)
    ids = np.full((len(queries), depth), -1, dtype=np.int64)
    block = max(1, 2**23 // max(1, candidates.shape[1] * vectors.shape[1]))
    for start in range(0, len(queries), block):
        part = candidates[start : start + block]
        valid = part >= 0
        safe = np.where(valid, part, 0)
        positions = np.unique(safe)  # sorted: the rows are read in file order
        rows = np.asarray(vectors[positions], dtype=np.float32)
        where = np.searchsorted(positions, safe)
        exact = np.einsum("qcd,qd->qc", rows[where], queries[start : start + block].astype(np.float32))
        exact = np.where(valid, exact, -np.inf).astype(np.float32)
        order = np.lexsort((np.where(valid, part, np.iinfo(np.int64).max), -exact), axis=-1)[:, :depth]
        scores[start : start + block] = np.take_along_axis(exact, order, 1)
        ids[start : start + block] = np.where(
            np.isfinite(scores[start : start + block]), np.take_along_axis(part, order, 1), -1
        )
    return scores, ids


def recall_at_k(found: npt.NDArray[np.int64], exact: npt.NDArray[np.int64]) -> float:
    """Mean over queries of ``|found_q ∩ exact_q| / |exact_q|`` (−1 paddings ignored)."""
    values = []
    for got, truth in zip(found, exact, strict=True):
        relevant = set(truth[truth >= 0].tolist())
        if relevant:
            values.append(len(relevant & set(got[got >= 0].tolist())) / len(relevant))
    return float(np.mean(values)) if values else 1.0


def ivfpq_settings(n: int, dim: int, nlist: int | None, pq_m: int | None) -> tuple[int, int]:
    """IVF-PQ defaults: ``nlist`` and ``pq_m`` when not given.

    ``nlist ≈ 4·√n`` lists (at most n/39, so k-means has 39 points a list); ``pq_m`` the
    largest divisor of ``dim`` not above ``dim/8`` (one byte per 8 dimensions: 48 bytes a
    vector at 384).
    """
    lists = nlist if nlist is not None else max(1, min(int(4 * np.sqrt(n)), n // 39))
    if pq_m is None:
        pq_m = max(d for d in range(1, max(1, dim // 8) + 1) if dim % d == 0)
    return lists, pq_m


def train_ivfpq(
    faiss: Any,
    dim: int,
    n: int,
    rows: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.float32]],
    parts: Iterable[npt.NDArray[np.float32]],
    *,
    nlist: int,
    pq_m: int,
    pq_bits: int,
    train_size: int,
    seed: int,
) -> Any:
    """An IVF-PQ index (inner product) over ``n`` vectors of ``dim`` dimensions.

    The k-means lists are trained on ``train_size`` vectors (a seeded uniform sample read
    through ``rows``), the PQ codebooks on at most ``64 · 2^pq_bits`` of their residuals;
    the index is then filled from ``parts``, one array at a time.
    """
    rng = np.random.default_rng(seed)
    sample = np.sort(rng.choice(n, size=min(train_size, n), replace=False))
    index = faiss.index_factory(dim, f"IVF{nlist},PQ{pq_m}x{pq_bits}", faiss.METRIC_INNER_PRODUCT)
    index.cp.seed = seed
    index.pq.cp.seed = seed
    index.pq.cp.max_points_per_centroid = 64  # codebooks from at most 64·2^pq_bits residuals: minutes saved
    index.do_polysemous_training = False  # only serves Hamming-filtered search, which is not used
    index.train(np.ascontiguousarray(rows(sample)))
    for part in parts:
        index.add(np.ascontiguousarray(part))
    return index
