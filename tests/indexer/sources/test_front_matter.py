"""Markdown's YAML front matter: its title titles the document, its other fields are metadata a
search filters on, and a file without a closed YAML mapping at its top is read whole."""

from __future__ import annotations

import pytest

from indexer import IndexConfig, build_index
from indexer.sources.front_matter import split_front_matter
from indexer.sources.readers import read_documents
from search import Searcher

NOTE = """---
title: "Refund policy"
tags: [billing, refunds]
date: 2025-03-01
updated: 2025-03-02 10:30:00
draft: false
rating: 4.5
owner:
  team: support
empty:
---
# Refunds

Customers get their money back within 14 days of the purchase.
"""


def test_the_fields_are_json_values_and_the_text_follows_the_block():
    fields, body = split_front_matter(NOTE)
    assert fields == {"title": "Refund policy", "tags": ["billing", "refunds"], "date": "2025-03-01",
                      "updated": "2025-03-02T10:30:00", "draft": False, "rating": 4.5,
                      "owner": {"team": "support"}}
    assert body.startswith("# Refunds\n\nCustomers get")


@pytest.mark.parametrize("text", [
    "---\n\nA note that opens with a horizontal rule.\n\n---\n\nMore text.\n",  # YAML, but a string
    "---\ntitle: never closed\n\nText.\n",
    "---\ntitle: [unclosed\n---\nText.\n",  # not YAML
    "Text first.\n---\ntitle: late\n---\n",  # not at the top
    "--- \n" + "".join(f"k{i}: {i}\n" for i in range(250)) + "---\nText.\n",  # too long for a block
])
def test_a_file_without_front_matter_is_left_as_it_is(text):
    assert split_front_matter(text) is None


def test_a_markdown_file_is_titled_by_its_front_matter_and_keeps_the_rest_as_metadata(tmp_path):
    (tmp_path / "refunds.md").write_text(NOTE, encoding="utf-8")
    (tmp_path / "untitled.md").write_text("---\ntags: [misc]\n---\nJust a line.\n", encoding="utf-8")
    (tmp_path / "only.md").write_text("---\ntitle: Placeholder\n---\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text(NOTE, encoding="utf-8")  # not Markdown: read whole
    issues: list = []
    docs = {doc.doc_id: doc for doc in read_documents(tmp_path, on_issue=issues.append)}
    refunds = docs["refunds.md"]
    assert refunds.title == "Refund policy" and refunds.text.startswith("# Refunds")
    assert refunds.metadata["tags"] == ["billing", "refunds"] and "title" not in refunds.metadata
    assert refunds.outline.headings[0].title == "Refunds"
    assert docs["untitled.md"].title == "untitled" and docs["untitled.md"].metadata == {"tags": ["misc"]}
    assert docs["notes.txt"].text == NOTE and docs["notes.txt"].metadata == {}
    assert [str(issue) for issue in issues] == ["only.md: empty document (front matter only)"]


def test_r_markdown_and_quarto_read_as_markdown(tmp_path):
    analysis = ("---\ntitle: Glacier survey\nauthor: A. Field\nformat: html\n---\n\n## Data\n\n"
                "```{r}\n# not a heading: R code\nsurvey <- read.csv('survey.csv')\n```\n\n## Results\n\nThe snout retreated.\n")
    for name in ("survey.Rmd", "survey.qmd"):
        (tmp_path / name).write_text(analysis, encoding="utf-8")
    docs = list(read_documents(tmp_path))
    assert [(doc.doc_id, doc.title, doc.metadata["author"]) for doc in docs] == [
        ("survey.Rmd", "Glacier survey", "A. Field"), ("survey.qmd", "Glacier survey", "A. Field")]
    assert [[h.title for h in doc.outline.headings] for doc in docs] == [["Data", "Results"]] * 2


def test_a_search_filters_on_front_matter_fields(tmp_path, tiny_model):
    source = tmp_path / "notes"
    source.mkdir()
    (source / "refunds.md").write_text(NOTE, encoding="utf-8")
    (source / "shipping.md").write_text("---\ntitle: Shipping\ntags: [logistics]\ndate: 2024-06-01\n---\n"
                                        "Parcels leave the warehouse within two days of the purchase.\n",
                                        encoding="utf-8")
    index = tmp_path / "idx"
    build_index(IndexConfig(source=source, index_dir=index, model=tiny_model, show_progress=False))
    with Searcher(index, model=tiny_model) as searcher:
        assert [hit.title for hit in searcher.search("purchase", k=5, filter={"tags": "billing"})] == ["Refund policy"]
        recent = searcher.search("purchase", k=5, filter={"date": {"$gte": "2025-01-01"}})
        assert [hit.doc_id for hit in recent] == ["refunds.md"]
        assert {hit.title for hit in searcher.search("purchase", k=5)} == {"Refund policy", "Shipping"}
