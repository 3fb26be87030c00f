"""Shards: one build's vectors and BM25 split by passage id, so that N processes (or machines) each
hold 1/N of them and a router merges their top lists (`search.sharded`).

Passage p lives in shard `p % N`. Every segment of a build (the base and each delta) is split on
its own, when it is written, into a shard set: a folder `shards-<key>/` beside the segment's files,

    shards-<key>/vectors-<s>.faiss   shard s's vectors of that segment
    shards-<key>/bm25-<s>/           shard s's BM25 rows of that segment
    shards-<key>/shards.json         the count, and each file's passages and digest

so an incremental commit writes only its delta's shards. The tombstones stay one file for all.

Why the split keeps results equal to one index:

- BM25: a shard's rows are the rows of the segment's own score matrix (bm25s stores each
  passage's precomputed term scores), cut out, not rescored: every score was computed with the
  whole collection's document count, mean length and document frequencies, so it is the same
  number in the shard as in the segment.
- IVF (flat, SQ8 or PQ codes): each shard keeps the segment's trained quantizer and gets its
  own entries copied list by list (`IndexIVF.copy_subset_to`), codes unchanged. A query probes
  the same lists in every shard, so the merged top lists are the unsharded top list.
- Flat: the same vectors, an exact search either way. HNSW: each shard builds its own graph
  over its vectors, which is approximate in another way than the one graph (recall against one
  index is measured by the test, not promised equal).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
import shutil
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import faiss
import numpy as np

from indexer.errors import IndexMismatchError, IndexUnreadableError, ShardUnavailableError
from indexer.layout import SHARDS_PREFIX
from indexer.store.bm25_store import BM25Store
from indexer.store.faiss_store import VectorStore
from indexer.store.passage_subset import PassageSubset
from indexer.store.records import IndexInfo, IndexSnapshot
from indexer.store.segments import SegmentedBM25, SegmentedVectors, merge_rows, merge_top
from indexer.store.vector_parts import ivf_or_none

SHARDS_META = "shards.json"
MAX_SHARDS = 256


def check_shard_count(count: object) -> int:
    """`count` as a shard count (1..MAX_SHARDS); anything else says what is valid."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_SHARDS:
        raise ValueError(f"shards ({count!r}) must be a whole number from 1 to {MAX_SHARDS}; "
                         "--shards 2 splits the index in two by passage id.")
    return count


def shard_of(ids: np.ndarray, count: int) -> np.ndarray:
    """The shard each passage id lives in."""
    return np.asarray(ids, dtype=np.int64) % count


def shard_folder_name(segment_file: str) -> str:
    """The shard set's folder for the segment whose vector file is `segment_file`
    (`vectors-<key>.faiss` -> `shards-<key>`)."""
    key = segment_file.split("-", 1)[1].rsplit(".", 1)[0]
    return f"{SHARDS_PREFIX}{key}"


def vector_name(shard: int) -> str:
    return f"vectors-{shard}.faiss"


def bm25_name(shard: int) -> str:
    return f"bm25-{shard}"


def split_vectors(store: VectorStore, count: int) -> list[faiss.Index]:
    """The segment's FAISS index split into `count` indexes of the same type by `shard_of`.

    An IVF keeps its trained quantizer and its codes (entries copied list by list); other types
    (an `IndexIDMap2` around flat, HNSW or a scalar quantizer) get their trained inner index
    cloned empty and their shard's stored vectors added (decoded, for a quantised one).
    """
    index = store.faiss_index
    ivf = ivf_or_none(index)
    if ivf is not None and not isinstance(faiss.downcast_index(index), faiss.IndexIDMap2 | faiss.IndexIDMap):
        shards = []
        for shard in range(count):
            part = faiss.clone_index(index)
            part.reset()
            index.copy_subset_to(part, faiss.InvertedLists.SUBSET_TYPE_ID_MOD, count, shard)
            shards.append(part)
        return shards
    from indexer.store.ann import reconstruct_all

    ids, vectors = reconstruct_all(index)
    inner = faiss.downcast_index(faiss.downcast_index(index).index)
    where = shard_of(ids, count)
    shards = []
    for shard in range(count):
        empty = faiss.clone_index(inner)
        empty.reset()
        part = faiss.IndexIDMap2(empty)
        keep = where == shard
        if keep.any():
            part.add_with_ids(np.ascontiguousarray(vectors[keep]), np.ascontiguousarray(ids[keep]))
        shards.append(part)
    return shards


def split_bm25(store: BM25Store, count: int) -> list[BM25Store]:
    """The segment's BM25 rows split by `shard_of`, each shard's rows cut out of the segment's score
    matrix (`BM25Store.rows`: not rescored, see the module docstring)."""
    where = shard_of(store.ids_view(), count)
    return [store.rows(np.flatnonzero(where == shard)) for shard in range(count)]


