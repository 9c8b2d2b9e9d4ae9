"""Retrieval benchmarks: quality on the built-in benchmarks, and speed/memory at 100k documents.

    python benchmarks/retrieval.py quality   # recall/nDCG/MRR of bm25, dense, hybrid on pubmedqa, bioasq, m3
    python benchmarks/retrieval.py speed     # index time, queries/s, peak memory vs bm25s, rank_bm25, faiss
    python benchmarks/retrieval.py           # both

Results are merged into benchmarks/results/retrieval.json. Every system of the speed part runs
in its own subprocess, so its peak resident memory (ru_maxrss) is its own. Indexes of the quality
part are cached (``--cache``) and reused when their manifest matches the corpus.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent
DATA = ROOT.parent.parent / "shared" / "data"
RESULTS = ROOT / "results" / "retrieval.json"
SOURCES = ("pubmed-abstracts", "evidence-inference", "pubmedqa-contexts", "medquad", "bioasq-snippets")


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def save(section: str, value: Any) -> None:
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    results[section] = value
    results["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_average_at_write": os.getloadavg(),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2))


# --- corpus and queries of the speed part -----------------------------------------------------


def real_passages(data: Path) -> list[Any]:
    from ebmeval.rag.corpus import builtin_corpus, deduplicate

    return list(deduplicate(itertools.chain.from_iterable(builtin_corpus(name, data) for name in SOURCES)))


def corpus_of(n_docs: int, data: Path) -> tuple[list[Any], dict[str, Any]]:
    """``n_docs`` documents: every distinct real passage, then the same passages again under new ids."""
    from ebmeval.tasks import Document

    real = real_passages(data)
    docs = [
        real[i]
        if i < len(real)
        else Document(id=f"{real[i % len(real)].id}~copy{i // len(real)}", text=real[i % len(real)].text)
        for i in range(n_docs)
    ]
    lengths = [len(d.text) for d in real]
    info = {
        "n_documents": n_docs,
        "n_distinct_real": len(real),
        "repeated": n_docs > len(real),
        "mean_chars_real": round(statistics.mean(lengths), 1),
        "sources": list(SOURCES),
    }
    return docs, info


def queries_of(data: Path, n: int) -> list[str]:
    questions = [r["QUESTION"] for r in json.loads((data / "pubmedqa/ori_pqal.json").read_text()).values()]
    for file in sorted((data / "mirage/rawdata/bioasq").glob("*/*_golden.json")):
        questions += [q["body"] for q in json.loads(file.read_text())["questions"]]
    return list(dict.fromkeys(questions))[:n]


# --- one system, in a child process ----------------------------------------------------------


def timed_rounds(fn: Any, rounds: int) -> dict[str, float]:
    """Wall and CPU seconds of ``fn`` over ``rounds`` runs (medians; the machine is shared)."""
    walls, cpus = [], []
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return {"wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus)}


def interleaved_overhead(retriever: Any, queries: list[str], rounds: int = 9) -> dict[str, float]:
    """Our retrieve() against bm25s' own tokenize + retrieve on the same index, alternating rounds.

    Both sides share the process, the index and the machine's load at that moment, so the
    difference is the wrapper's work (tokenizer call, dropping zero scores, building results).
    """
    import bm25s

    def raw() -> None:
        tokens = bm25s.tokenize(queries, stopwords="en", stemmer=retriever._stem, return_ids=False, show_progress=False)
        retriever.model.retrieve(tokens, k=10, show_progress=False)

    raw_cpu, ours_cpu = [], []
    for _ in range(rounds):
        raw_cpu.append(timed_rounds(raw, 1)["cpu_s"])
        ours_cpu.append(timed_rounds(lambda: retriever.retrieve(queries, 10), 1)["cpu_s"])
    raw_s, ours_s = statistics.median(raw_cpu), statistics.median(ours_cpu)
    return {
        "rounds": rounds,
        "raw_bm25s_queries_per_s_cpu": len(queries) / raw_s,
        "ebmeval_queries_per_s_cpu": len(queries) / ours_s,
        "overhead": ours_s / raw_s - 1,
    }


def run_system(system: str, n_docs: int, n_queries: int, data: Path, work: Path) -> dict[str, Any]:
    queries = queries_of(data, n_queries)
    folder = work / "bm25-100k"
    out: dict[str, Any] = {"system": system}
    if system == "ebmeval-bm25-mmap":
        # a fresh process that only opens the index saved by the ebmeval-bm25 run
        from ebmeval.rag import load_index

        base = rss_mb()
        start = time.perf_counter()
        retriever: Any = load_index(folder)
        out["load_s"] = time.perf_counter() - start
        timing = timed_rounds(lambda: retriever.retrieve(queries, 10), 5)
        return finish(out, timing, base, len(retriever.documents), len(queries))
    docs, _ = corpus_of(n_docs, data)
    if system == "bm25s":
        import bm25s
        import Stemmer

        from ebmeval.rag.retrievers import index_text

        stem = Stemmer.Stemmer("english").stemWords
        base = rss_mb()
        start, cpu = time.perf_counter(), time.process_time()
        tokens = bm25s.tokenize([index_text(d) for d in docs], stopwords="en", stemmer=stem, show_progress=False)
        model = bm25s.BM25()
        model.index(tokens, show_progress=False)
        out["index_s"], out["index_cpu_s"] = time.perf_counter() - start, time.process_time() - cpu
        del tokens

        def query() -> None:
            tokenized = bm25s.tokenize(queries, stopwords="en", stemmer=stem, return_ids=False, show_progress=False)
            model.retrieve(tokenized, k=10, show_progress=False)

        timing = timed_rounds(query, 5)
    elif system == "ebmeval-bm25":
        from ebmeval.rag import build_index
        from ebmeval.rag.retrievers import BM25Retriever

        base = rss_mb()
        start, cpu = time.perf_counter(), time.process_time()
        retriever = BM25Retriever.build(docs)
        out["index_s"], out["index_cpu_s"] = time.perf_counter() - start, time.process_time() - cpu
        timing = timed_rounds(lambda: retriever.retrieve(queries, 10), 5)
        result = finish(out, timing, base, n_docs, len(queries))
        result["same_index_overhead"] = interleaved_overhead(retriever, queries)
        del retriever
        start = time.perf_counter()
        build_index(docs, folder, "bm25", overwrite=True)
        result["build_index_s"] = time.perf_counter() - start
        result["index_folder_mb"] = round(sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20, 1)
        return result
    elif system == "rank_bm25":
        import bm25s
        import Stemmer
        from rank_bm25 import BM25Okapi

        from ebmeval.rag.retrievers import index_text

        stem = Stemmer.Stemmer("english").stemWords
        queries = queries[:20]
        base = rss_mb()
        start, cpu = time.perf_counter(), time.process_time()
        tokens = bm25s.tokenize(
            [index_text(d) for d in docs], stopwords="en", stemmer=stem, return_ids=False, show_progress=False
        )
        model = BM25Okapi(tokens)
        out["index_s"], out["index_cpu_s"] = time.perf_counter() - start, time.process_time() - cpu
        tokenized = bm25s.tokenize(queries, stopwords="en", stemmer=stem, return_ids=False, show_progress=False)
        timing = timed_rounds(lambda: [model.get_top_n(q, docs, n=10) for q in tokenized], 1)
    else:
        raise SystemExit(f"unknown system {system}")
    return finish(out, timing, base, n_docs, len(queries))


def finish(out: dict[str, Any], timing: dict[str, float], base: float, n_docs: int, n_queries: int) -> dict[str, Any]:
    out.update(
        n_documents=n_docs,
        n_queries=n_queries,
        queries_per_s_wall=n_queries / timing["wall_s"],
        queries_per_s_cpu=n_queries / timing["cpu_s"],
        rss_before_index_mb=round(base, 1),
        peak_rss_mb=round(peak_mb(), 1),
    )
    return out


def dense_speed(data: Path, cache: Path, n_encode: int) -> dict[str, Any]:
    """Encoding throughput (raw sentence-transformers vs our Encoder) and flat vs HNSW search."""
    import faiss
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from ebmeval.rag.retrievers import DenseOptions, DenseRetriever, Encoder, bundled_encoder_path, index_text

    # real-length abstracts: every fifth of the first real passages, which are the PubMed abstracts
    sample = [index_text(d) for d in real_passages(data)[::5][:n_encode]]
    result: dict[str, Any] = {"n_encoded": len(sample), "mean_chars": round(statistics.mean(map(len, sample)), 1)}
    raw = SentenceTransformer(str(bundled_encoder_path()), device="cpu", local_files_only=True)
    timing = timed_rounds(
        lambda: raw.encode(sample, batch_size=64, normalize_embeddings=True, show_progress_bar=False), 1
    )
    result["raw_sentence_transformers"] = {f"docs_per_s_{k[:-2]}": len(sample) / v for k, v in timing.items()}
    encoder = Encoder()
    timing = timed_rounds(lambda: encoder.encode(sample), 1)
    result["ebmeval_encoder"] = {f"docs_per_s_{k[:-2]}": len(sample) / v for k, v in timing.items()}

    # every embedding the quality part computed (distinct real documents), for the search comparison
    files = sorted(cache.glob("*/dense/embeddings.npy"))
    if not files:
        result["search"] = "no cached embeddings: run the quality part first"
        return result
    np.save(cache / "all-embeddings.npy", np.concatenate([np.load(f) for f in files]))
    emb = np.load(cache / "all-embeddings.npy", mmap_mode="r")  # our flat search runs on the memory map
    queries = queries_of(data, 500)
    start = time.perf_counter()
    qvec = encoder.encode(queries)
    search: dict[str, Any] = {
        "n_vectors": int(emb.shape[0]),
        "dim": int(emb.shape[1]),
        "n_queries": len(queries),
        "query_encoding_per_s": len(queries) / (time.perf_counter() - start),
    }
    flat = faiss.IndexFlatIP(emb.shape[1])
    flat.add(np.ascontiguousarray(emb))
    start = time.perf_counter()
    hnsw = faiss.IndexHNSWFlat(emb.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = 80
    hnsw.add(np.ascontiguousarray(emb))
    search["faiss_hnsw_build_s"] = time.perf_counter() - start
    hnsw.hnsw.efSearch = 128
    exact, approx = flat.search(qvec, 10)[1], hnsw.search(qvec, 10)[1]
    search["hnsw_recall_at_10_vs_flat"] = float(
        np.mean([len(set(a) & set(e)) / 10 for a, e in zip(approx, exact, strict=True)])
    )
    stand_in = [None] * emb.shape[0]  # documents are not read by search()
    ours_flat = DenseRetriever(encoder, stand_in, emb, DenseOptions(index="flat"))
    ours_hnsw = DenseRetriever(encoder, stand_in, emb, DenseOptions(index="hnsw"), graph=hnsw)
    pairs = {
        "flat": (lambda: flat.search(qvec, 10), lambda: ours_flat.search(qvec, 10)),
        "hnsw": (lambda: hnsw.search(qvec, 10), lambda: ours_hnsw.search(qvec, 10)),
    }
    for name, (raw_fn, ours_fn) in pairs.items():
        raw_t, ours_t = [], []
        for _ in range(7):  # alternate, so both sides see the same machine load
            raw_t.append(timed_rounds(raw_fn, 1))
            ours_t.append(timed_rounds(ours_fn, 1))
        for side, rounds in (("faiss", raw_t), ("ebmeval", ours_t)):
            for clock in ("wall_s", "cpu_s"):
                value = statistics.median(r[clock] for r in rounds)
                search[f"{side}_{name}_queries_per_s_{clock[:-2]}"] = len(queries) / value
    result["search"] = search
    return result


def speed(args: argparse.Namespace) -> None:
    results: dict[str, Any] = {"corpus": corpus_of(args.n_docs, args.data)[1]}
    systems = []
    for system in ("bm25s", "ebmeval-bm25", "ebmeval-bm25-mmap", "rank_bm25"):
        print(f"[speed] {system} …", flush=True)
        child = subprocess.run(
            [
                sys.executable,
                __file__,
                "one",
                system,
                "--n-docs",
                str(args.n_docs),
                "--data",
                str(args.data),
                "--cache",
                str(args.cache),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        systems.append(json.loads(child.stdout.strip().splitlines()[-1]))
        print(json.dumps(systems[-1]), flush=True)
    results["bm25"] = systems
    by_name = {s["system"]: s for s in systems}
    raw, ours = by_name["bm25s"], by_name["ebmeval-bm25"]
    results["bm25_wrapper_overhead"] = {
        "index_cpu_separate_processes": ours["index_cpu_s"] / raw["index_cpu_s"] - 1,
        "query_cpu_separate_processes": raw["queries_per_s_cpu"] / ours["queries_per_s_cpu"] - 1,
        "query_wall_separate_processes": raw["queries_per_s_wall"] / ours["queries_per_s_wall"] - 1,
        "query_cpu_same_index_interleaved": ours["same_index_overhead"]["overhead"],
        "peak_memory": ours["peak_rss_mb"] / raw["peak_rss_mb"] - 1,
    }
    print("[speed] dense …", flush=True)
    results["dense"] = dense_speed(args.data, args.cache, args.n_encode)
    print(json.dumps(results["dense"]), flush=True)
    save("speed", results)


# --- quality -------------------------------------------------------------------------------


def quality(args: argparse.Namespace) -> None:
    from ebmeval._util.errors import DataError
    from ebmeval.rag import HybridRetriever, build_index, evaluate_retrieval, load_index, retrieval_table
    from ebmeval.rag.evaluation import load_benchmark

    setups = {
        "pubmedqa": load_benchmark("pubmedqa", args.data, n_noise=args.pubmedqa_noise, seed=0),
        "bioasq": load_benchmark("bioasq", args.data).subset(args.bioasq_queries, args.bioasq_distractors, seed=0),
        "m3": load_benchmark("m3", args.data),
    }
    reports = []
    encoding: dict[str, Any] = {}
    for name, bench in setups.items():
        built: dict[str, Any] = {}
        for kind in ("bm25", "dense/minilm"):
            folder = args.cache / name / kind.split("/")[0]
            try:
                built[kind] = load_index(folder, corpus=bench.documents)
                print(f"[quality] {name} {kind}: reusing {folder}", flush=True)
            except DataError:
                options: dict[str, Any] = {}
                if kind != "bm25":
                    options["progress"] = lambda done, total, name=name: print(
                        f"[quality] {name} encoding {done}/{total}", flush=True
                    )
                start = time.perf_counter()
                build_index(bench.documents, folder, kind, overwrite=True, **options)
                seconds = time.perf_counter() - start
                timing = {"documents": len(bench.documents), "build_s": round(seconds, 1)}
                (folder / "build.json").write_text(json.dumps(timing))
                built[kind] = load_index(folder, corpus=bench.documents)
            if kind != "bm25" and (folder / "build.json").exists():
                encoding[name] = json.loads((folder / "build.json").read_text())
        built["hybrid"] = HybridRetriever(
            [("bm25", built["bm25"]), ("dense/minilm", built["dense/minilm"])], bench.documents
        )
        for kind in ("bm25", "dense/minilm", "hybrid"):
            report = evaluate_retrieval(built[kind], bench, ks=(1, 5, 10, 20), name=kind)
            metrics = json.dumps({k: round(v, 3) for k, v in report.metrics.items()})
            print(f"[quality] {name} {kind}: {metrics}", flush=True)
            reports.append(report)
    table = retrieval_table(reports, ("recall@1", "recall@10", "recall@20", "ndcg@10", "mrr")).markdown(title=False)
    print(table)
    save(
        "quality",
        {
            "benchmarks": {name: bench.metadata for name, bench in setups.items()},
            "reports": [r.model_dump(exclude={"queries"}) for r in reports],
            "encoding": encoding,
            "table": table,
        },
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("part", nargs="?", default="all", choices=["all", "quality", "speed", "one"])
    parser.add_argument("system", nargs="?")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/ebmeval-retrieval-bench"))
    parser.add_argument("--n-docs", type=int, default=100_000)
    parser.add_argument("--n-encode", type=int, default=256)
    parser.add_argument("--pubmedqa-noise", type=int, default=2000)
    parser.add_argument("--bioasq-queries", type=int, default=300)
    parser.add_argument("--bioasq-distractors", type=int, default=2000)
    args = parser.parse_args()
    if args.part == "one":
        print(json.dumps(run_system(args.system, args.n_docs, 2000, args.data, args.cache)))
        return
    if args.part in ("all", "quality"):
        quality(args)
    if args.part in ("all", "speed"):
        speed(args)


if __name__ == "__main__":
    main()
