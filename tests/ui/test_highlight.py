"""Snippet trimming and query-term marking, on plain strings."""

from __future__ import annotations

import bm25s
import pytest
import Stemmer

from indexer.store.bm25_store import STOPWORD_LISTS, STOPWORDS, bm25_terms
from ui.highlight import (
    ELLIPSIS,
    best_window,
    escape_markdown,
    find_matches,
    passage_markdown,
    query_terms,
    snippet_markdown,
    strip_leading_heading,
)


def test_query_terms_drop_stopwords_and_stem() -> None:
    # BM25's stop list (NLTK's) drops the words that ask, "how" and "do"; one-letter words are not tokens.
    assert query_terms("How do I open the Files?") == ["open", "file"]
    # An index built with Lucene's 33 words kept them.
    assert [term for _, _, term in bm25_terms("How do I open the Files?", "en")] == ["how", "do", "open", "file"]
    assert query_terms("opened classes uses class") == ["open", "class", "use"]
    assert query_terms("files file FILE") == ["file"]
    assert query_terms("a the of") == []


def test_find_matches_marks_words_with_the_same_stem_only() -> None:
    text = "Opening a file opens it; reopen is different."
    words = [text[m.start : m.end] for m in find_matches(text, ["open"])]
    assert words == ["Opening", "opens"]
    assert find_matches(text, []) == []


def test_find_matches_marks_only_what_bm25_tokenises() -> None:
    text = "Use c++ or cpp here."
    # BM25's tokens are runs of two or more word characters: "c++" is no token, "cpp" is.
    assert query_terms("c++") == []
    assert [text[m.start : m.end] for m in find_matches(text, query_terms("c++ cpp"))] == ["cpp"]
    assert [m.term for m in find_matches(text, ["use"])] == ["use"]


def test_best_window_prefers_distinct_terms_over_repeats() -> None:
    filler = "lorem ipsum " * 30
    text = "alpha alpha alpha alpha " + filler + "alpha beta together " + filler
    matches = find_matches(text, ["alpha", "beta"])
    start, end = best_window(text, matches, width=60)
    assert end - start <= 60
    assert "alpha beta" in text[start:end]


def test_best_window_keeps_short_text_whole_and_rejects_bad_width() -> None:
    assert best_window("short text", [], width=100) == (0, 10)
    with pytest.raises(ValueError, match=r"width \(0\) must be at least 1"):
        best_window("text", [], width=0)


def test_best_window_does_not_cut_words() -> None:
    text = " ".join(f"word{i}" for i in range(200)) + " target " + " ".join(["tail"] * 50)
    start, end = best_window(text, find_matches(text, ["target"]), width=80)
    assert text[start - 1] == " " and text[end] == " "
    assert "target" in text[start:end]


def test_snippet_marks_terms_and_adds_ellipses() -> None:
    text = (
        "Intro. " + "padding words here. " * 40 + "To open a file call open(path). " + "more. " * 40
    )
    snippet = snippet_markdown(text, "open file", width=120)
    assert snippet.startswith(ELLIPSIS) and snippet.endswith(ELLIPSIS)
    assert ":orange[**open**]" in snippet
    assert ":orange[**file**]" in snippet
    assert "open\\(path\\)" not in snippet  # the word inside the call is marked, not left raw
    assert ":orange[**open**]\\(path\\)" in snippet


def test_snippet_without_matches_shows_the_start() -> None:
    text = "Semantic search finds meaning. " * 30
    snippet = snippet_markdown(text, "zebra", width=50)
    assert snippet.startswith("Semantic search")
    assert ":orange[" not in snippet


def test_escape_markdown_neutralises_markup() -> None:
    escaped = escape_markdown("*args, **kwargs, $x$ and <b>[link](url)")
    assert "*" not in escaped.replace("\\*", "")
    assert "$" not in escaped.replace("\\$", "")
    assert escaped.startswith("\\*args")


def test_passage_keeps_lines_and_avoids_code_blocks() -> None:
    text = "Example:\n\n    with open(path) as fh:\n        data = fh.read()\n"
    markdown = passage_markdown(text, "open")
    lines = markdown.split("  \n")
    assert lines[0] == "Example\\:"
    assert lines[1] == ""
    assert lines[2].startswith("\u00a0" * 4 + "with :orange[**open**]")
    assert not any(line.startswith("    ") for line in lines)


