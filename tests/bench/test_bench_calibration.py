"""The relevance calibration's pure helpers: ECE, knot export, inversions, setting keys, the JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bench.bench_calibration import (
    BEFORE_FAIR,
    BEFORE_STRONG,
    Ranking,
    bin_index,
    bucket_of,
    bucket_precision,
    calibration_json,
    count_inversions,
    curve_json,
    default_key,
    ece,
    export_knots,
    fit_isotonic,
    rankings,
    rerank_sample,
    set_weights,
    setting_key,
)
from search.config import SearchConfig
from search.fusion import FUSIONS


def test_ece_of_a_toy_example_has_the_known_answer() -> None:
    # bin 0: predicted 0.05, one of two relevant (0.5) -> |0.45| x half the hits;
    # bin 9: predicted 0.95, both relevant (1.0) -> |0.05| x half: 0.225 + 0.025
    assert ece([0.05, 0.05, 0.95, 0.95], [0, 1, 1, 1]) == pytest.approx(0.25)
    # perfectly calibrated within each bin -> 0
    assert ece([0.25, 0.25, 0.25, 0.25, 0.75, 0.75, 0.75, 0.75], [1, 0, 0, 0, 1, 1, 1, 0]) == pytest.approx(0.0)
    # weights move the bins' shares: the second bin now counts 3 times the first
    assert ece([0.05, 0.95], [1, 1], weights=np.array([1.0, 3.0])) == pytest.approx(0.25 * 0.95 + 0.75 * 0.05)
    # always wrong with full confidence -> 1
    assert ece([1.0, 0.0], [0, 1]) == pytest.approx(1.0)


def test_bins_are_equal_width_with_one_in_the_last() -> None:
    assert bin_index(np.array([0.0, 0.0999, 0.1, 0.3, 0.55, 0.9, 1.0, 1.7, -0.2])).tolist() == [
        0, 0, 1, 3, 5, 9, 9, 9, 0]


def test_knot_export_reproduces_the_fit_at_its_knots_and_never_decreases() -> None:
    rng = np.random.default_rng(1)
    scores = rng.normal(size=2000)
    relevant = rng.random(2000) < 1 / (1 + np.exp(-2 * scores))
    xs, ys = fit_isotonic(scores, relevant)
    assert len(xs) > 40, "a fit this large has more knots than are shipped"
    kx, ky = export_knots(xs, ys, max_knots=40)
    assert 2 <= len(kx) <= 40
    assert np.all(np.diff(kx) > 0) and np.all(np.diff(ky) >= 0)
    assert kx[0] == xs[0] and kx[-1] == xs[-1], "both ends are kept, so clipping reads the same"
    fit_at = np.interp(kx, xs, ys)
    assert np.max(np.abs(np.interp(kx, kx, ky) - fit_at)) < 1e-6
    # between knots it stays near the fit, and it clips beyond the ends as the fit does
    assert np.max(np.abs(np.interp(xs, kx, ky) - ys)) < 0.05
    assert np.interp(xs[0] - 10, kx, ky) == ys[0] and np.interp(xs[-1] + 10, kx, ky) == ys[-1]
    # sklearn's own predict is what numpy.interp reads from the full knots
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0).fit(scores, relevant.astype(float))
    probe = np.linspace(-5, 5, 101)
    assert np.allclose(iso.predict(probe), np.interp(probe, xs, ys), atol=1e-9)


def test_knot_export_keeps_a_small_fit_whole_and_refuses_a_decreasing_one() -> None:
    xs, ys = np.array([0.0, 1.0, 2.0, 3.0]), np.array([0.1, 0.1, 0.5, 0.9])
    kx, ky = export_knots(xs, ys, max_knots=40)
    assert np.allclose(np.interp(xs, kx, ky), ys, atol=1e-12)
    assert kx.tolist() == [0.0, 1.0, 3.0], "the knot at 2.0 lies on the line from 1.0 to 3.0: dropped"
    with pytest.raises(ValueError):
        export_knots(np.array([0.0, 1.0]), np.array([0.5, 0.2]))
    with pytest.raises(ValueError):
        export_knots(np.array([1.0, 0.0]), np.array([0.2, 0.5]))


def test_isotonic_fit_weighs_each_set_the_same() -> None:
    sets = ["a"] * 3 + ["b"]
    weights = set_weights(sets)
    assert weights.tolist() == pytest.approx([1 / 3, 1 / 3, 1 / 3, 1.0])
    # one score, the big set all irrelevant, the small one relevant: equal weight gives 0.5
    xs, ys = fit_isotonic([1.0, 1.0, 1.0, 1.0], [0, 0, 0, 1], weights)
    assert np.interp(1.0, xs, ys) == pytest.approx(0.5)


def test_inversions_count_pairs_where_a_lower_hit_reads_higher() -> None:
    groups = ["q1"] * 4 + ["q2"] * 3
    ranks = [1, 2, 3, 4, 1, 2, 3]
    values = [0.9, 0.5, 0.7, 0.8, 0.3, 0.2, 0.1]  # q1: (2,3), (2,4), (3,4) inverted; q2 none
    assert count_inversions(groups, ranks, values) == (3, 1)
    # the order of the rows does not matter, only the ranks
    order = [6, 3, 0, 5, 2, 1, 4]
    assert count_inversions([groups[i] for i in order], [ranks[i] for i in order],
                            [values[i] for i in order]) == (3, 1)
    assert count_inversions(["q"] * 3, [1, 2, 3], [0.5, 0.5, 0.5]) == (0, 0), "ties are no inversion"
    # old labels: a fair hit below a weak one is one inversion
    assert count_inversions(["q"] * 3, [1, 2, 3], bucket_of([0.60, 0.20, 0.40]).tolist()) == (1, 1)


def test_old_labels_and_their_precision() -> None:
    assert bucket_of([BEFORE_STRONG, BEFORE_STRONG - 1e-6, BEFORE_FAIR, BEFORE_FAIR - 1e-6]).tolist() == [2, 1, 1, 0]
    buckets = np.array([0, 0, 1, 1, 2, 2])
    relevant = np.array([0, 0, 0, 1, 1, 1])
    assert bucket_precision(buckets, relevant).tolist() == [0.0, 0.5, 1.0]
    assert bucket_precision(np.array([0, 0]), np.array([1, 0])).tolist() == [0.5, 0.5, 0.5]


def test_setting_keys_are_the_strings_the_app_parses() -> None:
    assert setting_key("dense") == "dense" and setting_key("bm25") == "bm25"
    assert setting_key("hybrid", "tmm", 0.8) == "hybrid/tmm/0.80"
    assert setting_key("hybrid", "rrf", 0.5, rerank=True) == "rerank/hybrid/rrf/0.50"
    assert setting_key("hybrid", "zscore", 0.1 + 0.2) == "hybrid/zscore/0.30"
    with pytest.raises(ValueError):
        setting_key("hybrid")
    with pytest.raises(ValueError):
        setting_key("hybrid", "bogus", 0.5)
    with pytest.raises(ValueError):
        setting_key("sparse")


def test_setting_keys_match_the_searcher_lookup() -> None:
    relevance = pytest.importorskip("search.relevance")
    from search.fusion import Fusion

    for r in rankings():
        fusion = Fusion(r.fusion, r.weight) if r.mode == "hybrid" else None
        assert relevance.ranking_key(r.mode, fusion, r.rerank) == r.key


def test_rankings_cover_each_method_at_its_default_the_weight_grid_and_the_reranker() -> None:
    config = SearchConfig()
    keys = [r.key for r in rankings(config)]
    assert len(keys) == len(set(keys))
    assert keys[:2] == ["dense", "bm25"]
    for method in FUSIONS:
        assert setting_key("hybrid", method, config.fusion_for(method).weight) in keys
    default = config.fusion_for()
    assert sorted(k for k in keys if k.startswith(f"hybrid/{default.method}/")) == sorted(
        {f"hybrid/{default.method}/{w / 10:.2f}" for w in range(1, 10)} | {default_key(config)})
    assert keys[-1] == default_key(config, rerank=True) == f"rerank/{default_key(config)}"
    assert "rerank" not in " ".join(r.key for r in rankings(config, rerank=False))
    reranked = Ranking("hybrid", "tmm", 0.8, rerank=True).params()
    assert reranked == {"k": 10, "mode": "hybrid", "rerank": True, "fusion": "tmm", "fusion_weight": 0.8,
                        "candidates": 50}
    assert Ranking("bm25").params() == {"k": 10, "mode": "bm25", "rerank": False}


def test_rerank_sample_is_seeded_and_keeps_order() -> None:
    qids = [f"q{i}" for i in range(50)]
    picked = rerank_sample(qids, 10)
    assert len(picked) == 10 and picked == sorted(picked, key=qids.index)
    assert rerank_sample(qids, 10) == picked
    assert rerank_sample(qids, 0) == qids and rerank_sample(qids, 99) == qids


def test_calibration_json_is_small_and_reads_back() -> None:
    knots = (np.array([0.1, 0.123456789, 0.9]), np.array([0.0, 0.25, 0.812345678]))
    text = calibration_json({"dense": curve_json(knots, 100, 30), "hybrid/tmm/0.80": curve_json(knots, 90, 20)},
                            ["scifact-dev", "wiki-lead"], "all-MiniLM-L6-v2", measured="2026-01-02")
    data = json.loads(text)
    assert data["format"] == 1 and data["measured"] == "2026-01-02" and data["k"] == 10
    assert data["model"] == "all-MiniLM-L6-v2" and data["dev_sets"] == ["scifact-dev", "wiki-lead"]
    curve = data["curves"]["dense"]
    assert curve["hits"] == 100 and curve["relevant"] == 30
    assert curve["scores"] == [0.1, 0.1234568, 0.9]
    assert np.allclose(curve["probabilities"], knots[1], atol=1e-6)
    assert list(data["curves"]) == ["dense", "hybrid/tmm/0.80"]


def test_features_are_computed_within_each_query_and_the_best_exponent_is_kept() -> None:
    from bench.bench_calibration import choose_relative, with_features

    h = {"qid": np.array(["a", "a", "b", "b"], dtype=object), "rank": np.array([1, 2, 1, 2]),
         "score": np.array([10.0, 5.0, 2.0, 1.0]), "cosine": np.zeros(4), "relevant": np.array([1, 0, 1, 0], bool)}
    assert with_features(h, 1.0, 0.0)["score"].tolist() == [1.0, 0.5, 1.0, 0.5]
    assert with_features(h, 0.0, 0.0) is h
    # Relevance follows the rank, not the raw score: only the relative feature separates it in every set.
    sets = {n: {**h, "score": h["score"] * scale} for n, scale in (("x", 1.0), ("y", 7.0), ("z", 0.3))}
    relative, lowest, tried = choose_relative(sets, ["x", "y", "z"], "bm25")
    assert set(tried) == {0.0, 0.5, 1.0} and tried[1.0] < tried[0.0] and lowest == 0.0
    # The share of the top holds best, but is never kept: every top hit would read the same relevance.
    assert relative == min((r for r in (0.0, 0.5)), key=lambda r: (round(tried[r], 4), r))
    assert choose_relative(sets, ["x", "y", "z"], "hybrid") == (0.0, 0.0, {})
