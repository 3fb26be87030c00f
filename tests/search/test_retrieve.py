"""Retrievers on a tiny index: BM25 catches exact terms, hybrid is exactly RRF of the two."""

from __future__ import annotations

from search import Searcher
from search.fusion import reciprocal_rank_fusion
from search.retrieve import Retriever
from tests.search.helpers import CODE_QUERY


def test_bm25_finds_an_exact_code_the_tiny_dense_model_misses(tiny_index):
    searcher = Searcher(tiny_index)
    dense = searcher.search(CODE_QUERY, k=5, mode="dense")
    assert dense[0].doc_id != "minutes.txt", "the random-weight bi-encoder does not rank it first"
    bm25 = searcher.search(CODE_QUERY, k=5, mode="bm25")
    assert [h.doc_id for h in bm25] == ["minutes.txt"], "only the passage holding the code matches"
    assert bm25[0].score > 0 and bm25[0].retriever_score == bm25[0].score
    assert searcher.search(CODE_QUERY, k=5, mode="hybrid")[0].doc_id == "minutes.txt"


def test_retrievers_follow_the_protocol(tiny_index):
    searcher = Searcher(tiny_index)
    for mode in ("dense", "bm25", "hybrid"):
        retriever: Retriever = searcher.retriever(mode)
        found = retriever.retrieve("bread dough", 3)
        assert 1 <= len(found) <= 3
        assert [c.score for c in found] == sorted((c.score for c in found), reverse=True)


def test_hybrid_is_reciprocal_rank_fusion_of_dense_and_bm25(tiny_index):
    searcher = Searcher(tiny_index)
    query, n = "volcano ash over Europe and the bank's interest rates", 5
    dense = [c.passage_id for c in searcher.dense.retrieve(query, n)]
    lexical = [c.passage_id for c in searcher.bm25.retrieve(query, n)]
    assert len(lexical) == 2  # only the volcano and markets passages share a term
    expected = reciprocal_rank_fusion([dense, lexical], k=60)[:n]
    got = searcher.hybrid.retrieve(query, n)
    assert [(c.passage_id, c.score) for c in got] == expected
    hits = searcher.search(query, k=n, mode="hybrid")
    assert [h.passage_id for h in hits] == [pid for pid, _ in expected]  # one passage per document
