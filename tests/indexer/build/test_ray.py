"""`--ray local`: the same index as a single-process build, and a dying worker commits nothing."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from indexer import Index, build_index
from indexer.errors import IndexerError
from search import Searcher
from tests.indexer.helpers import assert_consistent, config, stored_vector, write_corpus

pytest.importorskip("ray")

WORDS = ["lava", "ash", "volcano", "bread", "dough", "oven", "striker", "goal", "trophy", "shares", "bank", "rates", "river", "garden", "market", "cat", "dog", "bird", "teacher", "village", "mountain"]
QUERIES = ["volcano ash", "bread oven", "bank rates", "cat in the garden"]


@pytest.fixture(autouse=True)
def _one_thread_workers(monkeypatch):
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")  # inherited by the Ray workers


def _corpus(folder: Path, count: int, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    return write_corpus(folder, {f"doc{i:02d}.txt": " ".join(rng.choice(WORDS, size=int(rng.integers(10, 120)))) + "."
                                 for i in range(count)})


def _contents(index_dir: Path) -> tuple[dict[int, tuple[str, str]], dict[int, np.ndarray]]:
    """passage id -> (document key, text), and passage id -> stored vector."""
    with Index.open(index_dir, use_gpu=False) as index:
        snapshot = index.snapshot()
        ids = sorted(snapshot.vectors.ids().tolist())
        records = index.passages(ids)
        return ({pid: (records[pid].doc_id, records[pid].text) for pid in ids},
                {pid: stored_vector(snapshot, pid) for pid in ids})


def _hits(index_dir: Path, model: str) -> list[list[tuple[int, float]]]:
    searcher = Searcher(index_dir, model=model)
    return [[(hit.passage_id, hit.score) for hit in searcher.search(query, k=5)] for query in QUERIES]


def _assert_same_index(local: Path, on_ray: Path, model: str) -> None:
    passages_local, vectors_local = _contents(local)
    passages_ray, vectors_ray = _contents(on_ray)
    assert passages_ray == passages_local  # same ids, documents and texts
    for pid, vector in vectors_local.items():
        np.testing.assert_allclose(vectors_ray[pid], vector, atol=1e-5)
    hits_local, hits_ray = _hits(local, model), _hits(on_ray, model)
    assert [[pid for pid, _ in hits] for hits in hits_ray] == [[pid for pid, _ in hits] for hits in hits_local]
    np.testing.assert_allclose([[s for _, s in h] for h in hits_ray], [[s for _, s in h] for h in hits_local],
                               atol=1e-5)
    assert_consistent(on_ray)


def test_ray_local_build_and_update_match_single_process(tiny_model: str, tmp_path: Path, monkeypatch) -> None:
    from indexer.build import ray_embed

    served = []  # passages Ray actually embedded: the single-process path must not stand in for it
    original_call = ray_embed.RayStream.__call__

    def counting_call(self, model, texts, *args, **kwargs):
        served.append(len(texts))
        return original_call(self, model, texts, *args, **kwargs)

    monkeypatch.setattr(ray_embed.RayStream, "__call__", counting_call)
    # 'local' starts a Ray here even where the environment names a cluster (none answers there).
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    source = _corpus(tmp_path / "docs", 24, seed=0)
    # Short passages and small commits: several commits, each taking its slice of one Ray stream.
    options = {"passage_tokens": 24, "overlap_tokens": 4, "commit_passages": 40}
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    single = build_index(config(source, local, tiny_model, **options))
    report = build_index(config(source, on_ray, tiny_model, ray="local", **options))
    assert report.passages_embedded == single.passages_embedded > 2 * 40 and report.commits > 2
    assert sum(served) == report.passages_embedded and len(served) == report.commits
    _assert_same_index(local, on_ray, tiny_model)

    # Incremental: one document changed, one added, one removed; both builds take the same plan.
    (source / "doc03.txt").write_text("The volcano erupted and ash fell on the village market.")
    (source / "new.txt").write_text("Bread dough rises in a warm oven near the river.")
    (source / "doc05.txt").unlink()
    single = build_index(config(source, local, tiny_model, **options))
    served.clear()
    report = build_index(config(source, on_ray, tiny_model, ray="local", **options))
    assert (report.documents_added, report.documents_updated, report.documents_removed) == (1, 1, 1)
    assert report.passages_embedded == single.passages_embedded
    assert sum(served) == report.passages_embedded > 0, "the update was embedded on Ray too"
    _assert_same_index(local, on_ray, tiny_model)
    assert build_index(config(source, on_ray, tiny_model, ray="local", **options)).passages_embedded == 0


def test_dying_worker_leaves_previous_index_intact(tiny_model: str, tmp_path: Path, monkeypatch) -> None:
    import ray

    from indexer.build import ray_embed

    source = _corpus(tmp_path / "docs", 8, seed=1)
    index_dir = tmp_path / "index"
    build_index(config(source, index_dir, tiny_model))
    with Index.open(index_dir, use_gpu=False) as index:
        before_build = index.build_id
    before_hits = _hits(index_dir, tiny_model)

    class DyingEncoder(ray_embed.PassageEncoder):
        """Kills its worker process on every call, as an out-of-memory kill or a lost node would."""

        def __call__(self, batch):
            os._exit(1)

    monkeypatch.setattr(ray_embed, "PassageEncoder", DyingEncoder)
    _corpus(tmp_path / "docs", 16, seed=2)  # changes every document and adds eight
    with pytest.raises(IndexerError, match=r"Embedding on Ray \(local\) failed after 0 of \d+ passages.*not committed"):
        build_index(config(source, index_dir, tiny_model, ray="local"))
    assert not ray.is_initialized()  # the Ray the build started is gone
    with Index.open(index_dir, use_gpu=False) as index:
        assert index.build_id == before_build
    assert _hits(index_dir, tiny_model) == before_hits
    assert_consistent(index_dir)


def test_ray_option_is_checked() -> None:
    with pytest.raises(ValueError, match="must be 'local' or a Ray cluster address"):
        config(Path("."), Path("index"), "m", ray=" ")
