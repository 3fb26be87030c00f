from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from indexer.sources.outline import (
    Block,
    Heading,
    Location,
    Outline,
    assemble,
    markdown_outline,
    outline_of_text,
    page_ranges,
    rst_outline,
)


def test_assemble_records_pages_and_headings_where_their_text_stands():
    text, outline = assemble([Block("Intro", level=1, page=1), Block("first page body", page=1),
                              Block("second page", page=2), Block("", page=3), Block("fourth", page=4)])
    assert text == "Intro\n\nfirst page body\n\nsecond page\n\nfourth"
    assert outline.headings == (Heading(0, 1, "Intro"),)
    starts = outline.page_starts
    assert [text[s:s + 6] for s in (starts[0], starts[1], starts[3])] == ["Intro\n", "second", "fourth"]
    # the empty third page starts where the text before it ends: no passage is placed on it
    assert outline.locate(text.index("fourth"), len(text)) == Location(4, 4, ("Intro",))
    assert outline.locate(0, text.index("second") + 3) == Location(1, 2, ("Intro",))


def test_section_path_closes_headings_of_the_same_or_an_outer_level():
    text = "# A\n\na\n\n## B\n\nb\n\n### C\n\nc\n\n## D\n\nd\n\n# E\n\ne\n"
    outline = markdown_outline(text)
    assert [(h.level, h.title) for h in outline.headings] == [(1, "A"), (2, "B"), (3, "C"), (2, "D"), (1, "E")]
    assert outline.section_at(text.index("c\n")) == ("A", "B", "C")
    assert outline.section_at(text.index("d\n")) == ("A", "D")
    assert outline.section_at(text.index("e\n")) == ("E",)
    assert outline.section_at(0) == ("A",)


def test_a_passage_that_opens_a_section_early_belongs_to_it():
    text = "# Old\n\n" + "old words " * 30 + "\n\nlast line of old\n\n# New\n" + "new words " * 40
    outline = markdown_outline(text)
    start = text.index("last line")
    assert outline.locate(start, len(text)).section == ("New",)
    # a heading late in the passage does not take it over
    assert outline.locate(0, len(text)).section == ("Old",)


def test_markdown_headings_skip_code_fences_and_read_setext():
    text = "Title\n=====\n\n```\n# not a heading\n```\n\nSub\n---\n\ntext\n"
    assert [(h.level, h.title) for h in markdown_outline(text).headings] == [(1, "Title"), (2, "Sub")]


def test_rst_levels_follow_the_order_styles_appear():
    text = "=====\nTitle\n=====\n\nIntro\n\nPart\n----\n\nx\n\nDetail\n~~~~~~\n\ny\n\nOther\n-----\n"
    found = [(h.level, h.title) for h in rst_outline(text).headings]
    assert found == [(1, "Title"), (2, "Part"), (3, "Detail"), (2, "Other")]
    assert outline_of_text("guide.rst", text).headings == rst_outline(text).headings
    assert not outline_of_text("notes.txt", "# looks like a heading")


def test_location_labels():
    assert Location(7, 7).label == "p. 7"
    assert Location(7, 8, ("Installation", "Linux")).label == "pp. 7–8 · Installation › Linux"
    assert Location(section=("A",)).label == "A" and not Location()
    assert Location.from_columns(3, 4, "A › B") == Location(3, 4, ("A", "B"))
    assert Location(2, 3, ("A",)).to_dict() == {"page": 2, "page_last": 3, "section": ["A"],
                                                "label": "pp. 2–3 · A"}


def test_heading_titles_never_hold_the_separator():
    _, outline = assemble([Block("Up › down", level=1), Block("body")])
    assert outline.headings[0].title == "Up > down"
    assert Location.from_columns(None, None, outline.locate(0, 5).section_path).section == ("Up > down",)


def test_outline_refuses_out_of_order_offsets():
    with pytest.raises(ValueError, match="page starts"):
        Outline(page_starts=(5, 2))
    with pytest.raises(ValueError, match="text order"):
        Outline(headings=(Heading(5, 1, "b"), Heading(2, 1, "a")))


def test_page_ranges():
    assert page_ranges([1, 2, 3, 7, 9, 10]) == "1–3, 7, 9–10"
    assert page_ranges([4]) == "4"


@given(st.lists(st.tuples(st.text(alphabet="ab \n", max_size=30), st.integers(1, 3)), min_size=1, max_size=12),
       st.data())
def test_every_span_lies_on_the_pages_of_its_text(pages, data):
    """Property: a span's pages are exactly the pages whose text it overlaps."""
    numbered = sorted(((text, page) for text, page in pages), key=lambda tp: tp[1])
    blocks = [Block(text, page=page) for text, page in numbered]
    text, outline = assemble(blocks)
    if not text:
        return
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    where = outline.locate(start, end)
    owners = []  # the page of each character, from the blocks themselves
    for block_text, page in ((b.text.strip(), b.page) for b in blocks):
        if block_text:
            if owners:
                owners.extend([owners[-1]] * 2)  # the separator belongs to the page before
            owners.extend([page] * len(block_text))
    assert where.page_first == owners[start] and where.page_last == owners[end - 1]
