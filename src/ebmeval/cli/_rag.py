"""``ebmeval corpus``, ``index``, ``search`` and ``retrieval-eval``: retrieval over medical corpora."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from ._common import JsonOption, QuietOption, app, console, key_values

corpus_app = typer.Typer(help="Document corpora for retrieval.", no_args_is_help=True)
app.add_typer(corpus_app, name="corpus")
index_app = typer.Typer(help="Retrieval indexes over a corpus.", no_args_is_help=True)
app.add_typer(index_app, name="index")


@corpus_app.command("ingest")
def corpus_ingest(
    sources: Annotated[
        list[Path] | None, typer.Argument(help="JSONL, CSV, PubMed XML (.gz too) or text folders.")
    ] = None,
    out: Annotated[Path, typer.Option(help="Corpus folder to write.")] = Path("corpus"),
    builtin: Annotated[
        str | None, typer.Option(help="A built-in corpus instead (pubmedqa-contexts, bioasq-snippets, …).")
    ] = None,
    data_root: Annotated[Path | None, typer.Option(help="Folder holding the built-in corpora's source files.")] = None,
    id_field: Annotated[str, typer.Option(help="JSONL/CSV field with the document id.")] = "id",
    text_field: Annotated[list[str] | None, typer.Option("--text-field", help="Field(s) with the text.")] = None,
    title_field: Annotated[str | None, typer.Option(help="Field with the title.")] = "title",
    chunk_by: Annotated[
        str | None, typer.Option(help="paragraph, section, tokens or characters (recursive splitter, any language).")
    ] = None,
    chunk_size: Annotated[
        int, typer.Option(help="Most tokens per chunk (characters with --chunk-by characters).")
    ] = 200,
    chunk_overlap: Annotated[int, typer.Option(help="Tokens (characters) shared by consecutive chunks.")] = 50,
    keep_duplicate_texts: Annotated[bool, typer.Option(help="Keep documents whose text repeats another's.")] = False,
) -> None:
    """Read documents (streamed), drop duplicates, chunk, and write a corpus folder."""
    from .._util.errors import ConfigError
    from ..rag import Chunking, FieldMap, Source, ingest, ingest_builtin

    chunking = None
    if chunk_by is not None:
        if chunk_by not in ("paragraph", "section", "tokens", "characters"):
            raise ConfigError("--chunk-by", f"must be paragraph, section, tokens or characters, not {chunk_by!r}")
        chunking = Chunking(by=chunk_by, size=chunk_size, overlap=chunk_overlap)
    duplicates: Literal["drop", "keep"] = "keep" if keep_duplicate_texts else "drop"
    if builtin is not None:
        if data_root is None:
            raise ConfigError("--data-root", "a built-in corpus is read from its source files: give --data-root")
        if sources:
            raise ConfigError("sources", "give files or folders, or --builtin NAME, not both")
        stats = ingest_builtin(builtin, data_root, out, chunking=chunking, duplicate_texts=duplicates)
    elif not sources:
        raise ConfigError("sources", "give files or folders to ingest, or --builtin NAME")
    else:
        fields = FieldMap(id=id_field, text=tuple(text_field) if text_field else "text", title=title_field)
        inputs = [Source(path=p, fields=fields) for p in sources]
        stats = ingest(inputs, out, chunking=chunking, duplicate_texts=duplicates)
    console.print(
        f"{stats.documents_read:,} read, {stats.documents_kept:,} kept, {stats.chunks:,} chunks, "
        f"{stats.duplicate_ids:,} duplicate ids, {stats.duplicate_texts:,} duplicate texts, "
        f"{len(stats.errors)} errors → {out} ({stats.seconds:.1f} s)"
    )
    for issue in stats.errors[:20]:
        console.print(f"[yellow]skipped[/] {issue}")
    if not stats.documents_kept:
        console.print("[red]no document was kept[/]: check the sources and --id-field/--text-field")
        raise typer.Exit(1)


@index_app.command("build")
def index_build(
    corpus: Annotated[Path, typer.Argument(help="Corpus folder (from `ebmeval corpus ingest`).")],
    out: Annotated[Path, typer.Option(help="Index folder to write.")],
    retriever: Annotated[str, typer.Option(help="bm25, dense/minilm or hybrid.")] = "bm25",
    option: Annotated[list[str] | None, typer.Option("--option", help="Retriever option KEY=VALUE.")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing index.")] = False,
    engine: Annotated[str, typer.Option(help="local, or ray: encode dense shards on a Ray cluster.")] = "local",
    ray_address: Annotated[
        str | None, typer.Option(help="Ray cluster to join (default: start a local Ray runtime).")
    ] = None,
    workers: Annotated[int | None, typer.Option(help="Encoder actors (ray; default one per GPU, else CPU).")] = None,
    quiet: QuietOption = False,
) -> None:
    """Build a persistent index (arrays plus a manifest naming the corpus by path and hash) over a corpus.

    A dense build that was interrupted continues from its last finished shard when run again; it
    shows the documents encoded on stderr.
    """
    from .._util.errors import ConfigError
    from ..rag import build_index
    from ._display import ProgressBar

    if engine not in ("local", "ray"):
        raise ConfigError("--engine", f"must be local or ray, not {engine!r}")
    with ProgressBar(f"encoding {corpus.name}", unit="documents", calls=False, quiet=quiet) as bar:
        manifest = build_index(
            corpus,
            out,
            retriever,
            overwrite=overwrite,
            engine="ray" if engine == "ray" else "local",
            ray_address=ray_address,
            ray_workers=workers,
            progress=bar.count,
            **_retriever_options(option),
        )
    console.print(
        f"built {manifest.retriever} index of {manifest.corpus.n_documents:,} documents at {out} "
        f"({(manifest.disk_bytes or 0) / 2**10:,.0f} KiB on disk)"
    )
    for key, value in manifest.report.items():
        console.print(f"  {key}: {value}")


def _retriever_options(items: list[str] | None) -> dict[str, Any]:
    """``--option KEY=VALUE`` of ``index build``; a KEY naming an argument of ``build_index`` is refused."""
    import inspect

    from .._util.errors import ConfigError
    from ..rag import build_index

    options = key_values(items, "--option")
    for key in options:
        parameter = inspect.signature(build_index).parameters.get(key)
        if parameter is not None and parameter.kind is not parameter.VAR_KEYWORD:
            raise ConfigError(f"retriever.{key}", "not a retriever option: the index build itself takes it")
    return options


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="The query.")],
    index: Annotated[Path, typer.Option(help="Index folder.")],
    k: Annotated[int, typer.Option(help="Documents to return.")] = 10,
    rerank: Annotated[
        Path | None, typer.Option(help="Reorder the first --depth hits with this local cross-encoder folder.")
    ] = None,
    depth: Annotated[int, typer.Option(help="Candidates retrieved for --rerank.")] = 50,
    as_json: JsonOption = False,
) -> None:
    """Search an index."""
    import asyncio

    from ..rag import CrossEncoderReranker
    from ..rag import search as run_search

    hits = run_search(index, query, k=max(k, depth) if rerank else k)
    if rerank is not None:
        hits = asyncio.run(CrossEncoderReranker(rerank, top_n=depth).rerank(query, hits, k))
    if as_json:
        typer.echo(json.dumps([h.model_dump() for h in hits], indent=2))
        return
    for hit in hits:
        title = f"{hit.document.title} — " if hit.document.title else ""
        snippet = " ".join(hit.document.text.split())[:160]
        typer.echo(f"{hit.rank:>3}. [{hit.score:.3f}] {hit.document.id}  {title}{snippet}")


@app.command("retrieval-eval")
def retrieval_eval(
    benchmark: Annotated[
        list[str] | None, typer.Option("--benchmark", help="pubmedqa, bioasq or m3 (repeatable).")
    ] = None,
    data_root: Annotated[Path | None, typer.Option(help="Folder with the benchmarks' source data.")] = None,
    retriever: Annotated[list[str] | None, typer.Option("--retriever", help="bm25, dense/minilm, hybrid.")] = None,
    index: Annotated[
        list[Path] | None, typer.Option("--index", help="Your own index folder, judged by --qrels (repeatable).")
    ] = None,
    qrels: Annotated[
        Path | None, typer.Option(help='JSONL of {"id", "query", "relevant": [document ids]} for --index.')
    ] = None,
    n_noise: Annotated[int, typer.Option(help="Distractor documents added to each corpus.")] = 2000,
    n_queries: Annotated[int | None, typer.Option(help="Use only the first N queries.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the distractor sample.")] = 0,
) -> None:
    """Recall@k, precision@k, MRR and nDCG@k of retrievers on built-in benchmarks, or of your indexes on your qrels."""
    from .._util.errors import ConfigError
    from ..rag import evaluate_retrieval, get_retriever, load_benchmark, load_index, qrels_benchmark, retrieval_table

    if not benchmark and not index:
        raise ConfigError("--benchmark", "name a built-in benchmark, or give --index with --qrels")
    if index and qrels is None:
        raise ConfigError("--qrels", "an index is judged against your relevance judgments: give --qrels FILE")
    if benchmark and data_root is None:
        raise ConfigError("--data-root", "the built-in benchmarks are read from their source data: give --data-root")
    reports = []
    for name in benchmark or []:
        assert data_root is not None
        bench = load_benchmark(name, data_root, n_noise=n_noise, seed=seed, n_queries=n_queries)
        for kind in retriever or ["bm25"]:
            built = get_retriever(kind, list(bench.documents))
            reports.append(evaluate_retrieval(built, bench, name=kind))
    if index:
        assert qrels is not None
        judged = qrels_benchmark(qrels)
        if n_queries is not None:
            judged = judged.model_copy(update={"queries": judged.queries[:n_queries]})
        for folder in index:
            reports.append(evaluate_retrieval(load_index(folder), judged, name=str(folder)))
    typer.echo(retrieval_table(reports).markdown(title=False), nl=False)
