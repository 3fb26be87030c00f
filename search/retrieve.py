"""Retrievers: the first stage of the search pipeline, query in, scored passage ids out.

Dense (embeddings in FAISS), BM25 (exact terms, `indexer.bm25_store`) and
hybrid (both, fused by reciprocal rank) share one protocol, so the searcher
groups, reranks and cuts their output the same way. A reranker (see
`rerank.py`) may reorder what a retriever returns.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from indexer.bm25_store import BM25Store
from indexer.embedding import encode_query
from indexer.faiss_store import VectorStore
from search.errors import QueryTruncatedWarning
from search.fusion import reciprocal_rank_fusion


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
        return encode_query(self.model, query)

    def retrieve(self, query: str, n: int) -> list[Candidate]:
        return self.retrieve_vector(self.encode_query(query), n)

    def retrieve_vector(self, vector: np.ndarray, n: int) -> list[Candidate]:
        """Search with a query already encoded, so callers can time or reuse the encoding."""
        if self.store.ntotal == 0:
            return []
        scores, ids = self.store.search(vector, n)
        return [
            Candidate(int(pid), float(score))
            for score, pid in zip(scores[0], ids[0], strict=True)
            if pid >= 0
        ]


class BM25Retriever:
    """BM25 over title + passage text; finds exact terms (names, codes, rare words) embeddings blur.

    Returns only passages sharing at least one (stemmed, non-stop) word with the
    query, so it may return fewer than n.
    """

    def __init__(self, store: BM25Store) -> None:
        self.store = store

    def retrieve(self, query: str, n: int) -> list[Candidate]:
        scores, ids = self.store.search(query, n)
        return [Candidate(int(pid), float(score)) for score, pid in zip(scores, ids, strict=True)]


class HybridRetriever:
    """Dense and BM25 passage rankings fused by reciprocal rank (see `search.fusion`).

    Fusion happens at the passage level, before the searcher groups passages
    into documents: both retrievers rank passages natively, the hybrid stays a
    plain `Retriever`, and the passage it ranks first for a document is the one
    both retrievers put highest, which is what the reranker and the UI show.
    The cost is that a document whose several passages all rank high in one list
    pushes other documents down that list; on SciFact, where most documents are
    one or two passages, that is minor. Each list is cut at n; the searcher
    asks for a larger n when the fused list holds too few documents.
    """

    def __init__(self, dense: DenseRetriever, bm25: BM25Retriever, rrf_k: int = 60) -> None:
        self.dense = dense
        self.bm25 = bm25
        self.rrf_k = rrf_k

    def retrieve(self, query: str, n: int) -> list[Candidate]:
        return self.retrieve_vector(query, self.dense.encode_query(query), n)

    def retrieve_vector(self, query: str, vector: np.ndarray, n: int) -> list[Candidate]:
        """Fuse with a query already encoded for the dense side."""
        rankings = [
            [c.passage_id for c in self.dense.retrieve_vector(vector, n)],
            [c.passage_id for c in self.bm25.retrieve(query, n)],
        ]
        fused = reciprocal_rank_fusion(rankings, k=self.rrf_k)
        return [Candidate(pid, score) for pid, score in fused[:n]]