HIGHLIGHT_CASES = [
    ("How do I open the Files?", "Opening files: open() opens a file; the reopened file is closed."),
    ("volcanic eruption grounded flights", "The volcano erupted and ash grounded every flight in Europe."),
    ("baking bread", "Bakers bake bread; a baked loaf is a bread. Baking takes an hour."),
    ("İstanbul ΟΔΟΣ naïve", "Istanbul, İstanbul and the ΟΔΟΣ of a naïve traveller."),
]


@pytest.mark.parametrize("stopwords", sorted(STOPWORD_LISTS))
@pytest.mark.parametrize(("query", "text"), HIGHLIGHT_CASES)
def test_bm25_terms_is_the_bm25_analyzer(query: str, text: str, stopwords: str) -> None:
    for sample in (query, text):
        reference = bm25s.tokenize(
            [sample], stopwords=stopwords, stemmer=Stemmer.Stemmer("english"), return_ids=False, show_progress=False
        )[0]
        assert [term for _, _, term in bm25_terms(sample, stopwords)] == reference


def test_bm25_terms_reads_the_list_an_index_is_built_with_by_default() -> None:
    assert STOPWORDS in STOPWORD_LISTS
    assert bm25_terms("where can I leave my bike") == bm25_terms("where can I leave my bike", STOPWORDS)
    with pytest.raises(ValueError, match="Unknown stop-word list"):
        bm25_terms("bike", "klingon")


@pytest.mark.parametrize(("query", "text"), HIGHLIGHT_CASES)
def test_every_highlighted_word_is_one_bm25_matched(query: str, text: str) -> None:
    from indexer.store.bm25_store import BM25Store

    matched_stems = set(query_terms(query))
    markdown = passage_markdown(text, query)
    marked = [piece.split("**]", 1)[0].replace("\\", "") for piece in markdown.split(":orange[**")[1:]]
    assert marked, "the example must highlight something"
    for word in marked:
        stems = [term for _, _, term in bm25_terms(word)]
        assert len(stems) == 1 and stems[0] in matched_stems, word
    assert len(marked) == sum(term in matched_stems for _, _, term in bm25_terms(text)), "and every such word"
    # ...and BM25 itself scores the passage for the query, through the same terms.
    store = BM25Store.build([7], [text])
    scores, ids = store.search(query, 1)
    assert list(ids) == [7] and scores[0] > 0


def test_rest_emphasis_reads_as_markdown_not_literally() -> None:
    """`*opener*` in a docstring is reST emphasis; it showed as asterisks before."""
    text = "Pass *opener* a callable, **mode** a string; f(*args, **kw) and 2*x*y stay; ``open()`` too."
    shown = passage_markdown(text, "callable")
    assert "*opener*" in shown and "**mode**" in shown
    assert "\\*opener" not in shown and "\\*\\*mode" not in shown
    assert "f\\(\\*args\\, \\*\\*kw\\)" in shown and "2\\*x\\*y" in shown, "code stays literal"
    assert "``" not in shown and "open\\(\\)" in shown
    snippet = snippet_markdown(text, "callable")
    assert "*opener*" in snippet and ":orange[**callable**]" in snippet


def test_snippet_never_opens_an_italic_it_does_not_close() -> None:
    text = "word " * 80 + "*a long emphasised phrase that the window cuts* " + "tail " * 80
    snippet = snippet_markdown(text, "phrase", width=60)
    assert snippet.count("\ue000") == 0
    assert "*a long" in snippet and "cuts*" in snippet


def test_doctest_examples_show_as_code_and_cut_prompts_are_dropped() -> None:
    text = (
        "Join paths.\n\n    >>> import os\n    >>> os.path.join('a', 'b')\n    'a/b'\n\n"
        "Then more prose about paths. >>"
    )
    shown = passage_markdown(text, "paths")
    assert "~~~python\n>>> import os\n>>> os.path.join('a', 'b')\n'a/b'\n~~~" in shown
    assert shown.endswith(":orange[**paths**]\\.")  # the cut ">>" is gone
    assert not snippet_markdown("> > prompt cut >>", "prompt").endswith("\\>\\>")


DOCTEST_PASSAGE = (
    "Join path components with os.path.join; it inserts the separator.\n\n"
    "    >>> import os\n    >>> os.path.join('usr', 'lib')\n    'usr/lib'\n\n"
    "More prose after the example."
)


