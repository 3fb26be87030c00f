"""A committed build as segments: one base, built in full, plus small delta segments that later
commits appended, plus the ids deleted since the base (tombstones).

Why. Rewriting the whole vector file and rebuilding BM25 from every stored
passage is right for a small index and wrong for a large one: adding 1,000
passages to a 1M-passage index cost minutes (BENCHMARKS.md, "Scale"). So a
commit to a large index writes only what changed:

- its new passages as a delta segment: a flat float32 vector file and a BM25
  folder scored with the base's collection statistics (`BM25Store.build_delta`);
- the ids it deleted, added to a tombstone file that searches filter out (FAISS
  through an `IDSelector`, BM25 through a row mask), which is also how HNSW,
  whose FAISS index has no `remove_ids`, takes deletes.

`SegmentPolicy.merge_needed` decides when a commit rebuilds the base from
everything instead (a merge): while the index is small, when the deltas and
tombstones pass a fraction of the base (bounding the drift of frozen BM25
statistics and the cost of filtering), or when there are too many segments.
A merge of an IVF index that has outgrown its training retrains it
(`indexer.store.ann.needs_retrain`). Every decision about segments is made here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import faiss
import numpy as np

from indexer.store.bm25_store import BM25Store
from indexer.store.faiss_store import VectorStore
from indexer.store.passage_subset import PassageSubset


@dataclass(frozen=True)
class SegmentPolicy:
    """When a commit appends a delta segment and when it rebuilds the base (a merge).

    `min_base_passages`: below this the base is always rebuilt in full, which
    keeps small indexes single-file and their BM25 statistics exact; a full
    commit of 20k passages costs a few seconds (BM25 about 1.7 s per 10k).
    `merge_fraction`: the deltas plus tombstones may reach this share of the
    base before a merge; BM25 idf and mean length then drift by at most about
    this much, and a search filters at most this share of deleted ids.
    `max_segments`: each segment costs one more FAISS and BM25 lookup a query.
    """

    min_base_passages: int = 20_000
    merge_fraction: float = 0.10
    max_segments: int = 8

    def __post_init__(self) -> None:
        if self.min_base_passages < 0:
            raise ValueError(f"min_base_passages ({self.min_base_passages}) must not be negative.")
        if not 0 < self.merge_fraction <= 1:
            raise ValueError(f"merge_fraction ({self.merge_fraction}) must be in (0, 1].")
        if self.max_segments < 0:
            raise ValueError(f"max_segments ({self.max_segments}) must not be negative.")

    def merge_needed(self, layout: SegmentLayout, added: int, removed: int) -> str | None:
        """Why this commit must rebuild the base in full, or None to append a delta segment."""
        base = layout.base_passages
        if base < self.min_base_passages:
            return f"the index is small (base {base} < {self.min_base_passages} passages)"
        if len(layout.segments) + 1 > self.max_segments:
            return f"{self.max_segments} delta segments exist"
        pending = layout.delta_passages + added + layout.deleted + removed
        if pending > self.merge_fraction * base:
            return (f"changes since the base ({pending} passages) pass {self.merge_fraction:.0%} of "
                    f"it ({base})")
        return None


@dataclass(frozen=True)
class SegmentFiles:
    """One delta segment's files, with the digests its commit recorded."""

    vector_file: str
    vector_digest: str
    bm25_dir: str
    bm25_digest: str
    passages: int
    run: str = ""  # the build that wrote it (`BuildMeta.run_id`): its later chunks extend it
    shards: dict[str, Any] | None = None  # its shard set (`indexer.store.shards.ShardSet`), if sharded


@dataclass(frozen=True)
class SegmentLayout:
    """What the info row's `layout` column holds beside the base's files (which keep their columns).

    `plan` and `calibration` describe the base's FAISS index (`indexer.store.ann`);
    None means exact flat search, as every index built before index types were.
    `requested` is the `VectorIndexConfig` the user asked for, kept so a later
    build that names none keeps the choice.
    """

    base_passages: int
    plan: dict[str, Any] | None = None
    calibration: dict[str, Any] | None = None
    requested: dict[str, Any] | None = None
    segments: tuple[SegmentFiles, ...] = ()
    deleted_file: str | None = None
    deleted_digest: str | None = None
    deleted: int = 0
    # Into how many shards every segment is split (`indexer.store.shards`; 0: not sharded), and the
    # base's shard set (`ShardSet` as a dict); each delta's is in its `SegmentFiles`.
    shard_count: int = 0
    base_shards: dict[str, Any] | None = None

    @property
    def delta_passages(self) -> int:
        return sum(s.passages for s in self.segments)

    def files(self) -> list[str]:
        """Every file and folder this layout names besides the base's."""
        names = [name for s in self.segments for name in (s.vector_file, s.bm25_dir)]
        shard_sets = [self.base_shards, *(s.shards for s in self.segments)]
        names += [shard_set["folder"] for shard_set in shard_sets if shard_set]
        return names + ([self.deleted_file] if self.deleted_file else [])

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["segments"] = [asdict(s) for s in self.segments]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any] | None, passages: int) -> SegmentLayout:
        """The stored layout; an index written before segments is one flat base of `passages`."""
        if not data:
            return cls(base_passages=passages)
        data = dict(data)
        data["segments"] = tuple(SegmentFiles(**s) for s in data.get("segments", ()))
        return cls(**data)


