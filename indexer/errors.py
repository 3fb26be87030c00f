"""Errors of the indexer and of an index folder; each message says what is wrong and how to fix it.

Two families, and the errors of an index folder belong to both: `IndexerError` for what a build
meets, `SearchError` for what a search meets (`search.errors` adds its query errors under it). So
a program that searches catches `SearchError` and gets every error its searches can raise, a
missing or damaged index and a model that does not match it included.
"""

from __future__ import annotations


class IndexerError(Exception):
    """Base class: the message says what is wrong and how to fix it."""


class SearchError(Exception):
    """Base class of what a search raises: the index folder's errors below, and the query's
    (`search.errors`); the message says how to fix it."""


class BadInputError(IndexerError, ValueError):
    """A source file or record could not be used (raised instead of a warning with --strict)."""


class BuildInterrupted(IndexerError, RuntimeError):
    """Ctrl-C during a build: the message says what was committed and that rerunning resumes."""


class IndexMismatchError(IndexerError, SearchError, ValueError):
    """The index was built with another model, dimension or format, or belongs to another folder."""


class IndexBusyError(IndexerError, RuntimeError):
    """Another build holds the index's lock (the folder's, or the database's)."""


class NotEnoughSpaceError(IndexerError, OSError):
    """The disk lacks the room a build needs (a rebuild keeps the old index until the new one commits)."""


class IndexNotFoundError(IndexerError, SearchError, FileNotFoundError):
    """No committed index in the folder."""


class IndexUnreadableError(IndexerError, SearchError, RuntimeError):
    """The index exists but a part it needs is missing or damaged; the message gives the repair."""


class ShardUnavailableError(SearchError, RuntimeError):
    """A shard of a sharded index did not answer (its process died or timed out): a search fails
    rather than answer from the other shards silently, unless the caller allowed partial results."""

    def __init__(self, shards: list[int], count: int, reason: str) -> None:
        self.shards, self.count = shards, count
        named = ", ".join(str(s) for s in shards)
        super().__init__(
            f"Shard{'s' if len(shards) > 1 else ''} {named} of {count} did not answer ({reason}), so this "
            "search cannot see every passage. The service restarts a shard that died: retry in a few "
            "seconds, or ask with allow_partial=true for the other shards' results (the response then "
            "lists the missing shards).")
