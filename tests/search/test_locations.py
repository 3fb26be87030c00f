"""Every surface shows where a hit is: the page of a PDF, the slide (as its page) of a PowerPoint or
OpenDocument presentation, the heading path of Word, OpenDocument, HTML, EPUB and Markdown files,
in Python (`Hit.location`), the CLI and the HTTP API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from indexer import IndexConfig, build_index
from search import Searcher
from search.__main__ import main as search_cli
from search.api import ApiConfig, create_app
from tests.indexer.sources.formats.samples import (
    PAGE_TEXTS,
    WEB_PAGE,
    write_docx,
    write_epub,
    write_odp,
    write_odt,
    write_pdf,
    write_pptx,
    write_rtf,
)

FILLER = "Read the whole of this chapter before you begin, and keep it at hand while you work. " * 3
MARKDOWN = "# Guide\n\n" + FILLER + "\n\n## Backups\n\nCopy the vault to tape every Friday night.\n"


@pytest.fixture(scope="module")
def documents_index(tiny_model_dir, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("formats")
    source = root / "papers"
    (source / "manuals").mkdir(parents=True)
    # Pages of several sentences and short passages, so that passages lie within a page as they do
    # in real PDFs, whose pages hold about two passages of 256 tokens each.
    write_pdf(source / "nature.pdf", [" ".join([text] * 4) for text in PAGE_TEXTS], title="Nature and craft")
    write_docx(source / "manuals" / "widget.docx", [("h1", "Installation"), ("p", FILLER),
                                                     ("h2", "Linux"), ("p", "Unpack the quartz tarball into opt.")])
    (source / "manuals" / "install.html").write_text(WEB_PAGE, encoding="utf-8")
    write_epub(source / "tales.epub", [("Chapter One", "<h2>The Storm</h2><p>Thunder rolled over the moor.</p>")])
    (source / "manuals" / "guide.md").write_text(MARKDOWN, encoding="utf-8")
    (source / "manuals" / "README").write_text("Plain notes without a heading about kayaks.", encoding="utf-8")
    slides = [("Quarterly results", [FILLER]), ("Hiring plan", ["Recruit two glassblowers before spring."])]
    write_pptx(source / "board.pptx", slides, title="Board meeting")
    write_odp(source / "board-talk.odp", [(title, [line.replace("glassblowers", "beekeepers") for line in lines])
                                          for title, lines in slides], title="Board talk")
    pond = [("h1", "Garden"), ("p", FILLER), ("h2", "Pond"),
            ("p", "Skim the lily pads each autumn and net the leaves before they sink.")]
    write_odt(source / "manuals" / "pond.odt", pond, title="Garden care")
    write_rtf(source / "memo.rtf", "\\pard Lunch is served in the atrium on Thursdays.\\par")
    index_dir = root / "idx"
    report = build_index(IndexConfig(source=source, index_dir=index_dir, model=str(tiny_model_dir),
                                     show_progress=False, passage_tokens=40, overlap_tokens=8))
    assert report.total_documents == 10 and not report.issues, report.summary()
    return index_dir


QUERIES = [
    ("sourdough wild yeast ferment flour", "nature.pdf", "p. 2", "Nature and craft"),
    ("suspension bridge cables anchored", "nature.pdf", "p. 3", "Nature and craft"),
    ("unpack quartz tarball", "manuals/widget.docx", "Installation › Linux", "Installation"),
    ("Debian signed package apt", "manuals/install.html", "Installing the widget › Linux › Debian",
     "Installing the widget"),
    ("thunder rolled moor", "tales.epub", "Chapter One › The Storm", "A Book"),
    ("vault tape Friday", "manuals/guide.md", "Guide › Backups", "Guide"),
    ("kayaks plain notes", "manuals/README", "", "manuals/README"),
    ("recruit glassblowers spring", "board.pptx", "p. 2 · Hiring plan", "Board meeting"),
    ("recruit beekeepers spring", "board-talk.odp", "p. 2 · Hiring plan", "Board talk"),
    ("skim lily pads autumn", "manuals/pond.odt", "Garden › Pond", "Garden care"),
    ("lunch atrium Thursdays", "memo.rtf", "", "memo.rtf"),
]


@pytest.mark.parametrize(("query", "doc_id", "label", "title"), QUERIES)
def test_python_hits_carry_their_location(documents_index, tiny_model_dir, query, doc_id, label, title):
    with Searcher(documents_index, model=str(tiny_model_dir)) as searcher:
        hit = searcher.search(query, k=1, mode="bm25")[0]
    assert (hit.doc_id, hit.location.label, hit.title) == (doc_id, label, title)
    assert hit.to_dict()["location"]["label"] == label
    assert Path(hit.path).is_file() and Path(hit.path).name == Path(doc_id).name


def test_the_cli_prints_the_page(documents_index, capsys):
    assert search_cli(["sourdough wild yeast", "--index", str(documents_index), "--mode", "bm25", "-k", "1"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "Nature and craft  (p. 2)  [nature.pdf]" in first
    assert search_cli(["unpack quartz tarball", "--index", str(documents_index), "--mode", "bm25", "-k", "1",
                       "--json"]) == 0
    hit = json.loads(capsys.readouterr().out.splitlines()[0])
    assert hit["location"] == {"page": None, "page_last": None, "section": ["Installation", "Linux"],
                               "label": "Installation › Linux"}


def test_the_api_returns_a_location_object(documents_index, tiny_model_dir):
    config = ApiConfig(index_dir=documents_index, rerank_model="none", similarity_model=str(tiny_model_dir))
    with TestClient(create_app(config)) as client:
        response = client.post("/search", json={"q": "suspension bridge cables", "k": 1, "mode": "bm25"})
    assert response.status_code == 200, response.text
    hit = response.json()["hits"][0]
    assert hit["doc_id"] == "nature.pdf"
    assert hit["location"] == {"page": 3, "page_last": 3, "section": [], "label": "p. 3"}
    assert "path" not in hit  # the API names no server paths
