"""Retrievers: the first stage of the search pipeline, query in, scored passage ids out.

A reranker (see `rerank.py`) may reorder what a retriever returns; BM25 and
hybrid retrievers plug in beside `DenseRetriever` through the same protocol.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from indexer.embedding import encode_texts
from indexer.faiss_store import VectorStore
from search.errors import QueryTruncatedWarning


@dataclass(frozen=True)
class Candidate:
    passage_id: int
    score: float


class Retriever(Protocol):
    def retrieve(self, query: str, n: int) -> list[Candidate]:
        """The n best passages for `query`, best first."""
        ...


def warn_if_truncated(query: str, model) -> None:
    tokens = len(model.tokenizer(query, add_special_tokens=True, truncation=False, verbose=False)["input_ids"])
    if tokens > model.max_seq_length:
        warnings.warn(
            f"The query has {tokens} tokens but the model reads {model.max_seq_length}; "
            "the rest was ignored. Shorten the query to search on all of it.",
            QueryTruncatedWarning,
            stacklevel=3,
        )


class DenseRetriever:
    """Cosine similarity between the query embedding and the passage vectors in FAISS."""

    def __init__(self, model, store: VectorStore) -> None:
        self.model = model
        self.store = store

    def encode_query(self, query: str) -> np.ndarray:
        warn_if_truncated(query, self.model)
        return encode_texts(self.model, [query])

    def retrieve(self, query: str, n: int) -> list[Candidate]:
        if self.store.ntotal == 0:
            return []
        scores, ids = self.store.search(self.encode_query(query), n)
        return [
            Candidate(int(pid), float(score))
            for score, pid in zip(scores[0], ids[0], strict=True)
            if pid >= 0
        ]
