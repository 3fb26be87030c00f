"""The figures bench/bench_render.py reports, from the times its page watcher notes."""

from __future__ import annotations

from bench.bench_render import WATCH, table_row


def test_a_row_reports_the_caption_to_hits_gap_per_query_not_the_gap_of_medians():
    runs = [{"caption": 0.2, "hits": 0.5, "last": 0.9, "busy": 0.4, "count": 50},
            {"caption": 1.0, "hits": 1.1, "last": 1.2, "busy": 0.6, "count": 50},
            {"caption": 0.3, "hits": 0.9, "last": 1.0, "busy": 0.5, "count": 49}]
    page, k, queries, caption, hits, gap, complete, busy, drawn = table_row("app", 50, runs)
    assert (page, k, queries, drawn) == ("app", 50, 3, 49)
    assert caption == "0.30 (0.20-1.00)" and hits == "0.90 (0.50-1.10)"
    assert gap == "0.30 (0.10-0.60)" and complete == "0.70 (0.20-0.70)" and busy == "0.50 (0.40-0.60)"


def test_the_watcher_waits_for_the_page_to_stay_still_after_the_hits():
    assert "setTimeout(settle, 1500)" in WATCH and "QUIET_MS" not in WATCH
