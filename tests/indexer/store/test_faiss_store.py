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


@pytest.mark.parametrize("factory", ["flat", "IVF16,SQ8", "HNSW16,Flat"])
def test_a_mapped_store_answers_as_a_loaded_one_and_survives_its_file_being_deleted(tmp_path, factory):
    """What a searcher opens (`mapped`): the codes stay in the file, read-only; a later build may
    delete the file while a search still holds it."""
    import faiss

    from indexer.store import ann

    rng = np.random.default_rng(2)
    vectors, ids = unit(rng, 2000, 16), np.arange(100, 2100)
    if factory == "flat":
        store = VectorStore.create(16)
    else:
        inner = faiss.index_factory(16, factory, faiss.METRIC_INNER_PRODUCT)
        inner.train(vectors)
        store = VectorStore(inner if factory.startswith("IVF") else faiss.IndexIDMap2(inner))
    store.add(ids, vectors)
    path = store.save(tmp_path / "v.faiss")
    loaded, mapped = VectorStore.load(path, use_gpu=False), VectorStore.load(path, use_gpu=False, mapped=True)
    if factory.startswith("IVF"):
        for s in (loaded, mapped):
            ann.set_search_param(s.faiss_index, "nprobe", 4)
    queries = unit(rng, 8, 16)
    expected = loaded.search(queries, 10)
    path.unlink()
    got = mapped.search(queries, 10)
    assert np.array_equal(got[1], expected[1]) and np.allclose(got[0], expected[0])
    assert sorted(mapped.ids()) == list(ids)


def test_wrong_shape_is_rejected():
    store = VectorStore.create(8)
    with pytest.raises(ValueError, match=r"vectors have shape \(2, 4\); expected \(n, 8\)"):
        store.add(np.array([1, 2]), np.zeros((2, 4), dtype=np.float32))


def test_missing_file_suggests_rebuild(tmp_path):
    with pytest.raises(FileNotFoundError, match="--rebuild"):
        VectorStore.load(tmp_path / "gone.faiss")
