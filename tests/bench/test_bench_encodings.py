"""bench/bench_encodings.py on a few real translated manual pages: the readings it compares."""

from __future__ import annotations

import pytest

from bench import bench_encodings


def test_ours_recovers_what_each_single_reading_recovers_on_real_pages():
    items = bench_encodings.samples(2)
    families = {family for family, *_ in items}
    if not {"Western European", "Cyrillic"} <= families:
        pytest.skip(f"translated manual pages under {bench_encodings.MAN}: found {sorted(families)}")
    results = bench_encodings.measure(items)
    recovered = {name: results[("all", name)][1] for name in bench_encodings.READINGS}
    assert recovered["refuse"] == 0
    assert recovered["ours"] > max(recovered["cp1252"], recovered["charset-normalizer"]), recovered
    for family in ("Western European", "Cyrillic"):
        ours = results[(family, "ours")][1]
        assert ours >= results[(family, "cp1252")][1] and ours >= results[(family, "charset-normalizer")][1], family
