from __future__ import annotations

import pytest

from search.fusion import reciprocal_rank_fusion


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