@dataclass(frozen=True)
class ShardSet:
    """What a commit records of one segment's shard set: its folder and the digest of its meta file
    (which holds every shard file's own digest)."""

    folder: str
    digest: str
    count: int


def write_shard_set(root: Path, segment_file: str, vectors: VectorStore, bm25: BM25Store,
                    count: int) -> ShardSet:
    """Split one segment and write its shard set atomically (a temp folder, fsynced, renamed)."""
    from indexer.store.integrity import file_digest, folder_digest

    check_shard_count(count)
    folder = shard_folder_name(segment_file)
    tmp = root / f".{folder}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        files = []
        for shard, (index, lexical) in enumerate(zip(split_vectors(vectors, count), split_bm25(bm25, count),
                                                     strict=True)):
            faiss.write_index(index, str(tmp / vector_name(shard)))
            lexical.save(tmp / bm25_name(shard))
            files.append({"shard": shard, "passages": int(index.ntotal),
                          "vector_digest": file_digest(tmp / vector_name(shard)),
                          "bm25_digest": folder_digest(tmp / bm25_name(shard))})
        (tmp / SHARDS_META).write_text(json.dumps({"count": count, "shards": files}, indent=2) + "\n")
        for path in tmp.iterdir():
            if path.is_file():
                with open(path, "rb") as fh:
                    os.fsync(fh.fileno())
        os.rename(tmp, root / folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return ShardSet(folder, file_digest(root / folder / SHARDS_META), count)


def read_shard(root: Path, shard_set: ShardSet, shard: int) -> tuple[VectorStore, BM25Store]:
    """Shard `shard` of one segment's shard set, after its meta file and both of its files match
    the digests recorded. FileNotFoundError when the folder is gone (a newer build replaced it);
    ValueError naming the file that does not match."""
    from indexer.store.integrity import file_digest, folder_digest

    folder = root / shard_set.folder
    meta_path = folder / SHARDS_META
    if not meta_path.is_file():
        raise FileNotFoundError(meta_path)
    if file_digest(meta_path) != shard_set.digest:
        raise ValueError(f"{meta_path} is not the one committed")
    entry = json.loads(meta_path.read_text())["shards"][shard]
    vector_path, bm25_path = folder / vector_name(shard), folder / bm25_name(shard)
    if file_digest(vector_path) != entry["vector_digest"]:
        raise ValueError(f"{vector_path} is not the one committed")
    if folder_digest(bm25_path) != entry["bm25_digest"]:
        raise ValueError(f"{bm25_path} is not the one committed")
    return VectorStore.load(vector_path, use_gpu=False, mapped=True), BM25Store.load(bm25_path, mapped=True)


# --- serving: a shard answers from its part of a build; the router merges the shards' lists ------


@dataclass(frozen=True)
class SubsetBits:
    """A filter's `PassageSubset` as it travels to the shards: the bitmap, packed (1M passages:
    125 kB), which the shard unpacks instead of querying SQL, which it need not reach."""

    bits: np.ndarray
    length: int
    documents: int

    @classmethod
    def of(cls, subset: PassageSubset) -> SubsetBits:
        return cls(np.packbits(subset.member, bitorder="little"), len(subset.member), subset.documents)

    def subset(self) -> PassageSubset:
        member = np.unpackbits(self.bits, count=self.length, bitorder="little").astype(bool)
        return PassageSubset(member, self.documents)


class ShardReader:
    """Shard `shard` of an index folder: loads a build's part of every segment (verified) when a
    request names a build it has not loaded, and answers dense and BM25 searches over it.

    It reads only files (the index folder: local, or shared between machines), never SQL: each
    request carries the build's `IndexInfo`, which the router read. Thread-safe: a build is
    loaded once, and a loaded build is replaced whole.
    """

    def __init__(self, index_dir: Path | str, shard: int) -> None:
        self.index_dir = Path(index_dir)
        self.shard = shard
        self._loaded: tuple[str, SegmentedVectors, SegmentedBM25] | None = None
        self._lock = threading.Lock()
        self._subsets: dict[tuple[int, bytes], PassageSubset] = {}

    def _build(self, info: IndexInfo) -> tuple[SegmentedVectors, SegmentedBM25]:
        loaded = self._loaded
        if loaded is not None and loaded[0] == info.build_id:
            return loaded[1], loaded[2]
        with self._lock:
            if self._loaded is None or self._loaded[0] != info.build_id:
                try:
                    self._loaded = (info.build_id, *load_shard(self.index_dir, info, self.shard))
                except FileNotFoundError as err:
                    raise IndexUnreadableError(
                        f"Shard {self.shard} cannot load build {info.build_id}: its file {err.filename or err} "
                        "is gone, because a newer build replaced it while this search ran. Search again: "
                        "the next search goes to the newer build.") from err
                self._subsets.clear()
            return self._loaded[1], self._loaded[2]

    def _subset(self, bits: SubsetBits | None) -> PassageSubset | None:
        if bits is None:
            return None
        key = (bits.length, hashlib.blake2b(bits.bits.tobytes(), digest_size=16).digest())
        subset = self._subsets.get(key)
        if subset is None:
            subset = bits.subset()
            if len(self._subsets) >= 64:
                self._subsets.clear()
            self._subsets[key] = subset
        return subset

    def passages(self, info: IndexInfo) -> int:
        """How many live passages this shard holds of the build."""
        return self._build(info)[0].ntotal

    def dense(self, info: IndexInfo, queries: np.ndarray, k: int,
              within: SubsetBits | None = None) -> tuple[np.ndarray, np.ndarray]:
        vectors, _ = self._build(info)
        if vectors.ntotal == 0:
            empty = np.empty((len(queries), 0))
            return empty.astype(np.float32), empty.astype(np.int64)
        return vectors.search(queries, k, self._subset(within))

    def bm25(self, info: IndexInfo, query: str, n: int,
             within: SubsetBits | None = None) -> tuple[np.ndarray, np.ndarray]:
        _, lexical = self._build(info)
        return lexical.search(query, n, self._subset(within))


def load_shard(index_dir: Path, info: IndexInfo, shard: int) -> tuple[SegmentedVectors, SegmentedBM25]:
    """Shard `shard` of every segment of the build `info` records, with the build's tombstones and
    calibrated search parameter; a filter's share is taken of the whole build, as one index would."""
    from indexer.store.integrity import damaged, deleted_ids, layout_of

    layout = layout_of(info)
    if not layout.shard_count or layout.base_shards is None:
        raise IndexMismatchError(not_sharded_message(index_dir))
    if shard >= layout.shard_count:
        raise IndexMismatchError(f"The index in {index_dir} has {layout.shard_count} shards; there is no shard "
                                 f"{shard}. Start the service with --shards {layout.shard_count}.")
    sets = [layout.base_shards, *(s.shards for s in layout.segments)]
    if any(shard_set is None for shard_set in sets):
        raise damaged(index_dir, info, "a segment of this sharded build has no shards")
    try:
        parts = [read_shard(index_dir, ShardSet(**shard_set), shard) for shard_set in sets if shard_set]
    except ValueError as err:
        raise damaged(index_dir, info, f"a shard file does not match its commit ({err})") from err
    if layout.calibration:
        parts[0][0].configure(layout.calibration.get("param"), layout.calibration.get("value"))
    deleted = deleted_ids(index_dir, info)
    vectors = SegmentedVectors(parts[0][0], [p[0] for p in parts[1:]], deleted, population=info.passages)
    return vectors, SegmentedBM25(parts[0][1], [p[1] for p in parts[1:]], deleted)


def not_sharded_message(index_dir: Path) -> str:
    return (f"The index in {index_dir} is not sharded. Build it with shards first: "
            f"python -m indexer build --source PATH --index {index_dir} --shards N")


class Pending(Protocol):
    """A shard's answer on its way (a Ray Serve response, or one computed already)."""

    def result(self, timeout_s: float | None = None) -> Any: ...


class ShardClient(Protocol):
    """How the router reaches one shard: the same calls as `ShardReader`, answered later."""

    def dense(self, info: IndexInfo, queries: np.ndarray, k: int, within: SubsetBits | None) -> Pending: ...

    def bm25(self, info: IndexInfo, query: str, n: int, within: SubsetBits | None) -> Pending: ...


class Answered:
    """A `Pending` that holds its result already, or the error computing it raised."""

    def __init__(self, compute: Any) -> None:
        self._value: Any = None
        self._error: BaseException | None = None
        try:
            self._value = compute()
        except Exception as err:  # noqa: BLE001 -- handed to whoever waits for it, as Ray does
            self._error = err

    def result(self, timeout_s: float | None = None) -> Any:
        if self._error is not None:
            raise self._error
        return self._value


class LocalShard:
    """A `ShardClient` over a `ShardReader` in this process (tests; one machine without Ray)."""

    def __init__(self, reader: ShardReader) -> None:
        self.reader = reader

    def dense(self, info: IndexInfo, queries: np.ndarray, k: int, within: SubsetBits | None) -> Pending:
        return Answered(lambda: self.reader.dense(info, queries, k, within))

    def bm25(self, info: IndexInfo, query: str, n: int, within: SubsetBits | None) -> Pending:
        return Answered(lambda: self.reader.bm25(info, query, n, within))


# Per search (a context variable, so each request thread has its own): whether shards that do not
# answer may be left out, and which were.
_PARTIAL: contextvars.ContextVar[set[int] | None] = contextvars.ContextVar("partial_shards", default=None)


@contextlib.contextmanager
def partial_results() -> Iterator[set[int]]:
    """Within this block, searches of a sharded index answer from the shards that answer and add
    the others to the set yielded, instead of raising `ShardUnavailableError`."""
    missing: set[int] = set()
    token = _PARTIAL.set(missing)
    try:
        yield missing
    finally:
        _PARTIAL.reset(token)


# How long the router waits for a shard's answer before it counts the shard as down.
SHARD_TIMEOUT_S = 30.0


def gather(ask: Callable[[ShardClient], Pending], shards: Sequence[ShardClient], timeout_s: float) -> list[Any]:
    """Each shard's answer to `ask(shard)`, in shard order (every shard is asked before any is waited
    for). A shard that fails, and one that already failed earlier in this search, is None where
    partial results are allowed (`partial_results`: one search then leaves that shard out of all its
    lists, dense and BM25 alike); otherwise `ShardUnavailableError` names every shard that failed."""
    missing = _PARTIAL.get()
    skipped = missing or set()
    pending = [None if shard in skipped else ask(client) for shard, client in enumerate(shards)]
    answers: list[Any] = []
    failed: dict[int, str] = {}
    for shard, waiting in enumerate(pending):
        if waiting is None:
            answers.append(None)
            continue
        try:
            answers.append(waiting.result(timeout_s=timeout_s))
        except (IndexMismatchError, IndexUnreadableError, FileNotFoundError):
            raise  # the index, not the shard's process: the same error every retry would meet
        except Exception as err:  # noqa: BLE001 -- a dead actor, a timeout, a lost node: all "down"
            answers.append(None)
            failed[shard] = f"{type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}"
    if failed:
        if missing is None:
            raise ShardUnavailableError(sorted(failed), len(shards), "; ".join(failed.values()))
        missing.update(failed)
    return answers


class ShardedVectors:
    """The vector side of a sharded build, as the router sees it: every shard searched, their top
    lists merged as `SegmentedVectors` merges segments (score, then lower id)."""

    remote = True  # answered by other processes: a hybrid search asks for both lists at once

    def __init__(self, shards: Sequence[ShardClient], info: IndexInfo, deleted: np.ndarray,
                 timeout_s: float = SHARD_TIMEOUT_S) -> None:
        self.shards, self.info, self.deleted, self.timeout_s = list(shards), info, deleted, timeout_s

    @property
    def ntotal(self) -> int:
        return self.info.passages

    def search(self, queries: np.ndarray, k: int, within: PassageSubset | None = None) -> tuple[np.ndarray, np.ndarray]:
        queries = np.ascontiguousarray(queries, dtype=np.float32).reshape(-1, self.info.dimension)
        bits = SubsetBits.of(within) if within is not None else None
        answers = gather(lambda shard: shard.dense(self.info, queries, k, bits), self.shards, self.timeout_s)
        return merge_rows([a for a in answers if a is not None], len(queries), max(1, min(k, self.ntotal)))


class ShardedBM25:
    """The BM25 side of a sharded build, as the router sees it (see `ShardedVectors`)."""

    remote = True

    def __init__(self, shards: Sequence[ShardClient], info: IndexInfo, timeout_s: float = SHARD_TIMEOUT_S) -> None:
        self.shards, self.info, self.timeout_s = list(shards), info, timeout_s

    @property
    def ntotal(self) -> int:
        return self.info.passages

    def search(self, query: str, n: int, within: PassageSubset | None = None) -> tuple[np.ndarray, np.ndarray]:
        bits = SubsetBits.of(within) if within is not None else None
        answers = gather(lambda shard: shard.bm25(self.info, query, n, bits), self.shards, self.timeout_s)
        found = [a for a in answers if a is not None]
        if not found:
            return np.empty(0, dtype=np.float32), np.empty(0, dtype=np.int64)
        return merge_top([f[0] for f in found], [f[1] for f in found], n)


def sharded_files(shards: Sequence[ShardClient], timeout_s: float = SHARD_TIMEOUT_S):
    """A snapshot loader for `Index.open(files=...)`: a build's vectors and BM25 as the shards hold
    them, so the router loads no vector or BM25 file, only the tombstones."""
    def load(index_dir: Path, info: IndexInfo) -> IndexSnapshot:
        from indexer.store.integrity import deleted_ids, layout_of

        count = layout_of(info).shard_count
        if count != len(shards):
            raise IndexMismatchError(not_sharded_message(index_dir) if not count else (
                f"The index in {index_dir} has {count} shards and the service was started with "
                f"{len(shards)}. Start it with --shards {count}, or rebuild the index with "
                f"--shards {len(shards)}."))
        deleted = deleted_ids(index_dir, info)
        return IndexSnapshot(info.build_id, info, ShardedVectors(shards, info, deleted, timeout_s),
                             ShardedBM25(shards, info, timeout_s))
    return load
