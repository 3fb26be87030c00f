from __future__ import annotations

import math

import pytest

from search.fusion import (
    FUSIONS,
    Fusion,
    convex_fusion,
    min_max,
    reciprocal_rank_fusion,
    theoretical_min_max,
    z_score,
)


def test_fusion_is_exact_on_a_hand_made_example():
    dense = [10, 20, 30]
    lexical = [30, 40, 10]
    fused = reciprocal_rank_fusion([dense, lexical], k=60)
    expected = {
        10: 1 / 61 + 1 / 63,
        20: 1 / 62,
        30: 1 / 63 + 1 / 61,
        40: 1 / 62,
    }
    assert [pid for pid, _ in fused] == [10, 30, 20, 40]  # equal scores: first met first
    assert dict(fused) == pytest.approx(expected, abs=0, rel=1e-12)


def test_fusion_with_k_zero_is_plain_reciprocal_rank():
    assert reciprocal_rank_fusion([[1, 2], [2]], k=0) == [(2, 1.5), (1, 1.0)]


def test_fusion_of_nothing():
    assert reciprocal_rank_fusion([]) == []
    assert reciprocal_rank_fusion([[], []]) == []


def test_fusion_rejects_bad_input():
    with pytest.raises(ValueError, match=r"k \(-1\) must not be negative; Cormack et al. use 60"):
        reciprocal_rank_fusion([[1]], k=-1)
    with pytest.raises(ValueError, match="ranking 1 lists id 5 twice"):
        reciprocal_rank_fusion([[5], [5, 6, 5]])


# Hand-made lists: 2 is missing from BM25 and 4 from dense; 1 and 3 tie at w = 0.5.
DENSE = [(1, 0.9), (2, 0.5), (3, 0.1)]
BM25 = [(3, 10.0), (4, 6.0), (1, 2.0)]


def test_weighted_rrf_is_exact_and_half_weight_is_plain_rrf():
    fused = reciprocal_rank_fusion([[1, 2], [2, 3]], k=0, weights=[0.2, 0.8])
    assert [pid for pid, _ in fused] == [2, 3, 1]
    assert dict(fused) == pytest.approx({2: 0.2 / 2 + 0.8 / 1, 3: 0.8 / 2, 1: 0.2 / 1}, abs=0, rel=1e-12)
    plain = reciprocal_rank_fusion([[1, 2, 3], [3, 4, 1]], k=60)
    assert Fusion("rrf", 0.5).fuse(DENSE, BM25) == plain, "weight 0.5 is plain RRF, score for score"
    bm25_only = Fusion("rrf", 0.0).fuse(DENSE, BM25)
    assert [pid for pid, _ in bm25_only[:3]] == [3, 4, 1] and dict(bm25_only)[2] == 0.0
    with pytest.raises(ValueError, match="1 weights for 2 rankings; give one weight per ranking"):
        reciprocal_rank_fusion([[1], [2]], weights=[1.0])


def test_min_max_convex_fusion_is_exact_with_a_missing_document_and_a_tie():
    # Normalised dense: 1 -> 1, 2 -> 0.5, 3 -> 0; BM25: 3 -> 1, 4 -> 0.5, 1 -> 0; missing -> 0.
    fused = Fusion("minmax", 0.5).fuse(DENSE, BM25)
    assert fused == [(1, 0.5), (3, 0.5), (2, 0.25), (4, 0.25)], "ties keep the order first met, dense first"
    dense_heavy = Fusion("minmax", 0.8).fuse(DENSE, BM25)
    assert [pid for pid, _ in dense_heavy] == [1, 2, 3, 4]
    assert dict(dense_heavy) == pytest.approx({1: 0.8, 2: 0.4, 3: 0.2, 4: 0.1}, abs=1e-12)
    assert [pid for pid, _ in Fusion("minmax", 1.0).fuse(DENSE, BM25)][:3] == [1, 2, 3]
    assert [pid for pid, _ in Fusion("minmax", 0.0).fuse(DENSE, BM25)][:3] == [3, 4, 1]


def test_z_score_convex_fusion_is_exact():
    # Both lists are evenly spaced: z = +sqrt(1.5), 0, -sqrt(1.5); missing -> the lowest, -sqrt(1.5).
    z = math.sqrt(1.5)
    fused = Fusion("zscore", 0.5).fuse(DENSE, BM25)
    assert [pid for pid, _ in fused] == [1, 3, 2, 4]
    assert [score for _, score in fused] == pytest.approx([0.0, 0.0, -z / 2, -z / 2], abs=1e-12)
    assert z_score([0.9, 0.5, 0.1]) == pytest.approx([z, 0.0, -z], abs=1e-12)


