"""EPUB: the chapters in reading order (the spine), each chapter's headings in the outline.

ebooklib reads the package (OPF, spine, metadata); each chapter is XHTML, read element by
element with `html_blocks`: an e-book's chapters hold no navigation or footers to drop.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path

import ebooklib
import lxml.etree as etree
import lxml.html
from ebooklib import epub

from indexer.sources.formats.extracted import Extracted, UnreadableDocument, reading
from indexer.sources.formats.html_page import html_blocks
from indexer.sources.outline import Block, assemble


def _chapters(book: epub.EpubBook) -> Iterator[bytes]:
    """The content of each document in the spine, in reading order; the navigation document (the
    table of contents, which only repeats the chapter titles) left out."""
    for entry in book.spine:
        idref = entry[0] if isinstance(entry, tuple) else entry
        item = book.get_item_with_id(idref)
        if item is None or item.get_type() != ebooklib.ITEM_DOCUMENT:
            continue
        if isinstance(item, epub.EpubHtml) and not item.is_chapter():
            continue
        yield item.get_content()


def _chapter_blocks(content: bytes) -> Iterator[Block]:
    if not content.strip():
        return
    try:
        root = lxml.html.document_fromstring(content)
    except (etree.ParserError, ValueError):
        return
    body = root.find("body")
    yield from html_blocks(body if body is not None else root)


def read_epub(path: Path) -> Extracted:
    """The book's chapters in spine order; the title from its Dublin Core metadata."""
    with reading("EPUB", "download or export it again",
                 (zipfile.BadZipFile, KeyError, epub.EpubException, etree.XMLSyntaxError)):
        book = epub.read_epub(str(path), options={"ignore_ncx": True})
    blocks = [block for chapter in _chapters(book) for block in _chapter_blocks(chapter)]
    text, outline = assemble(blocks)
    if not text.strip():
        raise UnreadableDocument("EPUB without text (only images, or empty chapters); nothing to index")
    titles = book.get_metadata("DC", "title")
    title = " ".join(str(titles[0][0]).split()) if titles and titles[0] and titles[0][0] else ""
    return Extracted(text=text, outline=outline, title=title)
