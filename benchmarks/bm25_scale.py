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

Memory against the number of distinct terms, one code version against another (each build and
each query start-up in its own process; ``--before``/``--after`` are ``src`` folders)::

    python benchmarks/bm25_scale.py corpus --n 200000 --out /tmp/bm25-vocab/terms-0.1m
    python benchmarks/bm25_scale.py corpus --n 200000 --unique-words 5 --out /tmp/bm25-vocab/terms-1.1m
    mkdir -p /tmp/bm25-before && git archive main src | tar -x -C /tmp/bm25-before
    python benchmarks/bm25_scale.py vocab --before /tmp/bm25-before/src --after src \
        --corpus /tmp/bm25-vocab/terms-0.1m --corpus /tmp/bm25-vocab/terms-1.1m --work /tmp/bm25-vocab
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
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


def with_unique_words(documents: Iterator[Any], per_document: int) -> Iterator[Any]:
    """The documents, each ending in ``per_document`` words that occur in no other document."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    for i, document in enumerate(documents):
        words = []
        for j in range(per_document):
            n, word = i * per_document + j, ""
            while True:
                n, digit = divmod(n, 26)
                word += letters[digit]
                if not n:
                    break
            words.append("qz" + word)  # letters only: the stemmer leaves such words distinct
        yield document.model_copy(update={"text": f"{document.text} {' '.join(words)}"})


def make_corpus(args: argparse.Namespace) -> None:
    from ebmeval.rag.corpus import write_store

    start = time.perf_counter()
    documents = with_unique_words(varied(args.n), args.unique_words) if args.unique_words else varied(args.n)
    store = write_store(documents, args.out, {"benchmark": "bm25_scale", "n": args.n, "unique": args.unique_words})
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


def vocab_one(args: argparse.Namespace) -> None:
    """One step of ``vocab`` in this process (the code on ``PYTHONPATH``): a build or a query start-up."""
    from ebmeval.rag import build_index, load_index
    from ebmeval.rag.index import read_manifest

    start = time.perf_counter()
    out: dict[str, Any]
    if args.step == "build":
        build_index(args.corpus, args.index, "bm25", memory_mb=args.memory_mb, overwrite=True)
        out = {"build_s": time.perf_counter() - start, "build_peak_mb": peak_mb(), "index_mb": folder_mb(args.index)}
        out["n_terms"] = read_manifest(args.index).arrays["indptr.csc.index.npy"].shape[0] - 1
    else:
        retriever = load_index(args.index)
        retriever.retrieve(queries_of(DATA, 1)[:1], 10)
        out = {"start_s": time.perf_counter() - start, "start_peak_mb": peak_mb()}
        queries = queries_of(DATA, args.queries)
        start = time.perf_counter()
        retriever.retrieve(queries, 10)
        out["queries_per_s"] = len(queries) / (time.perf_counter() - start)
        out["query_peak_mb"] = peak_mb()
    print(json.dumps(out))


def vocab(args: argparse.Namespace) -> None:
    """Build and query each corpus with the ``before`` and the ``after`` code, then print the table."""
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    for corpus in args.corpus:
        for version, src in (("before", args.before), ("after", args.after)):
            index = Path(args.work) / f"vocab-{version}-{corpus.name}"
            row: dict[str, Any] = {"corpus": corpus.name, "version": version, "memory_mb": args.memory_mb}
            row["load_before"] = os.getloadavg()
            for step in ("build", "query"):
                command = [sys.executable, __file__, "vocab-one", step, "--corpus", str(corpus), "--index", str(index)]
                command += ["--memory-mb", str(args.memory_mb), "--queries", str(args.queries)]
                env = {**os.environ, "PYTHONPATH": str(Path(src).resolve())}
                done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
                row.update(json.loads(done.stdout.strip().splitlines()[-1]))
            row["load_after"] = os.getloadavg()
            print(json.dumps(row), flush=True)
            results[f"vocab/{version}/{corpus.name}"] = row
            shutil.rmtree(index, ignore_errors=True)
    RESULTS.write_text(json.dumps(results, indent=2))
    vocab_table(args)


def versus(before: dict[str, Any], after: dict[str, Any], key: str, unit: str, digits: int = 0) -> str:
    """``before → after unit (× ratio)`` of one measurement."""
    return f"{before[key]:,.{digits}f} → {after[key]:,.{digits}f} {unit} (× {after[key] / before[key]:.2f})"


def vocab_table(_: argparse.Namespace) -> None:
    results = json.loads(RESULTS.read_text())
    rows = {k.split("/", 1)[1]: r for k, r in results.items() if k.startswith("vocab/")}
    print(
        "| corpus | distinct terms | build peak RSS before → after | query start-up peak RSS before → after "
        "| start-up time before → after | index on disk before → after |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for name in sorted({r["corpus"] for r in rows.values()}):
        b, a = rows.get(f"before/{name}"), rows.get(f"after/{name}")
        if b is None or a is None:
            continue

        print(
            f"| {name} | {a['n_terms']:,} | {versus(b, a, 'build_peak_mb', 'MB')} "
            f"| {versus(b, a, 'start_peak_mb', 'MB')} "
            f"| {versus(b, a, 'start_s', 's', 2)} | {versus(b, a, 'index_mb', 'MB')} |"
        )


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
    corpus.add_argument("--unique-words", type=int, default=0, help="words per document found in no other")
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
    versions = sub.add_parser("vocab", help="build and query peak memory, one code version against another")
    versions.add_argument("--before", type=Path, required=True, help="src folder of the earlier code")
    versions.add_argument("--after", type=Path, required=True, help="src folder of the later code")
    versions.add_argument("--corpus", type=Path, action="append", required=True)
    versions.add_argument("--work", type=Path, required=True)
    versions.add_argument("--memory-mb", type=int, default=16)
    versions.add_argument("--queries", type=int, default=200)
    versions.set_defaults(fn=vocab)
    step = sub.add_parser("vocab-one", help="one build or query start-up of `vocab` (own process)")
    step.add_argument("step", choices=["build", "query"])
    step.add_argument("--corpus", type=Path, required=True)
    step.add_argument("--index", type=Path, required=True)
    step.add_argument("--memory-mb", type=int, default=16)
    step.add_argument("--queries", type=int, default=200)
    step.set_defaults(fn=vocab_one)
    sub.add_parser("vocab-table", help="print the `vocab` results as Markdown").set_defaults(fn=vocab_table)
    args = parser.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
