"""Which FAISS index holds the vectors: exact flat search or an approximate one for large collections.

Everything here is FAISS and numpy: the choice of index (`resolve`), building it from a factory
string (`create`, `train`), calibrating its search parameter against exact search
(`calibrate`) and reading it back (`reconstruct_all`). Vectors are unit-normalised, so inner
product is cosine; ids are int64 passage ids.

IVF indexes store ids themselves and are *not* wrapped in `IndexIDMap2`: the wrapper compacts
its id map on `remove_ids` while the IVF lists keep the old positions, so every later hit maps
to the wrong id (checked against faiss 1.15.1). Use `stored_ids` and `remove_ids` below, which
work for both shapes.
"""

from __future__ import annotations

import copy
import logging
import math
from dataclasses import asdict, dataclass, fields, replace

import faiss
import numpy as np

from indexer.store.gpu import gpu_count
from indexer.store.vector_parts import VectorParts, ivf_or_none, readable

logger = logging.getLogger(__name__)

KINDS = ("auto", "flat", "ivf", "hnsw", "ivfpq")
STORAGES = ("auto", "float32", "float16", "sq8")  # ivfpq stores PQ codes: storage must stay auto
PLAN_KINDS = ("flat", "ivf", "hnsw", "ivfpq")
PLAN_STORAGES = ("float32", "float16", "sq8", "pq")
IVF_KINDS = ("ivf", "ivfpq")
_CODEC = {"float32": "Flat", "float16": "SQfp16", "sq8": "SQ8"}

# Exact flat search is used up to this many passages. Rule: the largest size measured by
# bench/bench_ann_threshold.py whose single-query, one-thread flat p95 (CPU time, k=100, dim 384)
# is <= 5 ms, a third of the 15 ms p95 budget of the whole hybrid retrieve stage. Measured
# 2026-11-23 on the 2-core EPYC dev machine: 25k 3.03 ms, 35k 4.08 ms, 50k 6.25 ms, 100k 12.9 ms;
# the IVF,SQ8 peer stayed under 0.8 ms up to 200k (BENCHMARKS.md).
EXACT_MAX_PASSAGES = 35_000
# k-means wants at least 39 training points per centroid (faiss warns below that), so an IVF
# is never given more lists than n // 39.
MIN_POINTS_PER_CENTROID = 39
# Points per centroid we train on: faiss recommends 30 to 256 and its k-means subsamples to 256
# anyway. k-means costs sample x nlist x dim per iteration, so 64 keeps a 1M-vector IVF4096
# training to minutes on a few cores with little loss of centroid quality.
TRAIN_POINTS_PER_CENTROID = 64
PQ_CENTROIDS = 256  # 8-bit PQ codes: 256 centroids per sub-quantizer
PQ_TRAIN_SAMPLE = 65_536  # faiss's PQ k-means subsamples to 256 points per centroid
SQ_TRAIN_SAMPLE = 65_536  # SQ8 learns a per-dimension min/max range; a sample sees it well
RETRAIN_GROWTH = 4
# An IVF whose merge removes a quarter or more of its base is trained again from what is left: its
# lists were fit to vectors that are gone, and queries near those go to lists left empty. Seen on
# Node.js's docs folder: removing the 22,109 passages of its API's .json twins (36%) in place left
# 201 of 512 lists empty, and a question near the twins' pages probed 16 lists holding 1 vector
# (1 hit for k=50; nprobe 64 found 50).
RETRAIN_REMOVED_SHARE = 0.25
# Without a GPU the default lists stop growing at 4096 (reached at about 1M vectors). k-means costs
# sample x nlist x dim a step and filling an IVF n x nlist x dim, so a 10M-vector IVF16384 (4 sqrt(n),
# trained on 64 x 16384 = 1M vectors, 10 steps) asks about 250 TFLOP: half an hour at the 179
# GFLOP/s fp32 peak measured on the 2-core dev machine (BENCHMARKS.md, "Encoding variants"), a fifth
# of that at 4096. The cost moves to search, which scans nprobe lists of n / 4096 codes (measured at
# 10M: BENCHMARKS.md, "Scale at 10,000,000 and 1,000,000 passages"). With a GPU, which trains and assigns in
# seconds, the lists keep growing as 4 sqrt(n). An explicit --nlist is always kept.
CPU_MAX_NLIST = 4096
EF_SEARCH_SWEEP = (16, 32, 64, 128, 256, 512, 1024)


