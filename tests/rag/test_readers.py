from __future__ import annotations

import gzip
import json
import tracemalloc
from pathlib import Path

import pytest

from ebmeval._util.errors import DataError
from ebmeval.rag.corpus import FieldMap, _readers, read_csv, read_documents, read_jsonl, read_pubmed_xml, read_text_dir

ARTICLE = """  <PubmedArticle>
    <MedlineCitation Status="MEDLINE" Owner="NLM">
      <PMID Version="1">{pmid}</PMID>
      <Article PubModel="Print">
        <Journal><JournalIssue><PubDate>{date}</PubDate></JournalIssue><Title>BMJ</Title></Journal>
        <ArticleTitle>Trial of <i>drug</i> {pmid}</ArticleTitle>
        <Abstract>{abstract}</Abstract>
        <PublicationTypeList><PublicationType>Randomized Controlled Trial</PublicationType></PublicationTypeList>
      </Article>
      <MeshHeadingList><MeshHeading><DescriptorName>Humans</DescriptorName></MeshHeading></MeshHeadingList>
    </MedlineCitation>
    <PubmedData><ArticleIdList>
      <ArticleId IdType="pubmed">{pmid}</ArticleId><ArticleId IdType="pmc">PMC{pmid}</ArticleId>
    </ArticleIdList></PubmedData>
  </PubmedArticle>
"""
STRUCTURED = (
    '<AbstractText Label="BACKGROUND">Why &amp; how.</AbstractText>'
    '<AbstractText Label="RESULTS">It <b>worked</b>.</AbstractText>'
)


def pubmed_file(path: Path, articles: list[str]) -> Path:
    header = '<?xml version="1.0" ?>\n<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle//EN" "x.dtd">\n'
    text = header + "<PubmedArticleSet>\n" + "".join(articles) + "</PubmedArticleSet>\n"
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode("utf-8")))
    else:
        path.write_text(text, encoding="utf-8")
    return path


def article(pmid: str, abstract: str = STRUCTURED, date: str = "<Year>2019</Year>") -> str:
    return ARTICLE.format(pmid=pmid, abstract=abstract, date=date)


def test_pubmed_record_fields(tmp_path: Path) -> None:
    path = pubmed_file(tmp_path / "set.xml", [article("111")])
    [doc] = read_pubmed_xml(path)
    assert doc.id == "111"
    assert doc.title == "Trial of drug 111"
    assert doc.text == "BACKGROUND: Why & how.\n\nRESULTS: It worked."
    assert doc.metadata == {
        "pmid": "111",
        "year": 2019,
        "journal": "BMJ",
        "publication_types": ["Randomized Controlled Trial"],
        "pmcid": "PMC111",
        "mesh": ["Humans"],
    }


def test_pubmed_medline_date_and_unlabelled_abstract(tmp_path: Path) -> None:
    path = pubmed_file(
        tmp_path / "set.xml",
        [article("5", "<AbstractText>Plain text.</AbstractText>", "<MedlineDate>1998 Dec-1999 Jan</MedlineDate>")],
    )
    [doc] = read_pubmed_xml(path)
    assert doc.text == "Plain text."
    assert doc.metadata["year"] == 1998


def test_pubmed_broken_record_is_reported_and_rest_ingests(tmp_path: Path) -> None:
    broken = article("222").replace("</ArticleTitle>", "</ArticleTitl>")
    path = pubmed_file(tmp_path / "set.xml.gz", [article("111"), broken, article("333")])
    errors: list[DataError] = []
    docs = list(read_pubmed_xml(path, errors=errors))
    assert [d.id for d in docs] == ["111", "333"]
    [error] = errors
    assert "record 2 (PubmedArticle, PMID 222)" in str(error)
    assert "malformed XML" in str(error)
    # the header takes 3 lines and each article 15: record 2 starts on line 19, its title on line 24
    assert error.line == 24
    assert error.path == str(path)


def test_pubmed_unterminated_record_does_not_swallow_the_next(tmp_path: Path) -> None:
    cut = article("222").replace("  </PubmedArticle>\n", "")
    path = pubmed_file(tmp_path / "set.xml", [article("111"), cut, article("333")])
    errors: list[DataError] = []
    assert [d.id for d in read_pubmed_xml(path, errors=errors)] == ["111", "333"]
    assert len(errors) == 1 and "PMID 222" in str(errors[0])


