"""`SearchParams`: one request, checked once; and the one rule for whether a search reranks."""

from __future__ import annotations

import math

import pytest

from search import CrossEncoderReranker, NoRerankerError, Searcher, SearchParams
from search.params import DEFAULT_K, MAX_K


def test_defaults_leave_every_choice_but_k_to_the_searcher():
    params = SearchParams()
    assert params.k == DEFAULT_K == 10
    assert (params.mode, params.rerank, params.candidates, params.fusion, params.fusion_weight) == (None,) * 5
    assert params.keep_tail is False


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        ({"k": 0}, ValueError, r"k \(0\) must be at least 1 and at most 1000"),
        ({"k": MAX_K + 1}, ValueError, r"k \(1001\) must be at least 1"),
        ({"k": 2.5}, TypeError, r"k must be a whole number"),
        ({"k": True}, TypeError, r"k must be a whole number"),
        ({"candidates": 0}, ValueError, r"candidates \(0\) must be at least 1"),
        ({"mode": "sparse"}, ValueError, r"Unknown mode 'sparse'\. Valid: dense, bm25, hybrid"),
        ({"fusion": "max"}, ValueError, r"Unknown fusion 'max'"),
        ({"fusion_weight": 1.5}, ValueError, r"fusion weight \(1\.5\) must lie between 0"),
        ({"fusion_weight": math.nan}, ValueError, r"fusion weight"),
        ({"rerank": "yes"}, TypeError, r"rerank must be True, False or None"),
    ],
)
def test_a_bad_field_is_refused_when_the_params_are_made(fields, error, message):
    with pytest.raises(error, match=message):
        SearchParams(**fields)


def test_params_and_keywords_ask_for_the_same_search(tiny_index):
    searcher = Searcher(tiny_index)
    params = SearchParams(k=3, mode="bm25")
    assert searcher.search("bread dough", params) == searcher.search("bread dough", k=3, mode="bm25")
    assert searcher.params(params, k=2) == SearchParams(k=2, mode="bm25"), "keywords override the params"
    assert searcher.params() == SearchParams()


def test_the_rerank_rule_asked_else_the_searchers_default(tiny_index, tiny_cross_encoder):
    reranker = CrossEncoderReranker(tiny_cross_encoder)
    plain = Searcher(tiny_index)
    assert plain.rerank_by_default is False and not plain.reranks(SearchParams())
    with pytest.raises(NoRerankerError, match=r"rerank=True needs a reranker, and this Searcher has none"):
        plain.search("bread", rerank=True)
    offered = Searcher(tiny_index, reranker=reranker, rerank_by_default=False)  # the app and the API
    assert not offered.reranks(SearchParams()) and offered.reranks(SearchParams(rerank=True))
    assert offered.search_detailed("bread", k=3).reranked == 0
    assert offered.search_detailed("bread", k=3, rerank=True).reranked > 0
    given = Searcher(tiny_index, reranker=reranker)  # a Python user's reranker is used unless told not to
    assert given.rerank_by_default is True and given.search_detailed("bread", k=3).reranked > 0
    assert given.search_detailed("bread", k=3, rerank=False).reranked == 0
    with pytest.raises(ValueError, match="rerank_by_default=True needs a reranker"):
        Searcher(tiny_index, rerank_by_default=True)


def test_offset_pages_through_one_ranking(tiny_index):
    searcher = Searcher(tiny_index)
    whole = searcher.search("bread dough", k=5, mode="dense")
    assert searcher.search("bread dough", k=2, offset=2, mode="dense") == whole[2:4]
    assert searcher.search("bread dough", k=10, offset=4, mode="dense") == whole[4:]
    assert searcher.search("bread dough", k=3, offset=999, mode="dense") == [], "a page past the ranking is empty"
    with pytest.raises(ValueError, match=r"offset \(1000\) must lie between 0 and 999"):
        SearchParams(offset=MAX_K)
    with pytest.raises(TypeError, match="offset must be a whole number"):
        SearchParams(offset=1.5)
