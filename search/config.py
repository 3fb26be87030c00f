"""Query-time settings."""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from pathlib import Path

from data.paths import PROJECT_ROOT

MODES = ("dense", "bm25", "hybrid")
# The most documents one search returns or reranks: past this, fetching and grouping passages
# costs more than any page or metric uses (evaluation reads the top 100).
MAX_K = 1000


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"Unknown mode {mode!r}. Valid: {', '.join(MODES)}.")
    return mode


def check_count(name: str, value: object, maximum: int = MAX_K) -> int:
    """`value` as an int in 1..maximum; a bool, float (2.5, nan, inf) or string is a TypeError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be a whole number between 1 and {maximum}, not {value!r} ({type(value).__name__})."
        )
    if not 1 <= value <= maximum:
        raise ValueError(f"{name} ({value}) must be at least 1 and at most {maximum}.")
    return int(value)


@dataclass(frozen=True)
class SearchConfig:
    """How a `Searcher` retrieves passages and turns them into document hits.

    Passages are grouped so each document appears once, with its best passage.
    `candidate_factor` × k passages are fetched first, doubling until k
    distinct documents are found or the retriever runs out.

    `k` and `rerank_candidates` lie in 1..`MAX_K`. `auto_refresh` makes every
    search (and `stats()`) first check, with one small SQL read, whether another
    process committed a newer build, and load it, so the app, the API and the
    CLI answer from the latest build.

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
    auto_refresh: bool = True

    def __post_init__(self) -> None:
        check_count("k", self.k)
        if self.candidate_factor < 1:
            raise ValueError(f"candidate_factor ({self.candidate_factor}) must be at least 1.")
        check_mode(self.mode)
        check_count("rerank_candidates", self.rerank_candidates)
        if self.rrf_k < 0:
            raise ValueError(f"rrf_k ({self.rrf_k}) must not be negative; Cormack et al. use 60.")


# The reranker trained by bench/bench_rerank.py and committed with the app (models/reranker/README.md).
SHIPPED_RERANKER = PROJECT_ROOT / "models" / "reranker"


def shipped_reranker() -> Path | None:
    """The reranker committed with the app, or None in a checkout without it."""
    return SHIPPED_RERANKER if (SHIPPED_RERANKER / "config.json").is_file() else None


@dataclass(frozen=True)
class RerankConfig:
    """How a `CrossEncoderReranker` scores candidates.

    `max_length` bounds query + passage tokens: the cost of reranking grows
    with it, and the shipped 2-layer model reads 64 (its rerank_config.json),
    which keeps 50 candidates within 300 ms p95 on two CPU cores where 128
    took about 500 ms (BENCHMARKS.md); `quantize` runs the Linear layers in
    int8 on the CPU (about twice as fast as float32 there).
    `retriever_weight` w fuses ranks: (1 - w) / (rrf_k + reranker rank) +
    w / (rrf_k + retriever rank); 0 keeps the reranker's order alone.
    `enabled_by_default` says whether the app, the CLI and the eval rerank with
    the shipped model when the user does not say (`search.rerank.resolve_reranker`);
    its rerank_config.json sets it from its dev measurement, and a model named
    explicitly is used whatever it says. The default is off: a reranker has to
    earn its place.
    """

    max_length: int = 128
    batch_size: int = 64
    quantize: bool = True
    retriever_weight: float = 0.0
    rrf_k: int = 60
    enabled_by_default: bool = False

    def __post_init__(self) -> None:
        if self.max_length < 8:
            raise ValueError(f"max_length ({self.max_length}) must be at least 8 tokens.")
        if self.batch_size < 1:
            raise ValueError(f"batch_size ({self.batch_size}) must be at least 1.")
        if not 0.0 <= self.retriever_weight <= 1.0:
            raise ValueError(f"retriever_weight ({self.retriever_weight}) must lie between 0 and 1.")
        if self.rrf_k < 0:
            raise ValueError(f"rrf_k ({self.rrf_k}) must not be negative; Cormack et al. use 60.")
