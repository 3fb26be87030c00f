from __future__ import annotations

from pathlib import Path

import pytest

from indexer.sources.formats import UnreadableDocument
from indexer.sources.formats.pdf import read_pdf
from tests.indexer.sources.formats.samples import (
    PAGE_TEXTS,
    truncate,
    write_letter_per_line_pdf,
    write_pdf,
    write_scanned_pdf,
)

LONG = "Garbled text set letter by letter in a broken export of a document about bridges and bread. " * 2


def test_each_page_of_text_is_located_on_its_page(tmp_path):
    extracted = read_pdf(write_pdf(tmp_path / "a.pdf", PAGE_TEXTS, title="Nature and craft"))
    assert extracted.title == "Nature and craft" and extracted.warnings == ()
    for number, page_text in enumerate(PAGE_TEXTS, start=1):
        start = extracted.text.index(page_text[:40])
        assert extracted.outline.locate(start, start + len(page_text)).page_first == number
    assert len(extracted.outline.page_starts) == 3


def test_a_blank_page_keeps_the_numbering_of_the_pages_after_it(tmp_path):
    extracted = read_pdf(write_pdf(tmp_path / "a.pdf", [PAGE_TEXTS[0], "", PAGE_TEXTS[1]]))
    start = extracted.text.index(PAGE_TEXTS[1][:30])
    assert extracted.outline.locate(start, start + 20).label == "p. 3"
    assert extracted.warnings == ()  # a blank page is no scan


def test_scanned_pages_are_named_and_the_text_pages_indexed(tmp_path):
    extracted = read_pdf(write_scanned_pdf(tmp_path / "s.pdf", [PAGE_TEXTS[0]], scanned=12))
    assert extracted.warnings == ("no text layer on pages 1–12 of 13 (scanned images); OCR is not supported, "
                                  "so their text is not indexed",)
    assert extracted.outline.locate(0, 10).page_first == 13


def test_a_wholly_scanned_pdf_is_unreadable(tmp_path):
    with pytest.raises(UnreadableDocument, match="no text layer on pages 1–3 of 3"):
        read_pdf(write_scanned_pdf(tmp_path / "s.pdf", [], scanned=3))


def test_an_encrypted_pdf_says_so(tmp_path):
    with pytest.raises(UnreadableDocument, match="encrypted PDF .* password"):
        read_pdf(write_pdf(tmp_path / "e.pdf", PAGE_TEXTS, password="secret"))


def test_a_truncated_pdf_says_so(tmp_path):
    path = truncate(write_pdf(tmp_path / "t.pdf", PAGE_TEXTS), 0.5)
    with pytest.raises(UnreadableDocument, match="damaged or truncated PDF"):
        read_pdf(path)


def test_text_set_letter_by_letter_is_detected_and_left_out(tmp_path):
    path = write_letter_per_line_pdf(tmp_path / "g.pdf", LONG, normal_pages=[PAGE_TEXTS[2]])
    extracted = read_pdf(path)
    assert len(extracted.warnings) == 1
    assert extracted.warnings[0].startswith("the text of page 1 of 2 is garbled (text set letter by letter")
    assert extracted.text.strip() == PAGE_TEXTS[2]
    assert extracted.outline.locate(0, 5).page_first == 2


def test_only_garbled_text_is_unreadable(tmp_path):
    with pytest.raises(UnreadableDocument, match="garbled"):
        read_pdf(write_letter_per_line_pdf(tmp_path / "g.pdf", LONG))


def test_hyphens_at_line_ends_and_ligatures_are_joined(tmp_path):
    from indexer.sources.formats.extracted import clean_text
    assert clean_text("ef\ufb01cient\r\nﬂow") == "efficient\nflow"


def _paper(path, title_size: float, title: str | None = None):
    """A paper whose first page opens with a heading in `title_size` points over 11-point body text."""
    from fpdf import FPDF

    pdf = FPDF()
    if title:
        pdf.set_title(title)
    pdf.add_page()
    pdf.set_font("helvetica", size=title_size)
    pdf.multi_cell(0, 10, "Glacial Erosion of Alpine Valleys", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", size=9)
    pdf.multi_cell(0, 6, "A. Author, Institute of Geography", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", size=11)
    pdf.multi_cell(0, 6, PAGE_TEXTS[0] * 3)
    pdf.output(str(path))
    return path


def test_a_pdf_without_a_title_field_is_titled_by_its_first_pages_largest_text(tmp_path):
    assert read_pdf(_paper(tmp_path / "a.pdf", 20)).title == "Glacial Erosion of Alpine Valleys"
    # The Title field comes first; a heading no larger than the body is no title (the file name is).
    assert read_pdf(_paper(tmp_path / "b.pdf", 20, title="Erosion")).title == "Erosion"
    # A file name in the field is a converter's, not a title: the first page's text titles it.
    for converted in ("paper.pdf", "paper.PS", "Microsoft Word - paper.docx"):
        assert read_pdf(_paper(tmp_path / "e.pdf", 20, title=converted)).title == "Glacial Erosion of Alpine Valleys"
    assert read_pdf(_paper(tmp_path / "c.pdf", 12)).title == ""
    assert read_pdf(write_pdf(tmp_path / "d.pdf", PAGE_TEXTS)).title == ""


def test_a_title_that_joins_a_rare_script_to_a_word_is_misread() -> None:
    from indexer.sources.formats.pdf import _misread

    body = [(c, 10.0) for c in "The hyphen file for LuaTeX " * 20]
    # "The" whose "Th" ligature decoded as a CJK ideograph: two scripts in one run, CJK rare.
    assert _misread("吀e hyphen", [("吀", 17.0), ("e", 17.0), *body])
    # One script per run of letters, however rare: kept (TeX's own titles).
    assert not _misread("The ε-TEX manual", [("ε", 17.0), *body])
    assert not _misread("LATEX 2ε", [("ε", 17.0), *body])
    # Two scripts that are both common on the page (Japanese beside Latin): kept.
    japanese = [(c, 10.0) for c in "これはPythonの説明です" * 20]
    assert not _misread("Pythonの本", japanese)


LUATEX_HYPHEN = Path("/usr/share/doc/texlive-doc/luatex/hyph-utf8/luatex-hyphen.pdf")


@pytest.mark.skipif(not LUATEX_HYPHEN.is_file(), reason="TeX Live's luatex-hyphen manual is not installed")
def test_a_misread_first_page_gives_no_title() -> None:
    import pypdfium2 as pdfium

    from indexer.sources.formats.pdf import first_page_title

    # Its heading is set with a "Th" ligature that pdfium reads as 吀: read as if it had no Title
    # field (bench_pdf_titles), its first page gave "吀e"; now none, so the file name would serve.
    pdf = pdfium.PdfDocument(LUATEX_HYPHEN)
    try:
        assert first_page_title(pdf) == ""
    finally:
        pdf.close()
