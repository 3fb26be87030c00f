"""Calibrated relevance (`search.relevance`): curves by ranking, the nearest weight, other models."""

from __future__ import annotations

import pytest

from search import Searcher
from search.fusion import Fusion
from search.relevance import CALIBRATION_FILE, Calibration, Curve, load_calibration, ranking_key

CURVES = {
    "dense": {"scores": [0.2, 0.5, 0.8], "probabilities": [0.0, 0.4, 0.9]},
    "bm25": {"scores": [0.0, 10.0], "probabilities": [0.05, 0.8]},
    "hybrid/tmm/0.80": {"scores": [0.0, 1.0], "probabilities": [0.1, 0.7]},
    "hybrid/tmm/0.50": {"scores": [0.0, 1.0], "probabilities": [0.0, 0.5]},
}


def calibration(model: str = "all-MiniLM-L6-v2") -> Calibration:
    return Calibration.from_json({"model": model, "curves": CURVES})


def test_curves_interpolate_clip_and_refuse_a_decrease():
    curve = Curve((0.2, 0.5, 0.8), (0.0, 0.4, 0.9))
    assert curve([0.0, 0.35, 0.8, 5.0]) == pytest.approx([0.0, 0.2, 0.9, 0.9])
    with pytest.raises(ValueError, match="must not decrease"):
        Curve((0.0, 1.0), (0.5, 0.4))


def test_the_curve_for_each_ranking_and_the_nearest_weight():
    shipped = calibration()
    assert ranking_key("hybrid", Fusion("tmm", 0.8)) == "hybrid/tmm/0.80"
    assert ranking_key("hybrid", Fusion("tmm", 0.8), reranked=True) == "rerank/hybrid/tmm/0.80"
    exact = shipped.for_ranking("hybrid", Fusion("tmm", 0.8), False, "all-MiniLM-L6-v2")
    assert exact.key == "hybrid/tmm/0.80" and exact.note is None
    near = shipped.for_ranking("hybrid", Fusion("tmm", 0.6), False, "all-MiniLM-L6-v2")
    assert near.key == "hybrid/tmm/0.50" and "nearest to 0.60" in near.note
    missing = shipped.for_ranking("hybrid", Fusion("rrf", 0.5), False, "all-MiniLM-L6-v2")
    assert missing.curve is None and "no relevance curve" in missing.note
    assert shipped.for_ranking("dense", None, True, "all-MiniLM-L6-v2").curve is None  # no rerank curve


def test_a_curve_that_did_not_hold_across_the_dev_sets_is_not_served():
    curves = {**CURVES, "dense": {**CURVES["dense"], "ece_left_out": 0.091, "ece_labels_left_out": 0.087},
              "hybrid/tmm/0.50": {**CURVES["hybrid/tmm/0.80"], "ece_left_out": 0.066, "ece_labels_left_out": 0.087},
              "hybrid/tmm/0.80": {**CURVES["hybrid/tmm/0.80"], "ece_left_out": 0.022, "ece_labels_left_out": 0.081}}
    shipped = Calibration.from_json({"model": "all-MiniLM-L6-v2", "curves": curves})
    assert {"hybrid/tmm/0.80", "hybrid/tmm/0.50"} <= set(shipped.curves) and "dense" not in shipped.curves
    dense = shipped.for_ranking("dense", None, False, "all-MiniLM-L6-v2")
    assert dense.curve is None and "0.091, was not below the cosine labels' (0.087)" in dense.note


def test_another_model_gets_no_dense_relevance_and_bm25_none_whatever_the_model():
    shipped = calibration()
    other = shipped.for_ranking("dense", None, False, "my-domain-model")
    assert other.curve is None and "calibrated for all-MiniLM-L6-v2" in other.note
    for model in ("my-domain-model", "all-MiniLM-L6-v2"):  # a BM25 curve is fitted, measured, never served
        bm25 = shipped.for_ranking("bm25", None, False, model)
        assert bm25.curve is None and "grows with the collection" in bm25.note


def test_the_shipped_curves_load_and_never_decrease():
    shipped = load_calibration()
    if shipped is None:
        pytest.skip(f"{CALIBRATION_FILE} is not there yet")
    assert {"hybrid/tmm/0.80", "rerank/hybrid/tmm/0.80"} <= set(shipped.curves)
    # every curve beat the cosine labels out of sample; BM25's is withheld for its collection-bound scale
    assert "dense" in shipped.curves and set(shipped.dropped) == {"bm25"}
    assert "grows with the collection" in shipped.for_ranking("bm25", None, False, "all-MiniLM-L6-v2").note
    for curve in shipped.curves.values():
        values = curve(sorted(curve.scores))
        assert values == sorted(values) and values[0] >= 0.0 and values[-1] <= 1.0


