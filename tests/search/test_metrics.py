from __future__ import annotations

import math

import pytest

from search.metrics import evaluate_rankings, mrr_at_k, ndcg_at_k, percentile_ms, recall_at_k


def test_ndcg_hand_computed():
    relevance = {"a": 2, "b": 1}
    ranked = ["x", "a", "y", "b"]
    dcg = 2 / math.log2(3) + 1 / math.log2(5)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert ndcg_at_k(ranked, relevance, 10) == pytest.approx(dcg / idcg)
    assert ndcg_at_k(["a", "b"], relevance, 10) == pytest.approx(1.0)
    assert ndcg_at_k(["x", "a"], relevance, 1) == 0.0


def test_mrr_and_recall():
    relevance = {"a": 1, "b": 1, "c": 0}
    assert mrr_at_k(["c", "x", "b"], relevance, 10) == pytest.approx(1 / 3)
    assert mrr_at_k(["c", "x", "b"], relevance, 2) == 0.0
    assert recall_at_k(["a", "c"], relevance, 100) == 0.5
    assert recall_at_k(["x", "a", "b"], relevance, 2) == 0.5


def test_evaluate_rankings_averages_over_judged_queries():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 0}}
    metrics = evaluate_rankings({"q1": ["a"], "q2": ["x", "b"]}, qrels)
    assert metrics["mrr@10"] == pytest.approx((1 + 0.5) / 2)
    assert metrics["recall@100"] == 1.0
    with pytest.raises(ValueError, match="No query has a relevant document"):
        evaluate_rankings({}, {"q": {"a": 0}})


def test_percentiles_in_ms():
    assert percentile_ms([0.001, 0.002, 0.003], 50) == pytest.approx(2.0)
