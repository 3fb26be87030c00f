"""The rules that pick the search defaults on the dev sets (bench/bench_relevance.py)."""

from __future__ import annotations

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

