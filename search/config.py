"""Query-time settings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from data.paths import PROJECT_ROOT
from search.fusion import RRF_K, Fusion, check_fusion, check_fusion_weight, check_rrf_k
from search.params import DEFAULT_K, MAX_K, MODES, SCREEN_K, check_count, check_mode

__all__ = ["DEFAULT_K", "FUSION_WEIGHTS", "MAX_K", "MODES", "SCREEN_K", "RerankConfig", "SearchConfig",
           "check_count", "check_mode", "shipped_reranker"]


# The weight each fusion method gets when a search names the method but no weight: for the convex
# combinations, the dense list's share that measured best for them across the dev sets
# (bench/bench_relevance.py); for "rrf", 0.5, which is plain RRF (Cormack et al.), as the name promises.
FUSION_WEIGHTS = {"rrf": 0.5, "minmax": 0.5, "tmm": 0.8, "zscore": 0.5}


@dataclass(frozen=True)
class SearchConfig:
    """How a `Searcher` retrieves passages and turns them into document hits: the server's
    settings, and the defaults a `SearchParams` field left None takes.

    Passages are grouped so each document appears once, with its best passage.
    Each retriever (both, in hybrid) first returns its top `fusion_depth`
    passages; only when those hold fewer than k documents are they fetched again
    at twice the depth, and the documents found there follow all those found
    before. The depths tried never depend on k, so `search(q, k)[:j] ==
    search(q, j)` for every j <= k: raising k only appends.

    `mode` is the retriever a search that names none runs. `fusion` is how hybrid
    fuses the two lists ("rrf", "minmax", "tmm" or "zscore"; `search.fusion`) and
    `fusion_weight` the dense list's share, 0..1 (None: the method's
    `FUSION_WEIGHTS`). `second_passage_weight` adds that share of a document's
    second-best passage score (above the lowest score fetched) to its best.
    `rerank_candidates` (1..`MAX_K`) is how many documents a reranker rescores;
    `rrf_k` is the constant of reciprocal-rank fusion (60, as in Cormack et al. 2009).
    `auto_refresh` makes every search (and `stats()`) first check, with one small
    SQL read, whether another process committed a newer build, and load it, so the
    app, the API and the CLI answer from the latest build.

    The defaults (hybrid; theoretical min-max at a dense share of 0.8; a
    document scored by its best passage alone, a second-passage share of 0; a
    fusion depth of 100) were chosen together on four dev sets of different
    kinds, as the setting whose worst gain over the best single retriever is
    largest: "Relevance: fusion and document scoring
    chosen on dev sets" in BENCHMARKS.md, from bench/bench_relevance.py.
    """

    fusion_depth: int = 100
    one_hit_per_document: bool = True
    mode: str = "hybrid"
    fusion: str = "tmm"
    fusion_weight: float | None = None
    second_passage_weight: float = 0.0
    rerank_candidates: int = 50
    rrf_k: int = RRF_K
    auto_refresh: bool = True

    def __post_init__(self) -> None:
        check_count("fusion_depth", self.fusion_depth)
        check_mode(self.mode)
        check_fusion(self.fusion)
        if self.fusion_weight is not None:
            check_fusion_weight(self.fusion_weight)
        if not 0.0 <= self.second_passage_weight <= 1.0:
            raise ValueError(
                f"second_passage_weight ({self.second_passage_weight}) must lie between 0 and 1; "
                "0 ranks a document by its best passage alone."
            )
        check_count("rerank_candidates", self.rerank_candidates)
        check_rrf_k(self.rrf_k)

    def second_passage_for(self, mode: str, fusion: str) -> float:
        """The second-passage share a search in `mode` (fused by `fusion`, in hybrid) scores documents
        with: `second_passage_weight`, except 0 under RRF, whose scores sit about 1/(rrf_k + rank)^2
        apart, so that any bonus of a passage's score would swamp its rank (the dev sweep in
        BENCHMARKS.md)."""
        return 0.0 if mode == "hybrid" and fusion == "rrf" else self.second_passage_weight

    def fusion_for(self, method: str | None = None, weight: float | None = None) -> Fusion:
        """The one rule for how a hybrid search fuses: the method asked for, else `fusion`; the weight
        asked for, else `fusion_weight` when the method is the configured one, else the method's
        `FUSION_WEIGHTS` entry."""
        method = self.fusion if method is None else check_fusion(method)
        if weight is None:
            if method == self.fusion and self.fusion_weight is not None:
                weight = self.fusion_weight
            else:
                weight = FUSION_WEIGHTS[method]
        return Fusion(method, weight, self.rrf_k)


# The reranker trained by bench/bench_rerank.py and committed with the app (models/reranker/README.md).
SHIPPED_RERANKER = PROJECT_ROOT / "models" / "reranker"


def shipped_reranker() -> Path | None:
    """The reranker committed with the app, or None in a checkout without it."""
    return SHIPPED_RERANKER if (SHIPPED_RERANKER / "config.json").is_file() else None


@dataclass(frozen=True)
class RerankConfig:
    """How a `CrossEncoderReranker` scores candidates.

    `max_length` bounds query + passage tokens: the cost of reranking grows
    with it, and a model's rerank_config.json may lower it (the shipped 2-layer
    model reads 64; "Reranker" in BENCHMARKS.md). `quantize` runs the Linear
    layers in int8 on the CPU.
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
    rrf_k: int = RRF_K
    enabled_by_default: bool = False

    def __post_init__(self) -> None:
        if self.max_length < 8:
            raise ValueError(f"max_length ({self.max_length}) must be at least 8 tokens.")
        if self.batch_size < 1:
            raise ValueError(f"batch_size ({self.batch_size}) must be at least 1.")
        if not 0.0 <= self.retriever_weight <= 1.0:
            raise ValueError(f"retriever_weight ({self.retriever_weight}) must lie between 0 and 1.")
        check_rrf_k(self.rrf_k)