def _is_int(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


@dataclass(frozen=True)
class VectorIndexConfig:
    """What the user asks for (CLI: --vector-index, --vector-storage, --nlist, --hnsw-m, --pq-m,
    --target-recall). `None` and "auto" are resolved per collection size by `resolve`."""

    kind: str = "auto"
    storage: str = "auto"
    nlist: int | None = None
    hnsw_m: int = 32
    pq_m: int | None = None  # bytes per vector for ivfpq; None: dim // 8
    target_recall: float = 0.95  # recall@10 against exact search that calibration must reach

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Unknown vector index kind {self.kind!r}. Valid: {', '.join(KINDS)}.")
        if self.storage not in STORAGES:
            raise ValueError(f"Unknown vector storage {self.storage!r}. Valid: {', '.join(STORAGES)}.")
        if self.kind == "ivfpq" and self.storage != "auto":
            raise ValueError(
                f"storage ({self.storage!r}) does not apply to kind 'ivfpq', which stores PQ codes "
                "(set their size with pq_m); leave storage as 'auto'."
            )
        if self.nlist is not None and (not _is_int(self.nlist) or self.nlist < 1):
            raise ValueError(f"nlist ({self.nlist!r}) must be an integer >= 1, or None to choose from n.")
        if self.nlist is not None and self.kind in ("flat", "hnsw"):
            raise ValueError(f"nlist ({self.nlist}) applies only to kinds ivf and ivfpq, not {self.kind!r}.")
        if not _is_int(self.hnsw_m) or not 2 <= self.hnsw_m <= 512:
            raise ValueError(f"hnsw_m ({self.hnsw_m!r}) must be an integer from 2 to 512 (32 is usual).")
        if self.pq_m is not None and (not _is_int(self.pq_m) or self.pq_m < 1):
            raise ValueError(f"pq_m ({self.pq_m!r}) must be an integer >= 1, or None for dim // 8.")
        if self.pq_m is not None and self.kind != "ivfpq":
            raise ValueError(f"pq_m ({self.pq_m}) applies only to kind 'ivfpq', not {self.kind!r}.")
        if not isinstance(self.target_recall, float | int) or not 0.0 < self.target_recall <= 1.0:
            raise ValueError(f"target_recall ({self.target_recall!r}) must be in (0, 1], e.g. 0.95.")


@dataclass(frozen=True)
class VectorIndexPlan:
    """What `resolve` chose for a given size; stored in the index info as `to_json()`."""

    kind: str
    storage: str
    factory: str
    nlist: int | None
    hnsw_m: int | None
    pq_m: int | None
    trained_on: int

    def __post_init__(self) -> None:
        if self.kind not in PLAN_KINDS:
            raise ValueError(f"plan kind {self.kind!r} is not one of {', '.join(PLAN_KINDS)}.")
        if self.storage not in PLAN_STORAGES:
            raise ValueError(f"plan storage {self.storage!r} is not one of {', '.join(PLAN_STORAGES)}.")
        if (self.kind in IVF_KINDS) != (self.nlist is not None):
            raise ValueError(f"plan nlist ({self.nlist}) must be set exactly for ivf and ivfpq ({self.kind!r}).")
        if (self.kind == "hnsw") != (self.hnsw_m is not None):
            raise ValueError(f"plan hnsw_m ({self.hnsw_m}) must be set exactly for hnsw ({self.kind!r}).")
        if not (self.kind == "ivfpq") == (self.pq_m is not None) == (self.storage == "pq"):
            raise ValueError(f"plan pq_m ({self.pq_m}) and storage 'pq' ({self.storage!r}) go with "
                             f"kind ivfpq only ({self.kind!r}).")

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> VectorIndexPlan:
        names = {f.name for f in fields(cls)}
        missing, unknown = sorted(names - set(d)), sorted(set(d) - names)
        if missing or unknown:
            raise ValueError(
                f"Stored vector index plan has missing keys {missing} and unknown keys {unknown}; "
                "rebuild the index with `python -m indexer build ... --rebuild`."
            )
        return cls(**{name: d[name] for name in names})


def default_nlist(n: int, max_nlist: int | None = None) -> int:
    """About 4 * sqrt(n) inverted lists (faiss's guideline is 4 to 16 * sqrt(n)), rounded to a
    power of two, clamped to [16, 65536] (to [16, max_nlist] when given: `CPU_MAX_NLIST` without a
    GPU, see `resolve`), and never more than n // 39 so k-means gets at least 39 training points per
    centroid (then the largest power of two within that cap)."""
    cap = n // MIN_POINTS_PER_CENTROID
    if cap < 1:
        raise ValueError(
            f"An IVF index needs at least {MIN_POINTS_PER_CENTROID} vectors to train a centroid; "
            f"got {n}. Use --vector-index flat (or auto) for a collection this small."
        )
    nlist = min(max(2 ** round(math.log2(4 * math.sqrt(n))), 16), 65_536 if max_nlist is None else max_nlist)
    return nlist if nlist <= cap else 2 ** int(math.log2(cap))


def _default_nlist_here(n: int) -> int:
    """`default_nlist` for this machine: capped at `CPU_MAX_NLIST` without a GPU."""
    return default_nlist(n, None if gpu_count() > 0 else CPU_MAX_NLIST)


def resolve(config: VectorIndexConfig, n: int, dim: int) -> VectorIndexPlan:
    """The index for `n` vectors of `dim` dimensions.

    kind auto: flat up to EXACT_MAX_PASSAGES vectors, IVF above.
    storage auto: sq8 for an IVF that auto chose (a 1M x 384 float32 index is 1.5 GB, sq8 is
    384 MB; at 100k it lost 0.002 recall@10 at the same nprobe, see BENCHMARKS.md); float32 for
    flat, hnsw and an IVF asked for by name; pq for ivfpq.
    A kind that cannot be trained at this n raises ValueError saying what to change; there is
    no silent fallback, so an index is always what the user asked for.
    """
    if not _is_int(n) or n < 0:
        raise ValueError(f"n ({n!r}) must be a count of vectors >= 0.")
    if not _is_int(dim) or dim < 1:
        raise ValueError(f"dim ({dim!r}) must be a positive integer.")
    auto = config.kind == "auto"
    kind = ("flat" if n <= EXACT_MAX_PASSAGES else "ivf") if auto else config.kind
    storage = config.storage
    if kind == "ivfpq":
        storage = "pq"
    elif storage == "auto":
        storage = "sq8" if auto and kind == "ivf" else "float32"
    nlist = hnsw_m = pq_m = None
    if kind in IVF_KINDS:
        nlist = config.nlist if config.nlist is not None else _default_nlist_here(n)
        need = MIN_POINTS_PER_CENTROID * nlist
        if n < need:
            raise ValueError(
                f"{kind} with nlist {nlist} needs at least {need} vectors to train "
                f"({MIN_POINTS_PER_CENTROID} per list); got {n}. Lower --nlist, or use "
                "--vector-index flat or auto."
            )
    if kind == "ivfpq":
        pq_m = config.pq_m if config.pq_m is not None else dim // 8
        if pq_m < 1 or dim % pq_m:
            divisors = ", ".join(str(m) for m in range(1, dim + 1) if dim % m == 0)
            raise ValueError(
                f"pq_m ({pq_m}) must divide the dimension ({dim}); pass one of {divisors} "
                "with --pq-m (bytes per vector)."
            )
        need = MIN_POINTS_PER_CENTROID * PQ_CENTROIDS
        if n < need:
            raise ValueError(
                f"ivfpq needs at least {need} vectors to train its {PQ_CENTROIDS}-code "
                f"sub-quantizers; got {n}. Use --vector-index ivf or flat."
            )
        factory = f"IVF{nlist},PQ{pq_m}"
    elif kind == "ivf":
        factory = f"IVF{nlist},{_CODEC[storage]}"
    elif kind == "hnsw":
        hnsw_m = config.hnsw_m
        factory = f"HNSW{hnsw_m},{_CODEC[storage]}"
    else:
        factory = _CODEC[storage]
    if storage == "sq8" and n < 1:
        raise ValueError("sq8 storage learns each dimension's range from the vectors; got none. "
                         "Use --vector-storage float32 for an empty index.")
    plan = VectorIndexPlan(kind, storage, factory, nlist, hnsw_m, pq_m, trained_on=0)
    return replace(plan, trained_on=training_sample_size(plan, n))


def training_sample_size(plan: VectorIndexPlan, n: int) -> int:
    """Rows to train on: 0 when the index needs no training (float32/float16 flat and hnsw);
    64 per IVF list (see TRAIN_POINTS_PER_CENTROID), at least PQ_TRAIN_SAMPLE for ivfpq so the
    PQ codebooks see enough points, SQ_TRAIN_SAMPLE for sq8 ranges; never more than n."""
    if plan.kind in IVF_KINDS:
        want = TRAIN_POINTS_PER_CENTROID * plan.nlist
        if plan.kind == "ivfpq":
            want = max(want, PQ_TRAIN_SAMPLE)
        return min(n, want)
    return min(n, SQ_TRAIN_SAMPLE) if plan.storage == "sq8" else 0


def create(plan: VectorIndexPlan, dim: int) -> faiss.Index:
    """An empty index for `plan`, keyed by passage id: IVF indexes store ids in their lists;
    the others sit in an `IndexIDMap2` (see the module docstring for why not IVF)."""
    inner = faiss.index_factory(dim, plan.factory, faiss.METRIC_INNER_PRODUCT)
    if plan.kind == "ivfpq":
        # The factory turns on polysemous training (Hamming filtering we never search with);
        # it took 20 of 21 s of a 10k-vector training.
        faiss.downcast_index(inner).do_polysemous_training = False
    return inner if plan.kind in IVF_KINDS else faiss.IndexIDMap2(inner)


def train(index: faiss.Index, vectors: np.ndarray | VectorParts, sample: int, seed: int = 0) -> int:
    """Train on a random sample (without replacement) of at most `sample` rows; returns the rows
    used, 0 when the index needs no training or is already trained. Only the sample is read
    from `VectorParts`."""
    if index.is_trained:
        return 0
    parts = _as_parts(vectors, None, index.d)
    count = min(int(sample), len(parts))
    if count < 1:
        raise ValueError(f"This index needs training vectors; got {len(parts)} rows and sample {sample}.")
    rows = np.random.default_rng(seed).choice(len(parts), size=count, replace=False)
    sample_rows = parts.rows(np.sort(rows))
    ivf = ivf_or_none(index)
    if ivf is not None and gpu_count() > 0:
        _train_on_gpu(index, ivf, sample_rows)
    else:
        index.train(sample_rows)
    return count


def _train_on_gpu(index: faiss.Index, ivf: faiss.IndexIVF, sample: np.ndarray) -> None:
    """An IVF's k-means with its assignment step on the GPUs (FAISS's `clustering_index`, as its
    own GPU benchmarks train); the trained index stays on the CPU, to be filled and written. A GPU
    that cannot take it leaves the training to the CPU."""
    try:
        clustering = faiss.index_cpu_to_all_gpus(faiss.IndexFlatL2(index.d))
    except (RuntimeError, MemoryError) as error:
        logger.warning("IVF training on the CPU: the GPU could not hold its k-means (%s)", error)
        index.train(sample)
        return
    ivf.clustering_index = clustering
    try:
        index.train(sample)
    finally:
        ivf.clustering_index = None


def _as_parts(vectors: np.ndarray | VectorParts, ids: np.ndarray | None, dim: int) -> VectorParts:
    """`vectors` as `VectorParts` (an array: one part, with `ids`, else its row numbers)."""
    if isinstance(vectors, VectorParts):
        return vectors
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or (ids is not None and len(vectors) != len(ids)):
        raise ValueError(f"vectors {vectors.shape} and ids {None if ids is None else np.shape(ids)} must be "
                         "(n, dim) and (n,).")
    return VectorParts.of(np.arange(len(vectors)) if ids is None else ids, vectors, vectors.shape[1] or dim)


def _id_mapped(index: faiss.Index) -> bool:
    return isinstance(faiss.downcast_index(index), faiss.IndexIDMap2 | faiss.IndexIDMap)


def stored_ids(index: faiss.Index) -> np.ndarray:
    """Every id in the index: the id map of an `IndexIDMap2`, else the ids in the IVF lists."""
    owner, index = index, faiss.downcast_index(index)  # noqa: F841 -- the wrapper does not own it
    if _id_mapped(index):
        return faiss.vector_to_array(index.id_map).astype(np.int64)
    ivf = ivf_or_none(index)
    if ivf is None:
        raise TypeError(f"{type(index).__name__} holds no ids; build it with ann.create.")
    lists, parts = ivf.invlists, []
    for list_no in range(ivf.nlist):
        size = lists.list_size(list_no)
        if size:
            ptr = lists.get_ids(list_no)
            parts.append(faiss.rev_swig_ptr(ptr, size).copy())
            lists.release_ids(list_no, ptr)
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)


