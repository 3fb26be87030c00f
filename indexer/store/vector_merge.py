"""The vector side of a merge: one base FAISS index over every live passage, of the type asked for.

A merge (see `indexer.store.segments`) folds the delta segments into the base, drops
the deleted ids and adds the commit's new vectors. It keeps the base's trained
index and adds to it in place while the index type stays what `indexer.store.ann`
resolves for the new size and the base has not outgrown its training; else it
builds a new index (training IVF on a sample), and says why. A new index is
calibrated (nprobe/efSearch); an IVF that took the merge in place keeps its
calibration until it has doubled since it was measured (RECALIBRATE_GROWTH), so the
stored recall is that of the index as committed or at no less than half its size.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import numpy as np

from indexer.store import ann
from indexer.store.faiss_store import VectorStore
from indexer.store.segments import SegmentedVectors
from indexer.store.vector_parts import (
    ArrayPart,
    Rows,
    VectorPart,
    VectorParts,
    as_rows,
    index_part,
    readable,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class MergedVectors:
    store: VectorStore
    plan: ann.VectorIndexPlan
    calibration: ann.Calibration
    note: str | None  # a retrain or a change of index type, for the build's report


def _live(committed: SegmentedVectors, removed: np.ndarray) -> list[VectorPart]:
    """Every passage the committed segments hold that is neither deleted nor removed, as parts
    decoded on demand (within `readable`)."""
    gone = np.concatenate([committed.deleted, removed])
    return [index_part(store.faiss_index, stored, gone)
            for store, stored in zip((committed.base, *committed.deltas), committed.stored_ids(), strict=True)]


def _resolve(requested: ann.VectorIndexConfig, n: int, dim: int) -> tuple[ann.VectorIndexPlan, str | None]:
    """The plan for `n` vectors. An IVF asked for before there are enough vectors to train it (the
    first commits of a build are small) is exact until then, and the build says so."""
    try:
        return ann.resolve(requested, n, dim), None
    except ValueError as err:
        if requested.kind not in ann.IVF_KINDS:
            raise
        exact = ann.resolve(ann.VectorIndexConfig(kind="flat"), n, dim)
        return exact, f"exact search for now: {err}"


# nprobe/efSearch are tuned for recall@100, the depth dense retrieval hands to fusion
# (SearchConfig.fusion_depth), not recall@10. Measured on 6,144 real MiniLM vectors with real
# text queries (not stored vectors), IVF tuned on stored-vector queries for recall@10 >= 0.95
# gave those queries recall@10 0.92; tuned for recall@100 >= 0.95, 0.97-0.98 (BENCHMARKS.md, Scale).
CALIBRATION_DEPTH = 100
# A merge that adds to the base in place keeps the base's calibration until the index has doubled
# since it was measured: the calibration's exact pass over every vector was the largest part of a
# merge at 1M (28% of a 10M build's time while it passed 1M, py-spy), and merges come every 10% of
# growth, while nprobe's recall on a trained IVF whose lists fill alike barely moves. A new or
# retrained index, or one that lost passages, is measured again; so is HNSW at every merge (its
# graph grows deeper, and efSearch kept from half the size lost recall against one index in
# tests/search/test_sharded.py).
RECALIBRATE_GROWTH = 2.0


def _calibrate(index, parts: VectorParts, target: float) -> ann.Calibration:
    n = len(parts)
    if not n:
        return ann.Calibration(None, None, 1.0, 0, 10)
    if ann.search_param(index) is None:  # exact: nothing to tune, recall 1 by construction
        return ann.calibrate(index, parts, None, target)
    k = min(CALIBRATION_DEPTH, n - 1) or 1
    probe = ann.Probe(parts, k, 200, 0)  # one exact pass over the vectors answers both depths
    tuned = ann.calibrate(index, parts, None, target, k=k, probe=probe)
    return replace(tuned, recall_at_10=probe.at(min(10, k)).recall(index))


def _still_calibrated(calibrated: ann.Calibration | None, n: int, removed: bool) -> bool:
    """Whether a base that took a merge in place keeps `calibrated` (see RECALIBRATE_GROWTH)."""
    return (calibrated is not None and calibrated.param == "nprobe" and calibrated.value is not None
            and calibrated.passages is not None and not removed
            and calibrated.passages <= n < RECALIBRATE_GROWTH * calibrated.passages)


def _same_type(current: ann.VectorIndexPlan, fresh: ann.VectorIndexPlan,
               requested: ann.VectorIndexConfig) -> bool:
    """Whether the committed index can take the merge in place: the same type and storage. Its
    nlist may differ from what a fresh resolve picks for the new size: `ann.needs_retrain`
    decides when that matters, unless the user named an nlist."""
    same = (current.kind, current.storage, current.hnsw_m, current.pq_m) == (
        fresh.kind, fresh.storage, fresh.hnsw_m, fresh.pq_m)
    return same and (requested.nlist is None or requested.nlist == current.nlist)


def merge_vectors(
    committed: SegmentedVectors | None,
    current: ann.VectorIndexPlan | None,
    requested: ann.VectorIndexConfig,
    removed: np.ndarray,
    new_ids: np.ndarray,
    new_vectors: np.ndarray | Rows,
    dim: int,
    calibrated: ann.Calibration | None = None,
) -> MergedVectors:
    """The base index of a merge: committed live vectors plus the new ones, in the index type that
    `requested` resolves to for the merged size. The vectors are read a block at a time
    (`vector_parts`): besides the indexes, a merge holds a training sample and one block.
    `calibrated`: the committed base's calibration, kept while `RECALIBRATE_GROWTH` allows."""
    committed_indexes = [store.faiss_index for store in (committed.base, *committed.deltas)] if committed else []
    with readable(committed_indexes):
        return _merge(committed, current, requested, removed, new_ids, new_vectors, dim, calibrated)


