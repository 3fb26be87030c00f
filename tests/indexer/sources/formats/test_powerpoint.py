from __future__ import annotations

import pytest

from indexer.sources.formats import UnreadableDocument
from indexer.sources.formats.powerpoint import read_pptx
from tests.indexer.sources.formats.samples import truncate, write_pptx

SLIDES = [("Quarterly results", ["Revenue rose by a tenth", "Costs held steady"]),
          ("", ["A slide without a title"]),
          ("Next steps", ["Hire two engineers"])]


def test_each_slide_is_a_page_its_title_a_heading_its_notes_and_tables_read(tmp_path):
    path = write_pptx(tmp_path / "deck.pptx", SLIDES, notes={3: "Mention the budget for the hires."},
                      table=[["Region", "Sales"], ["North", "12"]])
    extracted = read_pptx(path)
    text, outline = extracted.text, extracted.outline
    assert extracted.title == "Quarterly results"  # no title in its properties: the first slide's
    start = text.index("Costs held")
    assert outline.locate(start, start + 5).label == "p. 1 · Quarterly results"
    assert outline.locate(text.index("A slide without"), text.index("A slide without") + 5).page_first == 2
    start = text.index("Mention the budget")
    assert outline.locate(start, start + 5).label == "p. 3 · Next steps"
    start = text.index("Region | Sales")
    assert outline.locate(start, start + 5).page_first == 4 and "North | 12" in text
    assert text.index("Hire two") < text.index("Mention the budget")  # notes after the slide's text


def test_the_title_comes_from_the_properties_first(tmp_path):
    assert read_pptx(write_pptx(tmp_path / "d.pptx", SLIDES, title="Board meeting")).title == "Board meeting"


def test_a_truncated_file_says_so(tmp_path):
    with pytest.raises(UnreadableDocument, match="damaged or truncated PowerPoint file"):
        read_pptx(truncate(write_pptx(tmp_path / "d.pptx", SLIDES)))


def test_a_deck_without_text(tmp_path):
    with pytest.raises(UnreadableDocument, match="PowerPoint file without text"):
        read_pptx(write_pptx(tmp_path / "d.pptx", []))
