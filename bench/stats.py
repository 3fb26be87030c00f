"""Resampling statistics the dev-set benches share: how far a change measured on a few hundred
queries could move by chance."""

from __future__ import annotations

import numpy as np

BOOTSTRAP = 2000  # resamples of the queries


def paired_interval(diff: np.ndarray, seed: int = 0, rounds: int = BOOTSTRAP) -> tuple[float, float]:
    """A paired bootstrap 95% interval of the mean of `diff`, the per-query changes between two
    rankings of the same queries (seeded: the same figures every run)."""
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(rounds, len(diff)))].mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))
