"""Which words of a passage a query matches, as BM25 matches them.

The same analysis as the BM25 index (`indexer.bm25_terms`: token pattern, stop words, Snowball
stemmer), with offsets: the app marks these words, and the API returns them with each hit, so a
program can highlight exactly what a BM25 search counted, whatever mode ran. The stop words are
those a BM25 base is built with now (`indexer.store.bm25_store.STOPWORDS`); an index whose BM25
was built before they changed also matched words that ask ("how", "what"), unmarked here, until
its next merge or `python -m indexer repair` builds it again.
"""

from __future__ import annotations

from dataclasses import dataclass

from indexer import bm25_terms


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
