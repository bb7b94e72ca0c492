"""Readers of the documents people have: PDF, HTML, DOCX and ODT files, each through a
library made for the format (the ``documents`` extra: ``pip install 'kgdb-retrieval[documents]'``).

- **PDF** (pdfminer.six, MIT): the text of each page in reading order — pdfminer's layout
  analysis groups characters into lines and text boxes and orders the boxes, so a page of two
  columns reads column by column. Each text box is a paragraph that knows its page; running
  headers, footers and page numbers (the same text on most pages) are left out. A PDF
  encrypted with an owner password only opens; one that needs a password to open, or whose
  pages have no text at all (a scan), is an error.
- **HTML** (readability-lxml and trafilatura, both Apache-2.0, over lxml): the main content
  only — navigation, scripts, styles, footers, comments and other boilerplate are removed —
  with its headings as the section structure; the title is the page's ``<title>`` (else its
  first ``<h1>``).
- **DOCX** (python-docx, MIT) and **ODT** (odfpy, Apache-2.0): paragraphs, list items and
  table rows in document order, under their headings (``Heading 1``.. styles; ODT outline
  levels); the title is the document's title property, else its Title paragraph.

A document read here has the id its file is named by (the file name with its extension, or
its path under the directory given: ``html/index.html``) and that name as its
:attr:`~kgdb.documents.model.Document.cite`, so every chunk carries its source
(``libtasn1.pdf p. 12``, ``guide.html § Installation``). A file larger than the load's
limit (``--max-size-mb``, default 200 MiB) is refused before it is read.
"""

from __future__ import annotations

import io
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kgdb.documents.model import Document, Section
from kgdb.errors import LoadError
from kgdb.text import TextError, check_input_file, open_data_file

RICH_SUFFIXES = {".pdf": "pdf", ".html": "html", ".htm": "html", ".xhtml": "html",
                 ".docx": "docx", ".odt": "odt"}
DEFAULT_MAX_DOCUMENT_BYTES = 200 << 20
EXTRA = "pip install 'kgdb-retrieval[documents]'"

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
_SPACES = re.compile(r"[ \t\u00a0]+")
_UNMAPPED_GLYPH = re.compile(r"\(cid:\d+\)")
"""pdfminer's stand-in for a glyph whose font maps it to no character (libtasn1.pdf's ©
is ``(cid:13)``): not text, so dropped."""
_DIGITS = re.compile(r"\d+")


class MissingExtra(LoadError):
    """A reader's library is not installed."""


