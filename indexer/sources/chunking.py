"""Split documents into passages by tokens, with overlap, never truncating.

Windows are cut on word boundaries (via the fast tokenizer's word ids) so a
passage never begins or ends inside a word: re-tokenising the passage text then
gives the same tokens and it still fits the model.

The text is tokenised `window_chars` characters at a time, cut at whitespace, and
only the tokens of the passage being cut are kept: tokenising a 10 MB text whole
held about 1.6 GB of token objects at once (see `split_into_passages`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from indexer.rust_tokenizer import bare_tokenizer
from indexer.sources.documents import PassageSpan

# About 25,000 tokens of English per window: a few MB of token objects.
WINDOW_CHARS = 100_000
# A token spanning more characters than this is a run without spaces (a base64 blob, a
# minified line) that the tokenizer could only read as one unknown word: no passage holds
# one, so it never becomes a passage of a million characters the model sees as `[UNK]`.
# Ordinary long words and URLs stay inside their passages (BERT's WordPiece already reads
# any word over 100 characters as `[UNK]`).
LONG_TOKEN_CHARS = 1000
# A tail of fewer than max_tokens // SHORT_TAIL_DIVISOR tokens is read with the passage before it.
SHORT_TAIL_DIVISOR = 4
# Whitespace that splits words for every tokenizer we use (BERT's, SentencePiece's, byte-level BPE's).
_CUT_CHARS = (" ", "\n", "\t", "\r")

# (start_char, end_char) per token, a key equal for the tokens of one word (None: no word), and
# whether the window starts inside a run of non-space characters the previous window cut
TokenWindow = tuple[list[tuple[int, int]], list[tuple[int, int] | None], bool]


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


def _tokens(tokenizer, text: str) -> tuple[list[tuple[int, int]], list[int | None]]:
    """(offsets, word ids) of `text`'s tokens, no special tokens, untruncated.

    A fast tokenizer's Rust tokenizer is called directly (`bare_tokenizer`): transformers' wrapper,
    which builds a BatchEncoding and sets the Rust tokenizer's truncation and padding on every
    call, led the profile of a GPU build (BENCHMARKS.md, bench_gpu-encode), and its per-call
    settings made one tokenizer unsafe to share between threads.
    """
    bare = bare_tokenizer(tokenizer)
    if bare is not None:
        # encode_batch, not encode: the batch call lets go of the interpreter lock while it runs,
        # so the threads that cut passages (`indexer.build.pipeline`) tokenize at once.
        encoding = bare.encode_batch([text], add_special_tokens=False)[0]
        return encoding.offsets, encoding.word_ids
    out = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, truncation=False, verbose=False)
    return out["offset_mapping"], out.word_ids()


def _token_windows(text: str, tokenizer, window_chars: int) -> Iterator[TokenWindow]:
    start = 0
    window_no = 0
    while start < len(text):
        end = _window_end(text, start, window_chars)
        token_offsets, word_ids = _tokens(tokenizer, text[start:end])
        offsets = [(s + start, e + start) for s, e in token_offsets]
        words = [None if w is None else (window_no, w) for w in word_ids]
        yield offsets, words, 0 < start < len(text) and not text[start - 1].isspace() and not text[start].isspace()
        start, window_no = end, window_no + 1


def split_into_passages(
    text: str,
    tokenizer,
    max_tokens: int,
    overlap_tokens: int,
    *,
    window_chars: int = WINDOW_CHARS,
    min_tail_tokens: int = 0,
) -> list[PassageSpan]:
    """Character spans of `text`, each at most `max_tokens` tokens, consecutive ones overlapping.

    Memory is bounded by one window of tokens whatever the text's length. A text of up to
    `window_chars` characters is tokenised whole; a longer one gives the same spans as long
    as each window's second half holds whitespace to cut at. A token longer than
    `LONG_TOKEN_CHARS` characters is left out: passages end before it and resume after it,
    without overlap (`left_out` finds such stretches).

    When fewer than `min_tail_tokens` tokens follow a passage, they are no passage of their
    own (an author's address after a man page, say, whose embedding the title prefix would
    dominate): the last passage ends where the text ends and starts as far back as `max_tokens`
    allows, so the tail is read with the text before it (`short_tail_tokens`).
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens ({max_tokens}) must be at least 1.")
    if not 0 <= overlap_tokens < max_tokens:
        raise ValueError(
            f"overlap_tokens ({overlap_tokens}) must be in [0, max_tokens ({max_tokens}))."
        )
    if window_chars < 2:
        raise ValueError(f"window_chars ({window_chars}) must be at least 2.")

    tokens = _TokenStream(_token_windows(text, tokenizer, window_chars))
    spans: list[PassageSpan] = []
    start = 0
    while True:
        while tokens.has(start) and tokens.is_long(start):
            start += 1
        if not tokens.has(start):
            return spans
        end = start + max_tokens
        more = tokens.has(end)
        if more:
            snapped = tokens.word_start(end, start + 1)
            # A single word longer than the window is cut where the window ends.
            end = snapped if snapped > start else end
        else:
            end = tokens.loaded
        cut = tokens.first_long(start, end)
        if cut is not None:  # end before the long token; the next passage starts after it
            end, more, next_start = cut, True, cut + 1
        spans.append(PassageSpan(len(spans), tokens.start_char(start), tokens.end_char(end - 1)))
        if not more:
            return spans
        if cut is None and min_tail_tokens > 0 and not tokens.has(end + min_tail_tokens - 1):
            total = tokens.loaded  # every token is loaded now
            if tokens.first_long(end, total) is None:
                last = tokens.next_word_start(max(total - max_tokens, start + 1), total)
                spans.append(PassageSpan(len(spans), tokens.start_char(last), tokens.end_char(total - 1)))
                return spans
        if cut is None:
            next_start = max(end - overlap_tokens, start + 1)
            snapped_start = tokens.word_start(next_start, start + 1)
            next_start = snapped_start if snapped_start > start else next_start
        start = next_start
        tokens.forget_before(start)


