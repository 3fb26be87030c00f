"""The vector side of a merge (indexer/store/vector_merge.py): when a base keeps its calibration."""

from __future__ import annotations

import faiss
import numpy as np

from indexer.store import ann
from indexer.store.faiss_store import VectorStore
from indexer.store.segments import SegmentedVectors
from indexer.store.vector_merge import RECALIBRATE_GROWTH, merge_vectors

DIM = 16
WANTED = ann.VectorIndexConfig(kind="ivf", nlist=16)


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def committed_ivf(rng: np.random.Generator, n: int) -> tuple[SegmentedVectors, ann.VectorIndexPlan, ann.Calibration]:
    """A base as a first merge commits it: trained, filled, calibrated at n passages."""
    first = merge_vectors(None, None, WANTED, np.empty(0, np.int64), np.arange(n), unit(rng, n), DIM)
    assert first.calibration.passages == n and first.calibration.param == "nprobe"
    base = VectorStore(faiss.clone_index(first.store.faiss_index))
    base.configure(first.calibration.param, first.calibration.value)
    return SegmentedVectors(base, [], np.empty(0, np.int64)), first.plan, first.calibration


def test_a_base_that_grows_in_place_keeps_its_calibration_until_it_doubles():
    rng = np.random.default_rng(0)
    committed, plan, calibrated = committed_ivf(rng, 2000)
    assert RECALIBRATE_GROWTH == 2.0
    grown = merge_vectors(committed, plan, WANTED, np.empty(0, np.int64), np.arange(2000, 3000),
                          unit(rng, 1000), DIM, calibrated)
    assert grown.calibration == calibrated  # 3000 < 2 x 2000: measured at 2000, kept
    assert ann.search_param(grown.store.faiss_index) == "nprobe"
    assert faiss.extract_index_ivf(grown.store.faiss_index).nprobe == calibrated.value

    committed, plan, calibrated = committed_ivf(rng, 2000)
    doubled = merge_vectors(committed, plan, WANTED, np.empty(0, np.int64), np.arange(2000, 4000),
                            unit(rng, 2000), DIM, calibrated)
    assert doubled.calibration.passages == 4000  # measured again

    committed, plan, calibrated = committed_ivf(rng, 2000)
    shrunk = merge_vectors(committed, plan, WANTED, np.arange(10), np.arange(2000, 2100),
                           unit(rng, 100), DIM, calibrated)
    assert shrunk.calibration.passages == 2090  # passages removed: measured again


def test_a_calibration_from_before_it_was_sized_is_measured_again():
    rng = np.random.default_rng(1)
    committed, plan, calibrated = committed_ivf(rng, 2000)
    old = ann.Calibration(calibrated.param, calibrated.value, calibrated.recall, calibrated.queries, calibrated.k,
                          calibrated.recall_at_10)  # as a layout written before `passages` reads back
    merged = merge_vectors(committed, plan, WANTED, np.empty(0, np.int64), np.arange(2000, 2100),
                           unit(rng, 100), DIM, old)
    assert merged.calibration.passages == 2100


def test_an_ivf_that_loses_a_quarter_of_its_base_is_trained_again():
    """Twins removed (a folder's .json beside its pages): in place, the lists fit to them are left
    empty and a query near them finds next to nothing; trained again, it finds k."""
    rng = np.random.default_rng(2)
    pages = unit(rng, 1500) + 3 * np.eye(DIM, dtype=np.float32)[0]
    twins = unit(rng, 1500) + 3 * np.eye(DIM, dtype=np.float32)[1]
    vectors = np.vstack([pages, twins])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    first = merge_vectors(None, None, WANTED, np.empty(0, np.int64), np.arange(3000), vectors, DIM)
    committed = SegmentedVectors(VectorStore(faiss.clone_index(first.store.faiss_index)), [], np.empty(0, np.int64))
    near_twins = (np.eye(DIM, dtype=np.float32)[1] + 0.4 * np.eye(DIM, dtype=np.float32)[0])[None, :]
    near_twins /= np.linalg.norm(near_twins)
    merged = merge_vectors(committed, first.plan, WANTED, np.arange(1500, 3000), np.arange(3000, 3010),
                           unit(rng, 10), DIM, first.calibration)
    _, ids = merged.store.search(near_twins, 50)
    assert (ids[0] >= 0).sum() == 50 and not np.isin(ids[0], np.arange(1500, 3000)).any()
    assert "1500 of its 3000 vectors removed" in merged.note
    # A few removed stay in place, as before.
    few = merge_vectors(committed, first.plan, WANTED, np.arange(1500, 1600), np.arange(3000, 3010),
                        unit(rng, 10), DIM, first.calibration)
    assert "removed" not in (few.note or "")
