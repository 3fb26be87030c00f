"""Delta segments and tombstones: commits proportional to the change, answers as a full build's.

A policy with `min_base_passages=0` makes these tiny indexes take the path a large index takes.
"""

from __future__ import annotations

import numpy as np
import pytest

import indexer.store.transaction
from indexer import Index, build_index
from indexer.store.ann import VectorIndexConfig
from indexer.store.bm25_store import BM25Store, bm25_document
from indexer.store.segments import SegmentLayout, SegmentPolicy
from indexer.store.transaction import WriteTransaction
from search import Searcher
from tests.indexer.helpers import assert_consistent, config, write_corpus

APPEND = SegmentPolicy(min_base_passages=0, merge_fraction=1.0, max_segments=8)

BASE_DOCS = {
    "bread.txt": "Bread dough rises when yeast ferments the sugars in flour.",
    "rivers.txt": "Rivers carry sediment from mountains down to the sea.",
    "stars.txt": "Stars shine because nuclear fusion in their cores releases energy.",
    "chess.txt": "In chess the knight moves in an L shape across the board.",
}


def _layout(index_dir) -> SegmentLayout:
    with Index.open(index_dir, use_gpu=False) as index:
        return SegmentLayout.from_json(index.info.layout, index.info.passages)


def _top_docs(index_dir, query: str, mode: str, k: int = 3) -> list[str]:
    searcher = Searcher(index_dir)
    try:
        return [hit.doc_id for hit in searcher.search(query, k=k, mode=mode)]
    finally:
        searcher.close()


def _build(source, index_dir, model, **kw):
    return build_index(config(source, index_dir, model, segments=kw.pop("segments", APPEND), **kw))


def test_an_addition_commits_a_delta_segment_and_search_finds_it(tmp_path, tiny_model):
    source = write_corpus(tmp_path / "src", BASE_DOCS)
    index_dir = tmp_path / "idx"
    _build(source, index_dir, tiny_model)
    base = _layout(index_dir)
    assert base.segments == () and base.base_passages == 4

    (source / "volcano.txt").write_text("Volcanoes erupt molten basalt lava from magma chambers.")
    report = _build(source, index_dir, tiny_model)
    layout = _layout(index_dir)
    assert report.total_passages == 5 and len(layout.segments) == 1 and layout.segments[0].passages == 1
    assert layout.base_passages == 4  # the base was not rewritten
    ids = assert_consistent(index_dir)
    assert len(ids) == 5
    assert _top_docs(index_dir, "basalt lava magma", "bm25")[0] == "volcano.txt"
    files = {p.name for p in index_dir.iterdir()}
    assert sum(name.startswith("vectors-") for name in files) == 2  # base + one delta
    assert sum(name.startswith("bm25-") for name in files) == 2


def test_dense_answers_equal_a_full_build_of_the_same_documents(tmp_path, tiny_model):
    source = write_corpus(tmp_path / "src", BASE_DOCS)
    segmented, full = tmp_path / "seg", tmp_path / "full"
    _build(source, segmented, tiny_model)
    (source / "volcano.txt").write_text("Volcanoes erupt molten basalt lava from magma chambers.")
    (source / "stars.txt").unlink()
    _build(source, segmented, tiny_model)
    _build(source, full, tiny_model, segments=SegmentPolicy())
    assert _layout(segmented).deleted == 1 and len(_layout(segmented).segments) == 1
    for query in ("yeast and flour", "lava", "knight on the board", "sediment"):
        assert _top_docs(segmented, query, "dense", k=4) == _top_docs(full, query, "dense", k=4)
        # BM25 of a delta is scored with the base's statistics, so scores differ a little from a
        # full build's; which documents match does not.
        assert set(_top_docs(segmented, query, "bm25", k=4)) == set(_top_docs(full, query, "bm25", k=4))


