"""The vectors of a merge, in parts read a block at a time: never all of them in memory at once.

A merge builds its base from several places: the committed base and delta segments (FAISS
indexes, whose live vectors are decoded on demand) and the commit's new vectors (an array).
Concatenating them held every vector two or three times over (1.5 GB per copy at 1M x 384);
`VectorParts` instead reads them in blocks of `BLOCK_ROWS`, for the three things a merge does
with them: draw a training sample (`rows`), add them to an index (`blocks`), and find the exact
neighbours that calibration measures recall against (`exact_top`).

An IVF part decodes through a hashtable direct map (id -> list and offset), which `readable`
gives the committed indexes for the length of the merge and then takes away, so that the file
written afterwards is what it was.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import faiss
import numpy as np

# Rows per block read: 96 MB of 384-dimension float32, enough for FAISS to add and search at full
# speed (measured: adding 1M vectors to IVF4096,SQ8 in blocks of 65,536 took as long as at once).
BLOCK_ROWS = 65_536
# `rows` reads wanted rows one by one when fewer than one in this many of a block's are wanted.
SPARSE_READS = 64


class Rows(Protocol):
    """A (n, dim) float32 matrix that may live outside memory (an ingest's spilled table): its
    shape, and rows read by slicing into a new array. A numpy array is one."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    def __len__(self) -> int: ...

    def __getitem__(self, rows: slice) -> np.ndarray: ...


def as_rows(vectors: np.ndarray | Rows, count: int, dim: int) -> np.ndarray | Rows:
    """`vectors` checked to be (count, dim): an array as float32 (an empty one of any shape
    becomes (0, dim)); other rows as they are, unread."""
    if isinstance(vectors, np.ndarray) or not hasattr(vectors, "shape"):
        return np.asarray(vectors, dtype=np.float32).reshape(count, dim)
    if tuple(vectors.shape) != (count, dim):
        raise ValueError(f"vectors of shape {tuple(vectors.shape)} where ({count}, {dim}) were expected.")
    return vectors


class VectorPart(Protocol):
    """Vectors with ids: `ids[i]` is the id of row i; `read(start, stop)` returns rows start..stop
    as a C-contiguous float32 array, which may be a view of the part's own (callers never change it)."""

    ids: np.ndarray

    def read(self, start: int, stop: int) -> np.ndarray: ...


@dataclass(frozen=True)
class ArrayPart:
    """Vectors already in memory (a commit's new vectors), or rows read when sliced (`Rows`)."""

    ids: np.ndarray
    vectors: np.ndarray | Rows

    def read(self, start: int, stop: int) -> np.ndarray:
        return np.ascontiguousarray(self.vectors[start:stop], dtype=np.float32)


@dataclass(frozen=True)
class IndexPart:
    """Some of the vectors stored in a FAISS index (`ann.create`'s kinds), decoded on demand:
    exact for float32 storage, the stored approximation for float16, sq8 and pq."""

    index: faiss.Index
    ids: np.ndarray
    positions: np.ndarray | None  # an IndexIDMap2's: the rows of `ids` in its inner index

    def read(self, start: int, stop: int) -> np.ndarray:
        if self.positions is not None:
            inner = faiss.downcast_index(faiss.downcast_index(self.index).index)
            return inner.reconstruct_batch(np.ascontiguousarray(self.positions[start:stop]))
        return _ivf_of(self.index).reconstruct_batch(np.ascontiguousarray(self.ids[start:stop]))


def ivf_or_none(index: faiss.Index) -> faiss.IndexIVF | None:
    """The IVF inside `index` (under an id map, say), or None when it is not one."""
    try:
        return faiss.extract_index_ivf(index)
    except RuntimeError:
        return None


def _ivf_of(index: faiss.Index) -> faiss.IndexIVF:
    ivf = ivf_or_none(index)
    if ivf is None:
        raise TypeError(f"{type(index).__name__} is neither an IndexIDMap2 nor an IVF.")
    return ivf


def index_part(index: faiss.Index, stored: np.ndarray, gone: np.ndarray) -> IndexPart:
    """The vectors of `index` (whose ids are `stored`, in storage order) but those in `gone`.
    An IVF must be `readable` while the part is read."""
    keep = ~np.isin(stored, gone) if len(gone) else np.ones(len(stored), dtype=bool)
    wrapped = faiss.downcast_index(index)
    positions = np.flatnonzero(keep).astype(np.int64) if isinstance(wrapped, faiss.IndexIDMap2 | faiss.IndexIDMap) else None
    return IndexPart(index, np.ascontiguousarray(stored[keep], dtype=np.int64), positions)


@contextlib.contextmanager
def readable(indexes: Sequence[faiss.Index]) -> Iterator[None]:
    """Give each IVF among `indexes` a hashtable direct map while the block runs, then take it
    away again (about 40 bytes a vector meanwhile)."""
    changed = []
    try:
        for index in indexes:
            ivf = ivf_or_none(index)
            if ivf is not None and ivf.direct_map.type != faiss.DirectMap.Hashtable:
                changed.append((ivf, ivf.direct_map.type))
                ivf.set_direct_map_type(faiss.DirectMap.Hashtable)
        yield
    finally:
        for ivf, previous in changed:
            ivf.set_direct_map_type(previous)


@dataclass(frozen=True)
class VectorParts:
    """Parts read in order, as if they were one (n, dim) matrix with one id per row."""

    parts: tuple[VectorPart, ...]
    dim: int

    @classmethod
    def of(cls, ids: np.ndarray, vectors: np.ndarray, dim: int) -> VectorParts:
        """One in-memory (or memory-mapped) array."""
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        return cls((ArrayPart(ids, np.asarray(vectors).reshape(len(ids), dim)),), dim)

    def __len__(self) -> int:
        return sum(len(part.ids) for part in self.parts)

    def ids(self) -> np.ndarray:
        """Every row's id, in order (8 bytes a row)."""
        if not self.parts:
            return np.empty(0, np.int64)
        return np.concatenate([np.asarray(part.ids, dtype=np.int64) for part in self.parts])

    def blocks(self, size: int = BLOCK_ROWS) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(ids, vectors) of at most `size` rows at a time, in order."""
        for part in self.parts:
            for start in range(0, len(part.ids), size):
                stop = min(start + size, len(part.ids))
                yield np.asarray(part.ids[start:stop], dtype=np.int64), part.read(start, stop)

    def rows(self, positions: np.ndarray) -> np.ndarray:
        """The vectors at `positions` (sorted, distinct row numbers), as one array. Reads at most
        `BLOCK_ROWS` rows at a time, and rows one by one where they are sparse (a probe's queries)."""
        positions = np.asarray(positions, dtype=np.int64)
        out = np.empty((len(positions), self.dim), dtype=np.float32)
        offset = 0
        for part in self.parts:
            count = len(part.ids)
            for start in range(0, count, BLOCK_ROWS):
                lo, hi = np.searchsorted(positions, [offset + start, offset + min(start + BLOCK_ROWS, count)])
                if lo == hi:
                    continue
                local = positions[lo:hi] - offset
                span = int(local[-1] - local[0]) + 1
                if (hi - lo) * SPARSE_READS < span:
                    out[lo:hi] = np.concatenate([part.read(int(row), int(row) + 1) for row in local])
                else:
                    out[lo:hi] = part.read(int(local[0]), int(local[0]) + span)[local - local[0]]
            offset += count
        return out

    def exact_top(self, queries: np.ndarray, depth: int) -> np.ndarray:
        """The ids of each query's `depth` best rows by inner product, exactly, best first (-1 past
        the end); ties go to the lower row, as `faiss.knn` over the whole matrix breaks them."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        best_scores = np.full((len(queries), depth), -np.inf, dtype=np.float32)
        best_rows = np.full((len(queries), depth), -1, dtype=np.int64)
        offset = 0
        ids = self.ids()
        for _, block in self.blocks():
            width = min(depth, len(block))
            scores, rows = faiss.knn(queries, block, width, metric=faiss.METRIC_INNER_PRODUCT)
            rows = np.where(rows >= 0, rows + offset, -1)
            merged_scores = np.concatenate([best_scores, scores], axis=1)
            merged_rows = np.concatenate([best_rows, rows], axis=1)
            # best first; among equal scores the lower row (earlier blocks hold lower rows)
            order = np.lexsort((np.where(merged_rows >= 0, merged_rows, np.iinfo(np.int64).max), -merged_scores),
                               axis=1)[:, :depth]
            best_scores = np.take_along_axis(merged_scores, order, axis=1)
            best_rows = np.take_along_axis(merged_rows, order, axis=1)
            offset += len(block)
        return np.where(best_rows >= 0, ids[np.clip(best_rows, 0, None)], -1)
