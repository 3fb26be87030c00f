"""Negative passages for (query, positive) pairs: the seam where hard-negative mining plugs in.

`RandomNegativeMiner` samples from a passage pool. `IndexNegativeMiner` asks an
existing index (BM25, dense or hybrid) for the query's top passages and keeps
those that are not positives; Qu et al. (2021, RocketQA) and Karpukhin et al.
(2020, DPR) show such retrieved negatives train much stronger rerankers than
random ones.
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


class RandomNegativeMiner:
    def __init__(self, pool: Sequence[str]) -> None:
        self.pool = list(dict.fromkeys(pool))

    def mine(self, query: str, positives: set[str], count: int, rng: np.random.Generator) -> list[str]:
        candidates = [passage for passage in self.pool if passage not in positives]
        if not candidates or count <= 0:
            return []
        picks = rng.choice(len(candidates), size=min(count, len(candidates)), replace=False)
        return [candidates[int(index)] for index in picks]


class IndexNegativeMiner:
    """Hard negatives: the index's best passages for the query that are not its positives.

    The first `skip` non-positive hits are passed over: the very top of a
    retriever's list holds unlabelled relevant passages often enough (RocketQA's
    false negatives) to teach the reranker the wrong thing.
    """

    def __init__(self, index_dir: Path | str, mode: str = "hybrid", skip: int = 0) -> None:
        from search import Searcher

        if skip < 0:
            raise ValueError(f"skip ({skip}) must be 0 or more.")
        self.searcher = Searcher(index_dir)
        self.mode = mode
        self.skip = skip

    def mine(self, query: str, positives: set[str], count: int, rng: np.random.Generator) -> list[str]:
        if count <= 0:
            return []
        hits = self.searcher.search(query, k=count + self.skip + len(positives), mode=self.mode)
        negatives = [
            hit.text
            for hit in hits
            if hit.text not in positives and not any(hit.text in p or p in hit.text for p in positives)
        ]
        return negatives[self.skip : self.skip + count]
