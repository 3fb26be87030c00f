"""VectorParts reads a merge's vectors block by block and gives what one concatenated matrix gives."""

from __future__ import annotations

import faiss
import numpy as np
import pytest

from indexer.store import ann, vector_parts
from indexer.store.vector_parts import ArrayPart, VectorParts, index_part, readable

DIM = 16


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _indexes(rng: np.random.Generator):
    """A flat (IndexIDMap2) and an IVF,SQ8 index over the same vectors, ids 1000.., and those vectors."""
    vectors = _unit(rng, 300)
    ids = np.arange(1000, 1300, dtype=np.int64)
    flat = ann.create(ann.resolve(ann.VectorIndexConfig(kind="flat"), 300, DIM), DIM)
    flat.add_with_ids(vectors, ids)
    ivf = ann.create(ann.resolve(ann.VectorIndexConfig(kind="ivf", nlist=4, storage="sq8"), 300, DIM), DIM)
    ann.train(ivf, vectors, 300)
    ivf.add_with_ids(vectors, ids)
    return flat, ivf, ids, vectors


@pytest.mark.parametrize("block", [1, 7, 64, 100_000])
def test_parts_read_as_one_matrix(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_parts, "BLOCK_ROWS", block)
    rng = np.random.default_rng(block)
    flat, ivf, ids, vectors = _indexes(rng)
    gone = ids[::3]
    fresh = _unit(rng, 50)
    fresh_ids = np.arange(5000, 5050, dtype=np.int64)
    with readable([ivf]):
        parts = VectorParts((index_part(flat, ann.stored_ids(flat), gone), ArrayPart(fresh_ids, fresh),
                             index_part(ivf, ann.stored_ids(ivf), gone)), DIM)
        kept = ~np.isin(ids, gone)
        decoded = {int(i): v for i, v in zip(*ann.reconstruct_all(ivf), strict=True)}
        ivf_ids = ann.stored_ids(ivf)[~np.isin(ann.stored_ids(ivf), gone)]
        want_ids = np.concatenate([ids[kept], fresh_ids, ivf_ids])
        want = np.concatenate([vectors[kept], fresh, np.stack([decoded[int(i)] for i in ivf_ids])])

        assert len(parts) == len(want_ids) and np.array_equal(parts.ids(), want_ids)
        got_ids, got = zip(*parts.blocks(block), strict=True)
        assert all(len(b) <= block for b in got_ids)
        assert np.array_equal(np.concatenate(got_ids), want_ids) and np.array_equal(np.concatenate(got), want)
        for rows in (np.sort(rng.choice(len(want), 60, replace=False)), np.array([0, len(want) // 2, len(want) - 1])):
            assert np.array_equal(parts.rows(rows), want[rows])  # dense and sparse reads

        queries = _unit(rng, 9)
        top = parts.exact_top(queries, 11)
        scores = queries @ want.T
        for q in range(len(queries)):  # best first, ties to the lower row
            order = np.lexsort((np.arange(len(want)), -scores[q]))[:11]
            assert np.array_equal(top[q], want_ids[order])
    assert ivf.direct_map.type == faiss.DirectMap.NoMap  # readable took its direct map away again


def test_depth_past_the_rows_pads_with_minus_one() -> None:
    rng = np.random.default_rng(0)
    parts = VectorParts.of(np.array([7, 8]), _unit(rng, 2), DIM)
    assert parts.exact_top(_unit(rng, 1), 4)[0].tolist()[2:] == [-1, -1]


def test_training_and_calibration_read_parts_as_the_array() -> None:
    rng = np.random.default_rng(1)
    vectors = _unit(rng, 2000)
    ids = np.arange(2000, dtype=np.int64) * 3
    plan = ann.resolve(ann.VectorIndexConfig(kind="ivf", nlist=16), 2000, DIM)
    one, split = ann.create(plan, DIM), ann.create(plan, DIM)
    ann.train(one, vectors, 1000)
    parts = VectorParts((ArrayPart(ids[:700], vectors[:700]), ArrayPart(ids[700:], vectors[700:])), DIM)
    ann.train(split, parts, 1000)
    centroids = [faiss.extract_index_ivf(index).quantizer.reconstruct_n(0, 16) for index in (one, split)]
    assert np.array_equal(*centroids)
    for index in (one, split):
        index.add_with_ids(vectors, ids)
    assert ann.calibrate(one, vectors, ids, 0.9, queries=50) == ann.calibrate(split, parts, None, 0.9, queries=50)
