"""The vector side of an index: a FAISS `IndexIDMap2` over inner product on unit vectors.

The index inside is exact (`Flat`) or one of the approximate types of
`indexer.store.ann` (IVF, HNSW, IVF-PQ); its search parameter (nprobe or efSearch)
is the one calibrated at build time. FAISS ids are the passage primary keys of
the SQL store, so a hit maps straight to its row. This module never imports
SQLAlchemy.
"""

from __future__ import annotations

import logging
import math
import os
import tempfile
import threading
from pathlib import Path

import faiss
import numpy as np

from indexer.store.gpu import set_gpu_search_param, to_gpu
from indexer.store.passage_subset import PassageSubset

logger = logging.getLogger(__name__)

# Below this many queries a search runs single-threaded (see `VectorStore.search`).
_PARALLEL_MIN_QUERIES = 16


class VectorStore:
    """Unit-normalised vectors keyed by int64 ids; score = inner product = cosine."""

    def __init__(self, index: faiss.Index, gpu: faiss.Index | None = None) -> None:
        self._index = index  # always a CPU index: written, filtered and exact searches read it
        self._gpu = gpu  # a copy on the GPU(s) for plain searches (indexer.store.gpu), or None
        self._gpu_selectors = True  # False once the GPU copy refused an IDSelector
        self.search_param: tuple[str, int] | None = None  # ("nprobe", 16), ("efSearch", 64) or None
        self._sorted_ids: np.ndarray | None = None  # read on the first filtered exact search
        self._lock = threading.Lock()

    @property
    def faiss_index(self) -> faiss.Index:
        return self._index

    def configure(self, param: str | None, value: int | None) -> None:
        """Set the approximate index's search parameter (see `indexer.store.ann.calibrate`)."""
        if param is None or value is None:
            self.search_param = None
            return
        from indexer.store.ann import set_search_param

        set_search_param(self._index, param, value)
        self.search_param = (param, int(value))
        if self._gpu is not None:
            try:
                set_gpu_search_param(self._gpu, param, value)
            except RuntimeError as error:  # a parameter the GPU copy has not: search on the CPU
                logger.warning("GPU copy takes no %s (%s): searching on the CPU", param, error)
                self._gpu = None

    def _params(self, exclude: faiss.IDSelector | None) -> faiss.SearchParameters | None:
        """Per-search parameters; they replace the index's own, so they carry nprobe/efSearch too."""
        if exclude is None:
            return None
        name, value = self.search_param or (None, None)
        if name == "nprobe":
            return faiss.SearchParametersIVF(sel=exclude, nprobe=value)
        if name == "efSearch":
            return faiss.SearchParametersHNSW(sel=exclude, efSearch=value)
        return faiss.SearchParameters(sel=exclude)

    @classmethod
    def create(cls, dim: int) -> VectorStore:
        if dim < 1:
            raise ValueError(f"dimension ({dim}) must be positive.")
        return cls(faiss.IndexIDMap2(faiss.IndexFlatIP(dim)))

    @classmethod
    def load(cls, path: Path | str, use_gpu: bool = True, mapped: bool = False) -> VectorStore:
        """The index in `path`. `mapped`: its codes stay in the file, memory-mapped read-only
        (FAISS's IO_FLAG_MMAP_IFC), so a reader opens a 10M-passage index at once and the kernel
        pages it in and out; such a store is only searched, never added to or removed from. A file
        a later build deletes stays readable while it is mapped."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(
                f"Vector file {path} is missing. Rebuild the index with "
                "`python -m indexer build --source PATH --index DIR --rebuild`."
            )
        flags = faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY if mapped else 0
        index = faiss.read_index(str(path), flags)
        return cls(index, to_gpu(index) if use_gpu else None)

    def on_gpu(self) -> VectorStore:
        """This store with a copy on all visible GPUs for its searches (`indexer.store.gpu` says
        when there is none: a CPU-only FAISS, a type without a GPU form, too little GPU memory)."""
        moved = VectorStore(self._index, to_gpu(self._index))
        if self.search_param is not None:
            moved.configure(*self.search_param)
        return moved

    @property
    def on_gpu_now(self) -> bool:
        """Whether plain searches run on a GPU copy."""
        return self._gpu is not None

    @property
    def dim(self) -> int:
        return int(self._index.d)

    @property
    def ntotal(self) -> int:
        return int(self._index.ntotal)

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            raise ValueError(f"vectors have shape {vectors.shape}; expected (n, {self.dim}).")
        if len(ids) != len(vectors):
            raise ValueError(f"{len(ids)} ids for {len(vectors)} vectors.")
        if len(ids):
            self._index.add_with_ids(vectors, ids)
            self._gpu = None  # a GPU copy is for reading; the CPU index is the one that changes

    def remove(self, ids: np.ndarray) -> int:
        from indexer.store.ann import remove_ids

        self._gpu = None
        return remove_ids(self._index, ids)

    def search(self, queries: np.ndarray, k: int, exclude: faiss.IDSelector | None = None,
               within: PassageSubset | None = None, share: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """(scores, ids), each (n_queries, k); missing slots have id -1. `exclude` selects the
        ids to leave out (deleted passages: see `indexer.store.segments`). `within` keeps only
        the passages of a metadata filter instead, `share` of all (`ann.filtered_params`).

        A handful of queries runs on one OpenMP thread: the FAISS wiki notes
        that thread start-up dominates small batches, and on a busy machine
        the threads wait on each other.
        """
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if queries.ndim == 1:
            queries = queries[None, :]
        k = max(1, min(k, self.ntotal)) if self.ntotal else 1
        if within is not None:
            from indexer.store import ann

            name, value = self.search_param or (ann.search_param(self._index), None)
            if name == "efSearch" and share < ann.HNSW_EXACT_SHARE:
                return ann.exact_within(self._index, queries, k, within.contains)
            if name == "efSearch" and share >= ann.HNSW_POSTFILTER_SHARE and len(queries) == 1:
                found = self._postfiltered(queries, k, within, share, value or 16)
                if found is not None:
                    return found
            if name == "nprobe" and within.count <= ann.IVF_EXACT_MAX:
                return ann.exact_ivf(self._index, queries, k, self._stored(within.ids()))
            params = ann.filtered_params(self._index, name, value, within.selector(), share)
        else:
            params = self._params(exclude)
            if self._gpu is not None and (exclude is None or self._gpu_selectors):
                found = self._gpu_search(queries, k, params)
                if found is not None:
                    return found
        if len(queries) >= _PARALLEL_MIN_QUERIES:
            return self._index.search(queries, k, params=params)
        previous = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)
        try:
            return self._index.search(queries, k, params=params)
        finally:
            faiss.omp_set_num_threads(previous)

    def _gpu_search(self, queries: np.ndarray, k: int,
                    params: faiss.SearchParameters | None) -> tuple[np.ndarray, np.ndarray] | None:
        """The GPU copy's answer; None when it refuses the deleted-passage selector (the CPU
        index answers those from then on). Filters (`within`) always search the CPU index."""
        assert self._gpu is not None
        if params is None:
            return self._gpu.search(queries, k)
        try:
            return self._gpu.search(queries, k, params=params)
        except RuntimeError as error:
            logger.info("the GPU index takes no ID selector (%s): deleted passages are left out on the CPU",
                        str(error).strip().splitlines()[-1][:160])
            self._gpu_selectors = False
            return None

    def _postfiltered(self, queries: np.ndarray, k: int, within: PassageSubset, share: float,
                      ef: int) -> tuple[np.ndarray, np.ndarray] | None:
        """HNSW for a filter that keeps much: the unfiltered top k x 2 / share, then its matching
        ones; None when fewer than k of them match (the caller then searches with the selector)."""
        from indexer.store import ann

        wide = min(self.ntotal, math.ceil(ann.HNSW_POSTFILTER_DEPTH * ann.widened(k, share)))
        params = faiss.SearchParametersHNSW(efSearch=max(ef, wide))
        scores, ids = self._index.search(queries, wide, params=params)
        keep = within.contains(ids[0]) & (ids[0] >= 0)
        if int(keep.sum()) < min(k, within.count):
            return None
        return scores[:, keep][:, :k], ids[:, keep][:, :k]

    def _stored(self, ids: np.ndarray) -> np.ndarray:
        """The ids among `ids` that this store holds. The first call reads the stored ids (and gives
        an IVF its direct map, for `ann.exact_ivf`); the store is read-only while searched."""
        with self._lock:
            if self._sorted_ids is None:
                from indexer.store import ann

                ann.with_direct_map(self._index)
                self._sorted_ids = np.sort(self.ids())
        stored = self._sorted_ids
        at = np.minimum(np.searchsorted(stored, ids), max(len(stored) - 1, 0))
        return ids[stored[at] == ids] if len(stored) else ids[:0]

    def ids(self) -> np.ndarray:
        """All stored ids (an IndexIDMap2's `id_map`, or an IVF index's inverted lists)."""
        from indexer.store.ann import stored_ids

        return stored_ids(self._index)

    def save(self, path: Path | str) -> Path:
        """Write atomically: a temp file in the same folder, fsync, then rename over `path`."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        try:
            faiss.write_index(self._index, tmp_name)  # the CPU index (a GPU copy is never written)
            with open(tmp_name, "rb+") as fh:
                os.fsync(fh.fileno())
            os.chmod(tmp_name, 0o644)
            os.replace(tmp_name, path)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
        return path
