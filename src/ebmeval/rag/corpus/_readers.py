"""Streaming readers: JSONL, CSV, PubMed/MEDLINE XML and folders of text files → :class:`Document`.

Every reader is a generator that holds one record at a time, so memory stays flat
however large the input. A record that cannot be read raises :class:`DataError`
naming the file and line, or, when an ``errors`` list is given, is appended to it
and skipped so the rest of the file still ingests.
"""

from __future__ import annotations

import csv
import functools
import gzip
import io
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict

from ..._util.csvrows import numbered_rows
from ..._util.errors import DataError
from ...tasks import Document
from ...tasks import read_jsonl as read_records

Format = Literal["jsonl", "csv", "pubmed-xml", "text-dir"]


class FieldMap(BaseModel):
    """Which fields of a JSONL/CSV record make up a :class:`Document`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = "id"
    """Field holding the document id (PMID, PMCID …)."""
    text: str | tuple[str, ...] = "text"
    """Field(s) holding the passage; several fields, or a list value, are joined by blank lines."""
    title: str | None = "title"
    """Field holding the title, if any."""
    year: str | None = None
    """Field holding the publication year, if any (stored as ``metadata["year"]``)."""
    metadata: tuple[str, ...] = ()
    """Further fields copied into ``Document.metadata``."""


def _utf8_only(reader: Callable[..., Iterator[Document]]) -> Callable[..., Iterator[Document]]:
    """Report a file that is not UTF-8 as a ``DataError`` naming it, not a ``UnicodeDecodeError``."""

    @functools.wraps(reader)
    def read(path: Path, *args: Any, **kwargs: Any) -> Iterator[Document]:
        try:
            yield from reader(path, *args, **kwargs)
        except UnicodeDecodeError as exc:
            raise DataError(path, f"not UTF-8 text ({exc.reason}); convert the file to UTF-8") from None

    return read


def open_text(path: Path) -> IO[str]:
    """Open a text file for reading as UTF-8, transparently decompressing ``.gz``."""
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def detect_format(path: Path) -> Format:
    """The format of ``path`` from its suffix (``.jsonl``, ``.csv``, ``.xml``, optionally ``.gz``) or a folder."""
    if path.is_dir():
        return "text-dir"
    name = path.name.lower().removesuffix(".gz")
    if name.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if name.endswith(".csv"):
        return "csv"
    if name.endswith(".xml"):
        return "pubmed-xml"
    raise DataError(path, "cannot tell the format from the name; pass format='jsonl'|'csv'|'pubmed-xml'|'text-dir'")


def read_documents(
    path: str | Path,
    *,
    format: Format | None = None,
    fields: FieldMap | None = None,
    errors: list[DataError] | None = None,
) -> Iterator[Document]:
    """Stream the documents of one source, dispatching on ``format`` (detected from the name when omitted)."""
    source = Path(path)
    if not source.exists():
        raise DataError(source, "no such file or folder")
    kind = format or detect_format(source)
    if kind == "jsonl":
        return read_jsonl(source, fields or FieldMap(), errors=errors)
    if kind == "csv":
        return read_csv(source, fields or FieldMap(), errors=errors)
    if kind == "pubmed-xml":
        return read_pubmed_xml(source, errors=errors)
    return read_text_dir(source, errors=errors)


def _fail(error: DataError, errors: list[DataError] | None) -> None:
    if errors is None:
        raise error
    errors.append(error)


def record_to_document(record: Mapping[str, Any], fields: FieldMap, path: Path, line: int) -> Document:
    """Map one parsed record to a :class:`Document`; raises :class:`DataError` for a missing id or text."""
    raw_id = record.get(fields.id)
    if raw_id is None or str(raw_id).strip() == "":
        raise DataError(path, "record has no id", line=line, field=fields.id)
    names = (fields.text,) if isinstance(fields.text, str) else fields.text
    parts: list[str] = []
    for name in names:
        value = record.get(name)
        if isinstance(value, list):
            parts.extend(str(v).strip() for v in value if v is not None and str(v).strip())
        elif value is not None and str(value).strip():
            parts.append(str(value).strip())
    if not parts:
        raise DataError(path, "record has no text", line=line, field="/".join(names), value=str(raw_id))
    title = record.get(fields.title) if fields.title else None
    metadata = {name: record[name] for name in fields.metadata if name in record}
    if fields.year:
        year = parse_year(record.get(fields.year))
        if year is not None:
            metadata["year"] = year
    return Document(
        id=str(raw_id).strip(),
        text="\n\n".join(parts),
        title=(str(title).strip() or None) if title is not None else None,
        metadata=metadata,
    )


def parse_year(value: object) -> int | None:
    """The first four-digit year (1000–2999) in ``value``, or ``None``."""
    if value is None:
        return None
    found = re.search(r"\b([12]\d{3})\b", str(value))
    return int(found.group(1)) if found else None


@_utf8_only
def read_jsonl(path: Path, fields: FieldMap, *, errors: list[DataError] | None = None) -> Iterator[Document]:
    """Documents from a JSON Lines file (optionally ``.gz``), one object a line; blank lines are skipped.

    Lines are read by the package's one JSONL reader (:func:`ebmeval.tasks.read_jsonl`).
    """
    for line_no, record in read_records(path, errors=errors):
        try:
            yield record_to_document(record, fields, path, line_no)
        except DataError as exc:
            _fail(exc, errors)


@_utf8_only
def read_csv(path: Path, fields: FieldMap, *, errors: list[DataError] | None = None) -> Iterator[Document]:
    """Documents from a CSV file with a header row (optionally ``.gz``); line numbers count physical lines."""
    with open_text(path) as handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames is None:
            return
        needed = [fields.id, *((fields.text,) if isinstance(fields.text, str) else fields.text)]
        missing = [name for name in needed if name not in reader.fieldnames]
        if missing:
            raise DataError(path, f"header lacks column(s) {missing}; columns are {reader.fieldnames}", line=1)
        for start, row in numbered_rows(reader):
            if isinstance(row, csv.Error):
                _fail(DataError(path, f"invalid CSV ({row})", line=start), errors)
                continue
            if None in row:
                _fail(
                    DataError(path, f"row has more fields than the header ({len(reader.fieldnames)})", line=start),
                    errors,
                )
                continue
            try:
                yield record_to_document(row, fields, path, start)
            except DataError as exc:
                _fail(exc, errors)


@_utf8_only
def read_text_dir(
    path: Path, *, pattern: str = "**/*.txt", errors: list[DataError] | None = None
) -> Iterator[Document]:
    """One document per text file under ``path`` (sorted); the id is the relative path without suffix."""
    for file in sorted(path.glob(pattern)):
        if not file.is_file():
            continue
        try:
            text = file.read_text(encoding="utf-8").strip()
        except UnicodeDecodeError as exc:
            _fail(DataError(file, f"not UTF-8 text (byte {exc.start})"), errors)
            continue
        if not text:
            _fail(DataError(file, "file is empty"), errors)
            continue
        doc_id = file.relative_to(path).with_suffix("").as_posix()
        yield Document(id=doc_id, text=text, metadata={"file": file.name})


# --- PubMed / MEDLINE XML -------------------------------------------------------------------------

_RECORD_START = re.compile(r"<(PubmedArticle|PubmedBookArticle)[\s>]")
_PMID = re.compile(r"<PMID[^>]*>\s*(\d+)\s*</PMID>")
_CHUNK = 1 << 20


def _xml_records(handle: IO[str]) -> Iterator[tuple[int, int, str, str]]:
    """Yield ``(record number, start line, tag, raw XML)`` of each top-level record, one at a time.

    Records are cut at their start and end tags and parsed one by one, so a record that is
    not well-formed costs only itself: a single ``iterparse`` over the file would stop at it.
    At most one read chunk plus one record is held in memory.
    """
    buffer = ""
    pos = 0  # where the unread part of the buffer starts
    line = 1  # line number at ``pos``
    number = 0
    eof = False
    while True:
        match = _RECORD_START.search(buffer, pos)
        if match is not None:
            tag = match.group(1)
            end_tag = f"</{tag}>"
            end = buffer.find(end_tag, match.end())
            following = _RECORD_START.search(buffer, match.end())
            stop = -1
            if following is not None and (end == -1 or following.start() < end):
                stop = following.start()  # unterminated: it ends where the next record starts
            elif end != -1:
                stop = end + len(end_tag)
            elif eof:
                stop = len(buffer)
            if stop != -1:
                number += 1
                line += buffer.count("\n", pos, match.start())
                yield number, line, tag, buffer[match.start() : stop]
                line += buffer.count("\n", match.start(), stop)
                pos = stop
                continue
            keep = match.start()
        elif eof:
            return
        else:
            keep = max(pos, len(buffer) - 32)  # a start tag may straddle two reads
        line += buffer.count("\n", pos, keep)
        chunk = handle.read(_CHUNK)
        eof = not chunk
        buffer = buffer[keep:] + chunk
        pos = 0


def _text(element: ET.Element | None) -> str:
    return " ".join("".join(element.itertext()).split()) if element is not None else ""


def pubmed_record_to_document(element: ET.Element) -> Document:
    """Map a parsed ``<PubmedArticle>`` to a :class:`Document`.

    The text is the abstract, one paragraph per ``AbstractText`` with its label
    (``"METHODS: …"``) so section chunking can find it. Metadata keeps ``pmid``,
    ``pmcid``, ``doi``, ``year``, ``journal``, ``mesh`` and ``publication_types``.
    Raises ``ValueError`` when the record has no PMID.
    """
    citation = element.find("MedlineCitation")
    if citation is None:
        citation = element.find("BookDocument")
    pmid = _text(citation.find("PMID")) if citation is not None else ""
    if not pmid:
        raise ValueError("record has no PMID")
    article = citation.find("Article") if citation is not None else None
    title = _text(article.find("ArticleTitle")) if article is not None else ""
    if not title and citation is not None:
        title = _text(citation.find("Book/BookTitle"))
    abstract = element.find(".//Abstract")
    paragraphs: list[str] = []
    if abstract is not None:
        for part in abstract.findall("AbstractText"):
            body = _text(part)
            if not body:
                continue
            label = part.get("Label")
            paragraphs.append(f"{label.upper()}: {body}" if label else body)
    metadata: dict[str, Any] = {"pmid": pmid}
    year = None
    if article is not None:
        year = parse_year(_text(article.find("Journal/JournalIssue/PubDate/Year"))) or parse_year(
            _text(article.find("Journal/JournalIssue/PubDate/MedlineDate"))
        )
        year = year or parse_year(_text(article.find("ArticleDate/Year")))
        journal = _text(article.find("Journal/Title"))
        if journal:
            metadata["journal"] = journal
        types = [_text(t) for t in article.findall("PublicationTypeList/PublicationType")]
        if types:
            metadata["publication_types"] = types
    if year is not None:
        metadata["year"] = year
    for article_id in element.findall("PubmedData/ArticleIdList/ArticleId"):
        id_type = article_id.get("IdType")
        if id_type in ("pmc", "doi") and article_id.text:
            metadata["pmcid" if id_type == "pmc" else "doi"] = article_id.text.strip()
    mesh = [_text(d) for d in element.findall(".//MeshHeadingList/MeshHeading/DescriptorName")]
    if mesh:
        metadata["mesh"] = mesh
    return Document(id=pmid, text="\n\n".join(paragraphs), title=title or None, metadata=metadata)


@_utf8_only
def read_pubmed_xml(
    path: Path, *, require_abstract: bool = True, errors: list[DataError] | None = None
) -> Iterator[Document]:
    """Documents from a PubMed/MEDLINE ``PubmedArticleSet`` file (plain or ``.gz``, as in the baseline files).

    Each ``PubmedArticle`` (and ``PubmedBookArticle``) is parsed on its own; a broken
    one is reported as ``DataError(path, "record N (PMID …): …", line=start line)``
    and the rest of the file still ingests. Records without an abstract are skipped
    silently when ``require_abstract`` (the usual case for retrieval corpora), and kept
    with the title as text otherwise.
    """
    with open_text(path) as handle:
        for number, line, tag, raw in _xml_records(handle):
            found = _PMID.search(raw)
            where = f"record {number} ({tag}{', PMID ' + found.group(1) if found else ''})"
            try:
                element = ET.fromstring(raw)
            except ET.ParseError as exc:
                row, column = exc.position
                _fail(DataError(path, f"{where}: malformed XML ({_xml_reason(exc)})", line=line + row - 1), errors)
                continue
            try:
                document = pubmed_record_to_document(element)
            except ValueError as exc:
                _fail(DataError(path, f"{where}: {exc}", line=line), errors)
                continue
            if not document.text:
                if require_abstract:
                    continue
                if document.title is None:
                    _fail(DataError(path, f"{where}: record has neither title nor abstract", line=line), errors)
                    continue
                document = document.model_copy(update={"text": document.title})
            yield document


def _xml_reason(exc: ET.ParseError) -> str:
    message = str(exc)
    return message.split(":")[0] if ":" in message else message