def remove_ids(index: faiss.Index, ids: np.ndarray) -> int:
    """Remove `ids`; returns how many were removed. HNSW cannot remove (see `supports_remove`)."""
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    if len(ids) == 0:
        return 0
    ivf = ivf_or_none(index)
    hashed = ivf is not None and ivf.direct_map.type == faiss.DirectMap.Hashtable
    # A hashtable direct map removes only through IDSelectorArray; elsewhere a Batch selector
    # is the fast one (Array's membership test is a linear scan).
    selector = faiss.IDSelectorArray(ids) if hashed else faiss.IDSelectorBatch(ids)
    return int(index.remove_ids(selector))


def supports_remove(plan: VectorIndexPlan) -> bool:
    return plan.kind != "hnsw"  # faiss HNSW has no remove_ids: rebuild instead


def stale_after_removal(plan: VectorIndexPlan, stored: int, removed: int) -> bool:
    """Whether removing `removed` of an IVF's `stored` vectors in place leaves its lists fit to a
    collection that is gone (`RETRAIN_REMOVED_SHARE`): train it again instead."""
    return plan.kind in IVF_KINDS and stored > 0 and removed >= RETRAIN_REMOVED_SHARE * stored


def needs_retrain(plan: VectorIndexPlan, n: int, config: VectorIndexConfig | None = None) -> bool:
    """Whether an IVF trained for `plan` is stale at `n` vectors: a fresh resolve would pick
    RETRAIN_GROWTH times as many lists (an IVF256 trained on 50k is wrong for 2M), or `n` is
    RETRAIN_GROWTH times the training sample *and* a fresh training would see more vectors
    (the centroids never saw most of the collection; the second clause keeps a 1M index,
    trained on its capped 262k sample, from retraining at 1.05M). Pass the user's `config` so
    an explicit --nlist is kept rather than regrown."""
    if plan.kind not in IVF_KINDS or n < MIN_POINTS_PER_CENTROID:
        return False
    explicit = config is not None and config.nlist is not None
    fresh = replace(plan, nlist=config.nlist if explicit else _default_nlist_here(n))
    if fresh.nlist >= RETRAIN_GROWTH * plan.nlist:
        return True
    return n > RETRAIN_GROWTH * plan.trained_on and training_sample_size(fresh, n) > plan.trained_on


