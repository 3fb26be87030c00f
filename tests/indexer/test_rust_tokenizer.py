"""One untruncated, unpadded copy of a fast tokenizer's Rust tokenizer, shared by its callers."""

from __future__ import annotations

from indexer.model_spec import default_model_path
from indexer.rust_tokenizer import bare_tokenizer


def test_one_copy_per_tokenizer_with_truncation_and_padding_off_whatever_the_original_has():
    from transformers import BertTokenizer

    tokenizer = BertTokenizer.from_pretrained(str(default_model_path()))
    tokenizer.backend_tokenizer.enable_truncation(4)
    tokenizer.backend_tokenizer.enable_padding(length=50)
    bare = bare_tokenizer(tokenizer)
    assert bare is bare_tokenizer(tokenizer) and bare is not tokenizer.backend_tokenizer
    assert bare.truncation is None and bare.padding is None
    assert len(bare.encode("word " * 20, add_special_tokens=False).ids) == 20
    assert tokenizer.backend_tokenizer.truncation is not None  # the original is left as it was


def test_a_tokenizer_without_a_rust_one_has_none():
    assert bare_tokenizer(object()) is None
