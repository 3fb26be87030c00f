"""A sharded index answers as one index (issue 33): the same hits and scores (within 1e-4) in every
mode, with filters and with stable top-k, for flat and IVF indexes and for a base with a delta
segment and tombstones; HNSW (each shard its own graph) within recall@10 0.99 of one index.

The shards here answer in this process (`LocalShard`); tests/search/test_api_ray.py runs them as
Ray Serve deployments."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from indexer import IndexConfig, build_index
from indexer.errors import IndexMismatchError, ShardUnavailableError
from indexer.store.ann import VectorIndexConfig
from indexer.store.segments import SegmentPolicy
from indexer.store.shards import (
    LocalShard,
    ShardedVectors,
    ShardReader,
    load_shard,
    partial_results,
    shard_of,
    sharded_files,
)
from search import Searcher
from tests.indexer.store.filter_reference import random_filter
from tests.indexer.test_postgres import pg_schema_url  # noqa: F401 -- a fixture
from tests.search.test_filters import QUERIES, write_corpus

SHARDS = 2
MODES = ("dense", "bm25", "hybrid")


def _build(source: Path, index_dir: Path, model: str, kind: str | None, shards: int | None,
           segments: SegmentPolicy | None = None) -> None:
    vector_index = None if kind is None else (
        VectorIndexConfig(kind="ivf", nlist=8) if kind == "ivf" else VectorIndexConfig(kind=kind))
    build_index(IndexConfig(source=source, index_dir=index_dir, model=model, show_progress=False,
                            vector_index=vector_index, segments=segments or SegmentPolicy(),
                            commit_passages=100_000, shards=shards))


def sharded(index_dir: Path, count: int = SHARDS) -> list[LocalShard]:
    return [LocalShard(ShardReader(index_dir, shard)) for shard in range(count)]


@pytest.fixture(scope="module", params=["flat", "ivf", "hnsw", "segmented"])
def pair(request, tmp_path_factory, tiny_model_dir):
    """(kind, one index's Searcher, the same index searched through its shards)."""
    kind = request.param
    root = tmp_path_factory.mktemp(f"sharded_{kind}")
    model = str(tiny_model_dir)
    if kind == "segmented":  # a sharded base, then a delta segment that also deletes
        write_corpus(root / "src", random.Random(33), 160)
        _build(root / "src", root / "idx", model, None, SHARDS)
        write_corpus(root / "src", random.Random(33), 200, skip=set(range(0, 160, 9)))
        _build(root / "src", root / "idx", model, None, None, SegmentPolicy(min_base_passages=0, merge_fraction=1.0))
    else:
        write_corpus(root / "src", random.Random(33), 220)
        _build(root / "src", root / "idx", model, kind, SHARDS)
    one = Searcher(root / "idx")
    through_shards = Searcher(root / "idx", files=sharded_files(sharded(root / "idx")))
    yield kind, one, through_shards
    one.close()
    through_shards.close()


def _pairs(hits) -> list[tuple[str, int]]:
    return [(hit.doc_id, hit.passage_id) for hit in hits]


def test_each_shard_holds_its_passages_and_together_all(pair):
    kind, one, _ = pair
    info = one.index.info
    everything = np.sort(one.index.snapshot().vectors.ids())
    held = []
    for shard in range(SHARDS):
        vectors, bm25 = load_shard(one.index_dir, info, shard)
        ids = vectors.ids()
        assert np.all(shard_of(ids, SHARDS) == shard)
        assert np.array_equal(np.sort(ids), np.sort(bm25.ids()))
        held.append(ids)
    assert np.array_equal(np.sort(np.concatenate(held)), everything)
    if kind == "segmented":
        layout = info.layout
        assert layout["segments"] and all(segment["shards"] for segment in layout["segments"])
        assert layout["deleted"] > 0


def test_sharded_search_equals_one_index(pair):
    kind, one, through_shards = pair
    assert isinstance(through_shards.index.snapshot().vectors, ShardedVectors)  # answered by the shards
    rng = random.Random(5)
    doc_ids = sorted({hit.doc_id for hit in one.search("river storm", k=100, mode="bm25")})
    filters = [None] + [random_filter(rng, doc_ids) for _ in range(8)]
    recalls = []
    for i, flt in enumerate(filters):
        for mode in MODES:
            query = QUERIES[i % len(QUERIES)]
            want = one.search(query, k=10, mode=mode, filter=flt, rerank=False)
            got = through_shards.search(query, k=10, mode=mode, filter=flt, rerank=False)
            if kind == "hnsw" and mode != "bm25":
                if want:
                    recalls.append(len(set(_pairs(want)) & set(_pairs(got))) / len(want))
                continue
            assert _pairs(got) == _pairs(want), (mode, flt)
            assert np.allclose([h.score for h in got], [h.score for h in want], atol=1e-4), (mode, flt)
            assert [h.text for h in got] == [h.text for h in want]
    if kind == "hnsw":
        assert recalls and np.mean(recalls) >= 0.99, recalls


def test_sharded_top_k_is_stable(pair):
    _, _, through_shards = pair
    for mode in MODES:
        full = through_shards.search("printer crash network", k=12, mode=mode, rerank=False)
        for j in (1, 5, 9):
            assert _pairs(through_shards.search("printer crash network", k=j, mode=mode, rerank=False)) \
                == _pairs(full[:j])


class _Down:
    """A shard whose process is gone: every call fails the way a dead Ray actor's does."""

    def dense(self, *args):
        return self

    bm25 = dense

    def result(self, timeout_s=None):
        raise RuntimeError("The actor died unexpectedly before finishing this task.")


def test_a_shard_down_fails_the_search_unless_partial_results_are_allowed(tmp_path, tiny_model_dir):
    write_corpus(tmp_path / "src", random.Random(7), 60)
    _build(tmp_path / "src", tmp_path / "idx", str(tiny_model_dir), None, SHARDS)
    shards = sharded(tmp_path / "idx")
    with Searcher(tmp_path / "idx", files=sharded_files([shards[0], _Down()])) as searcher:
        with pytest.raises(ShardUnavailableError, match=r"Shard 1 of 2 did not answer.*allow_partial"):
            searcher.search("river storm", mode="hybrid")
        with partial_results() as missing:
            hits = searcher.search("river storm", k=5, mode="hybrid", rerank=False)
        assert missing == {1}
        assert hits and all(hit.passage_id % SHARDS == 0 for hit in hits)


def test_a_service_must_match_the_index_shard_count(tmp_path, tiny_model_dir):
    write_corpus(tmp_path / "src", random.Random(8), 30)
    _build(tmp_path / "src", tmp_path / "idx", str(tiny_model_dir), None, None)
    with pytest.raises(IndexMismatchError, match=r"not sharded.*--shards N"):
        Searcher(tmp_path / "idx", files=sharded_files(sharded(tmp_path / "idx")))
    _build(tmp_path / "src", tmp_path / "idx", str(tiny_model_dir), None, 3)  # resharded in place
    with pytest.raises(IndexMismatchError, match=r"has 3 shards.*--shards 3"):
        Searcher(tmp_path / "idx", files=sharded_files(sharded(tmp_path / "idx", 2)))
    with Searcher(tmp_path / "idx", files=sharded_files(sharded(tmp_path / "idx", 3))) as searcher, \
            Searcher(tmp_path / "idx") as one:
        assert _pairs(searcher.search("river", k=5, mode="hybrid", rerank=False)) == \
            _pairs(one.search("river", k=5, mode="hybrid", rerank=False))
    shard_sets = sorted(p.name for p in (tmp_path / "idx").glob("shards-*"))
    assert len(shard_sets) == 1, shard_sets  # the resharded build's own; nothing left behind


def test_a_shard_asked_for_a_replaced_build_says_to_search_again(tmp_path, tiny_model_dir):
    from indexer.errors import IndexUnreadableError
    from indexer.index import Index

    write_corpus(tmp_path / "src", random.Random(9), 30)
    _build(tmp_path / "src", tmp_path / "idx", str(tiny_model_dir), None, SHARDS)
    with Index.open(tmp_path / "idx") as index:
        old = index.info
    write_corpus(tmp_path / "src", random.Random(10), 30)
    _build(tmp_path / "src", tmp_path / "idx", str(tiny_model_dir), None, None)  # replaces every file of `old`
    with pytest.raises(IndexUnreadableError, match="a newer build replaced it.*Search again"):
        ShardReader(tmp_path / "idx", 1).bm25(old, "river", 5, None)


def test_sharded_over_postgres_equals_one_index(tmp_path, tiny_model_dir, pg_schema_url):  # noqa: F811
    """Rows in PostgreSQL, as across machines: the router reads passages and filters there, the
    shards only their files, and the answer is one index's."""
    write_corpus(tmp_path / "src", random.Random(11), 80)
    build_index(IndexConfig(source=tmp_path / "src", index_dir=tmp_path / "idx", model=str(tiny_model_dir),
                            db_url=pg_schema_url, show_progress=False, shards=SHARDS))
    flt = {"$or": [{"tag": "billing"}, {"year": {"$gte": 2024}}]}
    with Searcher(tmp_path / "idx", db_url=pg_schema_url) as one, \
            Searcher(tmp_path / "idx", db_url=pg_schema_url, files=sharded_files(sharded(tmp_path / "idx"))) as split:
        for mode in MODES:
            for f in (None, flt):
                want = one.search("invoice refund", k=8, mode=mode, filter=f, rerank=False)
                got = split.search("invoice refund", k=8, mode=mode, filter=f, rerank=False)
                assert want and _pairs(got) == _pairs(want)
                assert np.allclose([h.score for h in got], [h.score for h in want], atol=1e-4)
