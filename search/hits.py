"""What a search returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from indexer.index import IndexStats


@dataclass(frozen=True)
class Hit:
    """One result: the document, its best passage and where that passage sits in it.

    `score` is what the hits are ordered by: the reranker's score when they were
    reranked, else the retriever's. `retriever_score` (cosine, BM25, or the
    fused score of the hybrid's fusion method, by mode; a z-score may be
    negative) and `rerank_score` keep both, so a UI can show why a reranked
    hit moved.
    """

    doc_id: str
    title: str
    text: str
    score: float
    metadata: dict[str, Any] = field(default_factory=dict)
    passage_id: int = -1
    start_char: int = 0
    end_char: int = 0
    source: str = ""
    retriever_score: float | None = None
    rerank_score: float | None = None


@dataclass(frozen=True)
class StageTimings:
    """Seconds spent in each stage of one search; 0 for a stage the search skipped.

    `retrieve_s` covers the FAISS and/or BM25 lookups, fusion, the SQL fetch and
    grouping into documents; `encode_s` is embedding the query (dense and hybrid).
    """

    encode_s: float = 0.0
    retrieve_s: float = 0.0
    rerank_s: float = 0.0

    @property
    def total_s(self) -> float:
        return self.encode_s + self.retrieve_s + self.rerank_s


@dataclass(frozen=True)
class SearchResult:
    """Hits plus how they were found: the mode that ran, how many candidates were reranked, timings.

    `fallback_reason` is set when `mode` is not the one the search would have
    used (an index without BM25 searched dense), and says how to fix it.
    `stats` describes the committed build that answered, so a page can show the
    figures of the build its results come from.
    """

    hits: list[Hit]
    mode: str
    reranked: int = 0
    timings: StageTimings = field(default_factory=StageTimings)
    fallback_reason: str | None = None
    stats: IndexStats | None = None
