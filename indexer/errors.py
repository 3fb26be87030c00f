"""Errors of the indexer and of an index folder; each message says what is wrong and how to fix it."""

from __future__ import annotations


class IndexerError(Exception):
    """Base class: the message says what is wrong and how to fix it."""


class BadInputError(IndexerError, ValueError):
    """A source file or record could not be used (raised instead of a warning with --strict)."""


class BuildInterrupted(IndexerError, RuntimeError):
    """Ctrl-C during a build: the message says what was committed and that rerunning resumes."""


class IndexMismatchError(IndexerError, ValueError):
    """The index was built with another model, dimension or format, or belongs to another folder."""


class IndexBusyError(IndexerError, RuntimeError):
    """Another build holds the index's lock (the folder's, or the database's)."""


class NotEnoughSpaceError(IndexerError, OSError):
    """The disk lacks the room a build needs (a rebuild keeps the old index until the new one commits)."""


class IndexNotFoundError(IndexerError, FileNotFoundError):
    """No committed index in the folder."""


class IndexUnreadableError(IndexerError, RuntimeError):
    """The index exists but a part it needs is missing or damaged; the message gives the repair."""
