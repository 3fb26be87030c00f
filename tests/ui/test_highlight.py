"""Snippet trimming and query-term marking, on plain strings."""

from __future__ import annotations

import pytest

from ui.highlight import (
    ELLIPSIS,
    best_window,
    escape_markdown,
    find_matches,
    passage_markdown,
    query_terms,
    snippet_markdown,
)


def test_query_terms_drop_stopwords_and_stem() -> None:
    assert query_terms("How do I open the Files?") == ["open", "file"]
    assert query_terms("opened classes uses class") == ["open", "class", "use"]
    assert query_terms("files file FILE") == ["file"]
    assert query_terms("a the of") == []


def test_find_matches_marks_word_starts_only() -> None:
    text = "Opening a file opens it; reopen is different."
    words = [text[m.start : m.end] for m in find_matches(text, ["open"])]
    assert words == ["Opening", "opens"]
    assert find_matches(text, []) == []


def test_find_matches_takes_terms_literally() -> None:
    text = "Use c++ or cpp here."
    assert [text[m.start : m.end] for m in find_matches(text, ["c++"])] == ["c++"]
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
