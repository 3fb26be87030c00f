"""Errors raised at query time; each message says what to do about it."""

from __future__ import annotations


class SearchError(Exception):
    """Base class for query-time errors."""


class EmptyQueryError(SearchError, ValueError):
    """The query is empty or only whitespace."""


class IndexNotFoundError(SearchError, FileNotFoundError):
    """No index has been built in the folder."""


class IndexUnreadableError(SearchError):
    """The index exists but a part it needs (model folder, vector file) is gone."""


class QueryTruncatedWarning(UserWarning):
    """The query is longer than the model reads; the tail was dropped."""
