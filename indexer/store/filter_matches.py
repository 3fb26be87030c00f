"""From a metadata filter to the passages of one build that it matches, cached per filter and build.

A search with a filter asks for its `PassageSubset` once: the documents the filter matches
(`FieldIndex.evaluate`), spread to their passages through the passage -> document pairs of
`DocumentMap`, less the passages the build deleted. The subset is kept, keyed by the build and
the filter's canonical text (`metadata_filter.filter_key`), so a filter repeated across queries,
pages or a batch is computed once per build; the cache is bounded by memory.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from indexer.store.document_map import DocumentMap
from indexer.store.field_index import FieldIndex, FieldSummary, summarise
from indexer.store.metadata_filter import Filter, fields_of, filter_key
from indexer.store.passage_subset import PassageSubset
from indexer.store.sql_store import Connection

CACHE_BYTES = 256 * 2**20  # about 200 subsets of a 1M-passage index


@dataclass(frozen=True)
class _Layout:
    """How passages line up with documents for one build: each passage's document position in the
    `FieldIndex`, which passages are live in the build, and which documents have a live one."""

    build_id: str
    fields: FieldIndex
    passage_ids: np.ndarray
    document_at: np.ndarray  # the FieldIndex position of each passage's document
    live: np.ndarray  # bool per passage: stored in this build and not deleted
    documents_live: np.ndarray  # bool per FieldIndex document: has a live passage
    one_passage_each: bool  # passage i belongs to document i (document_at is the identity)
    dense_from: int | None  # the first passage id, when the ids run on without a gap
    all_live: bool  # every passage is live and every document has one


def _absent_fields(layout: _Layout, flt: Filter) -> tuple[str, ...]:
    """The fields `flt` names that no live document of the layout's build has."""
    columns = layout.fields.columns
    return tuple(sorted(name for name in fields_of(flt)
                        if not np.any(columns[name].present & layout.documents_live)))


class FilterMatches:
    """The subsets of one `Index`, and the columns they are computed from."""

    def __init__(self, cache_bytes: int = CACHE_BYTES) -> None:
        self._cache: OrderedDict[tuple[str, str], PassageSubset] = OrderedDict()
        self._cache_bytes = cache_bytes
        self._bytes = 0
        self._fields: FieldIndex | None = None
        self._layout: _Layout | None = None
        self._lock = threading.Lock()

    def subset(self, conn: Connection, flt: Filter, build_id: str, base: str, documents: DocumentMap,
               deleted: np.ndarray) -> PassageSubset:
        """The live passages of build `build_id` whose document satisfies `flt`. `documents` must
        cover every passage of the build; `deleted` holds the ids the build tombstoned."""
        key = (build_id, filter_key(flt))
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
                return found
            layout = self._layout_for(conn, build_id, base, documents, deleted, fields_of(flt))
            matched = layout.fields.evaluate(flt)
            # Each step has a path without gather or scatter for the common shapes (one passage per
            # document; passage ids without gaps): a new filter then costs milliseconds at 1M.
            per_passage = matched if layout.one_passage_each else matched[layout.document_at]
            if layout.all_live:  # nothing deleted, no document without passages: nothing to mask
                passages, covered = per_passage, int(np.count_nonzero(matched))
            else:
                passages = np.logical_and(per_passage, layout.live,
                                          out=per_passage if per_passage is not matched else None)
                covered = int(np.count_nonzero(matched & layout.documents_live))
            count = int(layout.passage_ids[-1]) + 1 if len(layout.passage_ids) else 0
            if layout.dense_from is not None:
                member = np.zeros(count, dtype=bool)
                member[layout.dense_from:] = passages
            else:
                member = np.zeros(count, dtype=bool)
                member[layout.passage_ids[passages]] = True
            subset = PassageSubset(member, covered, _absent_fields(layout, flt) if covered == 0 else ())
            self._remember(key, subset)
            return subset

    def summary(self, conn: Connection, field: str, build_id: str, base: str, documents: DocumentMap,
                deleted: np.ndarray) -> FieldSummary:
        """What `field` holds across the documents stored (`FieldSummary`)."""
        with self._lock:
            layout = self._layout_for(conn, build_id, base, documents, deleted, {field})
            return summarise(layout.fields.columns[field], field)

    def _layout_for(self, conn: Connection, build_id: str, base: str, documents: DocumentMap,
                    deleted: np.ndarray, fields: set[str]) -> _Layout:
        columns = self._fields
        if columns is None or columns.base != base:
            columns = FieldIndex.empty(base)
        if documents.max_document_id > columns.max_id:
            columns = columns.extended(conn)
        columns = columns.with_fields(conn, fields)
        self._fields = columns
        layout = self._layout
        if layout is None or layout.build_id != build_id or layout.fields.max_id != columns.max_id \
                or len(layout.passage_ids) != len(documents.passage_ids):
            at = np.searchsorted(columns.doc_ids, documents.document_ids)
            at = np.minimum(at, max(len(columns.doc_ids) - 1, 0))
            known = columns.doc_ids[at] == documents.document_ids if len(columns.doc_ids) else \
                np.zeros(len(documents.document_ids), dtype=bool)
            live = known & ~np.isin(documents.passage_ids, deleted) if len(deleted) else known
            documents_live = np.zeros(len(columns.doc_ids), dtype=bool)
            documents_live[at[live]] = True
            ids = documents.passage_ids
            identity = len(at) == len(columns.doc_ids) and bool(np.array_equal(at, np.arange(len(at))))
            dense = len(ids) > 0 and int(ids[-1]) - int(ids[0]) + 1 == len(ids)
            layout = _Layout(build_id, columns, ids, at, live, documents_live, identity,
                             int(ids[0]) if dense else None, bool(live.all() and documents_live.all()))
        self._layout = dataclasses.replace(layout, fields=columns)
        return self._layout

    def _remember(self, key: tuple[str, str], subset: PassageSubset) -> None:
        self._cache[key] = subset
        self._bytes += subset.nbytes
        while self._bytes > self._cache_bytes and len(self._cache) > 1:
            _, dropped = self._cache.popitem(last=False)
            self._bytes -= dropped.nbytes
