"""OpenDocument text (.odt) and presentations (.odp): what LibreOffice saves by default.

odfdo reads the package (content and metadata). The body is walked in document order: a
heading (`text:h`) keeps its outline level, a paragraph is one block wherever it sits (in a list,
a section, a text frame), and a table row is its cells joined by " | ". In a presentation each
slide (`draw:page`) is one page, its title frame a heading, and its speaker notes follow its
text. Tables of contents and indexes (which repeat headings and page numbers), tracked deletions
and comments are left out. ODT has no fixed pages (LibreOffice lays them out when it opens the
file), so its passages are located by heading only.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path

import odfdo
from odfdo.element import Element

from indexer.sources.formats.extracted import Extracted, UnreadableDocument, clean_text, reading
from indexer.sources.outline import Block, assemble

# Parts of a body that repeat other text or are not the document's own words.
_SKIPPED = frozenset({
    "text:tracked-changes", "office:annotation", "office:annotation-end", "office:forms",
    "text:table-of-content", "text:alphabetical-index", "text:illustration-index", "text:table-index",
    "text:object-index", "text:user-index", "text:bibliography", "text:sequence-decls",
    "text:variable-decls", "text:user-field-decls", "draw:enhanced-geometry", "svg:title", "svg:desc",
    "presentation:settings", "draw:page-thumbnail", "table:table-header-columns", "table:table-columns",
    "table:table-column",
})
# Inline parts whose text is not the document's words: odfdo's own text (`text_recursive`,
# `get_formatted_text`) names an image by its path in the package ("Pictures/1000...png").
_INLINE_SKIPPED = frozenset({"draw:image", "draw:object", "draw:object-ole", "svg:title", "svg:desc",
                             "office:annotation", "office:annotation-end", "text:tracked-changes"})
_FIX = "open and save it again in LibreOffice"
_KINDS = {"text": "OpenDocument text file (.odt)", "presentation": "OpenDocument presentation (.odp)"}


def _heading_level(element: Element) -> int:
    try:
        return min(max(int(element.get_attribute("text:outline-level") or 1), 1), 6)
    except (TypeError, ValueError):
        return 1


def _inline_text(element: Element) -> str:
    """The words of a paragraph or heading: its text, spans, links and notes, spaces and tabs as
    the `text:s`/`text:tab` elements that stand for them, a text box's paragraphs on lines of
    their own; images and embedded objects left out."""
    parts = [element.text or ""]
    for child in element.children:
        tag = child.tag
        if tag == "text:s":
            parts.append(" " * int(child.get_attribute("text:c") or 1))
        elif tag == "text:tab":
            parts.append("\t")
        elif tag == "text:line-break":
            parts.append("\n")
        elif tag in ("text:p", "text:h"):
            parts.append(f"\n{_inline_text(child)}\n")
        elif tag not in _INLINE_SKIPPED:
            parts.append(_inline_text(child))
        parts.append(child.tail or "")
    return "".join(parts)


def _row_text(row: Element) -> str:
    """A table row as its cells' text joined by " | " (empty cells left out)."""
    cells = (" ".join(_inline_text(cell).split()) for cell in row.children if cell.tag == "table:table-cell")
    return " | ".join(cell for cell in cells if cell)


def _blocks(element: Element, page: int | None = None) -> Iterator[Block]:
    """The blocks under `element` in document order; `page` is the slide being read, if any."""
    for child in element.children:
        tag = child.tag
        if tag in _SKIPPED:
            continue
        if tag == "text:h":
            yield Block(clean_text(_inline_text(child)), level=_heading_level(child), page=page)
        elif tag == "text:p":
            yield Block(clean_text(_inline_text(child)), page=page)
        elif tag == "table:table-row":
            yield Block(clean_text(_row_text(child)), page=page)
        elif tag == "draw:frame" and child.get_attribute("presentation:class") == "title":
            yield Block(clean_text(" ".join(_inline_text(child).split())), level=1, page=page)
        else:
            yield from _blocks(child, page)


def _slides(body: Element) -> Iterator[Block]:
    """Each slide's blocks on its own page; its title frame first, as the slide's heading."""
    number = 0
    for slide in body.children:
        if slide.tag != "draw:page":
            continue
        number += 1
        blocks = list(_blocks(slide, number))
        first = next((i for i, block in enumerate(blocks) if block.level is not None and block.text.strip()), 0)
        yield from (blocks[first:first + 1] + blocks[:first] + blocks[first + 1:])


def read_opendocument(path: Path) -> Extracted:
    """The text of an OpenDocument text file or presentation, its headings (and slides, as pages)
    in the outline; the title from its metadata, else its first heading."""
    with reading("OpenDocument file", _FIX, (zipfile.BadZipFile, KeyError, ValueError, OSError)):
        # odfdo names a damaged container only as a "format not managed", and an encrypted one's
        # content as an XML syntax error: both are told here first.
        with zipfile.ZipFile(path) as archive:
            manifest = archive.read("META-INF/manifest.xml") if "META-INF/manifest.xml" in archive.namelist() else b""
            if b"encryption-data" in manifest:
                raise UnreadableDocument("password-protected OpenDocument file, which is not read; open it in "
                                         "LibreOffice, save it without a password and index that")
        document = odfdo.Document(str(path))
        kind = document.get_type()
        if kind not in _KINDS:
            raise UnreadableDocument(f"an OpenDocument {kind or 'file'} (not text or a presentation), which "
                                     "is not read; save its content as .csv, .odt or PDF and index that")
        blocks = list(_slides(document.body) if kind == "presentation" else _blocks(document.body))
        title = " ".join((document.meta.title or "").split())
    text, outline = assemble(blocks)
    if not text.strip():
        raise UnreadableDocument(f"{_KINDS[kind]} without text (only images, or empty); nothing to index")
    title = title or (outline.headings[0].title if outline.headings else "")
    return Extracted(text=text, outline=outline, title=title)