def reconstruct_all(index: faiss.Index) -> tuple[np.ndarray, np.ndarray]:
    """(ids, vectors) of everything stored, for retraining or rebuilding. Exact for float32
    storage; float16, sq8 and pq give back their decoded (lossy) approximation. An IVF gets a
    temporary hashtable direct map for this, so do not call it while another thread writes."""
    owner, index = index, faiss.downcast_index(index)  # noqa: F841 -- the wrapper does not own it
    if _id_mapped(index):
        ids = stored_ids(index)
        inner = faiss.downcast_index(index.index)
        vectors = inner.reconstruct_n(0, inner.ntotal) if len(ids) else np.zeros((0, index.d), np.float32)
        return ids, vectors
    ivf = ivf_or_none(index)
    if ivf is None:
        raise TypeError(f"{type(index).__name__} holds no ids; build it with ann.create.")
    ids = stored_ids(index)
    if len(ids) == 0:
        return ids, np.zeros((0, index.d), np.float32)
    with readable([ivf]):
        return ids, ivf.reconstruct_batch(ids)


@dataclass(frozen=True)
class Calibration:
    param: str | None  # "nprobe" | "efSearch" | None (an index with no search parameter)
    value: int | None
    recall: float  # mean recall@k against exact search
    queries: int
    k: int
    recall_at_10: float | None = None  # at the same value, when k is not 10 (what stats show)
    passages: int | None = None  # how many vectors the index held when this was measured

    @property
    def shown_recall(self) -> float:
        return self.recall if self.k == 10 or self.recall_at_10 is None else self.recall_at_10


