"""BM25 at 1M+ documents: the streaming build against the in-memory build, raw bm25s and tantivy.

    python benchmarks/bm25_scale.py corpus --n 1000000 --out /tmp/bm25-scale/corpus-1m
    python benchmarks/bm25_scale.py run stream --corpus /tmp/bm25-scale/corpus-1m --work /tmp/bm25-scale
    python benchmarks/bm25_scale.py table          # the results so far, as a Markdown table

Documents are the project's real passages (PubMed abstracts, Evidence Inference, PubMedQA
contexts, MedQuAD answers, BioASQ snippets: 48,323 distinct, 861 characters on average)
repeated under new ids with variation: copy ``c`` of a passage rotates its sentences by ``c``
and drops one word, so texts are distinct but keep real length and vocabulary. Queries are
1,000 real questions (PubMedQA, BioASQ), k = 10. Every ``run`` is its own process, so its
peak resident memory (``ru_maxrss``) is its own; the load average is recorded beside it.
Results are merged into ``benchmarks/results/bm25_scale.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "results" / "bm25_scale.json"

import retrieval  # noqa: E402
from retrieval import queries_of, real_passages  # noqa: E402

DATA = retrieval.DATA if retrieval.DATA.exists() else Path(os.environ.get("EBMEVAL_DATA", "/work/shared/data"))


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def folder_mb(folder: Path) -> float:
    return round(sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20, 1)


def varied(n: int) -> Iterator[Any]:
    """``n`` documents: the real passages, then copies with rotated sentences and one word dropped."""
    from ebmeval.tasks import Document

    real = real_passages(DATA)
    for i in range(n):
        base, copy = real[i % len(real)], i // len(real)
        if copy == 0:
            yield base
            continue
        sentences = re.split(r"(?<=[.!?])\s+", base.text)
        turn = copy % len(sentences)
        words = " ".join(sentences[turn:] + sentences[:turn]).split(" ")
        del words[(copy * 7919) % len(words)]
        yield Document(id=f"{base.id}~{copy}", title=base.title, text=" ".join(words))


def make_corpus(args: argparse.Namespace) -> None:
    from ebmeval.rag.corpus import write_store

    start = time.perf_counter()
    store = write_store(varied(args.n), args.out, {"benchmark": "bm25_scale", "n": args.n})
    seconds = time.perf_counter() - start
    print(f"wrote {len(store):,} documents to {args.out} in {seconds:.0f} s ({folder_mb(args.out)} MB)")


def repeat_corpus(args: argparse.Namespace) -> None:
    """A corpus of ``times`` copies of another, the copies under new ids (``<id>~r<copy>``)."""
    from ebmeval.rag.corpus import DocumentStore, write_store

    source = DocumentStore(args.source)

    def documents() -> Iterator[Any]:
        for copy in range(args.times):
            for document in source:
                yield document if copy == 0 else document.model_copy(update={"id": f"{document.id}~r{copy}"})

    start = time.perf_counter()
    store = write_store(documents(), args.out, {"benchmark": "bm25_scale", "repeats": args.times})
    seconds = time.perf_counter() - start
    print(f"wrote {len(store):,} documents to {args.out} in {seconds:.0f} s ({folder_mb(args.out)} MB)")


def safe_query(query: str) -> str:
    """``query`` as plain words for tantivy's query parser: no syntax characters, lower case.

    The parser reads ``: ( ) [ ] " ' + - ^ ~ *`` as syntax and the upper-case words ``AND``,
    ``OR``, ``NOT`` and ``IN`` as operators (``IN`` starts a term set, so ``PREVALENCE IN THE``
    is a syntax error). Keeping only runs of word characters, lower-cased, leaves a disjunction of terms,
    which is what the other systems score; ``en_stem`` lower-cases terms anyway.
    """
    return " ".join(re.findall(r"\w+", query)).lower()


def run(args: argparse.Namespace) -> None:
    queries = queries_of(DATA, args.queries)
    corpus = Path(args.corpus)
    work = Path(args.work) / f"{args.system}-{corpus.name}"
    shutil.rmtree(work, ignore_errors=True)
    out: dict[str, Any] = {"system": args.system, "corpus": corpus.name, "load_before": os.getloadavg()}
    cpu0, wall0 = time.process_time(), time.perf_counter()
    search: Any
    if args.system == "stream":
        from ebmeval.rag import build_index, load_index

        build_index(corpus, work, "bm25", memory_mb=args.memory_mb)
        out["build_peak_mb"] = peak_mb()
        out["build_s"], out["build_cpu_s"] = time.perf_counter() - wall0, time.process_time() - cpu0
        retriever = load_index(work)
        out["n_documents"] = len(retriever.documents)

        def search() -> None:
            retriever.retrieve(queries, 10)
    elif args.system in ("memory", "bm25s"):
        from ebmeval.rag.corpus import DocumentStore
        from ebmeval.rag.retrievers import BM25Retriever, index_text

        docs = DocumentStore(corpus)
        out["n_documents"] = len(docs)
        if args.system == "memory":
            retriever = BM25Retriever.build(docs)
            out["build_s"], out["build_cpu_s"] = time.perf_counter() - wall0, time.process_time() - cpu0
            retriever.save(work)

            def search() -> None:
                retriever.retrieve(queries, 10)
        else:
            import bm25s
            import Stemmer

            stem = Stemmer.Stemmer("english").stemWords
            tokens = bm25s.tokenize([index_text(d) for d in docs], stopwords="en", stemmer=stem, show_progress=False)
            model = bm25s.BM25()
            model.index(tokens, show_progress=False)
            del tokens
            out["build_s"], out["build_cpu_s"] = time.perf_counter() - wall0, time.process_time() - cpu0
            model.save(str(work))

            def search() -> None:
                tokenized = bm25s.tokenize(queries, stopwords="en", stemmer=stem, return_ids=False, show_progress=False)
                model.retrieve(tokenized, k=10, show_progress=False)

        out["build_peak_mb"] = peak_mb()
    elif args.system == "tantivy":
        import tantivy

        from ebmeval.rag.corpus import DocumentStore
        from ebmeval.rag.retrievers import index_text

        schema_builder = tantivy.SchemaBuilder()
        schema_builder.add_text_field("text", stored=False, tokenizer_name="en_stem")
        schema_builder.add_integer_field("position", stored=True, indexed=False)
        schema = schema_builder.build()
        work.mkdir(parents=True)
        index = tantivy.Index(schema, path=str(work))
        writer = index.writer(heap_size=args.memory_mb * 2**20, num_threads=1)
        docs = DocumentStore(corpus)
        out["n_documents"] = len(docs)
        for position, document in enumerate(docs):
            writer.add_document(tantivy.Document(text=index_text(document), position=position))
        writer.commit()
        writer.wait_merging_threads()
        out["build_peak_mb"] = peak_mb()
        out["build_s"], out["build_cpu_s"] = time.perf_counter() - wall0, time.process_time() - cpu0
        index.reload()
        searcher = index.searcher()
        parsed = [index.parse_query(safe_query(q), ["text"]) for q in queries]

        def search() -> None:
            for query in parsed:
                searcher.search(query, 10)
    else:
        raise SystemExit(f"unknown system {args.system}")
    out["index_mb"] = folder_mb(work)
    walls = []
    for _ in range(3):
        start = time.perf_counter()
        search()
        walls.append(time.perf_counter() - start)
    out["queries_per_s"] = len(queries) / statistics.median(walls)
    out["peak_mb"] = peak_mb()
    out["load_after"] = os.getloadavg()
    print(json.dumps(out))
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    results[f"{args.system}/{corpus.name}"] = out
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


def table(_: argparse.Namespace) -> None:
    results = json.loads(RESULTS.read_text())
    print("| system | documents | build (wall / CPU) | peak RSS of build | index on disk | queries/s | load avg |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in sorted(results.values(), key=lambda r: (r["n_documents"], r["system"])):
        load = "–".join(f"{x:.1f}" for x in (r["load_before"][0], r["load_after"][0]))
        print(
            f"| {r['system']} | {r['n_documents']:,} | {r['build_s']:.0f} s / {r['build_cpu_s']:.0f} s "
            f"| {r['build_peak_mb']:,.0f} MB | {r['index_mb']:,.0f} MB | {r['queries_per_s']:.0f} | {load} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    corpus = sub.add_parser("corpus", help="write a corpus folder of N varied real passages")
    corpus.add_argument("--n", type=int, required=True)
    corpus.add_argument("--out", type=Path, required=True)
    corpus.set_defaults(fn=make_corpus)
    repeat = sub.add_parser("repeat", help="write a corpus folder of another one repeated under new ids")
    repeat.add_argument("--source", type=Path, required=True)
    repeat.add_argument("--times", type=int, required=True)
    repeat.add_argument("--out", type=Path, required=True)
    repeat.set_defaults(fn=repeat_corpus)
    one = sub.add_parser("run", help="build and query one system on one corpus (own process)")
    one.add_argument("system", choices=["stream", "memory", "bm25s", "tantivy"])
    one.add_argument("--corpus", type=Path, required=True)
    one.add_argument("--work", type=Path, required=True)
    one.add_argument("--memory-mb", type=int, default=1024)
    one.add_argument("--queries", type=int, default=1000)
    one.add_argument("--keep", action="store_true", help="keep the index folder")
    one.set_defaults(fn=run)
    sub.add_parser("table", help="print the results as Markdown").set_defaults(fn=table)
    args = parser.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
