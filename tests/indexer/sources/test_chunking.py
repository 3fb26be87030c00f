from __future__ import annotations

import pytest

from indexer.model_spec import default_model_path
from indexer.sources.chunking import split_into_passages
from indexer.sources.documents import PassageSpan


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


def whole_text_spans(text: str, tokenizer, max_tokens: int, overlap_tokens: int) -> list[PassageSpan]:
    """The algorithm before windowing: the whole text tokenised at once (the oracle)."""
    encoding = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    offsets, word_ids = encoding["offset_mapping"], encoding.word_ids()
    n = len(offsets)
    if n == 0:
        return []

    def word_start(i: int, lower: int) -> int:
        while i > lower and word_ids[i] is not None and word_ids[i] == word_ids[i - 1]:
            i -= 1
        return i

    spans: list[PassageSpan] = []
    start = 0
    while True:
        end = min(start + max_tokens, n)
        if end < n:
            snapped = word_start(end, start + 1)
            end = snapped if snapped > start else end
        spans.append(PassageSpan(len(spans), offsets[start][0], offsets[end - 1][1]))
        if end >= n:
            return spans
        next_start = max(end - overlap_tokens, start + 1)
        snapped_start = word_start(next_start, start + 1)
        start = snapped_start if snapped_start > start else next_start


TEXTS = [
    "A short document about volcanoes.",
    " ".join(f"token{i} unbelievably" for i in range(300)),
    "Lava—erupted!! Café naïve résumé 日本語のテキスト (1984) e-mail: a@b.org\n\n" * 40,
    "\t  spaced   out\r\n\r\nwords   " * 60,
]


@pytest.mark.parametrize("text", TEXTS)
def test_spans_equal_whole_text_tokenisation_below_and_across_windows(tokenizer, text):
    expected = whole_text_spans(text, tokenizer, 40, 8)
    assert len(text) < 100_000
    assert split_into_passages(text, tokenizer, 40, 8) == expected
    # Small windows cut at whitespace, so the tokens and the spans are the same.
    assert split_into_passages(text, tokenizer, 40, 8, window_chars=200) == expected


def check_spans(text: str, spans, tokenizer, max_tokens: int) -> None:
    encoding = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    assert spans[0].start_char == encoding["offset_mapping"][0][0]
    assert spans[-1].end_char == encoding["offset_mapping"][-1][1]
    assert [s.ordinal for s in spans] == list(range(len(spans)))
    for prev, cur in zip(spans, spans[1:], strict=False):
        assert prev.start_char < cur.start_char < prev.end_char, "in order and overlapping"
    for span in spans:
        assert n_tokens(tokenizer, text[span.start_char : span.end_char]) <= max_tokens


def test_long_text_across_many_window_borders_covers_it_in_order_within_budget(tokenizer):
    text = " ".join(f"w{i % 97}ord{i}" for i in range(3000))  # about 25,000 characters
    spans = split_into_passages(text, tokenizer, 30, 5, window_chars=1000)
    check_spans(text, spans, tokenizer, 30)
    assert spans == whole_text_spans(text, tokenizer, 30, 5)


@pytest.mark.parametrize("text", [*TEXTS, " ".join(f"w{i % 97}ord{i}" for i in range(3000))])
@pytest.mark.parametrize("tail_words", [0, 1, 3, 9])
def test_a_short_tail_is_read_with_the_text_before_it(tokenizer, text, tail_words):
    text = text + " closing" * tail_words
    plain = split_into_passages(text, tokenizer, 40, 8, window_chars=1000)
    merged = split_into_passages(text, tokenizer, 40, 8, window_chars=1000, min_tail_tokens=10)
    check_spans(text, merged, tokenizer, 40)
    assert len(merged) <= len(plain) and merged[:-1] == plain[: len(merged) - 1], "only the end changes"
    # A word here is at most 5 tokens: snapping to words costs the last passage at most two of them.
    for prev, cur in zip(merged, merged[1:], strict=False):
        assert n_tokens(tokenizer, text[prev.end_char : cur.end_char]) >= 10 or cur is merged[-1] and \
            n_tokens(tokenizer, text[cur.start_char : cur.end_char]) >= 40 - 2 * 5, "no short passage at the end"
    if len(plain) > 1 and n_tokens(tokenizer, text[plain[-2].end_char : plain[-1].end_char]) < 10:
        assert merged[-1].start_char < plain[-1].start_char, "the short tail took text from before it"


