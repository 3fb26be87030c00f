"""bench/bench_pdf_titles.py on PDFs written here: the Title field is the reference, each PDF
counted once, and a PDF whose first page has no larger text keeps its file name."""

from __future__ import annotations

import gzip

from bench.bench_pdf_titles import agrees, read_titles, table
from tests.indexer.sources.formats.samples import PAGE_TEXTS, write_pdf
from tests.indexer.sources.formats.test_pdf import _paper


def test_titles_are_judged_against_the_title_field(tmp_path):
    folder = tmp_path / "docs"
    (folder / "papers").mkdir(parents=True)
    _paper(folder / "papers" / "erosion.pdf", 20, title="Glacial erosion of alpine valleys")
    _paper(folder / "papers" / "untitled.pdf", 20)
    plain = write_pdf(tmp_path / "plain.pdf", PAGE_TEXTS)
    (folder / "plain.pdf.gz").write_bytes(gzip.compress(plain.read_bytes()))
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 cut short")
    titles = {t.path: t for t in read_titles(folder)}
    assert sorted(titles) == ["papers/erosion.pdf", "papers/untitled.pdf", "plain.pdf.gz"]
    assert titles["papers/erosion.pdf"].field == "Glacial erosion of alpine valleys"
    assert agrees(titles["papers/erosion.pdf"].first_page, titles["papers/erosion.pdf"].field)
    assert not agrees(titles["papers/erosion.pdf"].file_name, titles["papers/erosion.pdf"].field)
    shown = table(list(titles.values()))
    assert "| first page's largest text (ours) | 1 | **1** (100%) | 0 (the file name then) | 0 |" in shown
    assert "| file name (the peer: the title before) | 1 | 0 (0%) | 0 | 1 |" in shown
    assert "PDFs without a Title field: 2 of 3; the first page gives **1** a title" in shown
    assert "| plain.pdf.gz | (none: the file name) |" in shown