def merge_top(scores: Sequence[np.ndarray], ids: Sequence[np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    """The best n of several (scores, ids) lists of one query: score descending, then lower id."""
    all_scores, all_ids = np.concatenate(scores), np.concatenate(ids)
    keep = all_ids >= 0
    all_scores, all_ids = all_scores[keep], all_ids[keep]
    order = np.lexsort((all_ids, -all_scores))[:n]
    return all_scores[order], all_ids[order]


def merge_rows(found: Sequence[tuple[np.ndarray, np.ndarray]], queries: int, width: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """Several FAISS answers (scores, ids), each (queries, any width), merged row by row into the
    best `width` (`merge_top`); slots nothing filled have id -1 and score -inf."""
    scores = np.full((queries, width), -np.inf, dtype=np.float32)
    ids = np.full((queries, width), -1, dtype=np.int64)
    for row in range(queries if found else 0):
        top_scores, top_ids = merge_top([f[0][row] for f in found], [f[1][row] for f in found], width)
        scores[row, : len(top_ids)], ids[row, : len(top_ids)] = top_scores, top_ids
    return scores, ids


@dataclass
class SegmentedVectors:
    """The vector side of a build: the base store, delta stores, and the deleted ids they still hold."""

    base: VectorStore
    deltas: list[VectorStore] = field(default_factory=list)
    deleted: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    # The live passages of the whole build, when these segments are one shard of it
    # (`indexer.store.shards`): a filter's share is taken of the build, so a shard searches with the
    # same parameters as one index would.
    population: int | None = None

    def __post_init__(self) -> None:
        self.deleted = np.asarray(self.deleted, dtype=np.int64)
        # Kept as attributes: FAISS selectors hold raw pointers to the id array and the inner selector.
        self._batch = faiss.IDSelectorBatch(self.deleted) if len(self.deleted) else None
        self._exclude = faiss.IDSelectorNot(self._batch) if self._batch is not None else None

    @property
    def dim(self) -> int:
        return self.base.dim

    @property
    def ntotal(self) -> int:
        return self.base.ntotal + sum(d.ntotal for d in self.deltas) - len(self.deleted)

    @property
    def search_param(self) -> tuple[str, int] | None:
        return self.base.search_param

    def stored_ids(self) -> list[np.ndarray]:
        """Each segment's ids as stored, deleted ones included (base first)."""
        return [self.base.ids(), *(d.ids() for d in self.deltas)]

    def ids(self) -> np.ndarray:
        stored = np.concatenate(self.stored_ids())
        return stored[~np.isin(stored, self.deleted)] if len(self.deleted) else stored

    def vector(self, passage_id: int) -> np.ndarray:
        """The stored vector of one live passage (decoded, for quantised storage)."""
        if np.any(self.deleted == passage_id):
            raise KeyError(f"passage {passage_id} is deleted")
        for store in (self.base, *self.deltas):
            if np.any(store.ids() == passage_id):
                return store.faiss_index.reconstruct(int(passage_id))
        raise KeyError(f"no vector for passage {passage_id}")

    def search(self, queries: np.ndarray, k: int, within: PassageSubset | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(scores, ids), each (n_queries, k), over every segment, deleted ids left out; only the
        passages of `within` (a metadata filter's, deleted ones already out of it) when given."""
        if within is None and not self.deltas and self._exclude is None:
            return self.base.search(queries, k)
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if queries.ndim == 1:
            queries = queries[None, :]
        if within is not None:
            share = within.count / max(1, self.population or self.ntotal)
            found = [s.search(queries, k, within=within, share=share)
                     for s in (self.base, *self.deltas) if s.ntotal]
        else:
            found = [s.search(queries, k, exclude=self._exclude) for s in (self.base, *self.deltas) if s.ntotal]
        return merge_rows(found, len(queries), max(1, min(k, self.ntotal)))


@dataclass
class SegmentedBM25:
    """The BM25 side of a build: base, deltas scored with its statistics, and the deleted ids."""

    base: BM25Store
    deltas: list[BM25Store] = field(default_factory=list)
    deleted: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))

    def __post_init__(self) -> None:
        self.deleted = np.asarray(self.deleted, dtype=np.int64)
        stores = [self.base, *self.deltas]
        self._masks = [s.rows_of(self.deleted) if len(self.deleted) else None for s in stores]

    @property
    def ntotal(self) -> int:
        return self.base.ntotal + sum(d.ntotal for d in self.deltas) - len(self.deleted)

    def stored_ids(self) -> list[np.ndarray]:
        return [self.base.ids(), *(d.ids() for d in self.deltas)]

    def ids(self) -> np.ndarray:
        stored = np.concatenate(self.stored_ids())
        return stored[~np.isin(stored, self.deleted)] if len(self.deleted) else stored

    def search(self, query: str, n: int, within: PassageSubset | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(scores, ids) of at most n passages over every segment, best first, deleted left out;
        only the passages of `within` when given. Scores are those of the whole collection (a
        filter does not change a term's idf)."""
        stores = [self.base, *self.deltas]
        if within is not None:
            found = [s.search(query, n, keep=within.in_range(s.dense_from, s.ntotal) if s.dense_from is not None
                              else within.contains(s.ids_view())) for s in stores]
            return merge_top([f[0] for f in found], [f[1] for f in found], n)
        if not self.deltas and self._masks[0] is None:
            return self.base.search(query, n)
        found = [s.search(query, n, exclude=mask) for s, mask in zip(stores, self._masks, strict=True)]
        return merge_top([f[0] for f in found], [f[1] for f in found], n)
