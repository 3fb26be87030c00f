"""Errors raised at query time; each message says what to do about it.

The errors of an index folder itself live in `indexer.errors` and are re-exported here.
"""

from __future__ import annotations

from indexer.errors import IndexNotFoundError, IndexUnreadableError

__all__ = [
    "EmptyQueryError",
    "IndexNotFoundError",
    "IndexUnreadableError",
    "NoRerankerError",
    "QueryTruncatedWarning",
    "SearchError",
]


class SearchError(Exception):
    """Base class for query-time errors."""


class EmptyQueryError(SearchError, ValueError):
    """The query is empty or only whitespace."""


class NoRerankerError(SearchError, ValueError):
    """A search asked to rerank, and the searcher has no reranker."""


class QueryTruncatedWarning(UserWarning):
    """The query is longer than the model reads; the tail was dropped."""
