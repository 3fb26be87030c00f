from __future__ import annotations

import pytest

from indexer.sources.formats import UnreadableDocument
from indexer.sources.formats.word import read_docx
from tests.indexer.sources.formats.samples import truncate, write_docx

BLOCKS = [("title", "The Handbook"), ("h1", "Installation"), ("p", "Read this first."), ("h2", "Linux"),
          ("p", "Unpack the tarball into /opt."), ("h1", "Usage"), ("p", "Run the widget daily.")]


def test_headings_become_the_section_path_and_tables_rows(tmp_path):
    extracted = read_docx(write_docx(tmp_path / "w.docx", BLOCKS, table=[["Flag", "Meaning"], ["-v", "verbose"]]))
    assert extracted.title == "The Handbook"  # the Title style, when the properties name none
    text = extracted.text
    start = text.index("Unpack")
    assert extracted.outline.locate(start, start + 10).section == ("Installation", "Linux")
    start = text.index("Run the widget")
    assert extracted.outline.locate(start, start + 10).label == "Usage"
    assert "Flag | Meaning" in text and "-v | verbose" in text
    assert extracted.outline.page_starts == ()


def test_the_title_comes_from_the_properties_first(tmp_path):
    assert read_docx(write_docx(tmp_path / "w.docx", BLOCKS, title="Official")).title == "Official"
    assert read_docx(write_docx(tmp_path / "x.docx", BLOCKS[1:])).title == "Installation"


def test_a_truncated_word_file_says_so(tmp_path):
    path = truncate(write_docx(tmp_path / "w.docx", BLOCKS))
    with pytest.raises(UnreadableDocument, match="damaged or truncated Word file"):
        read_docx(path)


def test_a_word_file_without_text(tmp_path):
    with pytest.raises(UnreadableDocument, match="Word file without text"):
        read_docx(write_docx(tmp_path / "w.docx", [("p", "   ")]))