def test_hits_carry_a_relevance_that_follows_the_ranking(tiny_index, tiny_model_dir):
    with Searcher(tiny_index, model=str(tiny_model_dir)) as searcher:
        label = searcher.stats().model_label
        searcher.calibration = calibration(model=label)
        for mode in ("dense", "hybrid"):
            result = searcher.search_detailed("bread oven yeast", k=4, mode=mode)
            values = [hit.relevance for hit in result.hits]
            assert all(v is not None for v in values) and values == sorted(values, reverse=True), (mode, values)
            assert result.relevance_note is None
        bm25 = searcher.search_detailed("bread oven yeast", k=4, mode="bm25")
        assert bm25.hits and {hit.relevance for hit in bm25.hits} == {None}
        assert "grows with the collection" in bm25.relevance_note
        searcher.calibration = calibration(model="another-model")
        result = searcher.search_detailed("bread oven yeast", k=2, mode="dense")
        assert [hit.relevance for hit in result.hits] == [None, None]
        assert "calibrated for another-model" in result.relevance_note



def test_min_relevance_cuts_the_ranking_where_relevance_falls_below(tiny_index, tiny_model_dir):
    from search import SearchParams

    with pytest.raises(ValueError, match="min_relevance"):
        SearchParams(min_relevance=1.5)
    with Searcher(tiny_index, model=str(tiny_model_dir)) as searcher:
        searcher.calibration = calibration(model=searcher.stats().model_label)
        everything = searcher.search_detailed("bread oven yeast", k=4, mode="hybrid").hits
        cut = sorted({hit.relevance for hit in everything})[1]  # keeps all but the lowest
        kept = searcher.search_detailed("bread oven yeast", k=4, mode="hybrid", min_relevance=cut).hits
        assert kept == [hit for hit in everything if hit.relevance >= cut] and 0 < len(kept) < len(everything)
        searcher.calibration = calibration(model="another-model")
        dense = searcher.search_detailed("bread oven yeast", k=4, mode="dense", min_relevance=0.9)
        assert len(dense.hits) == 4 and dense.relevance_note.startswith("min_relevance was not applied")


def test_a_relative_curve_reads_each_score_as_its_share_of_the_lists_top():
    relative = Curve((0.0, 1.0), (0.0, 1.0), relative=1.0, lowest=-1.0)
    # (score + 1) / (top + 1): the top reads 1 whatever its raw value, the rest their share of it
    assert relative([0.6, 0.2, -1.0]) == pytest.approx([1.0, 1.2 / 1.6, 0.0])
    half = Curve((0.0, 2.0), (0.0, 1.0), relative=0.5, lowest=0.0)
    assert half.features([16.0, 4.0]).tolist() == pytest.approx([4.0, 1.0])  # score / sqrt(top)
    assert Curve((0.0, 1.0), (0.0, 1.0), relative=1.0).features([0.0, 0.0]).tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="relative exponent"):
        Curve((0.0, 1.0), (0.0, 1.0), relative=2.0)
    loaded = Calibration.from_json({"model": "m", "curves": {
        "dense": {"scores": [0.0, 1.0], "probabilities": [0.0, 0.5], "relative": 1.0, "lowest": -1.0}}})
    assert loaded.curves["dense"].relative == 1.0 and loaded.curves["dense"].lowest == -1.0


def test_relative_relevance_follows_the_ranking_and_does_not_change_with_the_page(tiny_index, tiny_model_dir):
    curves = {"dense": {"scores": [0.0, 1.0], "probabilities": [0.0, 0.9], "relative": 1.0, "lowest": -1.0},
              "hybrid/tmm/0.80": {"scores": [0.0, 1.0], "probabilities": [0.1, 0.8], "relative": 0.5, "lowest": 0.0}}
    with Searcher(tiny_index, model=str(tiny_model_dir)) as searcher:
        searcher.calibration = Calibration.from_json({"model": searcher.stats().model_label, "curves": curves})
        for mode in ("dense", "hybrid"):
            whole = searcher.search_detailed("bread oven yeast", k=4, mode=mode).hits
            values = [hit.relevance for hit in whole]
            assert values[0] == pytest.approx(0.9 if mode == "dense" else min(0.8, 0.1 + 0.7 * whole[0].score ** 0.5))
            assert values == sorted(values, reverse=True), (mode, values)
            page = searcher.search_detailed("bread oven yeast", k=2, offset=2, mode=mode).hits
            assert [hit.relevance for hit in page] == values[2:4]  # read against the ranking's top, not the page's