def test_a_removed_document_is_filtered_out_until_the_merge_drops_it(tmp_path, tiny_model):
    source = write_corpus(tmp_path / "src", BASE_DOCS)
    index_dir = tmp_path / "idx"
    _build(source, index_dir, tiny_model)
    (source / "stars.txt").unlink()
    _build(source, index_dir, tiny_model)
    layout = _layout(index_dir)
    assert layout.deleted == 1 and layout.deleted_file is not None
    assert "stars.txt" not in _top_docs(index_dir, "nuclear fusion stars", "bm25", k=4)
    assert "stars.txt" not in _top_docs(index_dir, "nuclear fusion stars", "dense", k=4)
    assert len(assert_consistent(index_dir)) == 3
    with Index.open(index_dir, use_gpu=False) as index:
        assert index.stats().deleted_pending == 1 and index.stats().passages == 3

    # A commit past the policy's fraction merges: one base, no tombstones, old files removed.
    policy = SegmentPolicy(min_base_passages=0, merge_fraction=0.2)
    (source / "volcano.txt").write_text("Volcanoes erupt molten basalt lava from magma chambers.")
    _build(source, index_dir, tiny_model, segments=policy)
    merged = _layout(index_dir)
    assert merged.segments == () and merged.deleted == 0 and merged.base_passages == 4
    names = {p.name for p in index_dir.iterdir()}
    assert not any(name.startswith("deleted-") for name in names)
    assert sum(name.startswith("vectors-") for name in names) == 1
    assert len(assert_consistent(index_dir)) == 4


def test_a_delta_commit_that_fails_leaves_the_index_as_it_was(tmp_path, tiny_model, monkeypatch):
    source = write_corpus(tmp_path / "src", BASE_DOCS)
    index_dir = tmp_path / "idx"
    _build(source, index_dir, tiny_model)
    with Index.open(index_dir, use_gpu=False) as index:
        before = index.build_id

    def fail(*_args, **_kw):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(WriteTransaction, "_record", fail)
    (source / "volcano.txt").write_text("Volcanoes erupt molten basalt lava from magma chambers.")
    with pytest.raises(OSError, match="disk full"):
        _build(source, index_dir, tiny_model)
    monkeypatch.undo()
    with Index.open(index_dir, use_gpu=False) as index:
        assert index.build_id == before and index.info.passages == 4
    assert len(assert_consistent(index_dir)) == 4
    _build(source, index_dir, tiny_model)  # the rerun commits, and removes the orphaned files
    assert len(assert_consistent(index_dir)) == 5
    layout = _layout(index_dir)
    with Index.open(index_dir, use_gpu=False) as index:
        info = index.info
    named = {info.vector_file, info.bm25_dir, *layout.files()}
    on_disk = {p.name for p in index_dir.iterdir() if p.name.startswith(("vectors-", "bm25-", "deleted-"))}
    assert on_disk == named


def test_hnsw_takes_deletes_as_tombstones_and_drops_them_at_the_merge(tmp_path, tiny_model):
    source = write_corpus(tmp_path / "src", BASE_DOCS)
    index_dir = tmp_path / "idx"
    hnsw = VectorIndexConfig(kind="hnsw", hnsw_m=8)
    _build(source, index_dir, tiny_model, vector_index=hnsw)
    with Index.open(index_dir, use_gpu=False) as index:
        assert index.stats().vector_index.startswith("HNSW8")
    (source / "chess.txt").unlink()
    _build(source, index_dir, tiny_model)  # no flag: the index keeps its HNSW type
    assert _layout(index_dir).deleted == 1
    assert "chess.txt" not in _top_docs(index_dir, "knight moves on the board", "dense", k=4)
    (source / "volcano.txt").write_text("Volcanoes erupt molten basalt lava from magma chambers.")
    _build(source, index_dir, tiny_model, segments=SegmentPolicy(min_base_passages=0, merge_fraction=0.1))
    layout = _layout(index_dir)  # the merge rebuilt the HNSW graph without the deleted passage
    assert layout.deleted == 0 and layout.segments == () and layout.plan["kind"] == "hnsw"
    assert len(assert_consistent(index_dir)) == 4


def test_an_unchanged_rebuild_keeps_every_segment(tmp_path, tiny_model):
    source = write_corpus(tmp_path / "src", BASE_DOCS)
    index_dir = tmp_path / "idx"
    _build(source, index_dir, tiny_model)
    (source / "volcano.txt").write_text("Volcanoes erupt molten basalt lava from magma chambers.")
    _build(source, index_dir, tiny_model)
    before = {p.name for p in index_dir.iterdir()}
    _build(source, index_dir, tiny_model)
    assert {p.name for p in index_dir.iterdir()} == before
    assert len(assert_consistent(index_dir)) == 5


