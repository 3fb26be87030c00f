"""The rules that pick the search defaults on the dev sets (bench/bench_relevance.py)."""

from __future__ import annotations

import math

import pytest

from bench.bench_relevance import Setting, choose


def test_choose_takes_the_setting_whose_worst_set_gains_most():
    dense, bm25 = Setting("dense"), Setting("bm25")
    even, lopsided = Setting("hybrid", "zscore", 0.4), Setting("hybrid", "zscore", 0.6)
    results = {
        "a": {dense: 0.60, bm25: 0.70, even: 0.72, lopsided: 0.80},  # best single 0.70
        "b": {dense: 0.80, bm25: 0.70, even: 0.82, lopsided: 0.79},  # best single 0.80
    }
    chosen, best_single = choose(results, [dense, bm25, even, lopsided])
    assert best_single == {"a": 0.70, "b": 0.80}
    # lopsided has the larger mean (+0.045 against +0.02) but loses on b: even is the default.
    assert chosen == even


def test_choose_breaks_a_tie_in_the_worst_gain_by_the_mean():
    dense, bm25 = Setting("dense"), Setting("bm25")
    first, second = Setting("hybrid", "rrf", 0.5), Setting("hybrid", "minmax", 0.5)
    results = {
        "a": {dense: 0.5, bm25: 0.6, first: 0.62, second: 0.62},
        "b": {dense: 0.5, bm25: 0.6, first: 0.65, second: 0.70},
    }
    assert choose(results, [dense, bm25, first, second])[0] == second



def test_choose_measures_gains_from_the_baseline_it_is_given():
    # One baseline for every BM25 title count: here BM25 alone is stronger at another count (0.77 on
    # "a"), so "even" gains nothing on a against it, and "lopsided", +0.02 on a and +0.01 on b, wins.
    dense, bm25 = Setting("dense"), Setting("bm25")
    even, lopsided = Setting("hybrid", "zscore", 0.4), Setting("hybrid", "zscore", 0.6)
    results = {
        "a": {dense: 0.60, bm25: 0.70, even: 0.77, lopsided: 0.79},
        "b": {dense: 0.80, bm25: 0.70, even: 0.83, lopsided: 0.81},
    }
    assert choose(results, [dense, bm25, even, lopsided])[0] == even  # own baseline: +0.03 vs +0.01 worst
    chosen, used = choose(results, [dense, bm25, even, lopsided], {"a": 0.77, "b": 0.80})
    assert used == {"a": 0.77, "b": 0.80}
    assert chosen == lopsided


def test_title_counts_that_tie_for_the_hybrid_go_to_the_better_bm25():
    from bench.bench_relevance import title_key

    bm25, hybrid = Setting("bm25"), Setting("hybrid", "zscore", 0.4)
    baseline = {"a": 0.70, "b": 0.70}
    two = {"a": {bm25: 0.69, hybrid: 0.7204}, "b": {bm25: 0.70, hybrid: 0.7300}}
    three = {"a": {bm25: 0.70, hybrid: 0.7201}, "b": {bm25: 0.70, hybrid: 0.7290}}
    assert title_key(two, baseline, hybrid)[0] == title_key(three, baseline, hybrid)[0] == 0.02
    assert max((two, three), key=lambda r: title_key(r, baseline, hybrid)) is three
    worse_hybrid = {"a": {bm25: 0.75, hybrid: 0.71}, "b": {bm25: 0.75, hybrid: 0.73}}
    assert max((two, worse_hybrid), key=lambda r: title_key(r, baseline, hybrid)) is two


def test_bootstrap_choice_counts_how_often_the_default_is_chosen_again_and_still_holds():
    import numpy as np

    from bench.bench_relevance import bootstrap_choice

    dense, bm25 = Setting("dense"), Setting("bm25")
    clear, close = Setting("hybrid", "tmm", 0.8), Setting("hybrid", "zscore", 0.4)
    ones, zeros = np.ones(50), np.zeros(50)
    half = np.array([1.0, 0.0] * 25)
    per_query = {  # clear scores 1 on every query, close 1 on half of them, the singles never
        "a": {dense: zeros, bm25: zeros, clear: ones, close: half},
        "b": {dense: zeros, bm25: zeros, clear: ones, close: half},
    }
    singles = {n: np.stack([zeros, zeros]) for n in per_query}
    boot = bootstrap_choice(per_query, singles, [dense, bm25, clear, close], clear, rounds=50)
    assert boot.default_chosen == 1.0 and boot.default_holds == 1.0
    assert boot.top == [(clear, 50)]
    assert boot.gain_interval == {"a": pytest.approx((1.0, 1.0)), "b": pytest.approx((1.0, 1.0))}
    # The other default: never chosen, yet it gains about 0.5 on each set, above the bar every time.
    other = bootstrap_choice(per_query, singles, [dense, bm25, clear, close], close, rounds=50)
    assert other.default_chosen == 0.0 and other.default_holds == 1.0
    low, high = other.gain_interval["a"]
    assert 0.3 < low < 0.5 < high < 0.7


def test_per_query_ndcg_averages_to_what_evaluate_rankings_reports():
    from bench.bench_relevance import QueryLists, per_query_ndcg, score

    # Passages 1-4 belong to documents a-d; q1 finds its document first, q2 second, q3 never.
    lists = {
        qid: QueryLists(dense=dense, bm25=bm25, document_of={p: p for p in range(1, 5)},
                        doc_id_of={1: "a", 2: "b", 3: "c", 4: "d"})
        for qid, dense, bm25 in (
            ("q1", [(1, 0.9), (2, 0.5)], [(1, 3.0)]),
            ("q2", [(3, 0.9), (2, 0.8)], [(3, 2.0), (2, 1.0)]),
            ("q3", [(4, 0.9)], [(4, 1.0)]),
        )
    }
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}, "q4": {"a": 0}}  # q4: nothing relevant
    setting = Setting("hybrid", "tmm", 0.8)
    per_query = per_query_ndcg(lists, qrels, setting, total=4)
    assert per_query.tolist() == pytest.approx([1.0, 1 / math.log2(3), 0.0])
    assert per_query.mean() == pytest.approx(score(lists, qrels, setting, 4)["ndcg@10"])