def test_window_without_whitespace_is_cut_where_it_ends(tokenizer):
    text = ("abc," * 3000) + " tail words here"  # 12,000 characters with no whitespace to cut at
    spans = split_into_passages(text, tokenizer, 50, 10, window_chars=1000)
    check_spans(text, spans, tokenizer, 50)


def test_window_chars_must_be_at_least_two(tokenizer):
    with pytest.raises(ValueError, match=r"window_chars \(1\) must be at least 2"):
        split_into_passages("some text", tokenizer, 20, 5, window_chars=1)


def test_tokenizer_never_sees_more_than_one_window(tokenizer):
    seen: list[int] = []

    def spy(text, **kwargs):
        seen.append(len(text))
        return tokenizer(text, **kwargs)

    text = "volcano ash " * 2000  # 24,000 characters
    spans = split_into_passages(text, spy, 40, 8, window_chars=1000)
    assert len(seen) > 20 and max(seen) <= 1000
    assert spans == whole_text_spans(text, tokenizer, 40, 8)


def test_sections_are_cut_at_their_headings_and_short_ones_join_the_next(tokenizer):
    from indexer.sources.chunking import section_groups, split_into_sections
    from indexer.sources.outline import markdown_outline

    body = "Words about this part of the guide fill a paragraph of ordinary length here. " * 3
    text = f"# Guide\n\n## Setup\n\n{body}\n\n## Use\n\n{body}\n\n## Tiny\n\nshort"
    starts = [h.start for h in markdown_outline(text).headings]
    groups = section_groups(len(text), starts, min_chars=40)
    # "# Guide" alone is shorter than 40 characters, so it joins Setup; Tiny joins Use, the last
    assert groups == [(0, text.index("## Use")), (text.index("## Use"), len(text))]
    spans = split_into_sections(text, starts, tokenizer, max_tokens=40, overlap_tokens=8)
    cut = text.index("## Use")
    assert all(s.end_char <= cut or s.start_char >= cut for s in spans)  # none straddles a section
    assert [s.ordinal for s in spans] == list(range(len(spans)))
    assert split_into_sections(body, [], tokenizer, 40, 8) == split_into_passages(body, tokenizer, 40, 8)


class _WrapperOnly:
    """The tokenizer reached only through transformers' call (no `backend_tokenizer`)."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer

    def __call__(self, *args, **kwargs):
        return self.tokenizer(*args, **kwargs)


def test_the_rust_tokenizer_cuts_as_the_transformers_call_does_on_real_long_files(tokenizer):
    from pathlib import Path

    texts = [p.read_text(encoding="utf-8", errors="replace") for p in sorted(Path("/usr/share/common-licenses").iterdir())
             if p.is_file()]
    texts += ["naïve café 漢字 🙂 " * 50, "x" * 3000 + " tail words here", ""]
    assert hasattr(tokenizer, "backend_tokenizer") and sum(map(len, texts)) > 100_000
    wrapped = _WrapperOnly(tokenizer)
    for text in texts:
        for window in (100_000, 500):
            assert split_into_passages(text, tokenizer, 60, 12, window_chars=window, min_tail_tokens=15) == \
                split_into_passages(text, wrapped, 60, 12, window_chars=window, min_tail_tokens=15)


def test_a_tokenizer_with_truncation_left_on_still_cuts_whole_texts(tokenizer):
    """The Rust tokenizer is a private copy with truncation off: settings transformers leaves on
    the model's own tokenizer after a call do not reach the cutting."""
    tokenizer.backend_tokenizer.enable_truncation(8)
    try:
        spans = split_into_passages("word " * 400, tokenizer, 50, 0)
    finally:
        tokenizer.backend_tokenizer.no_truncation()
    assert spans[-1].end_char == len("word " * 400) - 1 and len(spans) == 8
