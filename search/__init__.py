"""Query time: dense, BM25 and hybrid retrieval, reranking, and the similarity API."""

from search.config import MODES, SearchConfig
from search.errors import (
    EmptyQueryError,
    IndexNotFoundError,
    IndexUnreadableError,
    QueryTruncatedWarning,
    SearchError,
)
from search.fusion import reciprocal_rank_fusion
from search.hits import Hit, SearchResult, StageTimings
from search.rerank import CrossEncoderReranker
from search.searcher import IndexStats, Searcher
from search.similarity import Pair, similarity, similarity_matrix, top_pairs

__all__ = [
    "MODES",
    "CrossEncoderReranker",
    "EmptyQueryError",
    "Hit",
    "IndexNotFoundError",
    "IndexStats",
    "IndexUnreadableError",
    "Pair",
    "QueryTruncatedWarning",
    "SearchConfig",
    "SearchError",
    "SearchResult",
    "Searcher",
    "StageTimings",
    "reciprocal_rank_fusion",
    "similarity",
    "similarity_matrix",
    "top_pairs",
]