def test_pubmed_record_without_pmid_and_strict_mode(tmp_path: Path) -> None:
    path = pubmed_file(tmp_path / "set.xml", [article("").replace('<PMID Version="1"></PMID>', ""), article("9")])
    errors: list[DataError] = []
    assert [d.id for d in read_pubmed_xml(path, errors=errors)] == ["9"]
    assert "record 1" in str(errors[0]) and "no PMID" in str(errors[0])
    with pytest.raises(DataError, match="no PMID"):
        list(read_pubmed_xml(path))


def test_pubmed_records_without_abstract(tmp_path: Path) -> None:
    path = pubmed_file(tmp_path / "set.xml", [article("1", abstract=""), article("2")])
    assert [d.id for d in read_pubmed_xml(path)] == ["2"]
    titled = list(read_pubmed_xml(path, require_abstract=False))
    assert titled[0].text == "Trial of drug 1"


def test_pubmed_streaming_memory_stays_flat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_readers, "_CHUNK", 1 << 15)
    abstract = "<AbstractText>" + "Randomised evidence on outcomes. " * 30 + "</AbstractText>"

    def peak_for(n: int) -> int:
        path = pubmed_file(tmp_path / f"set{n}.xml.gz", [article(str(i), abstract) for i in range(n)])
        tracemalloc.start()
        count = sum(1 for _ in read_pubmed_xml(path))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert count == n
        return peak

    small, large = peak_for(200), peak_for(2000)
    # both files exceed the 32 KiB read size; ten times the records (3 MB of XML) needs no more memory
    assert large < small * 1.2


def test_jsonl_field_mapping_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    lines = [
        {"pmid": 1, "abstract": "Alpha.", "title": "A", "year": "2001 Jan", "journal": "J"},
        "not json",
        {"pmid": 2, "title": "no text"},
        {"pmid": 3, "abstract": ["Part one.", "Part two."], "year": None},
    ]
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n\n")
    fields = FieldMap(id="pmid", text="abstract", year="year", metadata=("journal",))
    errors: list[DataError] = []
    docs = list(read_jsonl(path, fields, errors=errors))
    assert [(d.id, d.text, d.title, d.metadata) for d in docs] == [
        ("1", "Alpha.", "A", {"journal": "J", "year": 2001}),
        ("3", "Part one.\n\nPart two.", None, {}),
    ]
    assert [e.line for e in errors] == [2, 3]
    assert "invalid JSON" in str(errors[0]) and "no text" in str(errors[1])
    with pytest.raises(DataError, match=r"a\.jsonl:2"):
        list(read_jsonl(path, fields))


def test_csv_with_multiline_field_and_ragged_row(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text('doc,body,heading\nx1,"first\nsecond",T1\nx2,b,T2,extra\nx3,c,T3\n')
    errors: list[DataError] = []
    docs = list(read_csv(path, FieldMap(id="doc", text="body", title="heading"), errors=errors))
    assert [(d.id, d.text, d.title) for d in docs] == [("x1", "first\nsecond", "T1"), ("x3", "c", "T3")]
    assert errors[0].line == 4 and "more fields" in str(errors[0])


def test_csv_row_over_the_field_limit_is_skipped_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text(f"doc,body\nx1,a\nx2,{'y' * 140_000}\nx3,c\n")
    errors: list[DataError] = []
    docs = list(read_csv(path, FieldMap(id="doc", text="body"), errors=errors))
    assert [d.id for d in docs] == ["x1", "x3"]
    assert [e.line for e in errors] == [3] and "invalid CSV (field larger than field limit" in str(errors[0])


def test_csv_missing_column_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text("id,body\n1,x\n")
    with pytest.raises(DataError, match="lacks column"):
        list(read_csv(path, FieldMap()))


def test_text_dir(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "b.txt").write_text("Bee.\n")
    (tmp_path / "sub" / "a.txt").write_text("Ay.")
    (tmp_path / "empty.txt").write_text("  ")
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe\xfa")
    errors: list[DataError] = []
    docs = list(read_text_dir(tmp_path, errors=errors))
    assert [(d.id, d.text) for d in docs] == [("b", "Bee."), ("sub/a", "Ay.")]
    assert sorted(Path(e.path).name for e in errors) == ["bad.txt", "empty.txt"]


def test_read_documents_detects_format(tmp_path: Path) -> None:
    (tmp_path / "x.jsonl").write_text('{"id": "1", "text": "t"}\n')
    assert [d.id for d in read_documents(tmp_path / "x.jsonl")] == ["1"]
    (tmp_path / "x.parquet").touch()
    with pytest.raises(DataError, match="cannot tell the format"):
        read_documents(tmp_path / "x.parquet")
    with pytest.raises(DataError, match="no such file"):
        read_documents(tmp_path / "missing.xml")
