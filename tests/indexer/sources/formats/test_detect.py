from __future__ import annotations

import pytest

from indexer.sources.formats import (
    DOCX,
    EPUB,
    ODF,
    ODS,
    PDF,
    PPTX,
    RTF,
    XLSX,
    UnreadableDocument,
    detect,
    is_html,
)
from tests.indexer.sources.formats.samples import (
    PAGE_TEXTS,
    write_docx,
    write_epub,
    write_odp,
    write_odt,
    write_pdf,
    write_pptx,
    write_rtf,
    write_zip,
)


def head(path):
    return path.read_bytes()[:8]


def test_formats_are_told_by_content_not_name(tmp_path):
    pdf = write_pdf(tmp_path / "report.bin", PAGE_TEXTS)
    word = write_docx(tmp_path / "letter", [("p", "Dear reader")])
    book = write_epub(tmp_path / "book.zip", [("One", "<p>text</p>")])
    assert (detect(pdf, head(pdf)), detect(word, head(word)), detect(book, head(book))) == (PDF, DOCX, EPUB)
    office = [write_odt(tmp_path / "minutes.docx", [("p", "Minutes")]), write_odp(tmp_path / "talk", [("T", ["x"])]),
              write_pptx(tmp_path / "deck.odp", [("T", ["x"])]), write_rtf(tmp_path / "letter.txt", "\\pard Hi\\par")]
    assert [detect(path, head(path)) for path in office] == [ODF, ODF, PPTX, RTF]
    plain = tmp_path / "notes.txt"
    plain.write_text("plain")
    assert detect(plain, head(plain)) is None


def test_workbooks_are_told_by_their_parts_not_their_names(tmp_path):
    """An Excel workbook by its `xl/workbook.xml` part, an OpenDocument spreadsheet (or its
    template) by its mimetype: read as tables (`indexer.sources.workbooks`), not refused."""
    excel = write_zip(tmp_path / "export.zip", {"xl/workbook.xml": "<x/>"})
    sheet = write_zip(tmp_path / "budget", {"mimetype": "application/vnd.oasis.opendocument.spreadsheet"})
    template = write_zip(tmp_path / "t.ots", {"mimetype": "application/vnd.oasis.opendocument.spreadsheet-template"})
    assert [detect(path, head(path)) for path in (excel, sheet, template)] == [XLSX, ODS, ODS]


@pytest.mark.parametrize(("files", "problem"), [
    ({"a.txt": "hello"}, "a ZIP archive that is not a Word, PowerPoint or OpenDocument file or an e-book"),
    ({"mimetype": "application/vnd.oasis.opendocument.graphics"}, "an OpenDocument drawing, chart, formula"),
])
def test_other_zips_are_refused_saying_what_they_are(tmp_path, files, problem):
    path = write_zip(tmp_path / "thing.zip", files)
    with pytest.raises(UnreadableDocument, match=problem):
        detect(path, head(path))


def test_html_by_name_or_opening_tag():
    assert is_html("page.HTM", "anything")
    assert is_html("saved", "  <!-- saved from url -->\n<!DOCTYPE html><html>")
    assert is_html("index", "<html lang='en'><body>")
    assert not is_html("notes.txt", "text that mentions <html> later")
