"""Query time: dense, BM25 and hybrid retrieval, reranking, and the similarity API."""

from search.config import SearchConfig
from search.errors import (
    EmptyQueryError,
    FilterError,
    IndexMismatchError,
    IndexNotFoundError,
    IndexUnreadableError,
    ModelNotReadyError,
    NoRerankerError,
    QueryTruncatedWarning,
    SearchError,
    StaleBuildWarning,
)
from search.fusion import reciprocal_rank_fusion
from search.hits import Hit, Location, SearchResult, StageTimings
from search.params import DEFAULT_K, MAX_K, MODES, SCREEN_K, SearchParams
from search.rerank import CrossEncoderReranker, RerankerChoice, resolve_reranker
from search.searcher import IndexStats, Searcher  # IndexStats is indexer.index.IndexStats
from search.sentence_similarity import Pair, similarity, similarity_matrix, top_pairs

__all__ = [
    "DEFAULT_K",
    "MAX_K",
    "MODES",
    "CrossEncoderReranker",
    "EmptyQueryError",
    "FilterError",
    "Hit",
    "IndexMismatchError",
    "IndexNotFoundError",
    "IndexStats",
    "IndexUnreadableError",
    "Location",
    "ModelNotReadyError",
    "NoRerankerError",
    "Pair",
    "QueryTruncatedWarning",
    "RerankerChoice",
    "SCREEN_K",
    "SearchConfig",
    "SearchError",
    "SearchParams",
    "SearchResult",
    "Searcher",
    "StageTimings",
    "StaleBuildWarning",
    "reciprocal_rank_fusion",
    "resolve_reranker",
    "similarity",
    "similarity_matrix",
    "top_pairs",
]