def search_param(index: faiss.Index) -> str | None:
    """The parameter that trades speed for recall on this index, or None."""
    if ivf_or_none(index) is not None:
        return "nprobe"
    owner, index = index, faiss.downcast_index(index)  # noqa: F841 -- the wrapper does not own it
    inner = faiss.downcast_index(index.index) if _id_mapped(index) else index
    return "efSearch" if isinstance(inner, faiss.IndexHNSW) else None


def set_search_param(index: faiss.Index, param: str | None, value: int | None) -> None:
    """Set nprobe/efSearch through any wrapper (faiss.ParameterSpace finds the inner index)."""
    if param is None:
        return
    if param not in ("nprobe", "efSearch") or not _is_int(value) or value < 1:
        raise ValueError(f"search parameter {param!r}={value!r}: expected nprobe or efSearch >= 1.")
    faiss.ParameterSpace().set_index_parameter(index, param, int(value))


def recall_at_k(exact: np.ndarray, approx: np.ndarray, k: int) -> float:
    """Mean over rows of |exact top k & approx top k| / (valid exact ids), ignoring -1 padding.
    Rows with no valid exact id are skipped; with none at all the recall is 1.0."""
    exact, approx = np.asarray(exact), np.asarray(approx)
    if exact.shape[0] != approx.shape[0]:
        raise ValueError(f"exact has {exact.shape[0]} rows, approx {approx.shape[0]}.")
    scores = []
    for truth, found in zip(exact[:, :k], approx[:, :k], strict=True):
        valid = set(truth[truth >= 0].tolist())
        if valid:
            scores.append(len(valid & set(found.tolist())) / len(valid))
    return float(np.mean(scores)) if scores else 1.0


