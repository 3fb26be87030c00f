"""`SearchParams`: what one search asks for, checked once, and the limits it must keep within.

The HTTP API, `python -m search`, the evaluation and the app each build one from
their own input and hand it to `Searcher.search`; none of them keeps a default
of its own. A field left None takes the searcher's setting (`SearchConfig` for
mode, candidates and fusion; `Searcher.rerank_by_default` for rerank).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

from indexer.store.metadata_filter import Filter, parse_filter
from search.fusion import check_fusion, check_fusion_weight

MODES = ("dense", "bm25", "hybrid")
# What each mode's retriever score is, named so on every surface (CLI, app, API docs): dense
# scores are cosine similarities, BM25 scores have no fixed range, hybrid's are fused.
SCORE_NAMES = {"dense": "cosine", "bm25": "BM25", "hybrid": "fused"}
# The most documents one search returns or reranks: past this, fetching and grouping passages
# costs more than any page or metric uses (evaluation reads the top 100).
MAX_K = 1000
# How many documents a search returns when the caller does not say: one default for programs
# (Python, the HTTP API, the evaluation), one for a person reading a screen (the CLI, the app).
DEFAULT_K = 10
SCREEN_K = 5


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"Unknown mode {mode!r}. Valid: {', '.join(MODES)}.")
    return mode


def check_count(name: str, value: object, maximum: int = MAX_K) -> int:
    """`value` as an int in 1..maximum; a bool, float (2.5, nan, inf) or string is a TypeError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be a whole number between 1 and {maximum}, not {value!r} ({type(value).__name__})."
        )
    number = int(value)
    if not 1 <= number <= maximum:
        raise ValueError(f"{name} ({value}) must be at least 1 and at most {maximum}.")
    return number


@dataclass(frozen=True)
class SearchParams:
    """One search request. Constructing it checks every field, so a bad value fails before
    anything is retrieved, with the same message on every surface.

    `k` documents come back (1..`MAX_K`), after the first `offset` of the same ranking (a
    next page: `offset=10, k=10` is the ranking's 11th to 20th document); a search ranks at most
    `MAX_K` documents, so a page reaching past them is cut there. `mode` is "dense", "bm25" or "hybrid".
    `rerank` says whether the searcher's cross-encoder rescores the retriever's top
    `candidates` documents (1..`MAX_K`). `fusion` ("rrf", "minmax", "tmm", "zscore")
    and `fusion_weight` (the dense list's share, 0..1) say how hybrid fuses its two
    lists; other modes check and ignore them. With `keep_tail`, reranking rescores
    the top `candidates` of the top k and the rest follow in the retriever's order,
    so k may exceed `candidates` (how the evaluation ranks 100 documents while
    reranking 50); without it, a reranked k above `candidates` is refused.

    `model_wait` is how many seconds a search that names dense or hybrid waits for a model
    still loading in the background (`Searcher(model_loading="background")`) before it raises
    `ModelNotReadyError`; None waits as long as the load takes. A search that names no mode does
    not wait: it answers with BM25 meanwhile and says so in `fallback_reason`.

    `filter` keeps only documents whose metadata it matches, before ranking, in every mode: a
    mapping in the shape `indexer.store.metadata_filter` documents (`{"tag": "billing",
    "year": {"$gte": 2025}}`) or its JSON text; it is parsed here, so a bad one raises a
    `FilterError` (a ValueError) naming the fix. k hits come back whenever k documents match.

    `min_relevance` (0..1) keeps only hits whose calibrated relevance (`Hit.relevance`, the
    probability of relevance from the score that ranks: `search.relevance`) reaches it; since
    relevance never rises down the ranking, that cuts the ranking where it falls below, so fewer
    than k hits may come back. A search whose hits carry no relevance (BM25, whose scale grows
    with the collection; dense or hybrid over an index of another bi-encoder than the curves were
    fitted with) is not cut, and `relevance_note` says so.
    """

    k: int = DEFAULT_K
    offset: int = 0
    mode: str | None = None
    rerank: bool | None = None
    candidates: int | None = None
    fusion: str | None = None
    fusion_weight: float | None = None
    keep_tail: bool = False
    filter: Filter | dict[str, Any] | str | None = None
    model_wait: float | None = None
    min_relevance: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "filter", parse_filter(self.filter))
        if self.model_wait is not None and (isinstance(self.model_wait, bool) or not isinstance(
                self.model_wait, numbers.Real) or not 0 <= self.model_wait < float("inf")):
            raise ValueError(f"model_wait ({self.model_wait!r}) must be a number of seconds from 0, or None.")
        object.__setattr__(self, "k", check_count("k", self.k))
        if isinstance(self.offset, bool) or not isinstance(self.offset, numbers.Integral):
            raise TypeError(f"offset must be a whole number from 0, not {self.offset!r}.")
        if not 0 <= self.offset < MAX_K:
            raise ValueError(f"offset ({self.offset}) must lie between 0 and {MAX_K - 1}: a search ranks "
                             f"at most {MAX_K} documents.")
        if self.mode is not None:
            check_mode(self.mode)
        if self.rerank is not None and not isinstance(self.rerank, bool):
            raise TypeError(f"rerank must be True, False or None, not {self.rerank!r}.")
        if self.candidates is not None:
            object.__setattr__(self, "candidates", check_count("candidates", self.candidates))
        if self.fusion is not None:
            check_fusion(self.fusion)
        if self.fusion_weight is not None:
            check_fusion_weight(self.fusion_weight)
        if self.min_relevance is not None and (isinstance(self.min_relevance, bool) or not isinstance(
                self.min_relevance, numbers.Real) or not 0.0 <= self.min_relevance <= 1.0):
            raise ValueError(f"min_relevance ({self.min_relevance!r}) must be a probability from 0 to 1, or None.")
