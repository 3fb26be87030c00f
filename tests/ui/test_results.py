"""Result labels and captions, on plain hits: index data is shown literally, never as Markdown."""

from __future__ import annotations

import pytest

from search import Hit, SearchResult, StageTimings
from search.relevance import NO_ANSWER_BELOW
from ui.results import (
    FAIR_COSINE,
    MAX_FIELD_CHARS,
    MAX_FIELDS_SHOWN,
    STRONG_COSINE,
    calibrated_relevance,
    details_line,
    fields_markdown,
    hit_markdown,
    plural,
    relevance,
    relevance_bar,
    result_caption,
    source_caption,
    weak_results_message,
)


def _hit(**fields) -> Hit:
    return Hit(**{"doc_id": "notes.md", "title": "Notes", "text": "x", "score": 0.5, **fields})


@pytest.mark.parametrize(
    ("doc_id", "source", "shown_id", "shown_source"),
    [
        ("**x**", "upload", "\\*\\*x\\*\\*", "upload"),
        ("[a](b)", "[click](http://evil)", "\\[a\\]\\(b\\)", "\\[click\\]\\(http\\:\\/\\/evil\\)"),
        ("$x$ <b>", "a_b_c", "\\$x\\$ \\<b\\>", "a\\_b\\_c"),
    ],
)
def test_source_caption_escapes_doc_id_and_source(doc_id: str, source: str, shown_id: str, shown_source: str) -> None:
    assert source_caption(_hit(doc_id=doc_id, source=source)) == f"{shown_id} · {shown_source}"
    assert source_caption(_hit(doc_id="a.txt", source="a.txt")) == "a\\.txt", "not named twice"


def test_relevance_labels_are_cut_at_the_calibrated_cosines() -> None:
    assert relevance(STRONG_COSINE).label == "strong match"
    assert relevance(STRONG_COSINE - 0.01).label == "fair match"
    assert relevance(FAIR_COSINE).label == "fair match"
    assert relevance(FAIR_COSINE - 0.01).label == "weak match"
    assert relevance(0.9).badge == f":green-badge[strong match {relevance_bar(0.9)}]"
    assert (relevance_bar(FAIR_COSINE), relevance_bar(STRONG_COSINE)) == ("▰▰▱▱▱", "▰▰▰▱▱")
    assert (relevance_bar(-0.2), relevance_bar(1.0)) == ("▱▱▱▱▱", "▰▰▰▰▰")


def test_weak_results_message_only_when_the_best_hit_is_weak() -> None:
    assert weak_results_message(relevance(0.7)) is None
    message = weak_results_message(relevance(0.12))
    assert message.startswith("None of these passages matches the query well: the best has cosine "
                              "similarity 0.12")


def test_weak_results_message_by_calibrated_relevance_reads_the_no_answer_cut() -> None:
    assert weak_results_message(calibrated_relevance(NO_ANSWER_BELOW)) is None
    message = weak_results_message(calibrated_relevance(0.12))
    assert message is not None and message.startswith(
        f"None of these passages is likely to answer the query: the best is relevant with probability 12%, "
        f"under {NO_ANSWER_BELOW:.0%}.")


def test_details_line_names_every_raw_score() -> None:
    reranked = _hit(score=4.21, rerank_score=4.21, retriever_score=0.0328, start_char=3, end_char=40)
    assert details_line(reranked, "hybrid", relevance(0.5)) == (
        "cosine 0.500 · fused 0.033 · rerank 4.210 · characters 3–40 of the document")
    dense = _hit(score=0.61, retriever_score=0.61, start_char=0, end_char=9)
    assert details_line(dense, "dense", relevance(0.61)) == "cosine 0.610 · characters 0–9 of the document"


def test_result_caption_says_mode_reranking_and_time() -> None:
    timings = StageTimings(encode_s=0.010, retrieve_s=0.020, rerank_s=0.100)
    result = SearchResult(hits=[_hit(), _hit()], mode="hybrid", reranked=1, timings=timings)
    assert result_caption(result) == (
        "2 best matching documents, best first, by hybrid (both); the top 1 candidate was reranked "
        "by the cross-encoder (130 ms)."
    )
    assert result_caption(SearchResult(hits=[], mode="bm25")) == (
        "0 best matching documents, best first, by BM25 (exact words) (0 ms)."
    )
    assert (plural(1, "file"), plural(2, "file")) == ("1 file", "2 files")


def test_details_line_leaves_out_the_cosine_while_the_model_loads() -> None:
    hit = Hit(doc_id="d", title="t", text="some text", score=11.5, end_char=9)
    assert details_line(hit, "bm25", None) == "BM25 11.500 · characters 0–9 of the document"


def test_source_caption_shows_the_location_and_merged_passages() -> None:
    from dataclasses import replace

    from search import Location

    hit = replace(_hit(doc_id="a.pdf", source="a.pdf"), location=Location(7, 8, ("Setup",)),
                  merged=("b.pdf", "c.pdf", "d.pdf", "e.pdf"))
    assert source_caption(hit) == ("a\\.pdf · **pp\\. 7–8 · Setup** · the same passage in b\\.pdf, c\\.pdf, "
                                   "d\\.pdf and 1 more, merged here")  # escaped for Markdown


def test_a_hit_is_one_markdown_element_with_its_title_label_source_and_snippet():
    """One element per hit, not four: the browser's work per element set how long k hits took."""
    hit = _hit(doc_id="guide_[1].md", title="*Guide*")
    shown = hit_markdown(3, hit, calibrated_relevance(0.78), "the :orange[**snippet**]")
    title, source, snippet = shown.split("\n")[0], shown.split("\n")[1], shown.split("\n\n", 1)[1]
    assert title == "**3. \\*Guide\\*** &nbsp; :green-badge[strong match ▰▰▰▰▱ 78%]  "
    assert source == ":small[:gray[guide\\_\\[1\\]\\.md]]"
    assert snippet == "the :orange[**snippet**]"
    assert hit_markdown(1, hit, None, "s").startswith("**1. \\*Guide\\***  \n"), "no label while the model loads"


def test_a_hits_fields_are_listed_escaped_on_one_line_in_the_documents_order() -> None:
    assert fields_markdown({}) is None and fields_markdown({"note": None, "tags": []}) is None
    assert fields_markdown({"Status": "Open", "Labels": ["auth", "e_mail"], "votes": 3, "draft": False,
                            "user": {"login": "ada"}, "note": None}) == (
        '**Status** Open · **Labels** auth\\, e\\_mail · **votes** 3 · **draft** false · '
        '**user** \\{\\"login\\"\\: \\"ada\\"\\}')  # every mark escaped: shown literally
    assert fields_markdown({"*title*": "line one\nline two"}) == "**\\*title\\*** line one line two"
    long = fields_markdown({"summary": "word " * 100})
    assert long is not None and long.endswith("…") and len(long) < MAX_FIELD_CHARS + 20
    many = fields_markdown({f"f{n}": n for n in range(MAX_FIELDS_SHOWN + 3)})
    assert many is not None and many.count("**") == 2 * MAX_FIELDS_SHOWN and many.endswith(" · and 3 more fields")
