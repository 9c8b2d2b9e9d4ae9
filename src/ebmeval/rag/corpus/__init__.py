"""Corpora: streaming readers, chunking, duplicate detection, on-disk storage and built-in loaders."""

from ._builtin import (
    bioasq_snippets,
    builtin_corpus,
    corpora,
    deduplicate,
    evidence_inference_abstracts,
    medquad_answers,
    pubmed_abstracts,
    pubmedqa_contexts,
)
from ._chunk import Chunking, chunk_document, paragraph_spans
from ._ingest import CorpusStats, Duplicate, DuplicateFilter, IngestIssue, Source, SourceStats, ingest, iter_chunks
from ._noise import NoiseCorpus, noise_corpus
from ._readers import (
    FieldMap,
    Format,
    read_csv,
    read_documents,
    read_jsonl,
    read_pubmed_xml,
    read_text_dir,
)
from ._store import (
    CORPUS_FILE,
    DOCUMENTS_FILE,
    OFFSETS_FILE,
    CorpusFingerprint,
    DocumentStore,
    corpus_fingerprint,
    load_corpus,
    write_store,
)

__all__ = [
    "CORPUS_FILE",
    "DOCUMENTS_FILE",
    "OFFSETS_FILE",
    "Chunking",
    "CorpusFingerprint",
    "CorpusStats",
    "DocumentStore",
    "Duplicate",
    "DuplicateFilter",
    "FieldMap",
    "Format",
    "IngestIssue",
    "NoiseCorpus",
    "Source",
    "SourceStats",
    "bioasq_snippets",
    "builtin_corpus",
    "chunk_document",
    "corpora",
    "corpus_fingerprint",
    "deduplicate",
    "evidence_inference_abstracts",
    "ingest",
    "iter_chunks",
    "load_corpus",
    "medquad_answers",
    "noise_corpus",
    "paragraph_spans",
    "pubmed_abstracts",
    "pubmedqa_contexts",
    "read_csv",
    "read_documents",
    "read_jsonl",
    "read_pubmed_xml",
    "read_text_dir",
    "write_store",
]
