"""Split documents into passages by tokens, with overlap, never truncating.

Windows are cut on word boundaries (via the fast tokenizer's word ids) so a
passage never begins or ends inside a word: re-tokenising the passage text then
gives the same tokens and it still fits the model.

The text is tokenised `window_chars` characters at a time, cut at whitespace, and
only the tokens of the passage being cut are kept: tokenising a 10 MB text whole
held about 1.6 GB of token objects at once (see `split_into_passages`).
"""

from __future__ import annotations

from collections.abc import Iterator

from indexer.documents import PassageSpan

# About 25,000 tokens of English per window: a few MB of token objects.
WINDOW_CHARS = 100_000
# Whitespace that splits words for every tokenizer we use (BERT's, SentencePiece's, byte-level BPE's).
_CUT_CHARS = (" ", "\n", "\t", "\r")

# (start_char, end_char) per token, and a key equal for the tokens of one word (None: no word)
TokenWindow = tuple[list[tuple[int, int]], list[tuple[int, int] | None]]


def _window_end(text: str, start: int, window_chars: int) -> int:
    """Where the window starting at `start` ends: at the last whitespace of its second half,
    so that no word is split and every token is the one whole-text tokenisation would give.

    A second half without whitespace (a 50,000-character "word") is cut where it ends.
    """
    end = start + window_chars
    if end >= len(text):
        return len(text)
    lower = start + window_chars // 2
    cut = text.rfind(" ", lower, end)
    if cut < 0:
        cut = max(text.rfind(char, lower, end) for char in _CUT_CHARS)
    return cut if cut > start else end


def _token_windows(text: str, tokenizer, window_chars: int) -> Iterator[TokenWindow]:
    start = 0
    window_no = 0
    while start < len(text):
        end = _window_end(text, start, window_chars)
        encoding = tokenizer(
            text[start:end],
            add_special_tokens=False,
            return_offsets_mapping=True,
            truncation=False,
            verbose=False,
        )
        offsets = [(s + start, e + start) for s, e in encoding["offset_mapping"]]
        words = [None if w is None else (window_no, w) for w in encoding.word_ids()]
        yield offsets, words
        start, window_no = end, window_no + 1


def split_into_passages(
    text: str,
    tokenizer,
    max_tokens: int,
    overlap_tokens: int,
    *,
    window_chars: int = WINDOW_CHARS,
) -> list[PassageSpan]:
    """Character spans of `text`, each at most `max_tokens` tokens, consecutive ones overlapping.

    Memory is bounded by one window of tokens whatever the text's length. A text of up to
    `window_chars` characters is tokenised whole; a longer one gives the same spans as long
    as each window's second half holds whitespace to cut at.
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens ({max_tokens}) must be at least 1.")
    if not 0 <= overlap_tokens < max_tokens:
        raise ValueError(
            f"overlap_tokens ({overlap_tokens}) must be in [0, max_tokens ({max_tokens}))."
        )
    if window_chars < 2:
        raise ValueError(f"window_chars ({window_chars}) must be at least 2.")

    windows = _token_windows(text, tokenizer, window_chars)
    # The tokens from global index `base` on; older ones are dropped once passed.
    offsets: list[tuple[int, int]] = []
    word_ids: list[tuple[int, int] | None] = []
    base = 0

    def has_token(i: int) -> bool:
        """Whether token `i` exists, tokenising further windows until it is loaded."""
        while i >= base + len(offsets):
            window = next(windows, None)
            if window is None:
                return False
            offsets.extend(window[0])
            word_ids.extend(window[1])
        return True

    def word_start(i: int, lower: int) -> int:
        """Move i back to the first token of its word, but not below `lower`."""
        while i > lower:
            word = word_ids[i - base]
            if word is None or word != word_ids[i - 1 - base]:
                break
            i -= 1
        return i

    if not has_token(0):
        return []
    spans: list[PassageSpan] = []
    start = 0
    while True:
        end = start + max_tokens
        more = has_token(end)
        if more:
            snapped = word_start(end, start + 1)
            # A single word longer than the window is cut where the window ends.
            end = snapped if snapped > start else end
        else:
            end = base + len(offsets)
        spans.append(PassageSpan(len(spans), offsets[start - base][0], offsets[end - 1 - base][1]))
        if not more:
            return spans
        next_start = max(end - overlap_tokens, start + 1)
        snapped_start = word_start(next_start, start + 1)
        start = snapped_start if snapped_start > start else next_start
        if start - base > len(offsets) // 2:
            del offsets[: start - base], word_ids[: start - base]
            base = start
