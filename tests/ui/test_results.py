"""Result labels and captions, on plain hits: index data is shown literally, never as Markdown."""

from __future__ import annotations

import pytest

from search import Hit, SearchResult, StageTimings
from ui.results import hit_caption, plural, result_caption, score_label


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
def test_hit_caption_escapes_doc_id_and_source(doc_id: str, source: str, shown_id: str, shown_source: str) -> None:
    caption = hit_caption(_hit(doc_id=doc_id, source=source, start_char=3, end_char=40))
    assert caption == f"{shown_id} · {shown_source} · characters 3–40"


def test_score_label_names_the_score_and_shows_both_when_reranked() -> None:
    assert score_label(_hit(score=0.8123), "dense") == "cosine 0.812"
    assert score_label(_hit(score=0.0328), "hybrid") == "fused 0.033"
    reranked = _hit(score=4.21, rerank_score=4.21, retriever_score=11.5031)
    assert score_label(reranked, "bm25") == "rerank 4.210 · BM25 11.503"


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
