"""Index types through the real commit path: auto by size, IVF adds, deletes, merges and retrains.

Vectors come in through `--embeddings` (a JSONL source that carries its own), so these tests
need no model weights and no torch, and can use enough passages to train IVF.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from indexer import Index, IndexConfig, build_index
from indexer.__main__ import main as cli
from indexer.store.ann import VectorIndexConfig
from indexer.store.segments import SegmentLayout, SegmentPolicy
from tests.indexer.helpers import assert_consistent
from tests.indexer.sources.test_vector_input import fake_model

DIM = 16
APPEND = SegmentPolicy(min_base_passages=0, merge_fraction=1.0, max_segments=8)
WORDS = ["river", "bread", "stone", "cloud", "engine", "violin", "garden", "harbor", "signal", "copper", "lantern", "meadow"]


def clustered(n: int, seed: int = 0, centres: int = 24) -> np.ndarray:
    """Unit vectors around a few centres, as real embeddings cluster by topic."""
    rng = np.random.default_rng(seed)
    middle = rng.normal(size=(centres, DIM))
    rows = middle[rng.integers(0, centres, n)] + 0.45 * rng.normal(size=(n, DIM))
    rows = rows.astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def write_source(path, ids: list[int], vectors: np.ndarray):
    with open(path, "w") as fh:
        for i, row in zip(ids, vectors, strict=True):
            text = f"{WORDS[i % 12]} {WORDS[(i * 7) % 12]} passage number {i}"
            fh.write(json.dumps({"id": f"d{i}", "title": "", "text": text, "embedding": row.tolist()}) + "\n")
    return path


def ingest(source, index_dir, model, **kw):
    return build_index(IndexConfig(source=source, index_dir=index_dir, model=model, embeddings=source,
                                   show_progress=False, **kw))


def layout(index_dir) -> SegmentLayout:
    with Index.open(index_dir, use_gpu=False) as index:
        return SegmentLayout.from_json(index.info.layout, index.info.passages)


def nearest(index_dir, vector: np.ndarray, k: int = 5) -> list[int]:
    with Index.open(index_dir, use_gpu=False) as index:
        return index.snapshot().vectors.search(vector[None, :], k)[1][0].tolist()


@pytest.fixture()
def model(tmp_path) -> str:
    return fake_model(tmp_path / "model", dim=DIM)


def test_auto_is_exact_below_the_measured_size_and_ivf_above(tmp_path, model, monkeypatch, capsys):
    monkeypatch.setattr("indexer.store.ann.EXACT_MAX_PASSAGES", 1000)
    vectors = clustered(2400)
    small = write_source(tmp_path / "small.jsonl", list(range(600)), vectors[:600])
    ingest(small, tmp_path / "small", model)
    with Index.open(tmp_path / "small", use_gpu=False) as index:
        assert index.stats().vector_index == "exact (Flat)" and index.stats().recall_at_10 == 1.0
    large = write_source(tmp_path / "large.jsonl", list(range(2400)), vectors)
    report = ingest(large, tmp_path / "large", model, commit_passages=500)
    with Index.open(tmp_path / "large", use_gpu=False) as index:
        stats = index.stats()
    assert stats.vector_index.startswith("IVF") and ",SQ8" in stats.vector_index  # auto's memory default
    assert stats.recall_at_10 >= 0.95 and "nprobe" in stats.vector_index
    # The growing commits crossed the threshold once: the switch is reported, not silent.
    assert any("Flat -> IVF" in note for note in report.notes), report.notes
    assert report.vector_index == stats.vector_index
    assert len(assert_consistent(tmp_path / "large")) == 2400
    assert cli(["stats", "--index", str(tmp_path / "large")]) == 0  # the CLI shows the same
    shown = capsys.readouterr().out
    assert stats.vector_index in shown and f"recall@10 vs exact: {stats.recall_at_10:.3f}" in shown


@pytest.mark.parametrize("kind, storage, extra, base", [
    ("ivf", "float32", {}, 2000), ("ivf", "float16", {}, 2000), ("ivf", "sq8", {}, 2000),
    ("ivfpq", "auto", {"pq_m": 4}, 10_000),  # PQ trains 256 codes per sub-vector: 39 x 256 points
    ("hnsw", "float32", {"hnsw_m": 8}, 2000), ("flat", "sq8", {}, 2000),
])
def test_every_type_adds_deletes_and_merges_consistently(tmp_path, model, kind, storage, extra, base):
    vectors = clustered(base + 600, seed=1)
    wanted = VectorIndexConfig(kind=kind, storage=storage, nlist=16 if kind.startswith("ivf") else None,
                               **extra)
    source = write_source(tmp_path / "src.jsonl", list(range(base)), vectors[:base])
    index_dir = tmp_path / "idx"
    ingest(source, index_dir, model, vector_index=wanted, commit_passages=base)
    assert layout(index_dir).plan["kind"] == kind
    # An incremental build: 300 documents gone, 600 new ones, as one delta segment and tombstones.
    kept = list(range(300, base + 600))
    write_source(source, kept, vectors[300:])
    ingest(source, index_dir, model, segments=APPEND)
    seg = layout(index_dir)
    assert len(seg.segments) == 1 and seg.deleted == 300 and seg.plan["kind"] == kind
    assert len(assert_consistent(index_dir)) == base + 300 and seg.base_passages == base
    with Index.open(index_dir, use_gpu=False) as index:
        doc_of = {pid: rec.doc_id for pid, rec in index.passages(index.snapshot().vectors.ids()).items()}
    found = [doc_of.get(pid) for pid in nearest(index_dir, vectors[base + 500], k=20)]
    assert f"d{base + 500}" in found[:3]  # a new passage is found by its own vector
    assert all(doc is not None and int(doc[1:]) >= 300 for doc in found)  # no deleted one
    # A merge folds everything into one base of the same type.
    write_source(source, [*kept, base + 600], np.vstack([vectors[300:], clustered(1, seed=5)]))
    ingest(source, index_dir, model, segments=SegmentPolicy(min_base_passages=0, merge_fraction=0.05))
    merged = layout(index_dir)
    assert merged.segments == () and merged.deleted == 0 and merged.plan["kind"] == kind
    assert len(assert_consistent(index_dir)) == base + 301


def test_an_ivf_that_outgrows_its_training_is_retrained_and_says_so(tmp_path, model):
    vectors = clustered(5200, seed=2)
    source = write_source(tmp_path / "src.jsonl", list(range(700)), vectors[:700])
    index_dir = tmp_path / "idx"
    ingest(source, index_dir, model, vector_index=VectorIndexConfig(kind="ivf"))
    first = layout(index_dir)
    assert first.plan["kind"] == "ivf" and first.plan["trained_on"] == 700
    write_source(source, list(range(5200)), vectors)
    report = ingest(source, index_dir, model, commit_passages=10_000)
    grown = layout(index_dir)
    assert any("retrained" in note for note in report.notes), report.notes
    assert grown.plan["nlist"] > first.plan["nlist"] and grown.plan["trained_on"] > 700
    assert len(assert_consistent(index_dir)) == 5200


def test_asking_for_another_type_converts_without_new_documents(tmp_path, model):
    vectors = clustered(1500, seed=3)
    source = write_source(tmp_path / "src.jsonl", list(range(1500)), vectors)
    index_dir = tmp_path / "idx"
    ingest(source, index_dir, model)
    assert layout(index_dir).plan["kind"] == "flat"
    report = ingest(source, index_dir, model, vector_index=VectorIndexConfig(kind="hnsw", hnsw_m=8))
    assert layout(index_dir).plan["kind"] == "hnsw" and report.documents_unchanged == 1500
    before = nearest(index_dir, vectors[7])
    ingest(source, index_dir, model)  # no flag: it stays HNSW, and nothing is rewritten
    assert layout(index_dir).plan["kind"] == "hnsw" and nearest(index_dir, vectors[7]) == before
