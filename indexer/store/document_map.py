"""Passage id -> document row id for every stored passage, held in memory by a searching `Index`.

Every search groups its candidate passages (two lists of 100 in hybrid) into documents
before it loads any text. Asking SQL for those 200 document ids (an `IN` list over the
primary key) is a fixed share of every retrieve stage (BENCHMARKS.md, "Scale"). Two sorted
int64 arrays answer the same question with a binary search: 16 bytes a passage.

Why it can be cached and extended rather than reloaded: passage ids are AUTOINCREMENT
and never reused, and a passage never moves to another document (a changed document gets
new passages), so a (passage, document) pair once read stays true while the database
lives. New passages always carry larger ids, so catching up after a commit reads only the
rows above the largest id held. Deleted passages may stay in the map: retrievers never
return them (tombstones filter every search), and `Index.passages` drops what SQL no
longer holds. A database recreated under the same folder (`--rebuild` over a damaged
SQLite file) always commits a new base build, and `Index` starts a new map for each base.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from indexer.store import sql_store
from indexer.store.sql_store import Connection

_BLOCK = 262_144  # rows fetched per round trip while loading


class DocumentMap:
    """An immutable snapshot of passage -> document pairs up to `max_id`; `extended` adds newer ones."""

    def __init__(self, base: str, passage_ids: np.ndarray, document_ids: np.ndarray) -> None:
        self.base = base  # the base build's vector file: a new base starts a new map
        self.passage_ids = passage_ids
        self.document_ids = document_ids
        self.max_id = int(passage_ids[-1]) if len(passage_ids) else 0
        self.max_document_id = int(document_ids.max()) if len(document_ids) else 0  # once, not per filter

    @classmethod
    def load(cls, conn: Connection, base: str) -> DocumentMap:
        return cls(base, np.empty(0, np.int64), np.empty(0, np.int64)).extended(conn)

    def extended(self, conn: Connection) -> DocumentMap:
        """This map plus every stored passage with an id above `max_id` (ordered reads by key)."""
        pids, dids = [self.passage_ids], [self.document_ids]
        after = self.max_id
        while True:
            block = sql_store.passage_documents(conn, after, _BLOCK)
            if not len(block):
                break
            pids.append(block[:, 0])
            dids.append(block[:, 1])
            after = int(block[-1, 0])
            if len(block) < _BLOCK:
                break
        if len(pids) == 1:
            return self
        return DocumentMap(self.base, np.concatenate(pids), np.concatenate(dids))

    def covers(self, passage_ids: Sequence[int]) -> bool:
        """True when no id asked for is newer than the map (so a miss means "not stored")."""
        return not len(passage_ids) or max(passage_ids) <= self.max_id

    def lookup(self, passage_ids: Sequence[int]) -> dict[int, int]:
        """Passage id -> document row id for the ids the map holds; the others are absent."""
        if not len(passage_ids) or not len(self.passage_ids):
            return {}
        wanted = np.asarray(passage_ids, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.passage_ids, wanted), len(self.passage_ids) - 1)
        found = self.passage_ids[at] == wanted
        return dict(zip(wanted[found].tolist(), self.document_ids[at[found]].tolist(), strict=True))
