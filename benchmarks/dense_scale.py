"""Dense indexing at scale: a 1M-vector IVF-PQ index, and encoding on Ray with one and two workers.

    python benchmarks/dense_scale.py vectors --n 1000000 --out /tmp/dense-scale/vectors   # write shards
    python benchmarks/dense_scale.py ivfpq --shards /tmp/dense-scale/vectors            # build, recall, queries/s
    python benchmarks/dense_scale.py ray --n 400 --work /tmp/dense-scale/ray             # local vs Ray 1 and 2 workers

Vectors of the IVF-PQ part are synthetic, 384-dimensional like all-MiniLM-L6-v2's, and
clustered so that nearest neighbours mean something: 10,000 Gaussian cluster centres, each
vector a centre plus noise (σ = 0.5 per dimension relative to the centre's scale), L2-normalised;
queries are 1,000 fresh vectors drawn the same way. (Encoding a million real passages with
MiniLM would take about a day on this machine.) The build runs in its own process reading the
shards from disk, so its peak resident memory is the index build's. The Ray part encodes real
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


def clustered(rng: np.random.Generator, centres: np.ndarray, n: int) -> np.ndarray:
    x = centres[rng.integers(0, len(centres), n)] + rng.standard_normal((n, DIM), dtype=np.float32) * 0.5 / np.sqrt(DIM)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def vectors(args: argparse.Namespace) -> None:
    from ebmeval.rag.retrievers._dense_disk import prepare_shards, write_shard

    rng = np.random.default_rng(0)
    centres = rng.standard_normal((10_000, DIM), dtype=np.float32) / np.sqrt(DIM)
    shards = prepare_shards(args.out, {"synthetic": "clustered", "n": args.n}, args.shard_size)
    for index, start in enumerate(range(0, args.n, args.shard_size)):
        write_shard(shards, index, clustered(rng, centres, min(args.shard_size, args.n - start)))
    np.save(args.out / "queries.npy", clustered(rng, centres, 1000))
    print(f"wrote {args.n:,} vectors in {len(shards.files())} shards to {args.out}")


def ivfpq(args: argparse.Namespace) -> None:
    import faiss

    from ebmeval.rag.retrievers._dense_disk import Shards, exact_top_k, ivfpq_settings, recall_at_k, train_ivfpq

    faiss.omp_set_num_threads(args.threads)
    shards = Shards(args.shards)
    n = shards.count()
    nlist, pq_m = ivfpq_settings(n, DIM, args.nlist, None)
    out: dict[str, Any] = {"n": n, "dim": DIM, "nlist": nlist, "pq_m": pq_m, "pq_bits": 8, "train_size": args.train}
    out["threads"], out["load_before"] = args.threads, os.getloadavg()
    start, cpu = time.perf_counter(), time.process_time()
    index = train_ivfpq(
        faiss, DIM, n, shards.rows, shards.arrays(), nlist=nlist, pq_m=pq_m, pq_bits=8, train_size=args.train, seed=0
    )
    out["build_s"], out["build_cpu_s"] = time.perf_counter() - start, time.process_time() - cpu
    out["build_peak_mb"] = peak_mb()
    out["index_mb"] = round(len(faiss.serialize_index(index)) / 2**20, 1)
    out["flat_mb"] = round(n * DIM * 4 / 2**20, 1)
    queries = np.load(args.shards / "queries.npy")
    start = time.perf_counter()
    _, exact = exact_top_k(faiss, shards, queries[: args.recall_queries], 10)
    out["exact_s"] = time.perf_counter() - start
    out["exact_queries_per_s"] = args.recall_queries / out["exact_s"]
    for nprobe in (8, 16, 64):
        index.nprobe = nprobe
        _, found = index.search(queries[: args.recall_queries], 10)
        walls = []
        for _ in range(3):
            start = time.perf_counter()
            index.search(queries, 10)
            walls.append(time.perf_counter() - start)
        out[f"nprobe_{nprobe}"] = {
            "recall_at_10": recall_at_k(found, exact),
            "queries_per_s": len(queries) / statistics.median(walls),
        }
    out["peak_mb"], out["load_after"] = peak_mb(), os.getloadavg()
    save(f"ivfpq/{n}", out)


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
    one.add_argument("--out", type=Path, required=True)
    one.set_defaults(fn=vectors)
    two = sub.add_parser("ivfpq")
    two.add_argument("--shards", type=Path, required=True)
    two.add_argument("--nlist", type=int, default=None)
    two.add_argument("--train", type=int, default=100_000)
    two.add_argument("--recall-queries", type=int, default=1000)
    two.add_argument("--threads", type=int, default=2)
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