class _TokenStream:
    """The tokens of a text by global index, tokenised window by window as they are asked for;
    those before the current passage are dropped, so memory stays at about one window."""

    def __init__(self, windows: Iterator[TokenWindow]) -> None:
        self.windows = windows
        self.offsets: list[tuple[int, int]] = []  # tokens from global index `base` on
        self.word_ids: list[tuple[int, int] | None] = []
        self.base = 0
        self.long_tokens: set[int] = set()  # global indices of tokens no passage may hold

    @property
    def loaded(self) -> int:
        return self.base + len(self.offsets)

    def start_char(self, i: int) -> int:
        return self.offsets[i - self.base][0]

    def end_char(self, i: int) -> int:
        return self.offsets[i - self.base][1]

    def has(self, i: int) -> bool:
        """Whether token `i` exists, tokenising further windows until it is loaded."""
        while i >= self.loaded:
            window = next(self.windows, None)
            if window is None:
                return False
            offsets, words, continues = window
            first = self.loaded
            self.long_tokens.update(first + k for k, (s, e) in enumerate(offsets) if e - s > LONG_TOKEN_CHARS)
            if continues and self.offsets and words:
                self._join_cut_run(first, words)
            self.offsets.extend(offsets)
            self.word_ids.extend(words)
        return True

    def _join_cut_run(self, first: int, words: list[tuple[int, int] | None]) -> None:
        """A run the window cut is one word: when either part is a long token, both parts are."""
        head = first
        while head - first < len(words) and words[head - first] == words[0]:
            head += 1
        tail = first - 1
        while tail - 1 >= self.base and self.word_ids[tail - 1 - self.base] == self.word_ids[first - 1 - self.base]:
            tail -= 1
        run = range(tail, head)
        if any(i in self.long_tokens for i in run):
            self.long_tokens.update(run)

    def is_long(self, i: int) -> bool:
        return i in self.long_tokens

    def first_long(self, lower: int, upper: int) -> int | None:
        if not self.long_tokens:
            return None
        return next((i for i in range(lower, upper) if i in self.long_tokens), None)

    def word_start(self, i: int, lower: int) -> int:
        """Move i back to the first token of its word, but not below `lower`."""
        while i > lower:
            word = self.word_ids[i - self.base]
            if word is None or word != self.word_ids[i - 1 - self.base]:
                break
            i -= 1
        return i

    def next_word_start(self, i: int, upper: int) -> int:
        """Move i forward to the first token of the next word unless it starts one, below `upper`."""
        while i < upper and i > self.base:
            word = self.word_ids[i - self.base]
            if word is None or word != self.word_ids[i - 1 - self.base]:
                break
            i += 1
        return i

    def forget_before(self, start: int) -> None:
        if start - self.base > len(self.offsets) // 2:
            del self.offsets[: start - self.base], self.word_ids[: start - self.base]
            self.base = start


