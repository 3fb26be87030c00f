"""Errors the indexer raises for bad input or an index that cannot take the build."""

from __future__ import annotations


class IndexerError(Exception):
    """Base class: the message says what is wrong and how to fix it."""


class BadInputError(IndexerError, ValueError):
    """A source file or record could not be used (raised instead of a warning with --strict)."""


class IndexMismatchError(IndexerError, ValueError):
    """The existing index was built with another model or dimension."""


class IndexBusyError(IndexerError, RuntimeError):
    """Another build holds the index folder's lock."""
