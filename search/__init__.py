"""Query time: dense retrieval, reranking, and the similarity API."""

from search.config import SearchConfig
from search.errors import (
    EmptyQueryError,
    IndexNotFoundError,
    IndexUnreadableError,
    QueryTruncatedWarning,
    SearchError,
)
from search.hits import Hit
from search.searcher import IndexStats, Searcher
from search.similarity import Pair, similarity, similarity_matrix, top_pairs

__all__ = [
    "EmptyQueryError",
    "Hit",
    "IndexNotFoundError",
    "IndexStats",
    "IndexUnreadableError",
    "Pair",
    "QueryTruncatedWarning",
    "SearchConfig",
    "SearchError",
    "Searcher",
    "similarity",
    "similarity_matrix",
    "top_pairs",
]