def _without_self(found: np.ndarray, self_ids: np.ndarray, k: int) -> np.ndarray:
    """Top k of each row after removing the query's own id (or the last column if absent)."""
    out = np.full((len(found), k), -1, dtype=np.int64)
    for row, (hits, own) in enumerate(zip(found, self_ids, strict=True)):
        kept = hits[hits != own][:k]
        out[row, : len(kept)] = kept
    return out


def _sweep(index: faiss.Index, param: str | None) -> list[int | None]:
    if param == "nprobe":
        nlist = int(ivf_or_none(index).nlist)
        values = [2**i for i in range(17) if 2**i < nlist]
        return [*values, nlist]
    return list(EF_SEARCH_SWEEP) if param == "efSearch" else [None]


def calibrate(index: faiss.Index, vectors: np.ndarray | VectorParts, ids: np.ndarray | None, target: float,
              k: int = 10, queries: int = 200, seed: int = 0, probe: Probe | None = None) -> Calibration:
    """Smallest nprobe/efSearch whose recall@k against exact search reaches `target`, left set.

    Queries are a random sample of the index's own `vectors` (row i has id `ids[i]`; `VectorParts`
    carry their ids, and `ids` is then None); the exact neighbours come from brute force over
    `vectors`, a block at a time, and each query's own id is dropped from both lists so finding
    itself never counts. If no value reaches `target`, the largest tried is left set and returned
    with its recall (the caller warns). Searches run in batches on faiss's current OpenMP threads.
    `probe` (a `Probe` of these vectors at this k) saves drawing the queries and their exact
    neighbours again.
    """
    parts = _as_parts(vectors, ids, index.d)
    if not 0.0 < target <= 1.0 or k < 1 or queries < 1:
        raise ValueError(f"target ({target}) must be in (0, 1], k ({k}) and queries ({queries}) >= 1.")
    param = search_param(index)
    if len(parts) == 0:
        return Calibration(param, None, 1.0, 0, k)
    probe = probe if probe is not None else Probe(parts, k, queries, seed)
    result = Calibration(param, None, 0.0, probe.queries, k)
    for value in _sweep(index, param):
        set_search_param(index, param, value)
        result = Calibration(param, value, probe.recall(index), probe.queries, k)
        if result.recall >= target:
            break
    return result


def measure_recall(index: faiss.Index, vectors: np.ndarray | VectorParts, ids: np.ndarray | None, k: int = 10,
                   queries: int = 200, seed: int = 0) -> float:
    """recall@k at the index's current search parameter, on the queries `calibrate` draws."""
    return Probe(_as_parts(vectors, ids, index.d), k, queries, seed).recall(index)


class Probe:
    """Held-out queries (a seeded sample of the stored vectors) and their exact neighbours: one
    brute-force pass over every vector, the largest cost of calibrating a large index, so a probe
    at depth k also answers for any smaller depth (`at`)."""

    def __init__(self, parts: VectorParts, k: int, queries: int, seed: int) -> None:
        n = len(parts)
        rows = np.random.default_rng(seed).choice(n, size=min(queries, n), replace=False)
        order = np.argsort(rows)
        self.xq = np.empty((len(rows), parts.dim), dtype=np.float32)
        self.xq[order] = parts.rows(rows[order])
        self.own, self.k, self.queries = parts.ids()[rows], k, len(rows)
        self.depth = min(k + 1, n)
        self.exact = _without_self(parts.exact_top(self.xq, self.depth), self.own, k)

    def recall(self, index: faiss.Index) -> float:
        approx = _without_self(index.search(self.xq, self.depth)[1], self.own, self.k)
        return recall_at_k(self.exact, approx, self.k)

    def at(self, k: int) -> Probe:
        """The same queries at depth k <= this probe's: the exact top k is the head of the top."""
        if not 1 <= k <= self.k:
            raise ValueError(f"a probe of depth {self.k} cannot answer for depth {k}")
        smaller = copy.copy(self)
        smaller.k, smaller.depth, smaller.exact = k, min(k + 1, self.depth), self.exact[:, :k]
        return smaller


