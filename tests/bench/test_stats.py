"""The dev-set benches' resampling statistics (bench/stats.py)."""

from __future__ import annotations

import numpy as np

from bench.stats import paired_interval


def test_the_interval_of_a_paired_change_brackets_its_mean_and_narrows_with_agreement() -> None:
    rng = np.random.default_rng(1)
    noisy = rng.normal(0.02, 0.1, size=200)
    low, high = paired_interval(noisy)
    assert low < noisy.mean() < high and high - low > 0.01
    assert paired_interval(np.full(50, 0.03)) == (0.03, 0.03), "every query moved alike: no spread"
    assert paired_interval(noisy) == (low, high), "seeded: the same figures every run"
