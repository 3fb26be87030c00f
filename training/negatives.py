"""Negative passages for (query, positive) pairs: the seam where hard-negative mining plugs in.

`RandomNegativeMiner` samples from a passage pool. `BM25NegativeMiner` builds
BM25 over the pool in memory and samples among each query's best lexical
matches. `IndexNegativeMiner` asks an existing index (BM25, dense or hybrid,
so BM25 and the bi-encoder together) for the query's top passages. Qu et al.
(2021, RocketQA) and Karpukhin et al. (2020, DPR) show such retrieved negatives
train much stronger rerankers than random ones.

Hard miners sample `count` negatives among the first `depth` non-positive
hits instead of taking the very top: the top of a retriever's list holds
unlabelled relevant passages often enough (RocketQA's false negatives) to teach
a reranker the wrong thing, and sampling spreads the difficulty.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np


class NegativeMiner(Protocol):
    def mine(self, query: str, positives: set[str], count: int, rng: np.random.Generator) -> list[str]:
        """Up to `count` passages that are not in `positives`."""
        ...


def _check_depth(depth: int | None) -> None:
    if depth is not None and depth < 1:
        raise ValueError(f"depth ({depth}) must be at least 1, or None to take the top hits in order.")


def _sample(candidates: list[str], count: int, depth: int | None, rng: np.random.Generator) -> list[str]:
    """The first `count` candidates when `depth` is None, else `count` drawn from the first `depth`."""
    if depth is None:
        return candidates[:count]
    pool = candidates[:depth]
    picks = rng.choice(len(pool), size=min(count, len(pool)), replace=False) if pool else []
    return [pool[int(index)] for index in sorted(picks)]


def _overlaps(text: str, positives: set[str]) -> bool:
    """A passage of a positive document (or the document holding it) is not a negative."""
    return text in positives or any(text in positive or positive in text for positive in positives)


class RandomNegativeMiner:
    def __init__(self, pool: Sequence[str]) -> None:
        self.pool = list(dict.fromkeys(pool))

    def mine(self, query: str, positives: set[str], count: int, rng: np.random.Generator) -> list[str]:
        candidates = [passage for passage in self.pool if passage not in positives]
        if not candidates or count <= 0:
            return []
        picks = rng.choice(len(candidates), size=min(count, len(candidates)), replace=False)
        return [candidates[int(index)] for index in picks]


class BM25NegativeMiner:
    """Lexically hard negatives: BM25 (the indexer's settings) over `pool`, built in memory.

    For training sources that have no index, such as self-supervised pairs from
    raw documents. A query that matches fewer than `count` passages is topped up
    with random ones from the pool.
    """

    def __init__(self, pool: Sequence[str], depth: int = 30) -> None:
        from indexer.bm25_store import BM25Store

        _check_depth(depth)
        self.pool = list(dict.fromkeys(pool))
        self.depth = depth
        self.store = BM25Store.build(np.arange(len(self.pool)), self.pool)
        self._random = RandomNegativeMiner(self.pool)

    def mine(self, query: str, positives: set[str], count: int, rng: np.random.Generator) -> list[str]:
        if count <= 0:
            return []
        _, ids = self.store.search(query, self.depth + len(positives))
        candidates = [self.pool[int(i)] for i in ids if self._allowed(self.pool[int(i)], query, positives)]
        negatives = _sample(candidates, count, self.depth, rng)
        if len(negatives) < count:
            chosen = set(negatives)
            rest = [p for p in self.pool if p not in chosen and self._allowed(p, query, positives)]
            picks = rng.choice(len(rest), size=min(count - len(negatives), len(rest)), replace=False) if rest else []
            negatives += [rest[int(index)] for index in picks]
        return negatives

    @staticmethod
    def _allowed(passage: str, query: str, positives: set[str]) -> bool:
        """Not a positive, not a piece of one, and not the query's own source: a passage holding the
        query word for word (an inverse-cloze sentence's document) would be a false negative."""
        return not _overlaps(passage, positives) and query not in passage


class IndexNegativeMiner:
    """Hard negatives: the index's best passages for the query that are not its positives.

    The first `skip` non-positive hits are passed over; with `depth` set,
    `count` negatives are sampled among the next `depth` instead of taken in
    order. Negatives carry their document title in front, as the reranker sees
    them at query time (`search.rerank.rerank_input`).
    """

    def __init__(self, index_dir: Path | str, mode: str = "hybrid", skip: int = 0, depth: int | None = None) -> None:
        from search import Searcher

        if skip < 0:
            raise ValueError(f"skip ({skip}) must be 0 or more.")
        _check_depth(depth)
        self.searcher = Searcher(index_dir)
        self.mode = mode
        self.skip = skip
        self.depth = depth

    def mine(self, query: str, positives: set[str], count: int, rng: np.random.Generator) -> list[str]:
        from search.rerank import rerank_input

        if count <= 0:
            return []
        wanted = self.skip + (self.depth or count) + len(positives)
        hits = self.searcher.search(query, k=wanted, mode=self.mode)
        negatives = [rerank_input(hit.title, hit.text) for hit in hits if not _overlaps(hit.text, positives)]
        return _sample(negatives[self.skip :], count, self.depth, rng)