def _merge(committed: SegmentedVectors | None, current: ann.VectorIndexPlan | None,
           requested: ann.VectorIndexConfig, removed: np.ndarray, new_ids: np.ndarray, new_vectors: np.ndarray | Rows,
           dim: int, calibrated: ann.Calibration | None) -> MergedVectors:
    new_ids = np.asarray(new_ids, dtype=np.int64)
    new = ArrayPart(new_ids, as_rows(new_vectors, len(new_ids), dim))
    old = _live(committed, removed) if committed is not None else []
    parts = VectorParts((*old, new), dim)
    n = len(parts)
    plan, note = _resolve(requested, n, dim)
    gone_count = len(committed.deleted) + len(removed) if committed is not None else 0
    stale = (committed is not None and current is not None
             and ann.stale_after_removal(current, committed.base.ntotal, gone_count))
    in_place = (committed is not None and current is not None and _same_type(current, plan, requested)
                and not ann.needs_retrain(current, n, requested) and not stale
                and (ann.supports_remove(current) or not (len(committed.deleted) or len(removed))))
    if in_place:
        assert committed is not None and current is not None
        index = committed.base.faiss_index
        gone = np.concatenate([committed.deleted, removed])
        plan = current
        added = VectorParts((*old[1:], new), dim)  # the base keeps its vectors; the deltas and new ones join
        if len(gone):
            ann.remove_ids(index, gone)
    else:
        if current is not None and (current.kind, current.storage) != (plan.kind, plan.storage):
            note = f"vector index: {current.factory} -> {plan.factory} at {n} passages"
        elif stale:
            assert current is not None and committed is not None
            note = (f"vector index: retrained at {n} passages, {current.factory} -> {plan.factory} "
                    f"({gone_count} of its {committed.base.ntotal} vectors removed)")
        elif current is not None and current.trained_on:
            note = (f"vector index: retrained at {n} passages, {current.factory} -> "
                    f"{plan.factory} (it was trained on {current.trained_on})")
        index = ann.create(plan, dim)
        trained = ann.train(index, parts, ann.training_sample_size(plan, n))
        plan = replace(plan, trained_on=trained)
        added = parts
    for block_ids, block in added.blocks():
        index.add_with_ids(block, block_ids)
    store = VectorStore(index)
    if in_place and _still_calibrated(calibrated, n, removed=bool(len(gone))):
        assert calibrated is not None
        calibration = calibrated
    else:
        if in_place:  # the merged vectors are the base's now (read where it stores them, removals done)
            parts = VectorParts((index_part(index, ann.stored_ids(index), np.empty(0, np.int64)),), dim)
        calibration = replace(_calibrate(index, parts, requested.target_recall), passages=n)
    store.configure(calibration.param, calibration.value)
    if calibration.recall < requested.target_recall:
        short = (f"recall@{calibration.k} {calibration.recall:.3f} is below the target "
                 f"{requested.target_recall} at the largest {calibration.param} tried ({calibration.value})")
        note = f"{note}; {short}" if note else short
    if note:
        logger.info("%s", note)
    return MergedVectors(store, plan, calibration, note)
