from __future__ import annotations

import numpy as np
import pytest

from training.masking import IGNORE_INDEX, MaskingVocab, mask_tokens

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TOKENS = SPECIALS + [f"w{i}" for i in range(400)] + [f"##p{i}" for i in range(100)]
VOCAB = MaskingVocab.from_tokens(TOKENS, SPECIALS)


def _batch(rng: np.random.Generator, rows: int = 100, width: int = 1000) -> np.ndarray:
    ids = rng.integers(len(SPECIALS), len(TOKENS), size=(rows, width))
    ids[:, 0] = TOKENS.index("[CLS]")
    ids[:, 500] = TOKENS.index("[SEP]")
    ids[:, -1] = TOKENS.index("[SEP]")
    ids[:, -100:-1] = TOKENS.index("[PAD]")
    ids[::7, 10] = TOKENS.index("[UNK]")
    return ids


@pytest.mark.parametrize("whole_word", [False, True])
def test_masking_statistics_on_100k_tokens(whole_word: bool) -> None:
    ids = _batch(np.random.default_rng(0))  # 100,000 tokens
    inputs, labels = mask_tokens(ids, np.random.default_rng(1), VOCAB, mask_rate=0.15, whole_word=whole_word)
    selected = labels != IGNORE_INDEX
    maskable = ~np.isin(ids, VOCAB.special_ids)
    assert abs(selected.sum() / maskable.sum() - 0.15) < 0.01
    assert not selected[~maskable].any(), "special tokens and padding must never be selected"
    assert (inputs[~maskable] == ids[~maskable]).all()
    assert (labels[selected] == ids[selected]).all()
    masked = inputs[selected] == VOCAB.mask_id
    unchanged = inputs[selected] == ids[selected]
    randomised = ~masked & ~unchanged
    assert abs(masked.mean() - 0.8) < 0.015
    # a random draw can hit the original token (1 in 500), so "unchanged" is slightly above 10%
    assert abs(unchanged.mean() - 0.1) < 0.01
    assert abs(randomised.mean() - 0.1) < 0.01
    assert not np.isin(inputs[selected][randomised], VOCAB.special_ids).any()


def test_mask_rate_option_and_determinism() -> None:
    ids = _batch(np.random.default_rng(0), rows=20)
    _, labels = mask_tokens(ids, np.random.default_rng(5), VOCAB, mask_rate=0.3)
    maskable = ~np.isin(ids, VOCAB.special_ids)
    assert abs((labels != IGNORE_INDEX).sum() / maskable.sum() - 0.3) < 0.02
    first = mask_tokens(ids, np.random.default_rng(5), VOCAB, mask_rate=0.3)
    assert (first[0] == mask_tokens(ids, np.random.default_rng(5), VOCAB, mask_rate=0.3)[0]).all()


def test_whole_word_masking_masks_all_pieces_of_a_word() -> None:
    word, piece = TOKENS.index("w3"), TOKENS.index("##p1")
    ids = np.array([[TOKENS.index("[CLS]")] + [word, piece, piece] * 300 + [TOKENS.index("[SEP]")]])
    _, labels = mask_tokens(ids, np.random.default_rng(0), VOCAB, mask_rate=0.2, whole_word=True)
    selected = (labels[0, 1:-1] != IGNORE_INDEX).reshape(-1, 3)
    assert selected.any()
    assert (selected.all(axis=1) == selected.any(axis=1)).all()


def test_vocab_without_mask_token_fails_with_fix() -> None:
    with pytest.raises(ValueError, match=r"has no \[MASK\] token.*python -m training tokenizer"):
        MaskingVocab.from_tokens(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello"], SPECIALS)