def test_merge_policy_decides_in_one_place():
    policy = SegmentPolicy(min_base_passages=1000, merge_fraction=0.1, max_segments=2)
    small = SegmentLayout(base_passages=999)
    assert "small" in policy.merge_needed(small, 1, 0)
    big = SegmentLayout(base_passages=10_000)
    assert policy.merge_needed(big, 999, 0) is None
    assert "pass 10%" in policy.merge_needed(big, 600, 401)
    with pytest.raises(ValueError, match="merge_fraction"):
        SegmentPolicy(merge_fraction=0)
    assert np.isclose(policy.merge_fraction, 0.1)


def test_a_delta_writes_titles_as_its_base_did(tmp_path, tiny_model, monkeypatch):
    """A base from before the title count changed keeps its BM25 documents comparable: every delta
    after it writes titles as often as the base did, until a merge rewrites all of them."""
    source = write_corpus(tmp_path / "src", BASE_DOCS)
    index_dir = tmp_path / "idx"
    monkeypatch.setattr(indexer.store.transaction, "TITLE_REPEATS", 1)  # the base: an older default
    _build(source, index_dir, tiny_model)
    monkeypatch.setattr(indexer.store.transaction, "TITLE_REPEATS", 3)
    written: list[int] = []

    def spy(title: str, text: str, title_repeats: int) -> str:
        written.append(title_repeats)
        return bm25_document(title, text, title_repeats)

    monkeypatch.setattr(indexer.store.transaction, "bm25_document", spy)
    (source / "volcano.txt").write_text("Volcanoes erupt molten basalt lava from magma chambers.")
    _build(source, index_dir, tiny_model)
    layout = _layout(index_dir)
    assert len(layout.segments) == 1 and written == [1]
    assert BM25Store.load(index_dir / layout.segments[0].bm25_dir).title_repeats == 1
    written.clear()
    (source / "glacier.txt").write_text("Glaciers carve valleys as the ice slowly flows downhill.")
    _build(source, index_dir, tiny_model, segments=SegmentPolicy(min_base_passages=0, max_segments=1))
    assert _layout(index_dir).segments == () and written == [3] * 6  # the merge: all six, anew
    with Index.open(index_dir, use_gpu=False) as index:
        assert BM25Store.stats_of(index_dir / index.info.bm25_dir).title_repeats == 3


@pytest.mark.parametrize("with_delta", [False, True])
def test_an_index_built_with_older_stop_words_keeps_them_until_a_merge_or_repair(tmp_path, tiny_model, monkeypatch,
                                                                                 with_delta):
    """The stop words changed ("en" -> "en_plus"): a base built with the old list keeps it in its
    deltas, and `repair` builds BM25 anew with the new one, whether or not the index has a delta."""
    from indexer import repair_index

    source = write_corpus(tmp_path / "src", BASE_DOCS)
    index_dir = tmp_path / "idx"
    monkeypatch.setattr(indexer.store.transaction, "STOPWORDS", "en")  # the base: the older list
    _build(source, index_dir, tiny_model)
    monkeypatch.undo()
    assert _top_docs(index_dir, "how", "bm25") == [], "no passage holds 'how'"
    (source / "volcano.txt").write_text("How volcanoes erupt: molten basalt rises from magma chambers.")
    if with_delta:
        _build(source, index_dir, tiny_model)
        layout = _layout(index_dir)
        assert len(layout.segments) == 1
        assert BM25Store.load(index_dir / layout.segments[0].bm25_dir).stopwords == "en"
        assert _top_docs(index_dir, "how", "bm25") == ["volcano.txt"], "the delta reads 'how' as its base did"
    report = repair_index(index_dir, show_progress=False)
    assert report.bm25_rebuilt and any("the stop words 'en', not 'en_plus'" in p for p in report.problems)
    with Index.open(index_dir, use_gpu=False) as index:
        assert BM25Store.load(index_dir / index.info.bm25_dir).stopwords == "en_plus"
    assert _top_docs(index_dir, "how", "bm25") == []
    if with_delta:
        assert _top_docs(index_dir, "how volcanoes erupt", "bm25")[0] == "volcano.txt"
    assert "nothing to repair" in repair_index(index_dir, show_progress=False).summary()
    assert len(assert_consistent(index_dir)) == (5 if with_delta else 4)
