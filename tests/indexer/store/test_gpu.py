"""FAISS on the GPU (indexer/store/gpu.py): the same answers as the CPU, written from a CPU copy,
and a CPU fallback that says so when the index does not fit.

Tests marked `gpu` need a CUDA GPU and a FAISS with GPU support (requirements-gpu.txt); they are
skipped elsewhere. `bench/bench_gpu.py` runs them on the device machine.
"""

from __future__ import annotations

import logging
from pathlib import Path

import faiss
import numpy as np
import pytest

from indexer import IndexConfig, build_index
from indexer.index import Index
from indexer.store import ann
from indexer.store.faiss_store import VectorStore
from indexer.store.gpu import GPU_HEADROOM_BYTES, fits_on_gpus, gpu_count, index_bytes, to_gpu
from search import Searcher

needs_gpu = pytest.mark.skipif(gpu_count() == 0, reason="needs a CUDA GPU and faiss-gpu (requirements-gpu.txt)")


def unit_rows(n: int, dim: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def flat_store(n: int = 20_000, dim: int = 64) -> VectorStore:
    store = VectorStore.create(dim)
    store.add(np.arange(10, 10 + n, dtype=np.int64) * 7, unit_rows(n, dim, 0))
    return store


def ivf_store(n: int = 20_000, dim: int = 64, nlist: int = 64, nprobe: int = 8) -> VectorStore:
    plan = ann.resolve(ann.VectorIndexConfig(kind="ivf", nlist=nlist), n, dim)
    index = ann.create(plan, dim)
    vectors = unit_rows(n, dim, 1)
    ann.train(index, vectors, ann.training_sample_size(plan, n))
    store = VectorStore(index)
    store.add(np.arange(n, dtype=np.int64) + 5, vectors)
    store.configure("nprobe", nprobe)
    return store


def test_index_bytes_counts_the_codes() -> None:
    assert index_bytes(flat_store(1000, 64).faiss_index) == 1000 * 64 * 4
    assert index_bytes(ivf_store(4000, 32, nlist=16).faiss_index) >= 4000 * 32 * 4


def test_an_index_fits_only_with_headroom_on_every_gpu() -> None:
    gib = 2**30
    assert fits_on_gpus(10 * gib, [80 * gib])
    assert not fits_on_gpus(79 * gib, [80 * gib])  # would leave no room for the model and FAISS's scratch
    assert not fits_on_gpus(10 * gib, [80 * gib, 11 * gib])  # each GPU holds a full replica
    assert not fits_on_gpus(1, [])
    assert fits_on_gpus(80 * gib - GPU_HEADROOM_BYTES, [80 * gib])


@pytest.mark.skipif(gpu_count() > 0, reason="checks a CPU-only FAISS")
def test_without_a_gpu_the_store_searches_on_the_cpu() -> None:
    store = flat_store(500)
    assert to_gpu(store.faiss_index) is None and not store.on_gpu().on_gpu_now


@pytest.mark.gpu
@needs_gpu
def test_flat_on_the_gpu_returns_the_cpus_ids_and_scores(tmp_path: Path) -> None:
    cpu = flat_store()
    path = cpu.save(tmp_path / "vectors.faiss")
    gpu = VectorStore.load(path)  # no flag: a GPU build copies it to the GPU
    assert gpu.on_gpu_now
    queries = unit_rows(200, 64, 9)
    cpu_scores, cpu_ids = cpu.search(queries, 10)
    gpu_scores, gpu_ids = gpu.search(queries, 10)
    np.testing.assert_array_equal(gpu_ids, cpu_ids)
    np.testing.assert_allclose(gpu_scores, cpu_scores, atol=1e-4)
    # one query at a time too (the searcher's usual call)
    one_scores, one_ids = gpu.search(queries[:1], 10)
    np.testing.assert_array_equal(one_ids, cpu_ids[:1])


@pytest.mark.gpu
@needs_gpu
def test_ivf_on_the_gpu_finds_the_cpus_neighbours(tmp_path: Path) -> None:
    cpu = ivf_store()
    gpu = cpu.on_gpu()
    assert gpu.on_gpu_now and gpu.search_param == ("nprobe", 8)
    queries = unit_rows(500, 64, 11)
    _, cpu_ids = cpu.search(queries, 10)
    _, gpu_ids = gpu.search(queries, 10)
    assert ann.recall_at_k(cpu_ids, gpu_ids, 10) >= 0.99


@pytest.mark.gpu
@needs_gpu
def test_ivf_trains_its_kmeans_on_the_gpu_and_stays_a_cpu_index() -> None:
    """ann.train runs the IVF's k-means assignment on the GPU (no flag) and leaves a CPU index as
    good as one trained on the CPU: the same recall against exact search within 0.02."""
    n, dim = 20_000, 64
    vectors = unit_rows(n, dim, 5)
    queries = unit_rows(300, dim, 6)
    plan = ann.resolve(ann.VectorIndexConfig(kind="ivf", nlist=64), n, dim)
    exact = VectorStore.create(dim)
    exact.add(np.arange(n, dtype=np.int64), vectors)
    _, truth = exact.search(queries, 10)
    recalls = []
    for on_gpu in (True, False):
        index = ann.create(plan, dim)
        if on_gpu:
            ann.train(index, vectors, ann.training_sample_size(plan, n))
            assert ann.ivf_or_none(index).clustering_index is None
        else:
            index.train(vectors[np.sort(np.random.default_rng(0).choice(n, ann.training_sample_size(plan, n),
                                                                         replace=False))])
        store = VectorStore(index)
        store.add(np.arange(n, dtype=np.int64), vectors)
        store.configure("nprobe", 8)
        assert "Gpu" not in type(faiss.downcast_index(store.faiss_index)).__name__
        recalls.append(ann.recall_at_k(truth, store.search(queries, 10)[1], 10))
    assert recalls[0] >= recalls[1] - 0.02, recalls


@pytest.mark.gpu
@needs_gpu
def test_a_store_with_a_gpu_copy_is_written_from_its_cpu_index(tmp_path: Path) -> None:
    gpu = flat_store(3000).on_gpu()
    assert gpu.on_gpu_now
    written = faiss.read_index(str(gpu.save(tmp_path / "written.faiss")))
    assert written.ntotal == 3000 and "Gpu" not in type(faiss.downcast_index(written)).__name__
    np.testing.assert_array_equal(np.sort(VectorStore(written).ids()), np.sort(gpu.ids()))


@pytest.mark.gpu
@needs_gpu
def test_hnsw_stays_on_the_cpu_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    plan = ann.resolve(ann.VectorIndexConfig(kind="hnsw"), 2000, 32)
    store = VectorStore(ann.create(plan, 32))
    store.add(np.arange(2000, dtype=np.int64), unit_rows(2000, 32, 3))
    with caplog.at_level(logging.WARNING):
        moved = store.on_gpu()
    assert not moved.on_gpu_now and "searching on the CPU" in caplog.text
    assert moved.search(unit_rows(1, 32, 4), 5)[1].shape == (1, 5)


@pytest.mark.gpu
@needs_gpu
def test_an_index_that_does_not_fit_stays_on_the_cpu_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    import torch

    store = flat_store(50_000, 128)  # 25.6 MB
    free = torch.cuda.mem_get_info(0)[0]
    hog = torch.empty(free - GPU_HEADROOM_BYTES, dtype=torch.uint8, device="cuda")  # leaves the headroom only
    try:
        with caplog.at_level(logging.WARNING):
            moved = store.on_gpu()
    finally:
        del hog
        torch.cuda.empty_cache()
    assert not moved.on_gpu_now
    assert "searching on the CPU" in caplog.text and "Free GPU memory" in caplog.text
    np.testing.assert_array_equal(moved.search(unit_rows(3, 128, 5), 4)[1], store.search(unit_rows(3, 128, 5), 4)[1])


@pytest.mark.gpu
@needs_gpu
def test_the_searcher_uses_the_gpu_with_no_flag_and_answers_as_the_cpu(tiny_model: str, topic_corpus: Path,
                                                                      tmp_path: Path) -> None:
    build_index(IndexConfig(source=topic_corpus, index_dir=tmp_path / "index", model=tiny_model, show_progress=False))
    with Index.open(tmp_path / "index", use_gpu=False) as index:
        cpu_vectors = index.snapshot().vectors
        query = unit_rows(1, cpu_vectors.dim, 2)
        expected = cpu_vectors.search(query, 3)
    searcher = Searcher(tmp_path / "index", model=tiny_model)
    try:
        vectors = searcher.index.snapshot().vectors
        assert vectors.base.on_gpu_now
        found = vectors.search(query, 3)
        np.testing.assert_array_equal(found[1], expected[1])
        np.testing.assert_allclose(found[0], expected[0], atol=1e-4)
        assert searcher.search("volcano lava", k=3, mode="dense")  # hits, scored on the GPU copy
    finally:
        searcher.close()
