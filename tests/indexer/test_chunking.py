from __future__ import annotations

import pytest

from indexer.chunking import split_into_passages
from indexer.embedding import default_model_path


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import BertTokenizer

    return BertTokenizer.from_pretrained(str(default_model_path()))


def n_tokens(tokenizer, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def test_short_text_is_one_passage_covering_it(tokenizer):
    text = "  A short document about volcanoes.  "
    spans = split_into_passages(text, tokenizer, max_tokens=50, overlap_tokens=10)
    assert len(spans) == 1
    assert text[spans[0].start_char : spans[0].end_char] == "A short document about volcanoes."


def test_long_text_splits_within_budget_with_overlap_and_covers_everything(tokenizer):
    words = [f"token{i} unbelievably" for i in range(400)]
    text = " ".join(words)
    spans = split_into_passages(text, tokenizer, max_tokens=40, overlap_tokens=8)
    assert len(spans) > 5
    assert spans[0].start_char == 0 and spans[-1].end_char == len(text)
    for prev, cur in zip(spans, spans[1:], strict=False):
        assert cur.start_char < prev.end_char, "consecutive passages must overlap"
        assert cur.start_char > prev.start_char
    for span in spans:
        piece = text[span.start_char : span.end_char]
        assert n_tokens(tokenizer, piece) <= 40
        # cut on word boundaries: never inside a word
        assert span.start_char == 0 or text[span.start_char - 1] == " "
        assert span.end_char == len(text) or text[span.end_char] == " "
    assert [s.ordinal for s in spans] == list(range(len(spans)))


def test_empty_text_has_no_passages(tokenizer):
    assert split_into_passages("   \n ", tokenizer, 20, 5) == []


def test_overlap_must_be_smaller_than_window(tokenizer):
    with pytest.raises(ValueError, match=r"overlap_tokens \(20\) must be in \[0, max_tokens \(20\)\)"):
        split_into_passages("some text", tokenizer, 20, 20)
