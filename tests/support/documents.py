"""Documents of every format the readers take, written by the libraries made for them (no
binary fixture in the repository): a two-column PDF with a running header, a scanned PDF
(no text layer), encrypted PDFs, a DOCX and an ODT with headings, an HTML page with
navigation, scripts, styles and a footer; and the bad files of each kind."""

from __future__ import annotations

import zipfile
from pathlib import Path

LEFT = [
    "The heron colony on Lake Varna nests in the reed beds of the northern shore.",
    "Each spring the herons return in March and build their nests from reed stalks.",
    "Their chicks fledge after about fifty days and leave the colony in late June.",
]
RIGHT = [
    "The lake's water level is kept by the Varna weir, built of granite in 1931.",
    "The weir keeper opens the sluice gates when the spring melt raises the lake.",
    "Fishing is allowed from the weir on weekdays, with a licence from the keeper.",
]
PAGE2 = [
    "Winter on the lake: the surface freezes in January and skaters cross it to Ostrava.",
    "The ice is measured each morning by the warden, who posts its thickness at the pier.",
]
HEADER = "Lake Varna Field Guide"


def two_column_pdf(path: Path) -> Path:
    """Two pages: page 1 in two columns (LEFT, RIGHT), page 2 one column (PAGE2); a running
    header and a page number on every page; a third page so that the header repeats."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    width, height = A4
    c = canvas.Canvas(str(path), pagesize=A4)
    c.setTitle("Lake Varna Field Guide")

    def frame(number: int) -> None:
        c.setFont("Helvetica", 9)
        c.drawString(72, height - 40, HEADER)
        c.drawString(width / 2, 30, str(number))

    def column(x: float, lines: list[str]) -> None:
        c.setFont("Helvetica", 10)
        y = height - 100
        for sentence in lines:
            words, line = sentence.split(), ""
            for word in words:  # wrap at ~36 characters: a column of a third of the page
                if len(line) + len(word) > 36:
                    c.drawString(x, y, line)
                    y -= 13
                    line = word
                else:
                    line = f"{line} {word}".strip()
            c.drawString(x, y, line)
            y -= 26  # a blank line between paragraphs

    frame(1)
    column(72, LEFT)
    column(width / 2 + 20, RIGHT)
    c.showPage()
    frame(2)
    column(72, PAGE2)
    c.showPage()
    frame(3)
    column(72, ["Index of places: Ostrava, Varna weir, northern shore."])
    c.showPage()
    c.save()
    return path


def scanned_pdf(path: Path) -> Path:
    """Pages with drawings and no text at all: what a scanner writes."""
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path))
    for _ in range(2):
        for i in range(20):
            c.rect(50 + i * 10, 100 + i * 20, 200, 8, fill=1)
        c.showPage()
    c.save()
    return path


def encrypted_pdf(path: Path, user_password: str) -> Path:
    """A one-page PDF encrypted with ``user_password`` ('' : an owner password only)."""
    from reportlab.lib import pdfencrypt
    from reportlab.pdfgen import canvas

    enc = pdfencrypt.StandardEncryption(user_password, ownerPassword="owner-secret",
                                        strength=128)
    c = canvas.Canvas(str(path), encrypt=enc)
    c.drawString(72, 720, "The sealed report says the bridge opens in May.")
    c.showPage()
    c.save()
    return path


def docx_file(path: Path) -> Path:
    import docx

    d = docx.Document()
    d.core_properties.title = "Orchard Handbook"
    d.add_heading("Orchard Handbook", level=0)
    d.add_heading("Planting", level=1)
    d.add_paragraph("Plant the quince trees in November, four metres apart, facing south.")
    d.add_heading("Pruning", level=1)
    d.add_paragraph("Prune the quince trees in February, before the buds swell.")
    d.add_heading("Tools", level=2)
    d.add_paragraph("Use bypass secateurs for branches thinner than a finger.",
                    style="List Bullet")
    table = d.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Tool", "Use"
    table.cell(1, 0).text, table.cell(1, 1).text = "Loppers", "branches up to 4 cm"
    d.save(str(path))
    return path


def odt_file(path: Path) -> Path:
    from odf.opendocument import OpenDocumentText
    from odf.text import H, P

    d = OpenDocumentText()
    d.text.addElement(H(outlinelevel=1, text="Beekeeping"))
    d.text.addElement(P(text="The hives stand on the east slope, out of the north wind."))
    d.text.addElement(H(outlinelevel=2, text="Harvest"))
    d.text.addElement(P(text="Honey is taken in August, when the frames are capped."))
    d.save(str(path))
    return path


HTML = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Ferry timetable | Harbour office</title>
<style>body { font-family: sans-serif; } .nav { color: red; }</style>
<script>var tracking = "SCRIPT-TEXT-MUST-NOT-LOAD"; function go() {}</script>
</head><body>
<nav class="nav"><ul><li><a href="/">Home NAV-LINK-ONE</a></li>
<li><a href="/news">News NAV-LINK-TWO</a></li><li><a href="/about">About us</a></li></ul></nav>
<header><div class="banner">Harbour office banner</div></header>
<main><article>
<h1>Ferry timetable</h1>
<p>The harbour ferry to Kelby island leaves the south pier every two hours from six in the
morning; the crossing takes forty minutes in calm weather.</p>
<h2>Winter service</h2>
<p>From November to March the ferry runs only three times a day, and the last boat back
from Kelby leaves at half past four in the afternoon.</p>
<p>Tickets for the winter service are sold on board; cyclists pay the same fare as
walkers, and dogs travel free.</p>
<h2>Cars and freight</h2>
<p>Cars must be booked a day ahead at the harbour office; freight up to two tonnes is
carried on the morning boat on Tuesdays and Fridays only.</p>
</article></main>
<aside class="sidebar"><h3>Related</h3><ul><li><a href="/a">Bus times</a></li></ul></aside>
<footer><p>Copyright 2026 Harbour office FOOTER-TEXT-MUST-NOT-LOAD. All rights reserved.</p>
<p><a href="/privacy">Privacy</a> <a href="/cookies">Cookies</a></p></footer>
<script>document.write("SECOND-SCRIPT-MUST-NOT-LOAD");</script>
</body></html>
"""


def html_file(path: Path) -> Path:
    path.write_text(HTML, encoding="utf-8")
    return path


def zip_not_docx(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("notes.txt", "a zip of notes, not a Word document")
    return path


def binary_html(path: Path) -> Path:
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8)
    return path


def corrupt_pdf(path: Path) -> Path:
    path.write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >>\n" +
                     bytes(range(256)) * 4 + b"\n%%EOF\n")
    return path
