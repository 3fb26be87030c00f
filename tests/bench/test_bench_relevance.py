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
