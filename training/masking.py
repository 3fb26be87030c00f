"""Masked-language-model corruption (Devlin et al. 2019, BERT, section 3.1).

15% of the non-special tokens are selected; of those 80% become [MASK], 10% a
random token and 10% stay unchanged. Whole-word masking (Cui et al. 2019)
selects words and masks all of their WordPiece pieces together. Pure functions:
the random generator is passed in so resumed runs replay the same masks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

IGNORE_INDEX = -100  # label of positions the loss skips (torch CrossEntropyLoss default)


@dataclass(frozen=True)
class MaskingVocab:
    """What masking needs to know about a vocabulary."""

    mask_id: int
    special_ids: np.ndarray  # ids never selected: [PAD] [CLS] [SEP] [MASK] [UNK] ...
    random_ids: np.ndarray  # ids a selected token may be replaced by (non-special)
    is_continuation: np.ndarray  # (vocab,) bool: token starts with "##"

    @classmethod
    def from_tokens(cls, tokens: Sequence[str], special_tokens: Sequence[str], mask_token: str = "[MASK]") -> MaskingVocab:
        lookup = {token: index for index, token in enumerate(tokens)}
        if mask_token not in lookup:
            raise ValueError(
                f"Vocabulary of {len(tokens)} tokens has no {mask_token} token, so MLM cannot mask. "
                "Retrain it with `python -m training tokenizer`, which adds [PAD] [UNK] [CLS] [SEP] [MASK]."
            )
        special = np.array(sorted(lookup[token] for token in special_tokens if token in lookup), dtype=np.int64)
        is_special = np.zeros(len(tokens), dtype=bool)
        is_special[special] = True
        return cls(
            mask_id=lookup[mask_token],
            special_ids=special,
            random_ids=np.flatnonzero(~is_special),
            is_continuation=np.array([token.startswith("##") for token in tokens], dtype=bool),
        )


def mask_tokens(
    ids: np.ndarray,
    rng: np.random.Generator,
    vocab: MaskingVocab,
    mask_rate: float = 0.15,
    whole_word: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Return (inputs, labels) for ids of any shape; labels are IGNORE_INDEX where nothing was selected."""
    ids = np.asarray(ids, dtype=np.int64)
    maskable = ~np.isin(ids, vocab.special_ids)
    if whole_word:
        selected = _select_whole_words(ids, maskable, rng, vocab, mask_rate)
    else:
        selected = maskable & (rng.random(ids.shape) < mask_rate)
    labels = np.where(selected, ids, IGNORE_INDEX)
    inputs = ids.copy()
    action = rng.random(ids.shape)
    to_mask = selected & (action < 0.8)
    to_random = selected & (action >= 0.8) & (action < 0.9)
    inputs[to_mask] = vocab.mask_id
    inputs[to_random] = vocab.random_ids[rng.integers(len(vocab.random_ids), size=int(to_random.sum()))]
    return inputs, labels


def _select_whole_words(
    ids: np.ndarray, maskable: np.ndarray, rng: np.random.Generator, vocab: MaskingVocab, mask_rate: float
) -> np.ndarray:
    """Select each word with probability `mask_rate`; a word is a token plus its following ## pieces."""
    flat_ids = ids.reshape(-1, ids.shape[-1]) if ids.ndim > 1 else ids[None, :]
    flat_maskable = maskable.reshape(flat_ids.shape)
    continuation = vocab.is_continuation[flat_ids] & flat_maskable
    starts = flat_maskable & ~continuation
    # A word id per position: the number of word starts up to and including it, per row.
    word_index = np.cumsum(starts, axis=1)
    draw = rng.random(flat_ids.shape)  # a draw per word start, indexed by word number
    row_offsets = np.arange(flat_ids.shape[0])[:, None] * (flat_ids.shape[1] + 1)
    start_draws = np.full(flat_ids.size + flat_ids.shape[0], 1.0)
    start_draws[(word_index + row_offsets)[starts]] = draw[starts]
    chosen_word = start_draws[word_index + row_offsets] < mask_rate
    selected = flat_maskable & chosen_word & (word_index > 0)
    return selected.reshape(ids.shape)
