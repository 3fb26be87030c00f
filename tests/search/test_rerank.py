from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from indexer.sources.passage_text import passage_text
from search.config import SHIPPED_RERANKER, RerankConfig, shipped_reranker
from search.hits import Hit
from search.rerank import (
    CrossEncoderReranker,
    RerankerChoice,
    fuse_ranks,
    load_rerank_config,
    resolve_reranker,
    save_rerank_config,
)
from tests.search.helpers import build_tiny_cross_encoder

TEXTS = [
    "lava and ash", "bread dough", "a goal in the final", "interest rates", "glaciers melt",
    "the volcano erupted over iceland", "knead the dough", "share prices fell", "a quiet village",
    "the farmer feeds the bird", "flights were grounded across europe", "the striker scored twice",
]


def _hits(texts: list[str], titles: list[str] | None = None) -> list[Hit]:
    titles = titles or [""] * len(texts)
    return [Hit(doc_id=str(i), title=titles[i], text=t, score=1.0 - i / 100) for i, t in enumerate(texts)]


@pytest.fixture(scope="module")
def spread_cross_encoder(tmp_path_factory) -> str:
    """The tiny cross-encoder with a wider initialisation, so its scores differ by more than int8 noise."""
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("spread_ce"), initializer_range=0.2)


@pytest.fixture(scope="module")
def float_reranker(tiny_cross_encoder) -> CrossEncoderReranker:
    return CrossEncoderReranker(tiny_cross_encoder, RerankConfig(quantize=False))


# --- the passage text and fuse_ranks -------------------------------------------------------------


def test_fuse_ranks_matches_hand_computed_scores() -> None:
    # Model ranks: index 1 (0.9) is 1st, index 2 (0.5) 2nd, index 0 (0.1) 3rd; retriever ranks are 1, 2, 3.
    # w = 0.4, rrf_k = 2:
    #   i=0: 0.6 / (2 + 3) + 0.4 / (2 + 1) = 0.12 + 0.133333... = 0.253333...
    #   i=1: 0.6 / (2 + 1) + 0.4 / (2 + 2) = 0.2  + 0.1         = 0.3
    #   i=2: 0.6 / (2 + 2) + 0.4 / (2 + 3) = 0.15 + 0.08        = 0.23
    assert fuse_ranks([0.1, 0.9, 0.5], 0.4, 2) == pytest.approx([0.2533333333, 0.3, 0.23], abs=1e-9)
    # rrf_k = 0, w = 0.5: a hit first for both gets 0.5 / 1 + 0.5 / 1 = 1.
    assert fuse_ranks([3.0, 2.0], 0.5, 0) == pytest.approx([1.0, 0.5 / 2 + 0.5 / 2])
    assert fuse_ranks([], 0.3, 60) == []


def test_fuse_ranks_extremes_keep_one_order() -> None:
    scores = [float(s) for s in np.random.default_rng(0).normal(size=9)]
    model_order = sorted(range(9), key=lambda i: -scores[i])
    only_model = fuse_ranks(scores, 0.0, 60)
    assert sorted(range(9), key=lambda i: -only_model[i]) == model_order
    assert sorted(only_model, reverse=True) == pytest.approx([1 / (60 + rank) for rank in range(1, 10)])
    only_retriever = fuse_ranks(scores, 1.0, 60)
    assert only_retriever == pytest.approx([1 / (60 + i + 1) for i in range(9)])
    assert model_order != list(range(9)), "the example must disagree with the retriever's order"


# --- RerankConfig -------------------------------------------------------------------------------