def test_a_doctest_in_a_snippet_is_inline_code_unescaped_and_unmarked() -> None:
    snippet = snippet_markdown(DOCTEST_PASSAGE, "join path")
    assert "`>>> import os >>> os.path.join('usr', 'lib') 'usr/lib'`" in snippet
    assert "\\>" not in snippet, "no escapes inside the code span"
    assert snippet.startswith(":orange[**Join**] :orange[**path**] components")  # prose is still marked
    assert snippet.endswith("` More prose after the example\\.")


def test_a_snippet_window_inside_a_doctest_closes_its_code_span() -> None:
    snippet = snippet_markdown(DOCTEST_PASSAGE, "separator import", width=50)
    assert snippet.startswith(ELLIPSIS) and snippet.endswith(ELLIPSIS)
    assert snippet.count("`") == 2 and snippet.index("`>>> import os") < snippet.rindex("`")
    assert ":orange[**separator**]" in snippet and ":orange[**import**]" not in snippet
    # Backticks inside an example get a longer fence, so the span is not cut short.
    assert snippet_markdown(">>> x = `a`\n>>> x", "x") == "``>>> x = `a` >>> x``"


def _marked_words(markdown: str) -> list[str]:
    return [piece.split("**]", 1)[0].replace("\\", "") for piece in markdown.split(":orange[**")[1:]]


def _unmarked(markdown: str) -> str:
    """The plain text a snippet shows: highlights and escapes taken off, ellipses kept."""
    return markdown.replace(":orange[**", "").replace("**]", "").replace("\\", "")


def test_snippet_leaves_out_a_heading_that_repeats_the_title() -> None:
    text = "# Open files\n\nTo open a file, call open(path); an opened file is closed by close()."
    snippet = snippet_markdown(text, "open file", title="Open files")
    assert snippet.startswith("To :orange[**open**] a :orange[**file**]\\, call")
    assert "\\#" not in snippet and "Open files" not in snippet
    # Highlights line up with the words shown: each marked word is the one the text has there.
    assert _unmarked(snippet) == " ".join(strip_leading_heading(text, "Open files").split())
    assert _marked_words(snippet) == ["open", "file", "open", "opened", "file"]
    # The full passage (and so every stored offset) is left whole.
    assert passage_markdown(text, "open file").startswith("\\# :orange[**Open**] :orange[**files**]")


@pytest.mark.parametrize(
    ("text", "title", "shown"),
    [
        ("# Title\nBody text.", "Title", "Body text."),
        ("\n  ## Title ##\r\nBody.", "title", "Body."),  # blank line first, closing #s, CRLF
        ("#Title\nBody.", "Title", "Body."),  # the indexer takes "#Title" as the title too
        ("# Title\n\n## Usage\nRun it.", "Title", "Usage · Run it."),  # a section keeps its words
        ("## Usage\nRun it.", "Title", "Usage · Run it."),
        ("#\nBody.", None, "Body."),  # an empty heading
        ("# Title", "Title", "Title"),  # only the heading: its words, not nothing
        ("#hashtag and text", None, "#hashtag and text"),  # no space after #: no heading
        ("#include <stdio.h>\nint x;", "other", "#include <stdio.h>\nint x;"),
        ("    # indented four: code\nx", None, "    # indented four: code\nx"),
        ("Text first\n# Later heading", "Later heading", "Text first\n# Later heading"),
        ("# C#\nBody.", "C#", "Body."),  # a # inside the words is no closing sequence
    ],
)
def test_strip_leading_heading(text: str, title: str | None, shown: str) -> None:
    assert strip_leading_heading(text, title) == shown


def test_snippet_window_and_highlights_are_taken_after_the_heading_is_left_out() -> None:
    """A long passage: the window is chosen in the text shown, so the marks sit on the words."""
    text = "# Volcanoes\n\n" + "Filler words here. " * 40 + "Volcanoes erupt lava and ash. " + "More. " * 40
    snippet = snippet_markdown(text, "volcano lava", width=80, title="Volcanoes")
    assert snippet.startswith(ELLIPSIS) and "\\#" not in snippet
    assert ":orange[**Volcanoes**] erupt :orange[**lava**] and ash" in snippet
    shown = _unmarked(snippet).strip(ELLIPSIS)
    assert shown in " ".join(strip_leading_heading(text, "Volcanoes").split())
