from __future__ import annotations

from pathlib import Path

import pytest
from transformers import AutoTokenizer, BertTokenizer

from training.__main__ import main
from training.config import SPECIAL_TOKENS, TokenizerConfig
from training.tokenizer import train_tokenizer


def test_trained_vocab_loads_with_bert_tokenizer(tiny_tokenizer_dir: Path) -> None:
    for loader in (BertTokenizer, AutoTokenizer):
        tokenizer = loader.from_pretrained(str(tiny_tokenizer_dir))
        assert [tokenizer.convert_tokens_to_ids(token) for token in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
        encoded = tokenizer("The Cat SEES the river", "a dog")
        tokens = tokenizer.convert_ids_to_tokens(encoded["input_ids"])
        assert tokens[0] == "[CLS]" and tokens.count("[SEP]") == 2 and "cat" in tokens  # lowercased
        assert tokenizer.unk_token_id not in encoded["input_ids"]
        assert set(encoded["token_type_ids"]) == {0, 1}
    assert (tiny_tokenizer_dir / "vocab.txt").read_text().splitlines()[:5] == list(SPECIAL_TOKENS)


def test_cli_trains_cased_vocab(tiny_corpus: Path, tmp_path: Path) -> None:
    tokenizer = main(["tokenizer", "--corpus", str(tiny_corpus), "--out", str(tmp_path / "tok"),
                      "--vocab-size", "200", "--min-frequency", "1", "--cased"])
    assert len(tokenizer) <= 200
    assert "The" in BertTokenizer.from_pretrained(str(tmp_path / "tok")).tokenize("The cat")


def test_empty_corpus_fails_with_fix(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(ValueError, match="holds no text; pass a non-empty"):
        train_tokenizer(TokenizerConfig(corpus=empty, out=tmp_path / "tok", vocab_size=100))
