"""Errors raised at query time; each message says what to do about it.

One family: `SearchError` is the base of everything a search raises on purpose.

    SearchError
    ├── IndexNotFoundError     no committed index in the folder (also FileNotFoundError)
    ├── IndexUnreadableError   a part of the index is missing or damaged; the message gives the repair
    ├── IndexMismatchError     another model, dimension or format than the index's (also ValueError)
    ├── EmptyQueryError        a query or sentence without words (also ValueError)
    ├── FilterError            a metadata filter of the wrong shape (also ValueError)
    ├── NoRerankerError        rerank=True on a Searcher without a reranker (also ValueError)
    └── ModelNotReadyError     a named mode's model still loading after `model_wait` (also TimeoutError)

Arguments of the wrong type raise `TypeError`, and values out of range `ValueError`, before
anything runs. The index folder's errors live in `indexer.errors` (a build meets them too) and
are re-exported here.
"""

from __future__ import annotations

from indexer.errors import IndexMismatchError, IndexNotFoundError, IndexUnreadableError, SearchError
from indexer.store.metadata_filter import FilterError

__all__ = [
    "EmptyQueryError",
    "FilterError",
    "IndexMismatchError",
    "IndexNotFoundError",
    "IndexUnreadableError",
    "ModelNotReadyError",
    "NoRerankerError",
    "QueryTruncatedWarning",
    "SearchError",
    "StaleBuildWarning",
]


class EmptyQueryError(SearchError, ValueError):
    """The query is empty or only whitespace."""


class NoRerankerError(SearchError, ValueError):
    """A search asked to rerank, and the searcher has no reranker."""


class ModelNotReadyError(SearchError, TimeoutError):
    """A search named a mode that needs the model, which was still loading when its wait ran out."""


class StaleBuildWarning(UserWarning):
    """Fewer than k hits came back because documents ranked in the loaded build have left the
    database since; `Searcher.refresh()` loads the newer build."""


class QueryTruncatedWarning(UserWarning):
    """The query is longer than the model reads; the tail was dropped."""
