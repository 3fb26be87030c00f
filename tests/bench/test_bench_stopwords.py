from __future__ import annotations

import numpy as np
import pytest

from bench.bench_stopwords import QUESTION_WORDS, stopword_lists, verdict
from indexer.store.bm25_store import BM25Store


def test_the_lists_grow_from_the_indexs_own_and_hold_the_question_words():
    lists = list(stopword_lists().values())
    assert len(lists[0]) == 33 and set(lists[0]) < set(lists[1]) and set(QUESTION_WORDS) <= set(lists[1])


def test_a_list_helps_only_when_both_scores_rise_on_every_set():
    results = {"base": {"a": (0.5, 0.6), "b": (0.4, 0.5)},
               "better": {"a": (0.51, 0.61), "b": (0.41, 0.51)},
               "mixed": {"a": (0.52, 0.62), "b": (0.39, 0.52)}}
    assert verdict(results, "base") == {"better": True, "mixed": False}


def test_a_store_with_another_list_drops_those_words_and_is_never_saved(tmp_path):
    texts = ["where can I leave my bike", "bicycles go in the racks"]
    default = BM25Store.build(np.array([1, 2]), texts)
    fuller = BM25Store.build(np.array([1, 2]), texts, stopwords=list(stopword_lists()["en + question words"]))
    assert list(default.search("where can I", 2)[1]) == [1]  # "where" and "can" match with the 33 words
    assert len(fuller.search("where can I", 2)[1]) == 0
    with pytest.raises(ValueError, match="measured in memory only"):
        fuller.save(tmp_path / "bm25")