def section_groups(length: int, heading_starts: Sequence[int], min_chars: int) -> list[tuple[int, int]]:
    """(start, end) of the stretches a text of `length` characters is cut into at its headings:
    one per section, except that a section under `min_chars` characters (a heading followed at
    once by a subheading, say) joins the next, so that no passage is a lone heading."""
    cuts = sorted({0, *(s for s in heading_starts if 0 < s < length), length})
    groups: list[tuple[int, int]] = []
    start = 0
    for end in cuts[1:]:
        if end - start >= min_chars or end == length:
            groups.append((start, end))
            start = end
    if groups and groups[-1][1] - groups[-1][0] < min_chars and len(groups) > 1:
        last = groups.pop()  # a short last section joins the one before it
        groups[-1] = (groups[-1][0], last[1])
    return groups


def short_tail_tokens(max_tokens: int, merge: bool = True) -> int:
    """The tail under which the last passage takes text from the one before: a quarter of a
    passage (`bench/bench_short_tail.py` measured it on the dev sets); 0 when `merge` is off."""
    return max_tokens // SHORT_TAIL_DIVISOR if merge else 0


def split_into_sections(
    text: str,
    heading_starts: Sequence[int],
    tokenizer,
    max_tokens: int,
    overlap_tokens: int,
    min_tail_tokens: int = 0,
) -> list[PassageSpan]:
    """`split_into_passages` within each section, so that no passage straddles a heading and each
    passage's heading path is the section it holds. A section shorter than about a quarter of a
    passage (`max_tokens` characters, at roughly four characters a token) joins the next. Without
    headings, the spans are exactly `split_into_passages`'."""
    if not heading_starts:
        return split_into_passages(text, tokenizer, max_tokens, overlap_tokens, min_tail_tokens=min_tail_tokens)
    spans: list[PassageSpan] = []
    for start, end in section_groups(len(text), heading_starts, max_tokens):
        for span in split_into_passages(text[start:end], tokenizer, max_tokens, overlap_tokens,
                                        min_tail_tokens=min_tail_tokens):
            spans.append(PassageSpan(len(spans), span.start_char + start, span.end_char + start))
    return spans


def left_out(text: str, spans: list[PassageSpan], min_chars: int = LONG_TOKEN_CHARS) -> list[tuple[int, int]]:
    """(start, end) of each stretch of `text` over `min_chars` characters, not counting
    whitespace, that no span covers: what `split_into_passages` left out."""
    gaps: list[tuple[int, int]] = []
    covered = 0
    for span in [*spans, PassageSpan(-1, len(text), len(text))]:
        gap = text[covered : span.start_char] if span.start_char > covered else ""
        if len(gap.strip()) > min_chars:
            start = covered + len(gap) - len(gap.lstrip())
            gaps.append((start, start + len(gap.strip())))
        covered = max(covered, span.end_char)
    return gaps
