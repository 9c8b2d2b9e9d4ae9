"""Dense indexing at scale: a 1M-vector IVF-PQ index, and encoding on Ray with one and two workers.

    python benchmarks/dense_scale.py vectors --n 1000000 --out /tmp/dense-scale/vectors   # write shards
    python benchmarks/dense_scale.py real --n 10000 --out /tmp/scale2/real              # encode real passages
    python benchmarks/dense_scale.py ivfpq --shards /tmp/dense-scale/vectors            # build, recall, queries/s
    python benchmarks/dense_scale.py ray --n 400 --work /tmp/dense-scale/ray             # local vs Ray 1 and 2 workers

Vectors of the IVF-PQ part are synthetic, 384-dimensional like all-MiniLM-L6-v2's, L2-normalised,
from one of two generators (``--generator``):

- ``clustered`` (the first one): 10,000 Gaussian cluster centres, each vector a centre plus
  isotropic noise (σ = 0.5 per dimension relative to the centre's scale). At 1M vectors every
  cluster holds ~100 vectors at almost the same similarity to a query of that cluster (top 1
  and top 10 differ by ~0.015 in cosine, ranks 10 and 11 by ~0.0005), so "the exact top 10"
  is decided by noise far below what 48 PQ bytes resolve: recall@10 measures an ill-defined
  order, not the index.
- ``graded``: the same centres, but each vector's distance from its centre varies (noise scale
  log-normal, σ_log = 0.5), so a cluster's members sit at graded similarities to a query, as
  encoded passages do, though less spread than real vectors (``ivfpq`` records the profile,
  the median cosine at ranks 1, 10, 11 and 100, for any vectors, real ones included).

Queries are 1,000 fresh vectors drawn the same way. ``real`` encodes a seeded sample of the
real passages and 1,000 real questions with the bundled MiniLM on one thread, for recall on real
vectors at a size this machine can encode. ``ivfpq`` builds the index from the shards in its
own process (its peak resident memory is the build's), writes the float32 matrix the
re-ranking reads, and measures recall@10 against exact search and queries/s for each
``nprobe`` with and without exact re-ranking of ``k·R`` candidates. The Ray part encodes real
passages with the bundled MiniLM. Results are merged into ``benchmarks/results/dense_scale.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "results" / "dense_scale.json"
DIM = 384


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def save(key: str, value: dict[str, Any]) -> None:
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    results[key] = value
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2))
    print(json.dumps(value, indent=2))


def clustered(rng: np.random.Generator, centres: np.ndarray, n: int, generator: str = "clustered") -> np.ndarray:
    """``n`` unit vectors: a random centre plus Gaussian noise, its scale fixed or log-normal (``graded``)."""
    scale = np.full((n, 1), 0.5, dtype=np.float32)
    if generator == "graded":
        scale = (0.5 * rng.lognormal(0.0, 0.5, (n, 1))).astype(np.float32)
    which = rng.integers(0, len(centres), n)
    x = centres[which] + rng.standard_normal((n, DIM), dtype=np.float32) * scale / np.sqrt(DIM)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def profile(faiss: Any, shards: Any, queries: np.ndarray) -> dict[str, float]:
    """Medians over queries of the exact cosine at ranks 1, 10, 11 and 100: how well-defined the top 10 is."""
    from ebmeval.rag.retrievers._dense_disk import exact_top_k

    scores, _ = exact_top_k(faiss, shards, queries, 100)
    out = {f"cos_at_{r}": float(np.median(scores[:, r - 1])) for r in (1, 10, 11, 100)}
    out["gap_10_11"] = float(np.median(scores[:, 9] - scores[:, 10]))
    return out


def vectors(args: argparse.Namespace) -> None:
    from ebmeval.rag.retrievers._dense_disk import prepare_shards, write_shard

    rng = np.random.default_rng(0)
    centres = rng.standard_normal((10_000, DIM), dtype=np.float32) / np.sqrt(DIM)
    shards = prepare_shards(args.out, {"synthetic": args.generator, "n": args.n}, args.shard_size)
    for index, start in enumerate(range(0, args.n, args.shard_size)):
        write_shard(shards, index, clustered(rng, centres, min(args.shard_size, args.n - start), args.generator))
    np.save(args.out / "queries.npy", clustered(rng, centres, 1000, args.generator))
    print(f"wrote {args.n:,} vectors in {len(shards.files())} shards to {args.out}")


def real(args: argparse.Namespace) -> None:
    """Encode ``n`` real passages (a seeded sample) and 1,000 real questions into shards, on one thread."""
    import torch
    from bm25_scale import DATA
    from retrieval import queries_of, real_passages

    from ebmeval.rag.retrievers import index_text
    from ebmeval.rag.retrievers._dense import Encoder
    from ebmeval.rag.retrievers._dense_disk import encode_shards

    torch.set_num_threads(args.threads)
    passages = real_passages(DATA)
    chosen = np.sort(np.random.default_rng(0).choice(len(passages), args.n, replace=False))
    encoder = Encoder()
    out: dict[str, Any] = {"n": args.n, "threads": args.threads, "load_before": os.getloadavg()}
    start, cpu = time.perf_counter(), time.process_time()
    encode_shards(
        (index_text(passages[i]) for i in chosen),
        args.out,
        encoder.encode,
        {"real": args.n, "encoder": encoder.info.fingerprint},
        shard_size=args.shard_size,
        progress=lambda done, total: print(f"{done}/{total}", flush=True),
        total=args.n,
    )
    out["encode_s"], out["encode_cpu_s"] = time.perf_counter() - start, time.process_time() - cpu
    out["documents_per_s"] = args.n / out["encode_s"]
    np.save(args.out / "queries.npy", encoder.encode(queries_of(DATA, 1000)))
    out["load_after"] = os.getloadavg()
    save(f"real-encoding/{args.n}", out)


def ivfpq(args: argparse.Namespace) -> None:
    import faiss

    from ebmeval.rag.retrievers._dense_disk import (
        Shards,
        concatenate,
        exact_top_k,
        ivfpq_settings,
        recall_at_k,
        rerank_exact,
        train_ivfpq,
    )

    faiss.omp_set_num_threads(args.threads)
    shards = Shards(args.shards)
    n = shards.count()
    nlist, pq_m = ivfpq_settings(n, DIM, args.nlist, None)
    source = json.loads((args.shards / "shards.json").read_text())
    out: dict[str, Any] = {"n": n, "dim": DIM, "nlist": nlist, "pq_m": pq_m, "pq_bits": 8, "train_size": args.train}
    out["vectors"] = source.get("synthetic", "real MiniLM")
    out["threads"], out["load_before"] = args.threads, os.getloadavg()
    start, cpu = time.perf_counter(), time.process_time()
    index = train_ivfpq(
        faiss, DIM, n, shards.rows, shards.arrays(), nlist=nlist, pq_m=pq_m, pq_bits=8, train_size=args.train, seed=0
    )
    out["build_s"], out["build_cpu_s"] = time.perf_counter() - start, time.process_time() - cpu
    out["build_peak_mb"] = peak_mb()
    out["index_mb"] = round(len(faiss.serialize_index(index)) / 2**20, 1)
    flat_path = args.shards / "embeddings.npy"
    start = time.perf_counter()
    concatenate(shards, flat_path)  # what a build with rerank > 0 writes for the re-ranking
    out["flat_write_s"] = time.perf_counter() - start
    out["flat_mb"] = round(flat_path.stat().st_size / 2**20, 1)
    flat = np.load(flat_path, mmap_mode="r")
    queries = np.load(args.shards / "queries.npy")
    start = time.perf_counter()
    _, exact = exact_top_k(faiss, shards, queries[: args.recall_queries], 10)
    out["exact_s"] = time.perf_counter() - start
    out["exact_queries_per_s"] = args.recall_queries / out["exact_s"]
    out["profile"] = profile(faiss, shards, queries[: args.recall_queries])

    def search(batch: np.ndarray, nprobe: int, rerank: int) -> np.ndarray:
        index.nprobe = nprobe
        if rerank == 0:
            return np.asarray(index.search(batch, 10)[1])
        _, candidates = index.search(batch, 10 * rerank)
        return rerank_exact(flat, batch, candidates, 10)[1]

    for nprobe in args.nprobe:
        for rerank in args.rerank:
            found = search(queries[: args.recall_queries], nprobe, rerank)
            walls = []
            for _ in range(3):
                start = time.perf_counter()
                search(queries, nprobe, rerank)
                walls.append(time.perf_counter() - start)
            out[f"nprobe_{nprobe}/rerank_{rerank}"] = {
                "recall_at_10": recall_at_k(found, exact),
                "queries_per_s": len(queries) / statistics.median(walls),
            }
            print(nprobe, rerank, out[f"nprobe_{nprobe}/rerank_{rerank}"], flush=True)
    out["peak_mb"], out["load_after"] = peak_mb(), os.getloadavg()
    flat_path.unlink()
    save(f"ivfpq/{out['vectors']}/{n}", out)


def ray_speed(args: argparse.Namespace) -> None:
    import itertools

    import ray
    from bm25_scale import DATA

    from ebmeval.rag import build_index
    from ebmeval.rag.corpus import builtin_corpus, write_store

    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    docs = list(itertools.islice(builtin_corpus("bioasq-snippets", DATA), args.n))
    write_store(docs, work / "corpus").close()
    out: dict[str, Any] = {"n": len(docs), "shard_size": args.shard_size, "cpus": os.cpu_count()}
    runs: dict[str, Any] = {}
    for label, workers in (("local", None), ("ray-1", 1), ("ray-2", 2)):
        load = os.getloadavg()
        if workers is not None and not ray.is_initialized():
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        start = time.perf_counter()
        options: dict[str, Any] = {"shard_size": args.shard_size}
        if workers is not None:
            options.update(engine="ray", ray_workers=workers)
        build_index(work / "corpus", work / label, "dense", **options)
        seconds = time.perf_counter() - start
        runs[label] = {
            "seconds": seconds,
            "documents_per_s": len(docs) / seconds,
            "load_before": load,
            "load_after": os.getloadavg(),
        }
        print(label, runs[label])
    ray.shutdown()
    emb = {label: np.load(work / label / "embeddings.npy") for label in runs}
    out["max_abs_difference_vs_local"] = {k: float(np.abs(v - emb["local"]).max()) for k, v in emb.items()}
    out["runs"] = runs
    out["speedup_2_over_1_workers"] = runs["ray-1"]["seconds"] / runs["ray-2"]["seconds"]
    save("ray", out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("vectors")
    one.add_argument("--n", type=int, default=1_000_000)
    one.add_argument("--shard-size", type=int, default=50_000)
    one.add_argument("--generator", choices=["clustered", "graded"], default="graded")
    one.add_argument("--out", type=Path, required=True)
    one.set_defaults(fn=vectors)
    encoded = sub.add_parser("real")
    encoded.add_argument("--n", type=int, default=10_000)
    encoded.add_argument("--shard-size", type=int, default=1_000)
    encoded.add_argument("--threads", type=int, default=1)
    encoded.add_argument("--out", type=Path, required=True)
    encoded.set_defaults(fn=real)
    two = sub.add_parser("ivfpq")
    two.add_argument("--shards", type=Path, required=True)
    two.add_argument("--nlist", type=int, default=None)
    two.add_argument("--train", type=int, default=100_000)
    two.add_argument("--recall-queries", type=int, default=1000)
    two.add_argument("--threads", type=int, default=2)
    two.add_argument("--nprobe", type=int, nargs="+", default=[8, 16, 64])
    two.add_argument("--rerank", type=int, nargs="+", default=[0, 10, 20], help="R: re-rank 10·R candidates")
    two.set_defaults(fn=ivfpq)
    three = sub.add_parser("ray")
    three.add_argument("--n", type=int, default=400)
    three.add_argument("--shard-size", type=int, default=50)
    three.add_argument("--work", type=Path, required=True)
    three.set_defaults(fn=ray_speed)
    args = parser.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
