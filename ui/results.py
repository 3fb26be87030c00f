"""What the search page writes about results: labels, captions and the line under each hit.

Pure functions over `Hit` and `SearchResult`, so each can be tested without
Streamlit. Everything from the index (ids, titles, sources) is escaped: they
are the user's data, and the page renders Markdown.
"""

from __future__ import annotations

from search import Hit, SearchResult
from ui.highlight import escape_markdown

MODE_LABELS = {"dense": "dense (meaning)", "bm25": "BM25 (exact words)", "hybrid": "hybrid (both)"}
SCORE_LABELS = {"dense": "cosine", "bm25": "BM25", "hybrid": "fused"}


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def score_label(hit: Hit, mode: str) -> str:
    """The score named by what it is ("cosine 0.812", "fused 0.032"), or both scores of a
    reranked hit ("rerank 4.210 · BM25 11.503"), so one mode's scores are not read as another's."""
    if hit.rerank_score is None or hit.retriever_score is None:
        return f"{SCORE_LABELS[mode]} {hit.score:.3f}"
    return f"rerank {hit.rerank_score:.3f} · {SCORE_LABELS[mode]} {hit.retriever_score:.3f}"


def result_caption(result: SearchResult) -> str:
    caption = f"{len(result.hits)} best matching documents, best first, by {MODE_LABELS[result.mode]}"
    if result.reranked:
        verb = "was" if result.reranked == 1 else "were"
        caption += f"; the top {plural(result.reranked, 'candidate')} {verb} reranked by the cross-encoder"
    return f"{caption} ({result.timings.total_s * 1000:.0f} ms)."


def hit_caption(hit: Hit) -> str:
    """The line under a hit's title: document id, source file and where the passage sits in it."""
    return (
        f"{escape_markdown(hit.doc_id)} · {escape_markdown(hit.source)} · "
        f"characters {hit.start_char}–{hit.end_char}"
    )
