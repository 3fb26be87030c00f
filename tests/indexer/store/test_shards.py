"""Splitting a segment into shards (indexer/store/shards.py): every index type keeps each passage in
shard `id % N`, and merging the shards' top lists gives one index's answer: the same ids and
scores for flat, scalar-quantised and IVF (flat, SQ8, PQ) indexes; HNSW, one graph per shard,
within recall@10 0.99. BM25 rows keep their scores exactly."""

from __future__ import annotations

import faiss
import numpy as np
import pytest

from indexer.store.ann import VectorIndexConfig
from indexer.store.bm25_store import BM25Store
from indexer.store.faiss_store import VectorStore
from indexer.store.passage_subset import PassageSubset
from indexer.store.segments import merge_top
from indexer.store.shards import (
    ShardSet,
    SubsetBits,
    read_shard,
    shard_of,
    split_bm25,
    split_vectors,
    write_shard_set,
)
from tests.indexer.store.test_ann import build

SHARDS = 3
N = 10_000  # ivfpq trains on at least 9,984
EXACT = [VectorIndexConfig(kind="flat"), VectorIndexConfig(kind="flat", storage="sq8"),
         VectorIndexConfig(kind="ivf", nlist=16), VectorIndexConfig(kind="ivf", nlist=16, storage="sq8"),
         VectorIndexConfig(kind="ivfpq", nlist=16, pq_m=8)]


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(33)
    centres = rng.normal(size=(20, 32))
    vectors = (centres[rng.integers(0, 20, N)] + 0.3 * rng.normal(size=(N, 32))).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = vectors[rng.choice(N, 40, replace=False)] + 0.05 * rng.normal(size=(40, 32)).astype(np.float32)
    return np.arange(1, N + 1, dtype=np.int64), vectors, queries.astype(np.float32)


def _merged(parts, queries, k):
    found = [part.search(queries, k) for part in parts]
    return [merge_top([f[0][row] for f in found], [f[1][row] for f in found], k) for row in range(len(queries))]


@pytest.mark.parametrize("config", EXACT, ids=lambda c: f"{c.kind}-{c.storage}")
def test_shards_of_flat_and_ivf_answer_as_the_one_index(data, config):
    ids, vectors, queries = data
    index, _ = build(config, ids, vectors)
    if hasattr(index, "nprobe"):
        index.nprobe = 4
    parts = split_vectors(VectorStore(index), SHARDS)
    for shard, part in enumerate(parts):
        held = VectorStore(part).ids()
        assert len(held) and np.all(shard_of(held, SHARDS) == shard)
        if hasattr(part, "nprobe"):
            part.nprobe = 4
    assert sum(part.ntotal for part in parts) == len(ids)
    want_scores, want_ids = index.search(queries, 10)
    for row, (scores, got) in enumerate(_merged(parts, queries, 10)):
        assert np.allclose(scores, want_scores[row], atol=1e-4)
        # equal scores (quantised codes tie) may come in either order: compare as score-ranked sets
        assert set(zip(np.round(scores, 4), got, strict=True)) == set(
            zip(np.round(want_scores[row], 4), want_ids[row], strict=True))


def test_shards_of_hnsw_keep_recall_against_the_one_index(data):
    ids, vectors, queries = data
    index, _ = build(VectorIndexConfig(kind="hnsw"), ids, vectors)
    parts = split_vectors(VectorStore(index), SHARDS)
    for part in (index, *parts):  # efSearch as a build calibrates it (64 reached recall 0.998 at 100k)
        faiss.downcast_index(faiss.downcast_index(part).index).hnsw.efSearch = 64
    _, want = index.search(queries, 10)
    recall = np.mean([len(set(got) & set(want[row])) / 10 for row, (_, got) in enumerate(_merged(parts, queries, 10))])
    assert recall >= 0.99


def test_bm25_shards_keep_every_score(tmp_path):
    words = ["river", "storm", "paper", "engine", "ocean", "glass", "tiger", "eagle"]
    rng = np.random.default_rng(4)
    texts = [" ".join(rng.choice(words, size=rng.integers(3, 30))) for _ in range(300)]
    ids = np.arange(10, 310, dtype=np.int64)
    whole = BM25Store.build(ids, texts)
    parts = split_bm25(whole, SHARDS)
    assert [sorted(shard_of(p.ids(), SHARDS).tolist()) for p in parts] == [[s] * len(p.ids()) for s, p in enumerate(parts)]
    keep = PassageSubset.of_ids(ids[::3], documents=100)
    for query in ("river storm", "tiger eagle glass", "ocean"):
        for within in (None, keep):
            want = whole.search(query, 50, keep=None if within is None else within.contains(whole.ids_view()))
            found = [p.search(query, 50, keep=None if within is None else within.contains(p.ids_view())) for p in parts]
            scores, got = merge_top([f[0] for f in found], [f[1] for f in found], 50)
            assert np.array_equal(got, want[1]) and np.array_equal(scores, want[0])


def test_a_shard_set_is_written_whole_and_checked_when_read(tmp_path, data):
    ids, vectors, _ = data
    store = VectorStore.create(32)
    store.add(ids[:300], vectors[:300])
    bm25 = BM25Store.build(ids[:300], [f"passage {i} river" for i in range(300)])
    shard_set = write_shard_set(tmp_path, "vectors-abc.faiss", store, bm25, 2)
    assert shard_set == ShardSet("shards-abc", shard_set.digest, 2)
    assert not list(tmp_path.glob(".shards-*"))  # no temp folder left
    vectors_1, bm25_1 = read_shard(tmp_path, shard_set, 1)
    assert np.array_equal(np.sort(vectors_1.ids()), ids[:300][ids[:300] % 2 == 1])
    assert np.array_equal(np.sort(bm25_1.ids()), np.sort(vectors_1.ids()))
    (tmp_path / "shards-abc" / "vectors-1.faiss").write_bytes(b"not a faiss file")
    with pytest.raises(ValueError, match="vectors-1.faiss is not the one committed"):
        read_shard(tmp_path, shard_set, 1)


def test_a_filter_travels_to_the_shards_as_its_bitmap():
    subset = PassageSubset.of_ids(np.array([1, 5, 64, 1000]), documents=3)
    back = SubsetBits.of(subset).subset()
    assert np.array_equal(back.ids(), subset.ids()) and back.documents == 3 and back.count == 4
