from __future__ import annotations

import numpy as np
import pytest

from indexer.store.faiss_store import VectorStore


def unit(rng, n, d):
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_search_matches_brute_force_inner_product():
    rng = np.random.default_rng(0)
    vectors = unit(rng, 500, 16)
    ids = rng.choice(10_000, size=500, replace=False).astype(np.int64)
    store = VectorStore.create(16)
    store.add(ids, vectors)
    queries = unit(rng, 5, 16)
    scores, found = store.search(queries, 10)
    brute = queries @ vectors.T
    for q in range(5):
        expected = ids[np.argsort(-brute[q])[:10]]
        assert list(found[q]) == list(expected)
        np.testing.assert_allclose(scores[q], np.sort(brute[q])[::-1][:10], rtol=1e-5)


def test_remove_and_save_load_roundtrip(tmp_path):
    rng = np.random.default_rng(1)
    store = VectorStore.create(8)
    store.add(np.arange(10, 20), unit(rng, 10, 8))
    assert store.remove(np.array([11, 12, 99])) == 2
    path = store.save(tmp_path / "v.faiss")
    loaded = VectorStore.load(path)
    assert loaded.ntotal == 8
    assert sorted(loaded.ids()) == [10, 13, 14, 15, 16, 17, 18, 19]
    assert list(tmp_path.iterdir()) == [path], "no temp file may be left behind"


def test_wrong_shape_is_rejected():
    store = VectorStore.create(8)
    with pytest.raises(ValueError, match=r"vectors have shape \(2, 4\); expected \(n, 8\)"):
        store.add(np.array([1, 2]), np.zeros((2, 4), dtype=np.float32))


def test_missing_file_suggests_rebuild(tmp_path):
    with pytest.raises(FileNotFoundError, match="--rebuild"):
        VectorStore.load(tmp_path / "gone.faiss")