def test_rerank_config_defaults_and_shipped_path() -> None:
    config = RerankConfig()
    assert (config.max_length, config.batch_size, config.quantize, config.retriever_weight, config.rrf_k) == (
        128, 64, True, 0.0, 60)
    assert config.enabled_by_default is False, "a reranker has to earn its place"
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.batch_size = 2  # type: ignore[misc]
    RerankConfig(max_length=8, batch_size=1, retriever_weight=1.0, rrf_k=0)  # the edges are valid
    assert isinstance(SHIPPED_RERANKER, Path)
    assert SHIPPED_RERANKER.parts[-2:] == ("models", "reranker")
    assert (SHIPPED_RERANKER.parent.parent / "search" / "config.py").is_file(), "models/ sits at the repository root"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_length": 7}, r"max_length \(7\) must be at least 8 tokens"),
        ({"batch_size": 0}, r"batch_size \(0\) must be at least 1"),
        ({"retriever_weight": -0.1}, r"retriever_weight \(-0.1\) must lie between 0 and 1"),
        ({"retriever_weight": 1.5}, r"retriever_weight \(1.5\) must lie between 0 and 1"),
        ({"rrf_k": -1}, r"rrf_k \(-1\) must not be negative"),
    ],
)
def test_bad_rerank_configs_fail_with_a_message(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RerankConfig(**kwargs)


# --- CrossEncoderReranker ----------------------------------------------------------------------


def test_rerank_orders_by_cross_encoder_score_and_keeps_retriever_score(tiny_cross_encoder):
    reranker = CrossEncoderReranker(tiny_cross_encoder)
    texts = ["lava and ash", "bread dough", "a goal in the final", "interest rates", "glaciers melt"]
    hits = [Hit(doc_id=str(i), title="", text=t, score=1.0 - i / 10) for i, t in enumerate(texts)]
    reranked = reranker.rerank("volcano", hits)
    direct = reranker.model.predict([("volcano", t) for t in texts])
    assert [h.doc_id for h in reranked] == [str(i) for i in sorted(range(5), key=lambda i: -direct[i])]
    assert [h.score for h in reranked] == pytest.approx(sorted(direct, reverse=True), rel=1e-5)
    assert [h.rerank_score for h in reranked] == [h.score for h in reranked]
    assert {h.doc_id: h.retriever_score for h in reranked} == {h.doc_id: h.score for h in hits}
    assert all(h.metadata == {} for h in reranked), "document metadata is left alone"
    assert reranker.rerank("q", []) == []


def test_missing_reranker_folder_says_what_to_pass(tmp_path):
    with pytest.raises(OSError, match="Cannot load a cross-encoder from .*Pass the folder a CrossEncoder"):
        CrossEncoderReranker(str(tmp_path / "no_such_model"))


def test_scores_are_raw_model_scores_of_title_and_text_in_hit_order(float_reranker):
    titles = ["Volcanoes", "", "Bread", "Markets"]
    texts = ["Lava and ash.", "A goal in the final.", "Bread dough rises.", "Interest rates rose."]
    hits = _hits(texts, titles)
    scores = float_reranker.scores("volcano", hits)
    read = ["Volcanoes\nLava and ash.", "A goal in the final.", "Bread dough rises.", "Markets\nInterest rates rose."]
    assert read == [passage_text(title, text) for title, text in zip(titles, texts, strict=True)]
    assert scores == pytest.approx([float(s) for s in float_reranker.model.predict([("volcano", p) for p in read])])
    without_title = float(float_reranker.model.predict([("volcano", "Lava and ash.")])[0])
    assert scores[0] != without_title, "the title is part of what the model reads"
    assert all(isinstance(score, float) for score in scores)
    assert float_reranker.scores("volcano", []) == []


def test_rerank_config_max_length_truncates_the_pair(spread_cross_encoder):
    short = CrossEncoderReranker(spread_cross_encoder, RerankConfig(max_length=16, quantize=False))
    passage = " ".join(["the volcano erupted and lava flowed down to the sea"] * 3)
    longer = passage + " while the bakers kneaded bread dough in the village below"
    first, second = short.scores("volcano", _hits([passage, longer]))
    assert first == second, "only the first 16 tokens of query + passage are read"
    full = CrossEncoderReranker(spread_cross_encoder, RerankConfig(quantize=False))
    first, second = full.scores("volcano", _hits([passage, longer]))
    assert first != second, "with 128 tokens the extra words are read"


def test_apply_sorts_by_model_score_and_keeps_both_scores(float_reranker):
    hits = _hits(["a", "b", "c", "d"])
    hits[2] = dataclasses.replace(hits[2], retriever_score=0.123)  # already reranked once: keep the first score
    model_scores = [0.2, 0.9, -1.0, 0.5]
    applied = float_reranker.apply(hits, model_scores)
    assert [h.doc_id for h in applied] == ["1", "3", "0", "2"]
    assert [h.score for h in applied] == [0.9, 0.5, 0.2, -1.0]
    assert [h.rerank_score for h in applied] == [0.9, 0.5, 0.2, -1.0]
    assert {h.doc_id: h.retriever_score for h in applied} == pytest.approx({"0": 1.0, "1": 0.99, "2": 0.123, "3": 0.97})


def test_apply_fuses_with_the_retriever_order_when_weighted(float_reranker):
    hits = _hits(["a", "b", "c", "d"])
    model_scores = [0.1, 0.2, 0.3, 0.4]  # exactly the reverse of the retriever's order
    fused = float_reranker.apply(hits, model_scores, retriever_weight=0.25)
    # Model ranks of hits 0..3 are 4, 3, 2, 1, retriever ranks 1..4; rrf_k = 60:
    #   hit 3: 0.75 / 61 + 0.25 / 64,  hit 2: 0.75 / 62 + 0.25 / 63, ...
    expected = {str(i): 0.75 / (60 + 4 - i) + 0.25 / (60 + i + 1) for i in range(4)}
    assert [h.doc_id for h in fused] == ["3", "2", "1", "0"]
    assert {h.doc_id: h.score for h in fused} == pytest.approx(expected)
    assert {h.doc_id: h.rerank_score for h in fused} == {"0": 0.1, "1": 0.2, "2": 0.3, "3": 0.4}
    assert {h.doc_id: h.retriever_score for h in fused} == {h.doc_id: h.score for h in hits}
    kept = float_reranker.apply(hits, model_scores, retriever_weight=1.0)
    assert [h.doc_id for h in kept] == ["0", "1", "2", "3"], "w = 1 keeps the retriever's order"
    assert [h.rerank_score for h in kept] == [0.1, 0.2, 0.3, 0.4]
    assert [h.doc_id for h in float_reranker.apply(hits, model_scores, retriever_weight=0.0)] == ["3", "2", "1", "0"]


def test_config_retriever_weight_is_the_default_of_rerank_and_apply(tiny_cross_encoder, float_reranker):
    weighted = CrossEncoderReranker(tiny_cross_encoder, RerankConfig(quantize=False, retriever_weight=1.0, rrf_k=5))
    hits = _hits(TEXTS[:6])
    model_scores = weighted.scores("volcano", hits)
    assert model_scores == pytest.approx(float_reranker.scores("volcano", hits)), "the weight leaves raw scores alone"
    assert sorted(range(6), key=lambda i: -model_scores[i]) != list(range(6)), "the model must reorder"
    reranked = weighted.rerank("volcano", hits)
    assert [h.doc_id for h in reranked] == [h.doc_id for h in hits]
    assert [h.score for h in reranked] == pytest.approx([1 / (5 + i + 1) for i in range(6)])
    assert [h.rerank_score for h in reranked] == pytest.approx(model_scores)
    overridden = weighted.apply(hits, model_scores, retriever_weight=0.0)
    assert [h.doc_id for h in overridden] == [str(i) for i in sorted(range(6), key=lambda i: -model_scores[i])]


def test_apply_rejects_mismatched_scores_and_bad_weights(float_reranker):
    hits = _hits(["a", "b"])
    with pytest.raises(ValueError, match=r"2 hits but 3 scores; pass one score per hit"):
        float_reranker.apply(hits, [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=r"2 hits but 1 scores"):
        float_reranker.apply(hits, [0.1])
    for weight in (-0.01, 1.01):
        with pytest.raises(ValueError, match=rf"retriever_weight \({weight}\) must lie between 0 and 1"):
            float_reranker.apply(hits, [0.1, 0.2], retriever_weight=weight)


def _linear_kinds(reranker: CrossEncoderReranker) -> set[str]:
    return {type(module).__module__ for module in reranker.model.modules() if type(module).__name__ == "Linear"}


def _concordance(a: list[float], b: list[float]) -> float:
    """The share of pairs that a and b order the same way."""
    pairs = [(i, j) for i in range(len(a)) for j in range(i + 1, len(a))]
    return sum((a[i] - a[j]) * (b[i] - b[j]) > 0 for i, j in pairs) / len(pairs)


def test_int8_reranker_orders_nearly_like_float32(spread_cross_encoder):
    quantized = CrossEncoderReranker(spread_cross_encoder, device="cpu")
    exact = CrossEncoderReranker(spread_cross_encoder, RerankConfig(quantize=False), device="cpu")
    assert quantized.quantized is True and exact.quantized is False
    assert any(kind.startswith("torch.ao.nn.quantized") for kind in _linear_kinds(quantized))
    assert _linear_kinds(exact) == {"torch.nn.modules.linear"}
    hits = _hits(TEXTS)
    for query in ("volcano", "bread"):
        q_scores, f_scores = quantized.scores(query, hits), exact.scores(query, hits)
        spread = max(f_scores) - min(f_scores)
        assert spread > 0.1, "the scores must differ by more than quantisation noise for the check to mean anything"
        assert q_scores != f_scores, "int8 arithmetic changes the scores a little"
        assert np.max(np.abs(np.subtract(q_scores, f_scores))) < 0.2 * spread
        assert _concordance(q_scores, f_scores) > 0.85
        assert quantized.rerank(query, hits)[0].doc_id == exact.rerank(query, hits)[0].doc_id


def test_float16_folder_is_read_in_float32(spread_cross_encoder, tmp_path):
    import torch
    from safetensors import safe_open
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    half = tmp_path / "half"
    AutoModelForSequenceClassification.from_pretrained(spread_cross_encoder).to(torch.float16).save_pretrained(half)
    AutoTokenizer.from_pretrained(spread_cross_encoder).save_pretrained(half)
    with safe_open(str(half / "model.safetensors"), "pt") as weights:
        names = weights.keys()  # safe_open is not iterable
        assert {weights.get_slice(name).get_dtype() for name in names} == {"F16"}

    from_half = CrossEncoderReranker(str(half), RerankConfig(quantize=False))
    assert {parameter.dtype for parameter in from_half.model.parameters()} == {torch.float32}
    from_full = CrossEncoderReranker(spread_cross_encoder, RerankConfig(quantize=False))
    hits = _hits(TEXTS)
    half_scores, full_scores = from_half.scores("volcano", hits), from_full.scores("volcano", hits)
    assert half_scores == pytest.approx(full_scores, abs=0.02), "float16 weights only round the float32 ones"
    quantized_half = CrossEncoderReranker(str(half))
    assert quantized_half.quantized is True
    assert np.max(np.abs(np.subtract(quantized_half.scores("volcano", hits), full_scores))) < 0.2 * (
        max(full_scores) - min(full_scores))


# --- resolve_reranker: the one rule for the CLI, the eval and the app -----------------------------

needs_shipped = pytest.mark.skipif(shipped_reranker() is None, reason="models/reranker is not in this checkout")


@needs_shipped
def test_shipped_reranker_follows_its_config_which_leaves_it_off() -> None:
    assert load_rerank_config(SHIPPED_RERANKER).enabled_by_default is False  # measured worse (README)
    choice = resolve_reranker()
    assert choice == RerankerChoice(SHIPPED_RERANKER, False, load_rerank_config(SHIPPED_RERANKER))
    assert resolve_reranker(None, None) == choice


@needs_shipped
def test_rerank_flag_turns_the_shipped_reranker_on_and_no_rerank_off() -> None:
    on = resolve_reranker(rerank=True)
    assert (on.path, on.enabled, on.config) == (SHIPPED_RERANKER, True, load_rerank_config(SHIPPED_RERANKER))
    assert resolve_reranker(rerank=False).enabled is False


def test_shipped_default_is_read_from_its_config_file(tmp_path, monkeypatch) -> None:
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    monkeypatch.setattr("search.rerank.shipped_reranker", lambda: shipped)
    assert resolve_reranker().enabled is False, "no rerank_config.json: RerankConfig's default, off"
    save_rerank_config(shipped, RerankConfig(enabled_by_default=True))
    assert resolve_reranker() == RerankerChoice(shipped, True, RerankConfig(enabled_by_default=True))
    assert resolve_reranker(rerank=False).enabled is False


def test_a_named_model_is_on_unless_turned_off(tiny_cross_encoder, tmp_path) -> None:
    named = resolve_reranker(None, tiny_cross_encoder)
    assert (named.path, named.enabled) == (Path(tiny_cross_encoder), True)
    assert isinstance(named.load(), CrossEncoderReranker)
    assert resolve_reranker(True, tiny_cross_encoder).enabled is True
    off = resolve_reranker(False, tiny_cross_encoder)
    assert (off.path, off.enabled) == (Path(tiny_cross_encoder), False), "still offered, e.g. for a toggle"
    folder = tmp_path / "measured_worse"
    folder.mkdir()
    save_rerank_config(folder, RerankConfig(max_length=32, enabled_by_default=False))
    measured = resolve_reranker(None, str(folder))
    assert measured.enabled is True, "naming a model asks for it, whatever its measurement says"
    assert measured.config == RerankConfig(max_length=32, enabled_by_default=False)


@pytest.mark.parametrize("none", ["none", "None", " off ", "0"])
def test_none_means_no_reranker(none: str) -> None:
    choice = resolve_reranker(None, none)
    assert choice == RerankerChoice(None, False) and choice.load() is None
    assert resolve_reranker(False, none) == RerankerChoice(None, False)
    with pytest.raises(ValueError, match=rf"Reranking needs a reranker, but the reranker is turned off \({none!r}\)"):
        resolve_reranker(True, none)


def test_rerank_without_a_shipped_reranker_says_what_to_pass(monkeypatch) -> None:
    monkeypatch.setattr("search.rerank.shipped_reranker", lambda: None)
    assert resolve_reranker() == RerankerChoice(None, False)
    with pytest.raises(ValueError, match=r"but .*models/reranker is missing\. Pass --rerank-model PATH"):
        resolve_reranker(rerank=True)
