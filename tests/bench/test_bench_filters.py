"""The rules bench/bench_filters.py reports by: brute force over the matching rows, and which
rows meet the issue's target."""

from __future__ import annotations

import numpy as np

from bench.bench_filters import _brute_top, _filter, verdict


def test_brute_force_ranks_only_the_matching_rows():
    scores = np.array([0.9, 0.1, 0.8, 0.7, 0.95, 0.2], dtype=np.float32)
    allowed = np.array([False, True, True, True, False, True])
    assert sorted(_brute_top(scores, allowed, k=2).tolist()) == [2, 3]
    assert sorted(_brute_top(scores, np.array([False, True, False, False, False, False]), k=2).tolist()) == [1]


def test_a_filter_keeps_the_share_it_names():
    u = np.random.default_rng(0).integers(0, 1_000_000, size=200_000)
    flt = _filter(0.1, 5000)["u"]
    kept = np.mean((u >= flt["$gte"]) & (u < flt["$lt"]))
    assert abs(kept - 0.1) < 0.005


def test_the_verdict_names_each_row_that_misses_speed_or_recall():
    rows = {"dense|all|-": {"p95": 10.0, "recall": 0.9},
            "dense|0.5|new": {"p95": 19.0, "recall": 0.97},
            "dense|0.1|new": {"p95": 25.0, "recall": 0.99},
            "dense|0.01|new": {"p95": 12.0, "recall": 0.93},
            "hybrid|all|-": {"p95": 20.0, "recall": None},
            "hybrid|0.5|new": {"p95": 30.0, "recall": None}}
    line = verdict({"x": {"rows": rows, "vector_index": "IVF16,Flat (nprobe 4)"}})
    assert line.startswith("Target (p95 at most 2x unfiltered, recall@10 at least 0.95): met by 2 of 4")
    assert "IVF16,Flat dense 10.00% new (2.50x, recall 0.990)" in line
    assert "IVF16,Flat dense 1.00% new (1.20x, recall 0.930)" in line