def test_theoretical_min_max_convex_fusion_is_exact():
    # Dense scales from the lowest cosine, -1: 1 -> 1, 2 -> 1.5/1.9, 3 -> 1.1/1.9; BM25 from 0:
    # 3 -> 1, 4 -> 0.6, 1 -> 0.2. Missing -> the list's lowest: 1.1/1.9 (dense), 0.2 (BM25).
    fused = Fusion("tmm", 0.5).fuse(DENSE, BM25)
    assert [pid for pid, _ in fused] == [3, 1, 4, 2]
    expected = {
        1: 0.5 * 1.0 + 0.5 * 0.2,
        2: 0.5 * 1.5 / 1.9 + 0.5 * 0.2,
        3: 0.5 * 1.1 / 1.9 + 0.5 * 1.0,
        4: 0.5 * 1.1 / 1.9 + 0.5 * 0.6,
    }
    assert dict(fused) == pytest.approx(expected, abs=1e-12)
    # Unlike min-max, the list's own lowest score is not pulled down to 0: BM25's 2.0 keeps 0.2.
    assert theoretical_min_max([10.0, 6.0, 2.0], 0.0) == pytest.approx([1.0, 0.6, 0.2], abs=1e-12)
    with pytest.raises(ValueError, match="tmm scales from each retriever's lowest possible score; pass lowest_possible"):
        convex_fusion([DENSE, BM25], [0.5, 0.5], "tmm")


def test_fusion_with_an_empty_list_ranks_the_other():
    for method in FUSIONS:
        assert [pid for pid, _ in Fusion(method, 0.5).fuse(DENSE, [])] == [1, 2, 3]
        assert [pid for pid, _ in Fusion(method, 0.5).fuse([], BM25)] == [3, 4, 1]
        assert Fusion(method, 0.3).fuse([], []) == []
    assert convex_fusion([DENSE, []], [0.5, 0.5]) == [(1, 0.5), (2, 0.25), (3, 0.0)]


def test_normalisation_is_safe_without_spread():
    assert min_max([]) == [] and z_score([]) == []
    assert min_max([4.2]) == [1.0] and z_score([4.2]) == [0.0]
    assert min_max([3.0, 3.0, 3.0]) == [1.0, 1.0, 1.0] and z_score([3.0, 3.0]) == [0.0, 0.0]
    assert theoretical_min_max([], 0.0) == [] and theoretical_min_max([4.2], 0.0) == [1.0]
    assert theoretical_min_max([0.0, 0.0], 0.0) == [1.0, 1.0], "nothing above the floor: no spread, as min-max"
    # One match, or equal scores, in the BM25 list: the others it lacks get the floor, 0.
    assert dict(Fusion("tmm", 0.5).fuse(DENSE, [(2, 7.0)]))[2] == pytest.approx(0.5 * 1.5 / 1.9 + 0.5)
    assert dict(Fusion("tmm", 0.5).fuse(DENSE, [(3, 7.0), (2, 7.0)]))[1] == pytest.approx(0.5)
    # A list of one match still lifts its document above those it lacks, by one unit (z) or to 1 (min-max).
    assert Fusion("minmax", 0.5).fuse(DENSE, [(2, 7.0)])[0] == (2, 0.75)
    single = dict(Fusion("zscore", 0.5).fuse(DENSE, [(3, 7.0)]))
    assert single[3] - single[2] == pytest.approx(0.5 * (-z_score([0.9, 0.5, 0.1])[1] + z_score([0.9, 0.5, 0.1])[2] + 1))
    assert all(math.isfinite(s) for s in single.values())
    equal = Fusion("zscore", 0.5).fuse([(1, 0.3), (2, 0.3)], [(2, 1.0), (3, 1.0)])
    assert equal == [(2, 0.0), (1, -0.5), (3, -0.5)]


@pytest.mark.parametrize("weight", [-0.1, 1.5, float("nan")])
def test_bad_fusion_weight_is_an_error(weight):
    with pytest.raises(ValueError, match=r"fusion weight \(.*\) must lie between 0 \(BM25 alone\) and 1 \(dense alone\)"):
        Fusion("minmax", weight)


def test_bad_fusion_method_and_weight_type_are_errors():
    with pytest.raises(ValueError, match=r"Unknown fusion 'sum'\. Valid: rrf, minmax, tmm, zscore"):
        Fusion("sum", 0.5)
    with pytest.raises(TypeError, match=r"fusion weight must be a number between 0 and 1, not '0\.5' \(str\)"):
        Fusion("rrf", "0.5")
    with pytest.raises(ValueError, match="Unknown normalisation 'l2'. Valid: minmax, tmm, zscore"):
        convex_fusion([DENSE], [1.0], "l2")
    with pytest.raises(ValueError, match="list 1 holds an id twice"):
        convex_fusion([DENSE, [(5, 1.0), (5, 0.5)]], [0.5, 0.5])
