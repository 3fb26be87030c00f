"""Query-time settings."""

from __future__ import annotations

from dataclasses import dataclass

MODES = ("dense", "bm25", "hybrid")


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"Unknown mode {mode!r}. Valid: {', '.join(MODES)}.")
    return mode


@dataclass(frozen=True)
class SearchConfig:
    """How a `Searcher` retrieves passages and turns them into document hits.

    Passages are grouped so each document appears once, with its best passage.
    `candidate_factor` × k passages are fetched first, doubling until k
    distinct documents are found or the retriever runs out.

    `mode` is the retriever used when a search names none: "hybrid", because on
    SciFact test it beat both parts (nDCG@10 0.716 against 0.660 dense and 0.679
    BM25; recall@100 0.958 against 0.930 and 0.910; BENCHMARKS.md) for about a
    millisecond of BM25 on top of dense retrieval. `rerank_candidates` is how
    many documents a reranker rescores; `rrf_k` is the constant of
    reciprocal-rank fusion (60, as in Cormack et al. 2009).
    """

    k: int = 10
    candidate_factor: int = 4
    one_hit_per_document: bool = True
    mode: str = "hybrid"
    rerank_candidates: int = 50
    rrf_k: int = 60

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"k ({self.k}) must be at least 1.")
        if self.candidate_factor < 1:
            raise ValueError(f"candidate_factor ({self.candidate_factor}) must be at least 1.")
        check_mode(self.mode)
        if self.rerank_candidates < 1:
            raise ValueError(f"rerank_candidates ({self.rerank_candidates}) must be at least 1.")
        if self.rrf_k < 0:
            raise ValueError(f"rrf_k ({self.rrf_k}) must not be negative; Cormack et al. use 60.")
