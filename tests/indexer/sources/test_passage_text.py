"""One title rule for every path: the batched titles equal the one-by-one ones, fast or slow tokenizer."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from indexer.model_spec import default_model_path
from indexer.sources.passage_text import (
    bi_encoder_input,
    bi_encoder_inputs_of,
    embedded_title,
    embedded_titles,
    title_token_budget,
)

LONG = " ".join(["Proceedings of the international symposium on volcanic ash dispersion"] * 6)
TITLES = ["", "Short title", LONG, "Ünïcödé title 漢字", LONG + " tail"]


@pytest.fixture(scope="module", params=["fast", "slow"])
def model(request):
    from transformers import AutoTokenizer, BertTokenizer

    folder = str(default_model_path())
    tokenizer = AutoTokenizer.from_pretrained(folder) if request.param == "fast" else BertTokenizer.from_pretrained(folder)
    return SimpleNamespace(tokenizer=tokenizer, max_seq_length=256)


def test_a_long_title_is_cut_to_its_budget_and_a_short_one_kept(model):
    budget = title_token_budget(256)
    cut = embedded_title(LONG, model)
    assert len(model.tokenizer(cut, add_special_tokens=False)["input_ids"]) == budget
    assert LONG.lower().startswith(cut.lower()[:40])
    assert embedded_title("Short title", model) == "Short title"
    assert embedded_title("", model) == ""


def test_batched_titles_and_inputs_equal_the_one_by_one_ones(model):
    assert embedded_titles(TITLES, model) == [embedded_title(t, model) for t in TITLES]
    passages = [["first passage", "second passage"], [], ["only one"], ["x"], ["a", "b", "c"]]
    for embed in (True, False):
        batched = bi_encoder_inputs_of(TITLES, passages, model, embed)
        one_by_one = [bi_encoder_input(t, p, model, embed) for t, ps in zip(TITLES, passages, strict=True) for p in ps]
        assert batched == one_by_one and len(batched) == 7