def describe(plan: VectorIndexPlan, calibration: Calibration | None) -> str:
    """One line for stats, the CLI and the UI, e.g. "IVF1024,SQ8 (nprobe 16, recall@10 0.962)"."""
    if plan.kind == "flat" and plan.storage == "float32":
        return "exact (Flat)"
    name = f"exact scan ({plan.factory})" if plan.kind == "flat" else plan.factory
    if calibration is None:
        return name if plan.kind == "flat" else f"{name} (uncalibrated)"
    setting = f"{calibration.param} {calibration.value}, " if calibration.param else ""
    if calibration.k == 10 or calibration.recall_at_10 is None:
        return f"{name} ({setting}recall@{calibration.k} {calibration.recall:.3f})"
    return (f"{name} ({setting}recall@10 {calibration.recall_at_10:.3f}, "
            f"@{calibration.k} {calibration.recall:.3f})")


# --- filtered search -------------------------------------------------------------------------
#
# A filter keeps a share s of the vectors (`indexer.store.passage_subset`). A selector alone
# keeps exact search exact, but an approximate index then finds fewer matches per probe: an IVF
# that scans nprobe lists meets about s x (its unfiltered candidates) matching ones, and HNSW's
# walk reaches fewer. So a filtered search widens its parameter (`filtered_params`) to
# nprobe x (1 + s) / s: 1/s keeps the matching vectors it scores about as many as an unfiltered
# search scores, and the extra nprobe covers that a filter's best matches sit deeper in the
# unfiltered ranking than its own top (measured on IVF4096,SQ8 at 1M with 40 real queries:
# recall@10 0.940 at s = 50% with 1/s alone, 0.957 with 1.5/s; at s <= 10% 1/s already gives
# 0.98; an IVF uses another rule, `ivf_widened`). Skipping a non-matching vector costs one bitmap test. Once the widened nprobe reaches
# nlist every list is scanned; below IVF_EXACT_MAX matching vectors an IVF instead decodes just
# those (`exact_ivf`, through a hashtable direct map) and scores them: 1.8 ms and recall 0.990 for
# 1,000 matches against 6 ms and 0.940 for a scan of every list, but 16 ms against 8 ms for
# 4,000. HNSW's walk degrades sooner (it must pass through non-matching nodes), so below
# HNSW_EXACT_SHARE the matching vectors are scored exactly instead (`exact_within`), and above
# HNSW_POSTFILTER_SHARE it searches unfiltered, deeper, and keeps the matches. The switch
# points are measured in bench/bench_filters.py (BENCHMARKS.md, "Metadata filters").
HNSW_EXACT_SHARE = 0.02
# HNSW with a selector found 0.86 of the filtered top 10 at s = 50% (HNSW32, 100k, efSearch
# widened to 192), where its unfiltered recall is 0.97: above this share it searches unfiltered
# for k (1 + s) / s and keeps the matches instead, as good as its unfiltered search.
HNSW_POSTFILTER_SHARE = 0.25
# How much deeper than k (1 + s) / s that unfiltered search reaches (its k and efSearch). HNSW32 at
# 100k, 100 real text queries (unfiltered recall@10 0.772 against exact on them), a filter keeping
# 50%, recall@10 against exact search among the matches, new filter / repeated, p95 over the
# unfiltered p95 (bench/bench_filters.py --hnsw-postfilter-depths, 2 cores shared with a test run):
#   depth 1: 0.940 / 0.945 at 1.38x / 1.14x;  depth 2: 0.970 / 0.977 at 1.39x / 1.42x;
#   depth 3: 0.983 / 0.989 at 1.62x / 1.83x.  Depth 2 is the least that clears 0.95.
HNSW_POSTFILTER_DEPTH = 2.0
IVF_EXACT_MAX = 2_000
MAX_FILTERED_EF = 4096


def widened(value: int, share: float) -> int:
    """A search parameter (nprobe, efSearch) widened for a filter keeping `share` of the vectors."""
    return math.ceil(value * (1 + share) / share)


# An IVF widens by c/sqrt(s), not (1 + s)/s: a filter's top 10 sit among the query's nearest
# ~10/s vectors, which lie in fewer than 1/s times the lists, the nearest lists holding the most of
# them; and a probe costs little beside a search's fixed costs (the query's encoding among them).
# Measured on IVF4096,SQ8 at 1M with 100 real text queries (nprobe 8: unfiltered p95 2.9 ms,
# recall@10 0.71 against exact on these queries), p95 and recall@10 against exact search among the
# matches, a new filter on every query / the same one repeated (bench/bench_filters.py):
#   share  c = 4                          c = 6                          c = 8
#   50%    5.35 ms 0.914 / 3.94 ms 0.935  5.42 ms 0.940 / 3.87 ms 0.952  5.95 ms 0.949 / 4.35 ms 0.961
#   10%    4.50 ms 0.945 / 3.71 ms 0.952  4.88 ms 0.963 / 4.38 ms 0.965  5.27 ms 0.975 / 4.60 ms 0.973
#   1%     4.45 ms 0.969 / 3.68 ms 0.971  5.00 ms 0.982 / 4.31 ms 0.981  5.39 ms 0.988 / 4.70 ms 0.986
# c = 6 keeps every share within 2x the unfiltered p95 and is the least that reaches 0.95 at 10%
# and 1%; at 50% a new filter stays below 0.95 until c = 8, which costs 2.08x. An index built by
# today's windowed ingest calibrates to nprobe 16 (c = 6: 136 lists at 50%), and there every row
# meets the target: 50% new 0.958 at 1.97x, the thinnest margin (BENCHMARKS.md, 2026-11-27 13:14).
IVF_SQRT_WIDENING = 6.0


