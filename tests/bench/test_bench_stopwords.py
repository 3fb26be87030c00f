from __future__ import annotations

import numpy as np
import pytest

from bench.bench_stopwords import (
    QUESTION_WORDS,
    REFERENCE,
    changes,
    index_list,
    stopword_lists,
    verdict,
)
from indexer.store.bm25_store import BM25Store


def test_the_lists_grow_from_lucenes_and_hold_the_question_words():
    lists = list(stopword_lists().values())
    assert len(lists[0]) == 33 and set(lists[0]) < set(lists[1]) and set(QUESTION_WORDS) <= set(lists[1])
    assert index_list() in stopword_lists(), "the index reads one of the lists measured"


def _scores(*per_set: tuple[list[float], list[float]]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    return {f"set{i}": (np.array(bm25), np.array(hybrid)) for i, (bm25, hybrid) in enumerate(per_set)}


def test_a_list_qualifies_on_mean_gains_without_a_set_losing_beyond_chance():
    ref = _scores(([0.5] * 40, [0.6] * 40), ([0.5] * 40, [0.6] * 40))
    results = {
        REFERENCE: ref,
        # Gains on one set, one query down on the other: a tie there, a gain on the mean.
        "tie": _scores(([0.6] * 40, [0.7] * 40), ([0.5] * 40, [0.6] * 39 + [0.5])),
        # Gains more, but every query of the second set loses: a loss beyond chance.
        "loses": _scores(([0.9] * 40, [0.9] * 40), ([0.45] * 40, [0.55] * 40)),
        "flat": ref,
    }
    qualifies, chosen = verdict(changes(results))
    assert qualifies == {"tie": True, "loses": False, "flat": False}
    assert chosen == "tie"
    assert verdict(changes({REFERENCE: ref, "flat": ref}))[1] is None, "nothing gains: the reference stays"


def test_a_store_with_another_list_drops_those_words_and_is_never_saved(tmp_path):
    texts = ["where can I leave my bike", "bicycles go in the racks"]
    lucene = BM25Store.build(np.array([1, 2]), texts, stopwords=list(stopword_lists()[REFERENCE]))
    fuller = BM25Store.build(np.array([1, 2]), texts, stopwords=list(stopword_lists()["Lucene's 33 + question words"]))
    assert list(lucene.search("where can I", 2)[1]) == [1]  # "where" and "can" match with the 33 words
    assert len(fuller.search("where can I", 2)[1]) == 0
    with pytest.raises(ValueError, match="measured in memory only"):
        fuller.save(tmp_path / "bm25")
