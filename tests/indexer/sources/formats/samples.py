"""Small documents of each format, written in the test by the libraries that write them (fpdf2
for PDF, python-docx for Word, python-pptx for PowerPoint, odfdo for OpenDocument, ebooklib for
EPUB; RTF by hand, as it is text), with known text on known pages and headings."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Sequence
from pathlib import Path

import docx
import odfdo
import pptx
from ebooklib import epub
from fpdf import FPDF
from PIL import Image


def _pdf(title: str | None = None) -> FPDF:
    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    if title:
        pdf.set_title(title)
    return pdf


def write_pdf(path: Path, pages: Sequence[str], title: str | None = None, password: str | None = None) -> Path:
    """A PDF with one page per entry of `pages`, each holding that text; an empty entry is a
    blank page."""
    pdf = _pdf(title)
    if password:
        pdf.set_encryption(owner_password="owner-" + password, user_password=password)
    for text in pages:
        pdf.add_page()
        if text:
            pdf.multi_cell(0, 6, text)
    pdf.output(str(path))
    return path


def write_scanned_pdf(path: Path, text_pages: Sequence[str], scanned: int) -> Path:
    """A PDF whose first `scanned` pages are images only (a scan without OCR), followed by a page
    of text for each entry of `text_pages`."""
    pdf = _pdf()
    image = Image.new("RGB", (200, 260), "white")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    for _ in range(scanned):
        pdf.add_page()
        pdf.image(io.BytesIO(buffer.getvalue()), x=10, y=10, w=180)
    for text in text_pages:
        pdf.add_page()
        pdf.multi_cell(0, 6, text)
    pdf.output(str(path))
    return path


def write_letter_per_line_pdf(path: Path, text: str, normal_pages: Sequence[str] = ()) -> Path:
    """A PDF whose first page places each character of `text` on its own, a line apart and
    staggered across the page (text set letter by letter, as a broken export does), then a normal
    page for each of `normal_pages`."""
    pdf = _pdf()
    pdf.add_page()
    y = 12.0
    for index, char in enumerate(text.replace(" ", "")):
        pdf.text(20 + (index % 3) * 25, y, char)
        y += 4.5
    for page in normal_pages:
        pdf.add_page()
        pdf.multi_cell(0, 6, page)
    pdf.output(str(path))
    return path


def write_docx(path: Path, blocks: Sequence[tuple[str, str]], title: str | None = None,
               table: Sequence[Sequence[str]] = ()) -> Path:
    """A Word file of (style, text) blocks: style "h1".."h3" for headings, "p" for paragraphs,
    "title" for the Title style; `table` rows go after them."""
    document = docx.Document()
    if title is not None:
        document.core_properties.title = title
    for style, text in blocks:
        if style == "title":
            document.add_heading(text, level=0)
        elif style.startswith("h"):
            document.add_heading(text, level=int(style[1:]))
        else:
            document.add_paragraph(text)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                grid.cell(r, c).text = value
    document.save(str(path))
    return path


def write_epub(path: Path, chapters: Sequence[tuple[str, str]], title: str = "A Book") -> Path:
    """An EPUB of (chapter heading, chapter HTML body) in reading order."""
    book = epub.EpubBook()
    book.set_identifier("test-book")
    book.set_title(title)
    book.set_language("en")
    items = []
    for number, (heading, body) in enumerate(chapters, start=1):
        chapter = epub.EpubHtml(title=heading, file_name=f"chap_{number}.xhtml", lang="en")
        chapter.content = f"<html><body><h1>{heading}</h1>{body}</body></html>"
        book.add_item(chapter)
        items.append(chapter)
    book.toc = items
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *items]
    epub.write_epub(str(path), book)
    return path


def write_odt(path: Path, blocks: Sequence[tuple[str, str]], title: str | None = None,
              table: Sequence[Sequence[str]] = (), items: Sequence[str] = ()) -> Path:
    """An OpenDocument text file of (style, text) blocks: "h1".."h3" for headings, "p" for
    paragraphs; `table` rows, then a bulleted list of `items`, after them; a table of contents
    first, as LibreOffice inserts one."""
    document = odfdo.Document("text")
    body = document.body
    body.clear()
    body.append(odfdo.TOC("Contents"))
    for style, text in blocks:
        body.append(odfdo.Header(int(style[1:]), text) if style.startswith("h") else odfdo.Paragraph(text))
    if table:
        grid = odfdo.Table("Table1", width=len(table[0]), height=len(table))
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                grid.set_value((c, r), value)
        body.append(grid)
    if items:
        body.append(odfdo.List(list(items)))
    if title is not None:
        document.meta.title = title
    document.save(str(path))
    return path


def write_odp(path: Path, slides: Sequence[tuple[str, Sequence[str]]], title: str | None = None) -> Path:
    """An OpenDocument presentation: a slide per (title, lines), the title in the slide's title
    frame ("" for none) and each line a paragraph of a text frame."""
    document = odfdo.Document("presentation")
    body = document.body
    body.clear()
    for number, (heading, lines) in enumerate(slides, start=1):
        slide = odfdo.DrawPage(f"page{number}", name=f"page{number}")
        if heading:
            frame = odfdo.Frame.text_frame(heading, size=("20cm", "2cm"), position=("1cm", "1cm"))
            frame.set_attribute("presentation:class", "title")
            slide.append(frame)
        if lines:
            frame = odfdo.Frame.text_frame(odfdo.Paragraph(lines[0]), size=("20cm", "10cm"), position=("1cm", "4cm"))
            box = frame.get_element("draw:text-box")
            for line in lines[1:]:
                box.append(odfdo.Paragraph(line))
            slide.append(frame)
        body.append(slide)
    if title is not None:
        document.meta.title = title
    document.save(str(path))
    return path


def write_pptx(path: Path, slides: Sequence[tuple[str, Sequence[str]]], title: str | None = None,
               notes: dict[int, str] | None = None, table: Sequence[Sequence[str]] = ()) -> Path:
    """A PowerPoint file: a "Title and Content" slide per (title, bullet lines) ("" for no title),
    speaker notes for the slides `notes` names (1-based), and `table` on a last slide of its own."""
    presentation = pptx.Presentation()
    layout = presentation.slide_layouts[1]
    for number, (heading, lines) in enumerate(slides, start=1):
        slide = presentation.slides.add_slide(layout)
        if heading:
            slide.shapes.title.text = heading
        else:
            slide.shapes.title.element.getparent().remove(slide.shapes.title.element)
        slide.placeholders[1].text_frame.text = "\n".join(lines)
        if notes and number in notes:
            slide.notes_slide.notes_text_frame.text = notes[number]
    if table:
        slide = presentation.slides.add_slide(presentation.slide_layouts[6])
        shape = slide.shapes.add_table(len(table), len(table[0]), 0, 0, 4000000, 1000000)
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                shape.table.cell(r, c).text = value
    if title is not None:
        presentation.core_properties.title = title
    presentation.save(str(path))
    return path


def write_rtf(path: Path, body: str, header: str = "{\\rtf1\\ansi\\ansicpg1252\\deff0") -> Path:
    """An RTF file as a word processor saves one: font, colour and style tables and a header
    before `body` (RTF source: `\\par` ends a paragraph, `\\'e9` is é in the code page)."""
    path.write_text(header + "{\\fonttbl{\\f0\\froman\\fcharset0 Times New Roman;}{\\f1\\fswiss Arial;}}"
                    "{\\colortbl;\\red0\\green0\\blue0;}{\\stylesheet{\\s0 Normal;}{\\s1 heading 1;}}"
                    "{\\header\\pard\\plain Confidential draft\\par}\n" + body + "}", encoding="ascii")
    return path


def write_zip(path: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def truncate(path: Path, keep: float = 0.5) -> Path:
    """Cut the file to its first `keep` share of bytes, as an interrupted download leaves it."""
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    return path


PAGE_TEXTS = [
    "The aurora borealis appears when charged particles from the sun meet the upper atmosphere.",
    "Sourdough bread rises because wild yeast and lactic acid bacteria ferment the flour.",
    "A suspension bridge hangs its deck from cables anchored at both ends of the span.",
]

WEB_PAGE = """<!DOCTYPE html>
<html><head><title>Installing the widget</title></head>
<body>
<nav><ul><li><a href="/">Home</a></li><li><a href="/blog">Blog</a></li><li>Sitemap and archive links</li></ul></nav>
<header><div class="banner">Subscribe to our newsletter for weekly updates</div></header>
<main><article>
<h1>Installing the widget</h1>
<p>The widget installs on every operating system we support; this guide walks through each one in turn.</p>
<h2>Linux</h2>
<p>On Linux, unpack the tarball into /opt/widget and run the setup script as root to register the service.</p>
<h3>Debian</h3>
<p>Debian users may install the signed package with apt instead, which also keeps the widget updated.</p>
<h2>Windows</h2>
<p>On Windows, run the installer and accept the prompt that asks to change the system path.</p>
</article></main>
<footer><p>Copyright 2026 Widget Corp. All rights reserved. Privacy policy. Terms of use.</p></footer>
</body></html>
"""
