"""Mark query terms in a result passage and trim it to the part that matches best.

Words are matched as BM25 matches them (`indexer.bm25_terms`: the same token
pattern, stop words and Snowball stemmer), so a marked word is one a BM25
search counted, whatever mode ran. Dense retrieval matches meaning, not words,
so a passage may hold none of the query's words; the snippet then shows the
passage's start unmarked. Output is Streamlit Markdown with every other
character escaped, so passages that hold Markdown, LaTeX dollars or HTML show
as plain text.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from indexer import bm25_terms

_MD_ESCAPE = {ch: "\\" + ch for ch in string.punctuation}
# Bold coloured text: a background chip adds padding that reads as extra spaces.
HIGHLIGHT = ":orange[**{}**]"
ELLIPSIS = "…"


@dataclass(frozen=True)
class TermMatch:
    """One occurrence in the text: `text[start:end]` is a word whose BM25 stem is `term`."""

    start: int
    end: int
    term: str


def query_terms(query: str) -> list[str]:
    """The BM25 terms of the query (stems of its non-stop words), in query order, no repeats."""
    return list(dict.fromkeys(term for _, _, term in bm25_terms(query)))


def find_matches(text: str, terms: list[str]) -> list[TermMatch]:
    """Every word of `text` whose BM25 stem is one of `terms` (so "open" marks "opens", "opened")."""
    wanted = set(terms)
    if not wanted:
        return []
    return [TermMatch(start, end, term) for start, end, term in bm25_terms(text) if term in wanted]


def best_window(text: str, matches: list[TermMatch], width: int) -> tuple[int, int]:
    """The `width`-character slice holding the most distinct terms (then the most matches).

    The slice starts a little before its first match for context and is snapped
    to whitespace so it does not cut words.
    """
    if width < 1:
        raise ValueError(f"width ({width}) must be at least 1.")
    if len(text) <= width:
        return 0, len(text)
    first = 0
    if matches:
        best_key: tuple[int, int] | None = None
        for i, anchor in enumerate(matches):
            inside = [m for m in matches[i:] if m.end <= anchor.start + width]
            key = (len({m.term for m in inside}), len(inside))
            if best_key is None or key > best_key:
                best_key, first = key, anchor.start
    start = min(max(0, first - width // 5), len(text) - width)
    end = start + width
    if start > 0:
        space = text.find(" ", start, min(start + 20, first))
        start = space + 1 if space != -1 else start
    if end < len(text):
        space = text.rfind(" ", max(start, end - 20), end)
        end = space if space != -1 else end
    return start, end


def escape_markdown(text: str) -> str:
    """Backslash-escape ASCII punctuation so Streamlit shows `text` literally."""
    return text.translate(str.maketrans(_MD_ESCAPE))


def _mark(text: str, matches: list[TermMatch], start: int, end: int) -> list[str]:
    pieces: list[str] = []
    pos = start
    for m in matches:
        if m.start < start or m.end > end:
            continue
        pieces.append(escape_markdown(text[pos : m.start]))
        pieces.append(HIGHLIGHT.format(escape_markdown(text[m.start : m.end])))
        pos = m.end
    pieces.append(escape_markdown(text[pos:end]))
    return pieces


def snippet_markdown(text: str, query: str, width: int = 320) -> str:
    """One line of Markdown: the best-matching part of `text`, query terms highlighted."""
    flat = " ".join(text.split())
    matches = find_matches(flat, query_terms(query))
    start, end = best_window(flat, matches, width)
    body = "".join(_mark(flat, matches, start, end))
    return f"{ELLIPSIS if start > 0 else ''}{body}{ELLIPSIS if end < len(flat) else ''}"


def passage_markdown(text: str, query: str) -> str:
    """The whole passage as Markdown, line breaks and indentation kept, query terms highlighted.

    Leading spaces become no-break spaces: four plain ones would open a Markdown
    code block, where the escapes would show as backslashes.
    """
    terms = query_terms(query)
    lines = []
    for line in text.strip("\n").split("\n"):
        body = line.lstrip(" \t")
        indent = "\u00a0" * (len(line) - len(body))
        matches = find_matches(body, terms)
        lines.append(indent + "".join(_mark(body, matches, 0, len(body))))
    return "  \n".join(lines)
