"""Word (.docx): paragraphs and tables in reading order, headings from their styles.

python-docx reads the document's XML as Word wrote it, so a heading is a paragraph whose style
is `Heading N` (LibreOffice and Google Docs export the same names), and `iter_inner_content`
gives paragraphs and tables in body order. Page headers and footers are left out: they repeat
on every page and would only be boilerplate in every passage.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from pathlib import Path

import docx
from docx.document import Document as DocxDocument
from docx.opc.exceptions import PackageNotFoundError
from docx.table import Table
from docx.text.paragraph import Paragraph

from indexer.sources.formats.extracted import Extracted, UnreadableDocument, clean_text, reading
from indexer.sources.outline import Block, assemble

_FIX = "open and save it again in Word or LibreOffice"
_HEADING_STYLE = re.compile(r"heading\s*([1-9])", re.IGNORECASE)


def _level(paragraph: Paragraph) -> int | None:
    """The heading level of a paragraph by its style (`Heading 2` -> 2), or None for body text."""
    style = paragraph.style
    name = style.name if style is not None and style.name else ""
    found = _HEADING_STYLE.fullmatch(name.strip())
    return int(found.group(1)) if found else None


def _table_rows(table: Table) -> Iterator[str]:
    """Each row as its cells' text joined by " | " (a merged cell, which python-docx repeats, once)."""
    for row in table.rows:
        cells: list[str] = []
        for cell in row.cells:
            text = " ".join(cell.text.split())
            if text and (not cells or cells[-1] != text):
                cells.append(text)
        if cells:
            yield " | ".join(cells)


def _blocks(document: DocxDocument) -> Iterator[tuple[Block, bool]]:
    """(block, whether its style is Title) in body order."""
    for item in document.iter_inner_content():
        if isinstance(item, Paragraph):
            style = item.style.name if item.style is not None and item.style.name else ""
            yield Block(clean_text(item.text), level=_level(item)), style.strip().lower() == "title"
        else:
            for row in _table_rows(item):
                yield Block(clean_text(row)), False


def read_docx(path: Path) -> Extracted:
    """The document's paragraphs and table rows, its headings in the outline; the title from its
    properties, else its Title-styled paragraph, else its first heading."""
    with reading("Word file", _FIX, (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError)):
        document = docx.Document(str(path))
    blocks = list(_blocks(document))
    text, outline = assemble(block for block, _ in blocks)
    if not text.strip():
        raise UnreadableDocument("Word file without text (only images, or empty); OCR is not supported")
    title = " ".join((document.core_properties.title or "").split())
    title = title or next((" ".join(b.text.split()) for b, is_title in blocks if is_title and b.text.strip()), "")
    title = title or (outline.headings[0].title if outline.headings else "")
    return Extracted(text=text, outline=outline, title=title)