def _need(module: str, what: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(f"reading {what} needs the documents extra: {EXTRA}") from exc


def clean(text: str) -> str:
    """Text as the text contract wants it: compatibility forms folded (PDF ligatures ``ﬁ``),
    control characters and lone surrogates as spaces, runs of spaces as one."""
    text = unicodedata.normalize("NFKC", text)
    return _SPACES.sub(" ", _CONTROL.sub(" ", text)).strip()


def _read(path: Path, what: str, max_bytes: int) -> bytes:
    try:
        check_input_file(path, what=what, max_bytes=max_bytes, var="--max-size-mb")
        with open_data_file(path, what=what) as handle:
            return handle.read()
    except TextError as exc:
        raise LoadError(str(exc)) from exc


def read_rich_document(path: Path, ident: str,
                       max_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES) -> Document:
    """The document of a PDF, HTML, DOCX or ODT file of at most ``max_bytes``, whose id (and
    cited name) is ``ident``."""
    kind = RICH_SUFFIXES[path.suffix.lower()]
    reader: Callable[[Path, bytes], tuple[str | None, list[Section], dict[str, Any]]] = {
        "pdf": read_pdf, "html": read_html, "docx": read_docx, "odt": read_odt}[kind]
    data = _read(path, {"pdf": "PDF", "html": "HTML page", "docx": "Word document",
                        "odt": "OpenDocument text"}[kind], max_bytes)
    title, sections, meta = reader(path, data)
    if not sections:
        raise LoadError(f"{path}: the document has no text")
    title = clean(title or "") or _first_heading(sections) or ident
    return Document(ident, title, tuple(sections), str(path), {"format": kind, **meta},
                    cite=ident)


def _first_heading(sections: list[Section]) -> str | None:
    return next((h for s in sections for h in s.headings if h), None)


# ------------------------------------------------------------------ PDF

def _box_text(box: Any) -> str:
    """A text box's lines as one paragraph: a word hyphenated at a line end joined again."""
    out = ""
    for line in box.get_text().split("\n"):
        line = clean(_UNMAPPED_GLYPH.sub("", line))
        if not line:
            continue
        if out.endswith("-") and len(out) > 1 and out[-2].isalpha() and line[0].islower():
            out = out[:-1] + line
        else:
            out = f"{out} {line}" if out else line
    return out


def read_pdf(path: Path, data: bytes) -> tuple[str | None, list[Section], dict[str, Any]]:
    _need("pdfminer", "PDF")
    from pdfminer.converter import PDFPageAggregator
    from pdfminer.layout import LAParams, LTTextBox
    from pdfminer.pdfdocument import PDFDocument, PDFEncryptionError, PDFPasswordIncorrect
    from pdfminer.pdfinterp import PDFPageInterpreter, PDFResourceManager
    from pdfminer.pdfpage import PDFPage
    from pdfminer.pdfparser import PDFParser

    if not data.lstrip()[:5].startswith(b"%PDF"):
        raise LoadError(f"{path}: not a PDF file (it does not start with %PDF)")
    pages: list[list[str]] = []
    title: str | None = None
    # pdfminer raises many kinds of exception on a damaged file (its own, and KeyError,
    # TypeError, ValueError... from deep in its parser): each means the file cannot be read.
    try:
        document = PDFDocument(PDFParser(io.BytesIO(data)), password="")
        title = _pdf_title(document)
        resources = PDFResourceManager(caching=True)
        device = PDFPageAggregator(resources, laparams=LAParams())
        interpreter = PDFPageInterpreter(resources, device)
        for page in PDFPage.create_pages(document):
            interpreter.process_page(page)
            layout = device.get_result()
            pages.append([text for box in layout if isinstance(box, LTTextBox)
                          if (text := _box_text(box))])
    except PDFPasswordIncorrect as exc:
        raise LoadError(f"{path}: the PDF is encrypted: it needs a password to open "
                        "(decrypt it first, e.g. qpdf --decrypt)") from exc
    except PDFEncryptionError as exc:
        raise LoadError(f"{path}: the PDF is encrypted in a way that cannot be read "
                        f"({exc})") from exc
    except Exception as exc:
        raise LoadError(f"{path}: not a readable PDF ({_cause(exc)})") from exc
    if not pages:
        raise LoadError(f"{path}: not a readable PDF (no pages)")
    if not any(pages):
        raise LoadError(f"{path}: no text layer: OCR it first (e.g. ocrmypdf)")
    running = _running_text(pages)
    sections = [Section(text, (), number) for number, boxes in enumerate(pages, start=1)
                for text in boxes if _key(text) not in running]
    return title, sections, {"pages": len(pages)}


def _cause(exc: BaseException) -> str:
    message = " ".join(str(exc).split())[:200]
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _pdf_title(document: Any) -> str | None:
    from pdfminer.pdftypes import resolve1

    for info in document.info or []:
        value = resolve1(info.get("Title"))
        if isinstance(value, bytes):
            if value.startswith((b"\xfe\xff", b"\xff\xfe")):
                value = value.decode("utf-16", errors="replace")
            else:
                value = value.decode("latin-1")
        # "untitled" is what some writers (reportlab) put when they were given no title
        if isinstance(value, str) and clean(value) and clean(value).lower() != "untitled":
            return value
    return None


def _key(text: str) -> str:
    return _DIGITS.sub("#", text.casefold())


def _running_text(pages: list[list[str]]) -> set[str]:
    """Short texts on at least half of the pages (3 or more), digits aside: running headers,
    footers and page numbers, which would otherwise join the text of every page."""
    if len(pages) < 3:
        return {"#"}
    seen = Counter(k for boxes in pages for k in {_key(t) for t in boxes if len(t) <= 120})
    return {"#"} | {k for k, n in seen.items() if n * 2 >= len(pages)}


# ------------------------------------------------------------------ HTML

def _looks_binary(data: bytes) -> bool:
    """A NUL byte, or more than 1 in 100 bytes a control character that no text uses, in the
    first 64 KiB (a sniff, not parsing: the HTML itself is parsed by trafilatura/lxml)."""
    head = data[:65536]
    if b"\x00" in head:
        return True
    controls = sum(head.count(bytes([b])) for b in (*range(1, 9), 11, 14, *range(16, 27),
                                                    *range(28, 32)))
    return controls * 100 > len(head)


def read_html(path: Path, data: bytes) -> tuple[str | None, list[Section], dict[str, Any]]:
    readability = _need("readability", "HTML")
    trafilatura = _need("trafilatura", "HTML")
    from lxml import etree
    from lxml import html as lxml_html

    if _looks_binary(data):
        raise LoadError(f"{path}: not an HTML page (binary content)")
    # readability-lxml picks the element that holds the main content and cleans it (no
    # navigation, scripts, styles, footers), keeping its headings; trafilatura, which
    # classifies each text block, finds more of the text where the content is spread over
    # several elements but drops headings — so readability's pick is read, unless it holds
    # less than COVERAGE of the text trafilatura finds, and then trafilatura's.
    # Both raise many kinds of exception on damaged markup: each means the page cannot be read.
    try:
        tree = lxml_html.fromstring(data)
        title = _html_title(tree)
        for anchor in list(tree.iter("a")):
            if anchor.get("href") is None:  # a named anchor is no link: readability would
                anchor.drop_tag()            # drop a heading wrapped in one as a link list
        main = lxml_html.fromstring(readability.Document(etree.tostring(tree)).summary(
            html_partial=True))
        sections = list(_html_sections(main))
        found = sum(len(s.text) for s in sections)
        xml = trafilatura.extract(data, output_format="xml", include_comments=False,
                                  include_tables=True, include_links=False,
                                  include_images=False, favor_precision=True,
                                  deduplicate=False, with_metadata=False)
        if xml:
            root = etree.fromstring(xml.encode("utf-8"))
            other = list(_xml_sections(root.find("main") if root.find("main") is not None
                                       else root))
            if found < COVERAGE * sum(len(s.text) for s in other):
                sections = other
    except LoadError:
        raise
    except Exception as exc:
        raise LoadError(f"{path}: not a readable HTML page ({_cause(exc)})") from exc
    if not sections:
        raise LoadError(f"{path}: no main text found in the HTML page")
    return title, sections, {}


COVERAGE = 0.6
"""readability's main content is read when it holds at least this share of the text
trafilatura finds (on the Debian manuals under /usr/share/doc it held less on 6 of 73 pages:
valgrind's FAQ, 9%)."""

_BLOCKS = {"p", "li", "dt", "dd", "blockquote", "caption", "figcaption", "address", "summary"}
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_SKIP = {"script", "style", "noscript", "template", "nav", "footer", "aside", "form",
         "button", "select", "iframe", "svg", "head"}


def _html_title(tree: Any) -> str | None:
    """``<title>``, else the first ``<h1>``."""
    for found in (tree.findtext(".//title"), *(h.text_content() for h in tree.iter("h1"))):
        if found and clean(" ".join(found.split())):
            return clean(" ".join(found.split()))
    return None


def _html_sections(main: Any) -> Iterator[Section]:
    """The paragraphs of an HTML tree in document order, under their headings: headings,
    paragraphs and list items, preformatted text (its lines kept), table rows (cells joined
    by ``|``); loose text between blocks is a paragraph of its own."""
    path: list[str] = []
    inline: list[str] = []

    def flush() -> Iterator[Section]:
        text = clean(" ".join(" ".join(inline).split()))
        inline.clear()
        if text:
            yield Section(text, tuple(path))

    def walk(element: Any) -> Iterator[Section]:
        tag = element.tag if isinstance(element.tag, str) else ""
        if tag in _SKIP or not tag:
            return
        if tag in _HEADINGS:
            yield from flush()
            text = clean(" ".join(element.text_content().split()))
            if text:
                level = _HEADINGS[tag]
                del path[level - 1:]
                path.extend([""] * (level - 1 - len(path)) + [text])
        elif tag == "pre":
            yield from flush()
            lines = [clean(line) for line in element.text_content().strip("\n").split("\n")]
            text = "\n".join(lines).strip()
            if text:
                yield Section(text, tuple(path))
        elif tag == "tr":
            yield from flush()
            cells = [clean(" ".join(c.text_content().split())) for c in element
                     if c.tag in ("td", "th")]
            if any(cells):
                yield Section(" | ".join(c for c in cells if c), tuple(path))
        elif tag in _BLOCKS and not any(
                isinstance(c.tag, str) and (c.tag in _BLOCKS or c.tag in _HEADINGS or
                                            c.tag in ("pre", "table", "ul", "ol", "dl", "div"))
                for c in element.iterdescendants()):
            yield from flush()
            text = clean(" ".join(element.text_content().split()))
            if text:
                yield Section(text, tuple(path))
        elif tag in ("br", "hr"):
            yield from flush()
        else:  # a container, or inline markup: its text runs into the paragraph being read
            inline_tag = tag in _INLINE
            if not inline_tag:
                yield from flush()
            if element.text:
                inline.append(element.text)
            for child in element:
                yield from walk(child)
                if child.tail:
                    inline.append(child.tail)
            if not inline_tag:
                yield from flush()

    yield from walk(main)
    yield from flush()


_INLINE = {"a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "del", "dfn", "em", "i",
           "ins", "kbd", "mark", "q", "s", "samp", "small", "span", "strong", "sub", "sup",
           "time", "tt", "u", "var", "wbr", "font", "label"}


def _xml_sections(main: Any) -> Iterator[Section]:
    """The sections of trafilatura's XML (``head``, ``p``, ``list``, ``table``, ``code``...)."""
    path: list[str] = []
    for element in main:
        tag = element.tag
        text = clean(" ".join(" ".join(element.itertext()).split()))
        if not text:
            continue
        if tag == "head":
            rend = element.get("rend") or "h2"
            level = int(rend[1]) if re.fullmatch(r"h[1-6]", rend) else 2
            del path[level - 1:]
            path += [""] * (level - 1 - len(path)) + [text]
        elif tag == "list":
            for item in element.iter("item"):
                line = clean(" ".join((item.text or "").split()))
                if line:
                    yield Section(f"- {line}", tuple(path))
        elif tag == "table":
            for row in element.iter("row"):
                cells = [clean(" ".join(" ".join(c.itertext()).split()))
                         for c in row.iter("cell")]
                if any(cells):
                    yield Section(" | ".join(c for c in cells if c), tuple(path))
        elif tag == "code":
            lines = [clean(line) for line in "".join(element.itertext()).strip("\n").split("\n")]
            yield Section("\n".join(lines).strip(), tuple(path))
        else:
            yield Section(text, tuple(path))


# ------------------------------------------------------------------ DOCX and ODT

_HEADING_STYLE = re.compile(r"heading\s*(\d)", re.IGNORECASE)


class _Sections:
    """Paragraphs under the heading path being read."""

    def __init__(self) -> None:
        self.path: list[str] = []
        self.sections: list[Section] = []
        self.title: str | None = None

    def heading(self, level: int, text: str) -> None:
        level = min(max(level, 1), 9)
        del self.path[level - 1:]
        self.path += [""] * (level - 1 - len(self.path)) + [text]

    def paragraph(self, text: str) -> None:
        text = clean(text)
        if text:
            self.sections.append(Section(text, tuple(self.path)))


def read_docx(path: Path, data: bytes) -> tuple[str | None, list[Section], dict[str, Any]]:
    docx = _need("docx", "DOCX")
    from docx.table import Table

    # python-docx raises PackageNotFoundError, KeyError (a zip without word/document.xml),
    # ValueError (another content type), BadZipFile, XMLSyntaxError... on what is no DOCX
    try:
        document = docx.Document(io.BytesIO(data))
        out = _Sections()
        for block in document.iter_inner_content():
            if isinstance(block, Table):
                for row in block.rows:
                    cells = list(dict.fromkeys(clean(c.text) for c in row.cells))
                    out.paragraph(" | ".join(c for c in cells if c))
                continue
            text = clean(block.text)
            style = (block.style.name if block.style is not None else "") or ""
            match = _HEADING_STYLE.fullmatch(style.strip())
            if style == "Title" and text:
                out.title = out.title or text
            elif match and text:
                out.heading(int(match.group(1)), text)
            else:
                out.paragraph(text)
        title = document.core_properties.title or out.title
    except Exception as exc:
        raise LoadError(f"{path}: not a readable Word document ({_cause(exc)})") from exc
    return title, out.sections, {}


def read_odt(path: Path, data: bytes) -> tuple[str | None, list[Section], dict[str, Any]]:
    _need("odf", "ODT")
    from odf import teletype
    from odf.namespaces import TABLENS, TEXTNS
    from odf.opendocument import load

    out = _Sections()
    # odfpy raises KeyError, BadZipFile, ExpatError... on what is no OpenDocument text
    try:
        document = load(io.BytesIO(data))

        def walk(node: Any) -> None:
            for child in node.childNodes:
                name = getattr(child, "qname", None)
                if name == (TEXTNS, "h"):
                    level = int(child.getAttribute("outlinelevel") or 1)
                    text = clean(teletype.extractText(child))
                    if text:
                        out.heading(level, text)
                elif name == (TEXTNS, "p"):
                    style = child.getAttribute("stylename") or ""
                    text = clean(teletype.extractText(child))
                    if style == "Title" and text:
                        out.title = out.title or text
                    else:
                        out.paragraph(text)
                elif name == (TABLENS, "table-row"):
                    cells = [clean(teletype.extractText(c)) for c in child.childNodes
                             if getattr(c, "qname", None) == (TABLENS, "table-cell")]
                    out.paragraph(" | ".join(c for c in cells if c))
                elif name is not None:
                    walk(child)

        walk(document.text)
        titles = [teletype.extractText(t) for t in document.meta.childNodes
                  if getattr(t, "qname", (None, None))[1] == "title"]
    except Exception as exc:
        raise LoadError(f"{path}: not a readable OpenDocument text ({_cause(exc)})") from exc
    return (titles[0] if titles and titles[0].strip() else out.title), out.sections, {}