def ivf_widened(nprobe: int, share: float) -> int:
    """An IVF's nprobe widened for a filter keeping `share`: nprobe x c / sqrt(s) (c = IVF_SQRT_WIDENING)."""
    return math.ceil(nprobe * IVF_SQRT_WIDENING / math.sqrt(share))


def filtered_params(index: faiss.Index, param: str | None, value: int | None, selector: faiss.IDSelector,
                    share: float) -> faiss.SearchParameters:
    """Search parameters that keep only `selector`'s ids, widened for a filter keeping `share`."""
    share = min(1.0, max(share, 1e-9))
    if param == "nprobe":
        ivf = ivf_or_none(index)
        nlist = ivf.nlist if ivf is not None else 1
        nprobe = value if value is not None else (ivf.nprobe if ivf is not None else 1)
        return faiss.SearchParametersIVF(sel=selector, nprobe=min(nlist, ivf_widened(nprobe, share)))
    if param == "efSearch":
        ef = value if value is not None else 16
        return faiss.SearchParametersHNSW(sel=selector, efSearch=min(MAX_FILTERED_EF, widened(ef, share)))
    return faiss.SearchParameters(sel=selector)


def exact_within(index: faiss.Index, queries: np.ndarray, k: int, contains) -> tuple[np.ndarray, np.ndarray]:
    """(scores, ids) of the k best stored vectors whose id `contains` accepts (a function from an
    id array to a bool array), scored exactly; for an `IndexIDMap2` (flat or HNSW)."""
    owner, wrapped = index, faiss.downcast_index(index)  # noqa: F841 -- the wrapper does not own it
    ids = faiss.vector_to_array(wrapped.id_map).astype(np.int64)
    positions = np.flatnonzero(contains(ids))
    width = max(1, k)
    scores = np.full((len(queries), width), -np.inf, dtype=np.float32)
    found = np.full((len(queries), width), -1, dtype=np.int64)
    if not len(positions):
        return scores, found
    vectors = faiss.downcast_index(wrapped.index).reconstruct_batch(positions)
    sims = queries @ vectors.T
    take = min(width, len(positions))
    for row in range(len(queries)):
        top = np.argpartition(-sims[row], take - 1)[:take] if take < len(positions) else np.arange(len(positions))
        order = top[np.lexsort((ids[positions[top]], -sims[row, top]))]
        scores[row, :take], found[row, :take] = sims[row, order], ids[positions[order]]
    return scores, found


def exact_ivf(index: faiss.Index, queries: np.ndarray, k: int, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(scores, ids) of the k best of `ids` (all stored in the IVF `index`), scored on their stored
    codes decoded: what the IVF would score them, without scanning the lists. The IVF must have a
    hashtable direct map (`with_direct_map`)."""
    width = max(1, k)
    scores = np.full((len(queries), width), -np.inf, dtype=np.float32)
    found = np.full((len(queries), width), -1, dtype=np.int64)
    if not len(ids):
        return scores, found
    ivf = ivf_or_none(index)
    assert ivf is not None
    vectors = ivf.reconstruct_batch(np.ascontiguousarray(ids, dtype=np.int64))
    sims = queries @ vectors.T
    take = min(width, len(ids))
    for row in range(len(queries)):
        top = np.argpartition(-sims[row], take - 1)[:take] if take < len(ids) else np.arange(len(ids))
        order = top[np.lexsort((ids[top], -sims[row, top]))]
        scores[row, :take], found[row, :take] = sims[row, order], ids[order]
    return scores, found


def with_direct_map(index: faiss.Index) -> None:
    """Give an IVF a hashtable direct map (id -> list and offset), which `exact_ivf` decodes
    through; about 40 bytes a vector."""
    ivf = ivf_or_none(index)
    if ivf is not None and ivf.direct_map.type != faiss.DirectMap.Hashtable:
        ivf.set_direct_map_type(faiss.DirectMap.Hashtable)
