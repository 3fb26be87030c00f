"""The BM25 store on its own: ids in, ids out, stemming and stop words, atomic save and reload."""

from __future__ import annotations

import numpy as np
import pytest

from indexer.bm25_store import BM25Store

TEXTS = {
    7: "Volcano eruptions ground flights across Europe",
    3: "Bread dough rises before baking",
    12: "The volcano erupted again; ash fell on the village",
    5: "Interest rates and share prices",
}


def build() -> BM25Store:
    return BM25Store.build(list(TEXTS), list(TEXTS.values()))


def test_search_returns_passage_ids_of_term_matches_best_first():
    store = build()
    scores, ids = store.search("volcanic eruption", 10)
    # "eruption"/"erupted" stem to "erupt"; "volcanic" shares no stem with "volcano".
    assert set(ids.tolist()) == {7, 12}
    assert list(scores) == sorted(scores, reverse=True) and np.all(scores > 0)
    scores, ids = store.search("volcano", 1)
    assert len(ids) == 1 and ids[0] in (7, 12)


def test_stop_words_and_unknown_words_match_nothing():
    store = build()
    for query in ("the and of", "zzzyx", ""):
        scores, ids = store.search(query, 5)
        assert len(ids) == 0 and len(scores) == 0


def test_save_and_load_round_trip(tmp_path):
    store = build()
    path = store.save(tmp_path / "bm25-abc")
    assert not list(tmp_path.glob(".*.tmp")), "the temp folder was renamed, not left behind"
    loaded = BM25Store.load(path)
    assert sorted(loaded.ids().tolist()) == sorted(TEXTS)
    for query in ("volcano ash", "baking bread", "share prices"):
        expected = store.search(query, 4)
        got = loaded.search(query, 4)
        assert got[1].tolist() == expected[1].tolist()
        np.testing.assert_allclose(got[0], expected[0])


def test_empty_store_saves_loads_and_finds_nothing(tmp_path):
    store = BM25Store.build([], [])
    loaded = BM25Store.load(store.save(tmp_path / "bm25-empty"))
    assert loaded.ntotal == 0
    assert len(loaded.search("anything", 3)[1]) == 0


def test_missing_folder_and_bad_input_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="--rebuild"):
        BM25Store.load(tmp_path / "bm25-gone")
    with pytest.raises(ValueError, match="2 ids for 1 texts"):
        BM25Store.build([1, 2], ["one text"])
    with pytest.raises(ValueError, match="passage ids must be unique"):
        BM25Store.build([1, 1], ["a b", "c d"])
