"""The readers of PDF, HTML, DOCX and ODT files (issue 34): reading order, pages and sections,
the source every chunk cites, and one clear line for each kind of bad file. Files are written
by the libraries made for them (tests/support/documents.py); real ones are Debian's manuals
under /usr/share/doc."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kgdb.documents.chunking import chunk_document
from kgdb.documents.formats import DEFAULT_MAX_DOCUMENT_BYTES, read_rich_document
from kgdb.documents.pipeline import DocumentOptions, _hash
from kgdb.documents.readers import read_documents
from kgdb.errors import LoadError
from tests.support import documents as made

LIBTASN1 = Path("/usr/share/doc/libtasn1-doc/libtasn1.pdf")
MIME_HTML = Path("/usr/share/doc/shared-mime-info/shared-mime-info-spec.html/x34.html")
FFI_HTML = Path("/usr/share/doc/libffi8/html/Closure-Example.html")


def test_a_two_column_pdf_reads_column_by_column_and_knows_its_pages(tmp_path: Path) -> None:
    doc = read_rich_document(made.two_column_pdf(tmp_path / "varna.pdf"), "varna.pdf")
    assert (doc.id, doc.title, doc.meta) == ("varna.pdf", "Lake Varna Field Guide",
                                             {"format": "pdf", "pages": 3})
    texts = [s.text for s in doc.sections]
    # the left column whole, then the right one: never a line of each side by side
    assert texts[:6] == made.LEFT + made.RIGHT
    assert [s.page for s in doc.sections[:6]] == [1] * 6
    assert texts[6:8] == made.PAGE2 and {s.page for s in doc.sections[6:8]} == {2}
    # the running header and the page numbers are on every page: left out
    assert not any(made.HEADER in t or t.strip().isdigit() for t in texts)
    chunks = chunk_document(doc)
    assert [c.source for c in chunks] == ["varna.pdf p. 1", "varna.pdf p. 2", "varna.pdf p. 3"]
    assert [c.pages for c in chunks] == [(1,), (2,), (3,)]


def test_a_real_manual_pdf() -> None:
    if not LIBTASN1.exists():
        pytest.skip("Debian's libtasn1-doc is not installed")
    doc = read_rich_document(LIBTASN1, "libtasn1.pdf")
    assert doc.meta["pages"] >= 30
    chunks = chunk_document(doc)
    found = [c for c in chunks if "asn1_create_element" in c.text and "Creates a structure"
             in c.text]
    assert found and all(c.source == f"libtasn1.pdf p. {c.pages[0]}" for c in found)
    # the ligatures of the typesetter are folded: "ﬁ" is "fi"
    assert not any("\ufb01" in c.text for c in chunks)
    # a glyph its font maps to no character (the © of "Copyright ©") is left out, not
    # written as pdfminer's "(cid:13)"
    assert any("Copyright" in c.text for c in chunks)
    assert not any("(cid:" in c.text for c in chunks)


def test_a_scanned_pdf_is_reported_not_loaded_as_empty(tmp_path: Path) -> None:
    path = made.scanned_pdf(tmp_path / "scan.pdf")
    with pytest.raises(LoadError, match=rf"^{path}: no text layer: OCR it first"):
        read_rich_document(path, "scan.pdf")


def test_encrypted_and_corrupt_pdfs(tmp_path: Path) -> None:
    locked = made.encrypted_pdf(tmp_path / "locked.pdf", "secret")
    with pytest.raises(LoadError, match=rf"^{locked}: the PDF is encrypted: it needs a password"):
        read_rich_document(locked, "locked.pdf")
    # an owner password alone restricts editing, not reading: the PDF opens
    opened = read_rich_document(made.encrypted_pdf(tmp_path / "owner.pdf", ""), "owner.pdf")
    assert [s.text for s in opened.sections] == ["The sealed report says the bridge opens in May."]
    corrupt = made.corrupt_pdf(tmp_path / "corrupt.pdf")
    with pytest.raises(LoadError, match=rf"^{corrupt}: not a readable PDF \("):
        read_rich_document(corrupt, "corrupt.pdf")
    fake = tmp_path / "fake.pdf"
    fake.write_text("just text", encoding="utf-8")
    with pytest.raises(LoadError, match=rf"^{fake}: not a PDF file"):
        read_rich_document(fake, "fake.pdf")


def test_html_main_content_with_its_headings(tmp_path: Path) -> None:
    doc = read_rich_document(made.html_file(tmp_path / "ferry.html"), "ferry.html")
    assert doc.title == "Ferry timetable | Harbour office"
    text = "\n".join(s.text for s in doc.sections)
    for boilerplate in ("NAV-LINK", "SCRIPT-TEXT", "SECOND-SCRIPT", "FOOTER-TEXT", "font-family",
                        "banner", "Bus times"):
        assert boilerplate not in text
    assert [(s.headings, s.text[:20]) for s in doc.sections] == [
        (("Ferry timetable",), "The harbour ferry to"),
        (("Ferry timetable", "Winter service"), "From November to Mar"),
        (("Ferry timetable", "Winter service"), "Tickets for the wint"),
        (("Ferry timetable", "Cars and freight"), "Cars must be booked "),
    ]
    assert [c.source for c in chunk_document(doc)] == [
        "ferry.html § Ferry timetable", "ferry.html § Winter service",
        "ferry.html § Cars and freight"]


def test_html_title_falls_back_to_h1(tmp_path: Path) -> None:
    page = tmp_path / "notitle.html"
    page.write_text("<html><body><h1>Harbour rules</h1><p>" + "Boats moor on the east quay, "
                    "never on the slipway, and pay the harbour master daily. " * 3 +
                    "</p></body></html>", encoding="utf-8")
    assert read_rich_document(page, "notitle.html").title == "Harbour rules"


def test_real_manual_html_pages() -> None:
    if not (MIME_HTML.exists() and FFI_HTML.exists()):
        pytest.skip("Debian's shared-mime-info and libffi8 manuals are not installed")
    doc = read_rich_document(MIME_HTML, "x34.html")
    sources = {c.source for c in chunk_document(doc)}
    # DocBook's headings are wrapped in named anchors: still headings
    assert "x34.html § 2.4. The glob files" in sources
    ffi = read_rich_document(FFI_HTML, "Closure-Example.html")
    text = "\n".join(s.text for s in ffi.sections)
    assert "Next: Thread Safety" not in text  # texinfo's navigation line
    assert "ffi_closure_alloc" in text  # the example's code, its lines kept
    assert "#include <stdio.h>\n#include <ffi.h>" in text


def test_binary_content_named_html(tmp_path: Path) -> None:
    path = made.binary_html(tmp_path / "image.html")
    with pytest.raises(LoadError, match=rf"^{path}: not an HTML page \(binary content\)$"):
        read_rich_document(path, "image.html")


def test_docx_paragraphs_headings_and_tables(tmp_path: Path) -> None:
    doc = read_rich_document(made.docx_file(tmp_path / "orchard.docx"), "orchard.docx")
    assert doc.title == "Orchard Handbook"
    assert [(s.headings, s.text) for s in doc.sections] == [
        (("Planting",), "Plant the quince trees in November, four metres apart, facing south."),
        (("Pruning",), "Prune the quince trees in February, before the buds swell."),
        (("Pruning", "Tools"), "Use bypass secateurs for branches thinner than a finger."),
        (("Pruning", "Tools"), "Tool | Use"),
        (("Pruning", "Tools"), "Loppers | branches up to 4 cm"),
    ]
    assert [c.source for c in chunk_document(doc)] == [
        "orchard.docx § Planting", "orchard.docx § Pruning", "orchard.docx § Tools"]


def test_odt_paragraphs_and_headings(tmp_path: Path) -> None:
    doc = read_rich_document(made.odt_file(tmp_path / "bees.odt"), "bees.odt")
    assert [(s.headings, s.text[:20]) for s in doc.sections] == [
        (("Beekeeping",), "The hives stand on t"), (("Beekeeping", "Harvest"), "Honey is taken in Au")]
    assert doc.title == "Beekeeping"


def test_a_zip_that_is_not_a_word_document(tmp_path: Path) -> None:
    path = made.zip_not_docx(tmp_path / "notes.docx")
    with pytest.raises(LoadError, match=rf"^{path}: not a readable Word document \("):
        read_rich_document(path, "notes.docx")
    odt = made.zip_not_docx(tmp_path / "notes.odt")
    with pytest.raises(LoadError, match=rf"^{odt}: not a readable OpenDocument text \("):
        read_rich_document(odt, "notes.odt")


def test_a_file_over_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "huge.pdf"
    with open(path, "wb") as f:  # sparse: 200 MiB + 1 of nothing on disk
        f.truncate(DEFAULT_MAX_DOCUMENT_BYTES + 1)
    with pytest.raises(LoadError, match=rf"^{path}: the PDF is {DEFAULT_MAX_DOCUMENT_BYTES + 1} "
                                        r"bytes, more than the limit of \d+ \(--max-size-mb\)"):
        read_rich_document(path, "huge.pdf")
    small = made.docx_file(tmp_path / "orchard.docx")
    with pytest.raises(LoadError, match="more than the limit of 1000"):
        read_rich_document(small, "orchard.docx", max_bytes=1000)


def test_a_folder_with_bad_files_skips_them_one_line_each(tmp_path: Path) -> None:
    made.two_column_pdf(tmp_path / "varna.pdf")
    (tmp_path / "web").mkdir()
    made.html_file(tmp_path / "web" / "ferry.html")
    made.docx_file(tmp_path / "orchard.docx")
    (tmp_path / "notes.md").write_text("# Notes\n\nThe quay is closed on Sundays.\n")
    made.encrypted_pdf(tmp_path / "locked.pdf", "secret")
    made.zip_not_docx(tmp_path / "notes.docx")
    made.binary_html(tmp_path / "image.html")
    made.scanned_pdf(tmp_path / "scan.pdf")
    skipped: list[LoadError] = []
    docs = read_documents([tmp_path], skipped=skipped)
    # ids: the path under the directory given (a tree of web pages repeats names)
    assert sorted(d.id for d in docs) == ["notes", "orchard.docx", "varna.pdf", "web/ferry.html"]
    lines = sorted(str(e) for e in skipped)
    assert [line.split(":")[0] for line in lines] == [
        str(tmp_path / n) for n in ("image.html", "locked.pdf", "notes.docx", "scan.pdf")]
    assert all("\n" not in line for line in lines)
    with pytest.raises(LoadError, match=r"image\.html: not an HTML page"):  # the first in order
        read_documents([tmp_path])
    # nothing readable at all is an error naming every file
    bad = tmp_path / "bad"
    bad.mkdir()
    made.scanned_pdf(bad / "a.pdf")
    made.binary_html(bad / "b.html")
    with pytest.raises(LoadError, match=r"^no file could be read:\n.*a.pdf: no text layer.*\n"
                                        r".*b.html: not an HTML page"):
        read_documents([bad], skipped=[])


def test_the_same_name_twice_in_one_folder_tree_is_two_documents(tmp_path: Path) -> None:
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        made.html_file(tmp_path / sub / "index.html")
    assert sorted(d.id for d in read_documents([tmp_path])) == ["a/index.html", "b/index.html"]
    # given itself, a file is known by its name
    [doc] = read_documents([tmp_path / "a" / "index.html"])
    assert doc.id == "index.html" and doc.cite == "index.html"


def test_text_markdown_and_json_documents_are_stored_as_before(tmp_path: Path) -> None:
    """Their chunks have no source and the same hashes as before the rich readers (computed
    by the code of the commit before them), so reloading an existing graph writes nothing."""
    (tmp_path / "kismet.md").write_text(
        "# Kismet\n\nKismet is a 1944 film directed by William Dieterle.\n\n## Cast\n\n"
        "Marlene Dietrich and Ronald Colman star in it.\n", encoding="utf-8")
    (tmp_path / "films.json").write_text(json.dumps(
        [{"title": "Kismet", "text": "Kismet is a 1944 film."},
         {"title": "Kismet", "text": "It stars Marlene Dietrich."}]), encoding="utf-8")
    docs = read_documents([tmp_path / "kismet.md", tmp_path / "films.json"])
    fingerprint = DocumentOptions().fingerprint(None)
    hashes = {}
    for doc in docs:
        chunks = chunk_document(doc)
        assert doc.cite is None and all(c.source is None and c.pages == () for c in chunks)
        hashes[doc.id] = _hash(doc, chunks, fingerprint)
    assert hashes == {
        "kismet": "da69f3c49c24fb0e76521d957c86f0e8eb777f138e1883f85f45c9a3797eb67b",
        "Kismet": "c6891747141d67afcf182de825db41cea6a192b4be87ca04331ea4f2652d44c4"}


def test_a_missing_library_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    path = made.two_column_pdf(tmp_path / "varna.pdf")
    monkeypatch.setitem(sys.modules, "pdfminer", None)  # what an install without it sees
    with pytest.raises(LoadError, match=r"^reading PDF needs the documents extra: "
                                        r"pip install 'kgdb-retrieval\[documents\]'$"):
        read_documents([path], skipped=[])  # an error even when bad files are skipped


def test_passage_evidence_carries_its_source() -> None:
    from kgdb.retrieve.evidence import Evidence, Passage

    evidence = Evidence("q", "vector", passages=[
        Passage("libtasn1.pdf#0040#000", "libtasn1.pdf", "asn1Parser reads...", 0.8,
                "libtasn1.pdf p. 8"), Passage("notes#0000#000", "notes", "The quay...", 0.5)])
    out = evidence.to_json(statements=False)
    assert [p["source"] for p in out["passages"]] == ["libtasn1.pdf p. 8", None]  # type: ignore
