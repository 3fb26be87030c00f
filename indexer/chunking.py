"""Split documents into passages by tokens, with overlap, never truncating.

Windows are cut on word boundaries (via the fast tokenizer's word ids) so a
passage never begins or ends inside a word: re-tokenising the passage text then
gives the same tokens and it still fits the model.
"""

from __future__ import annotations

from indexer.documents import PassageSpan


def split_into_passages(
    text: str,
    tokenizer,
    max_tokens: int,
    overlap_tokens: int,
) -> list[PassageSpan]:
    """Character spans of `text`, each at most `max_tokens` tokens, consecutive ones overlapping."""
    if max_tokens < 1:
        raise ValueError(f"max_tokens ({max_tokens}) must be at least 1.")
    if not 0 <= overlap_tokens < max_tokens:
        raise ValueError(
            f"overlap_tokens ({overlap_tokens}) must be in [0, max_tokens ({max_tokens}))."
        )
    encoding = tokenizer(
        text,
        add_special_tokens=False,
        return_offsets_mapping=True,
        truncation=False,
        verbose=False,
    )
    offsets: list[tuple[int, int]] = encoding["offset_mapping"]
    word_ids = encoding.word_ids()
    n = len(offsets)
    if n == 0:
        return []
    if n <= max_tokens:
        return [PassageSpan(0, offsets[0][0], offsets[-1][1])]

    def word_start(i: int, lower: int) -> int:
        """Move i back to the first token of its word, but not below `lower`."""
        while i > lower and word_ids[i] is not None and word_ids[i] == word_ids[i - 1]:
            i -= 1
        return i

    spans: list[PassageSpan] = []
    start = 0
    while True:
        end = min(start + max_tokens, n)
        if end < n:
            snapped = word_start(end, start + 1)
            # A single word longer than the window is cut where the window ends.
            end = snapped if snapped > start else end
        spans.append(PassageSpan(len(spans), offsets[start][0], offsets[end - 1][1]))
        if end >= n:
            return spans
        next_start = max(end - overlap_tokens, start + 1)
        snapped_start = word_start(next_start, start + 1)
        start = snapped_start if snapped_start > start else next_start
