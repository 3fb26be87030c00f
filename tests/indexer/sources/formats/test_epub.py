from __future__ import annotations

import pytest

from indexer.sources.formats import UnreadableDocument
from indexer.sources.formats.epub import read_epub
from tests.indexer.sources.formats.samples import truncate, write_epub

CHAPTERS = [("Chapter One", "<p>It was a dark and stormy night on the moor.</p><h2>The Storm</h2>"
             "<p>Rain fell on the old house.</p>"),
            ("Chapter Two", "<p>Morning came over the hills.</p>")]


def test_chapters_in_reading_order_with_their_headings(tmp_path):
    extracted = read_epub(write_epub(tmp_path / "b.epub", CHAPTERS, title="Moor Tales"))
    assert extracted.title == "Moor Tales"
    text = extracted.text
    assert text.index("dark and stormy") < text.index("Rain fell") < text.index("Morning came")
    assert text.count("Chapter One") == 1  # the navigation document (a table of contents) is left out
    start = text.index("Rain fell")
    assert extracted.outline.locate(start, start + 10).label == "Chapter One › The Storm"
    start = text.index("Morning")
    assert extracted.outline.locate(start, start + 10).label == "Chapter Two"


def test_a_truncated_epub_says_so(tmp_path):
    with pytest.raises(UnreadableDocument, match="damaged or truncated EPUB"):
        read_epub(truncate(write_epub(tmp_path / "b.epub", CHAPTERS)))


def test_an_epub_without_text(tmp_path):
    with pytest.raises(UnreadableDocument, match="EPUB without text"):
        read_epub(write_epub(tmp_path / "b.epub", [("", "<p> </p>")]))
